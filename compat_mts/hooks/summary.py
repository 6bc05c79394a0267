"""`SummarySaverHook`: records the program's summaries on its trigger steps."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from compat_mts.core import global_step as global_step_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.core.fetch import STALE_GLOBAL_STEP
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.session_run_hook import (
    STALE_GLOBAL_STEP_REQUEST,
    SessionRunArgs,
    SessionRunHook,
    StepsPerRunMixin,
    global_step_after_run,
)


class SummarySaverHook(StepsPerRunMixin, SessionRunHook):
    """Saves summaries every `save_steps` steps or `save_secs` seconds (v1's arguments and trigger rules).

    v1 ran a merged summary op in the same `run` as the train op. Eagerly, the `tf.summary.*` calls in
    the user's step are recorded on the runs where this hook triggers (the first run, then by its timer),
    stamped with the post-run global step as v1 stamped them; on other runs they cost a variable read in
    the step and write nothing. After the session's first step the traced step's graph is written too,
    as v1's writer cache wrote the graph into every events file. With `scaffold`, that is all it records
    (or `scaffold.summary_op` if set); with `summary_op` (a callable that writes summaries, or serialized
    `Summary` protos of a `wrap_graph` graph), that is fetched on trigger runs and written too. A callable is
    called in `after_run`, into this hook's writer, so its summaries come in v1's order (after what the hooks
    before it wrote). Several hooks on one writer each record on their own trigger runs, as in v1.

    Args:
      save_steps: Record on the first run, then every `save_steps` global steps; or None.
      save_secs: Record on the first run, then at most once every `save_secs` seconds; or None. Exactly one
        of the two is given.
      output_dir: The directory whose events file gets the summaries; None with `summary_writer`.
      summary_writer: A `tf.summary` writer to record into instead (v1 took a `FileWriter`), or None for
        `output_dir`'s.
      scaffold: A `Scaffold`: record the step's own `tf.summary` calls (and `scaffold.summary_op` if
        set). Exactly one of `scaffold` and `summary_op` is given.
      summary_op: What to fetch and write on trigger runs: a callable that writes summaries, or a
        `wrap_graph` summary tensor (serialized `Summary` protos), or a list of them.

    Example:

    ```python
    hook = compat_mts.SummarySaverHook(save_steps=100, output_dir=directory, scaffold=compat_mts.Scaffold())
    ```

    Raises:
      ValueError: not exactly one of `scaffold` and `summary_op`, or not exactly one of `save_steps`
        and `save_secs` (v1's messages, in v1's order), or `save_secs` is NaN.
      TypeError: an argument of the wrong type.
    """

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer=None,
        scaffold=None,
        summary_op=None,
    ):
        if (scaffold is None) == (summary_op is None):
            raise ValueError('Exactly one of scaffold or summary_op must be provided.')
        validation.check_integer(save_steps, 'save_steps')
        validation.check_seconds(save_secs, 'save_secs', infinity="saves the first run's summaries only")
        self._output_dir = validation.optional_directory(output_dir, 'output_dir')
        self._summary_op = summary_op
        self._given_writer = summary_writer
        self._summary_writer = summary_writer
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        # Taken again by every session (or fit) that runs the hook: the last one released it (v1's cached
        # writer never closed, so a hooks list is used for session after session).
        self._summary_writer = self._given_writer
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = summary_lib.summary_writer_for(self._output_dir)
        self._next_step = None
        self._graph_pending = True
        self._global_step = global_step_lib.require_global_step('SummarySaverHook')
        self._recorder = None
        if self._summary_writer is not None:
            self._recorder = summary_lib.recorder_for(self._summary_writer)
            summary_lib.request_recording(self._recorder)

    def after_create_session(self, session, coord):
        if not getattr(session, 'has_step_graph', True):  # Inside `model.fit` (HooksCallback): no graph to write.
            self._graph_pending = False

    def _summary_fetch(self):
        if self._summary_op is not None:
            return self._summary_op
        return self._scaffold.summary_op if self._scaffold is not None else None

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        if self._recorder is not None:
            if self._request_summary:
                next_step = self._next_step
                if next_step is None:
                    next_step = int(run_context.session.run(self._global_step)) + self._steps_per_run
                self._recorder.record_next_run(self, next_step)
            else:
                self._recorder.record_next_run(self, None)
        summary_fetch = self._summary_fetch() if self._request_summary else None
        if summary_fetch is None or _is_summary_callable(summary_fetch):  # A callable is called in `after_run`.
            return STALE_GLOBAL_STEP_REQUEST
        return SessionRunArgs({'global_step': STALE_GLOBAL_STEP, 'summary': summary_fetch})

    def after_run(self, run_context, run_values):
        if self._summary_writer is None:
            return
        results = run_values.results
        stale_global_step = results['global_step'] if isinstance(results, dict) else results
        global_step = stale_global_step + self._steps_per_run
        if self._next_step is None or self._request_summary:
            global_step = global_step_after_run(run_context, self._global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            summaries = results['summary'] if isinstance(results, dict) else None
            summary_fetch = self._summary_fetch()
            if _is_summary_callable(summary_fetch):
                # Called here, after the run as it was fetched, so that its summaries come after those the hooks
                # before this one wrote in their `after_run`, as v1's did; into this hook's writer.
                with self._recorder.writing():
                    summaries = tf.nest.map_structure(_as_value, summary_fetch())
            for serialized in _serialized_summaries(summaries):
                summary_lib.write_serialized(self._summary_writer, serialized, global_step)
        if self._graph_pending:
            self._graph_pending = not summary_lib.write_step_graph(self._summary_writer, run_context.session)
        self._next_step = global_step + self._steps_per_run

    leaves_global_step = True  # Its after_run reads the global step only (see HookDriver.after_run).
    # Its before_run decides on `_next_step`, which the previous run's after_run (or catch_up) set: the session's
    # schedule leaves it out before the runs it does not act on (session_run_hook.decides_on_previous_run).
    decides_on_previous_run = True

    def idle_until(self):
        """Idle until the timer may trigger (`compat_mts.session.session_run_hook.HookCapabilities`).

        `before_run` checks `_next_step`, the post-run step it predicts (the previous run's stale step plus two
        runs' steps); a run's stale step is above the previous one's, so below `last + every - 2K + 1` none
        triggers. After a recording run the next one is needed: its `before_run` withdraws its request for the
        recording. Another hook recording into the same writer asks for its own runs (`Recorder.record_next_run`),
        so this promise holds whatever that hook does.
        """
        if self._summary_writer is None or self._next_step is None or self._request_summary or self._graph_pending:
            return None
        return self._timer.next_trigger(2 * self._steps_per_run - 1)

    def catch_up(self, last_stale_step: int) -> None:
        """After skipped runs: the post-run step `after_run` of the run before would have predicted."""
        self._next_step = last_stale_step + 2 * self._steps_per_run

    def end(self, session=None):
        if self._recorder is not None:
            self._recorder.record_next_run(self, None)
        if self._summary_writer is not None:  # A full disk is warned about: the final checkpoint comes after.
            summary_lib.flush(self._summary_writer, self._output_dir)


def _is_summary_callable(summary_fetch) -> bool:
    """Whether `summary_fetch` is a callable that writes summaries (not a tensor or name fetched in the run)."""
    return callable(summary_fetch) and not isinstance(summary_fetch, (tf.Tensor, tf.Variable, tf.Operation))


def _as_value(value):
    """A returned tensor as a NumPy value (what a fetch would have given `after_run`)."""
    return value.numpy() if isinstance(value, tf.Tensor) else value


def _serialized_summaries(value) -> list:
    """The serialized `Summary` protos in a fetched summary value (bytes, or arrays/lists of bytes)."""
    if value is None:
        return []
    if isinstance(value, bytes):
        return [value]
    if isinstance(value, np.ndarray):
        return [item for item in value.reshape(-1) if isinstance(item, bytes)]
    if isinstance(value, (list, tuple)):
        return [item for element in value for item in _serialized_summaries(element)]
    return []
