"""`StopAtStepHook`: requests a stop once the global step reaches a given step."""

from __future__ import annotations

import math

import tensorflow as tf

from compat_mts.deploy import deployment as deployment_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import validation
from compat_mts.session.session_run_hook import (
    STALE_GLOBAL_STEP_REQUEST,
    SessionRunHook,
    StepsPerRunMixin,
    global_step_after_run,
)

MAX_RUNS_WITHOUT_A_STEP = 1000
"""How many runs of a session the global step may stay where it was at creation before `StopAtStepHook` fails."""

# What a TF2 program does instead of v1's `minimize(global_step=...)`, which a TF2 optimizer does not take.
TF2_GLOBAL_STEP_FIX = (
    'A TF2 optimizer takes no global_step: increment it in the step, global_step.assign_add(1) (global_step = '
    "compat_mts.get_or_create_global_step()), or make the optimizer's counter the global step: "
    "compat_mts.set_global_step(optimizer.iterations, name='global_step')."
)


def _fetch_names(fetches) -> str:
    """The run's fetches by name (a function's, a tensor's), for a message."""
    leaves = tf.nest.flatten(fetches) if isinstance(fetches, (list, tuple, dict)) else [fetches]
    names = []
    for leaf in leaves:
        name = getattr(leaf, '__name__', None) or getattr(leaf, 'name', None)
        names.append(f'`{name}`' if isinstance(name, str) else repr(leaf))
    return ', '.join(names)


class StopAtStepHook(StepsPerRunMixin, SessionRunHook):
    """Hook that requests a stop at a specified step (v1's arguments, messages and arithmetic).

    `num_steps` counts from the global step at session creation, not at `begin()`, as in v1. A run
    that could reach `last_step` (the step read before the run, plus one) re-reads the global step
    and requests the stop only if it really got there.

    Args:
      num_steps: How many steps to run, counted from the global step at session creation: the stop
        comes at that step plus `num_steps`. An integer, or None to use `last_step`.
      last_step: The global step to stop at: the run that reaches it is the last. An integer, or None to
        use `num_steps`. Exactly one of the two is given.

    Example: `num_steps=5` in a session that restores a checkpoint of step 25 stops at step 30.

    >>> import tempfile
    >>> import compat_mts
    >>> directory = tempfile.mkdtemp()
    >>> def train(hook):
    ...     global_step = compat_mts.get_or_create_global_step()
    ...     with compat_mts.MonitoredTrainingSession(checkpoint_dir=directory, hooks=[hook]) as session:
    ...         restored = int(global_step)
    ...         while not session.should_stop():
    ...             _ = session.run(lambda: global_step.assign_add(1))
    ...     compat_mts.reset()  # The next program's global step is a variable of its own.
    ...     return restored, int(global_step)
    >>> train(compat_mts.StopAtStepHook(last_step=25))
    (0, 25)
    >>> train(compat_mts.StopAtStepHook(num_steps=5))
    (25, 30)

    Raises:
      ValueError: neither or both of `num_steps` and `last_step` are given (v1's messages).
      TypeError: either is not an integer.
      RuntimeError: from `after_run`, when the global step has not moved from its value at session creation in
        `MAX_RUNS_WITHOUT_A_STEP` runs: the step does not increment it, and the session would never stop (v1
        ran on forever). The message names the step and how a TF2 step increments the global step.
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError('One of num_steps or last_step must be specified.')
        if num_steps is not None and last_step is not None:
            raise ValueError('Only one of num_steps or last_step can be specified.')
        validation.check_integer(num_steps, 'num_steps')
        validation.check_integer(last_step, 'last_step')
        self._num_steps = num_steps
        self._last_step = last_step

    stops_at_last_step = (
        True  # The capability `repeat_steps` and HooksCallback ask for (compat_mts.session.session_run_hook).
    )

    @property
    def last_step(self) -> int | None:
        """The step to stop at; known once the session is created when `num_steps` was given."""
        return self._last_step

    def begin(self):
        self._global_step = global_step_lib.require_global_step('StopAtStepHook')
        # A parameter-server chief's run returns once its steps are scheduled: the step may not have moved yet.
        self._watches_for_a_stuck_step = deployment_lib.current().scheduler is None

    def after_create_session(self, session, coord):
        created_at = int(session.run(self._global_step))
        if self._last_step is None:
            self._last_step = created_at + self._num_steps
        # Counted until the global step first moves; None once it has (or when not watched).
        self._created_at = created_at
        self._runs_without_a_step = 0 if self._watches_for_a_stuck_step else None

    def before_run(self, run_context):
        return STALE_GLOBAL_STEP_REQUEST

    def after_run(self, run_context, run_values):
        if run_values.results + self._steps_per_run >= self._last_step:
            if global_step_after_run(run_context, self._global_step) >= self._last_step:
                run_context.request_stop()
        elif self._runs_without_a_step is not None:
            self._count_a_run_without_a_step(run_context, run_values.results)

    def _count_a_run_without_a_step(self, run_context, stale_global_step: int) -> None:
        if stale_global_step != self._created_at:
            self._runs_without_a_step = None
            return
        self._runs_without_a_step += 1
        if self._runs_without_a_step < MAX_RUNS_WITHOUT_A_STEP:
            return
        step = _fetch_names(run_context.original_args.fetches)
        raise RuntimeError(
            f'StopAtStepHook stops at global step {self._last_step}, and the global step is still '
            f'{stale_global_step} after {MAX_RUNS_WITHOUT_A_STEP} runs of {step}: the step does not increase the '
            'global step, so the session would never stop. (v1: "You could increase the global step by passing '
            'tf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize.") ' + TF2_GLOBAL_STEP_FIX
        )

    # No clock, but `before_run` only asks for the stale step: the session may decide after the run whether to call it.
    reads_clock_after_run = True
    leaves_global_step = True  # Its after_run reads the global step only (see HookDriver.after_run).

    def idle_until(self):
        """Idle until a run may reach `last_step` (`compat_mts.session.session_run_hook.HookCapabilities`)."""
        return (self._last_step - self._steps_per_run, math.inf)
