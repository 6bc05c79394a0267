"""`StepCounterHook`: measures and records steps per second (`global_step/sec`)."""

from __future__ import annotations

from tensorflow.compat.v1 import logging

from compat_mts.deploy import deployment as deployment_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.hooks.stop import TF2_GLOBAL_STEP_FIX
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.session_run_hook import (
    STALE_GLOBAL_STEP_REQUEST,
    SessionRunHook,
    StepsPerRunMixin,
    global_step_after_run,
)


class StepCounterHook(StepsPerRunMixin, SessionRunHook):
    """Hook that counts steps per second, logs v1's `global_step/sec: 67.3` and writes it as a scalar.

    The scalar is a v1 `simple_value` under v1's tag (`<global step name>/sec`) at the post-run global
    step. The first trigger only starts the clock, as in v1, and a global step that did not move
    between runs gets v1's warning (at most five times), followed by how a TF2 step increments it. After the
    session's first step the traced step's graph is written too, as v1's writer cache wrote the graph into
    every events file.

    Args:
      every_n_steps: Measure and log the rate every `every_n_steps` global steps (default 100), or None
        to measure by time.
      every_n_secs: Measure every `every_n_secs` seconds instead; needs `every_n_steps=None`.
      output_dir: The directory whose events file gets the `global_step/sec` scalars (the session's
        `summary_dir` or `checkpoint_dir` for the default hook). None with no `summary_writer`: the rate is
        logged only.
      summary_writer: A `tf.summary` writer to write the scalars with instead (v1 took a `FileWriter`), or
        None for `output_dir`'s.

    Example:

    ```python
    hook = compat_mts.StepCounterHook(every_n_steps=100, output_dir=directory)
    ```

    Raises:
      ValueError: not exactly one of `every_n_steps` and `every_n_secs` (v1's message; note the
        default `every_n_steps=100`, so `every_n_secs` alone needs `every_n_steps=None`), or
        `every_n_secs` is NaN (`inf` is accepted: the first trigger only starts the clock, so it never
        logs).
      TypeError: an argument of the wrong type.
    """

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer=None,
    ):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError(
                'exactly one of every_n_steps and every_n_secs should be provided. '
                f'(Got every_n_steps={every_n_steps!r} and every_n_secs={every_n_secs!r}; every_n_steps '
                'defaults to 100, so pass every_n_steps=None with every_n_secs.)'
            )
        validation.check_integer(every_n_steps, 'every_n_steps')
        validation.check_seconds(every_n_secs, 'every_n_secs', infinity='never logs a rate')
        self._output_dir = validation.optional_directory(output_dir, 'output_dir')
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._given_writer = summary_writer
        self._summary_writer = summary_writer

    def begin(self):
        # Taken again by every session (or fit) that runs the hook: the last one released it (v1's cached
        # writer never closed, so a hooks list is used for session after session).
        self._summary_writer = self._given_writer
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = summary_lib.summary_writer_for(self._output_dir)
        self._global_step = global_step_lib.require_global_step('StepCounterHook')
        self._summary_tag = global_step_lib.step_name(self._global_step) + '/sec'
        self._last_global_step = None
        self._graph_pending = self._summary_writer is not None
        # On the chief of a parameter-server cluster a run returns once its steps are scheduled, so the
        # global step read after it may not have moved yet: no warning there.
        self._warn_when_stuck = deployment_lib.current().scheduler is None

    def after_create_session(self, session, coord):
        if not getattr(session, 'has_step_graph', True):  # Inside `model.fit` (HooksCallback): no graph to write.
            self._graph_pending = False

    def before_run(self, run_context):
        return STALE_GLOBAL_STEP_REQUEST

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._graph_pending:
            self._graph_pending = not summary_lib.write_step_graph(self._summary_writer, run_context.session)
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = global_step_after_run(run_context, self._global_step)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale_global_step == self._last_global_step and self._warn_when_stuck:
            logging.log_first_n(
                logging.WARN,
                'It seems that global step (tf.train.get_global_step) has not been increased. Current '
                'value (could be stable): %s vs previous value: %s. You could increase the global step '
                'by passing tf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize. '
                + TF2_GLOBAL_STEP_FIX,
                5,
                stale_global_step,
                self._last_global_step,
            )
        self._last_global_step = stale_global_step

    reads_clock_after_run = True  # `every_n_secs` is checked in after_run; before_run only asks for the stale step.
    leaves_global_step = True  # Its after_run reads the global step only (see HookDriver.after_run).

    def idle_until(self):
        """Idle until the timer may trigger (`compat_mts.session.session_run_hook.HookCapabilities`)."""
        if self._graph_pending:
            return None
        return self._timer.next_trigger(self._steps_per_run)

    def catch_up(self, last_stale_step: int) -> None:
        """After skipped runs: the warning compares the next run's step with `last_stale_step`, the previous run's."""
        self._last_global_step = last_stale_step

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int) -> None:
        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            summary_lib.write_simple_value(self._summary_writer, self._summary_tag, steps_per_sec, global_step)
        logging.info('%s: %g', self._summary_tag, steps_per_sec)
