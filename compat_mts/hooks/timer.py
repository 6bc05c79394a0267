"""`SecondOrStepTimer`: the trigger arithmetic every periodic hook shares, exactly as v1 has it."""

from __future__ import annotations

import math
import time

import tensorflow as tf

from compat_mts.core import validation


class SecondOrStepTimer(tf.compat.v1.train.SecondOrStepTimer):
    """Triggers once every `every_secs` seconds or every `every_steps` steps (exactly one of them).

    The arithmetic is v1's: the first call triggers; a step equal to the last triggered one never
    triggers; otherwise it triggers once `time.time() >= last_time + every_secs` or
    `step >= last_step + every_steps`. Time is read through the `time` module at call time, so
    `every_secs=inf` triggers the first time only (v1's arithmetic). It subclasses
    `tf.compat.v1.train.SecondOrStepTimer`, so v1 code that checks `isinstance` accepts it.

    Args:
      every_secs: Trigger once at least `every_secs` seconds have passed since the last trigger, or None.
      every_steps: Trigger once the step is at least `every_steps` past the last triggered one, or None.
        Exactly one of the two is given.

    Example: the first call triggers, then every tenth step past the last trigger, whatever was skipped.

    >>> timer = SecondOrStepTimer(every_steps=10)
    >>> timer.should_trigger_for_step(0), timer.update_last_triggered_step(0)
    (True, (None, None))
    >>> [step for step in (5, 9, 10, 13) if timer.should_trigger_for_step(step)]
    [10, 13]
    >>> timer.update_last_triggered_step(13)[1]  # The steps since the last trigger.
    13
    >>> timer.should_trigger_for_step(22), timer.should_trigger_for_step(23)
    (False, True)

    Raises:
      ValueError: both or neither of `every_secs` and `every_steps` are given (v1's messages), or
        `every_secs` is NaN.
      TypeError: `every_secs` is not a number or `every_steps` not an integer (v1 failed at the first
        trigger instead).
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        # Replaces v1's __init__ rather than extending it: that one sets only what this one sets.
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if every_secs is None and every_steps is None:
            raise ValueError('Either every_secs or every_steps should be provided.')
        if every_secs is not None and every_steps is not None:
            raise ValueError('Can not provide both every_secs and every_steps.')
        validation.check_seconds(every_secs, 'every_secs', infinity='triggers the first time only')
        validation.check_integer(every_steps, 'every_steps')

    def reset(self) -> None:
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_triggered_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step: int):
        """Records `step` and the time; returns `(elapsed_secs, elapsed_steps)`, `(None, None)` at first."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step

    def next_trigger(self, steps_ahead: int = 0) -> tuple[float, float] | None:
        """When `should_trigger_for_step(step + steps_ahead)` may next be True: `(step, time)`, or None for now.

        It is False for every `step` below the first element while `time.time()` is below the second (either
        may be `inf`): what a hook that offers `idle_until` (compat_mts.session.session_run_hook) promises. Before the
        first trigger it may be True at once, hence None.
        """
        if self._last_triggered_step is None:
            return None
        if self._every_steps is not None:
            return (self._last_triggered_step + self._every_steps - steps_ahead, math.inf)
        return (math.inf, self._last_triggered_time + self._every_secs)


class NeverTriggerTimer:
    """A timer that never triggers (v1's `NeverTriggerTimer`)."""

    def reset(self) -> None:
        pass

    def should_trigger_for_step(self, step: int) -> bool:
        del step
        return False

    def update_last_triggered_step(self, step: int):
        del step
        return (None, None)

    def last_triggered_step(self) -> None:
        return None
