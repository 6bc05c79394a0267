"""`StopAtStepHook`: requests a stop once the global step reaches a given step."""

from __future__ import annotations

import math

from compat_mts import global_step as global_step_lib
from compat_mts import validation
from compat_mts.session_run_hook import STALE_GLOBAL_STEP_REQUEST, SessionRunHook, StepsPerRunMixin


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

    Example:

    ```python
    hooks = [compat_mts.StopAtStepHook(last_step=1000)]
    ```

    Raises:
      ValueError: neither or both of `num_steps` and `last_step` are given (v1's messages).
      TypeError: either is not an integer.
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

    stops_at_last_step = True  # The capability `repeat_steps` and HooksCallback ask for (compat_mts.session_run_hook).

    @property
    def last_step(self) -> int | None:
        """The step to stop at; known once the session is created when `num_steps` was given."""
        return self._last_step

    def begin(self):
        self._global_step = global_step_lib.require_global_step('StopAtStepHook')

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context):
        return STALE_GLOBAL_STEP_REQUEST

    def after_run(self, run_context, run_values):
        if run_values.results + self._steps_per_run >= self._last_step:
            if run_context.session.run(self._global_step) >= self._last_step:
                run_context.request_stop()

    # No clock, but `before_run` only asks for the stale step: the session may decide after the run whether to call it.
    reads_clock_after_run = True

    def idle_until(self):
        """Idle until a run may reach `last_step` (`compat_mts.session_run_hook.HookCapabilities`)."""
        return (self._last_step - self._steps_per_run, math.inf)
