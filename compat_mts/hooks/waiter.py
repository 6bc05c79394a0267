"""`GlobalStepWaiterHook`: holds a worker back until the global step reaches a given step."""

from __future__ import annotations

import time

from tensorflow.compat.v1 import logging

from compat_mts.core import global_step as global_step_lib
from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunHook

_POLL_SECS = 0.5
_PROGRESS_LOG_STEPS = 1000


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches `wait_until_step` (v1's polling and log lines).

    The first `before_run` of a session logs "Waiting for global step N before starting training.",
    then reads the global step through the raw session every 0.5 seconds (`time.sleep`, read through
    the `time` module) until it is at least `wait_until_step`, logging the current step each time it
    has moved by more than 1000 since the last such line. It never waits again in that session;
    `wait_until_step <= 0` never waits. It was made for v1's asynchronous parameter-server training,
    where the chief moves a shared global step; eagerly the step moves when another thread or process
    assigns it (or the session restored a checkpoint at or past it). In synchronous multi-worker
    training (`MultiWorkerMirroredStrategy`) every worker steps together, so waiting would never end:
    give non-chief workers `wait_until_step=0` there.

    Args:
      wait_until_step: The global step to wait for before the first run, an integer; 0 or less never
        waits.

    Example:

    ```python
    hook = compat_mts.GlobalStepWaiterHook(wait_until_step=int(10 * math.log(task_id + 1)))
    ```

    Raises:
      TypeError: `wait_until_step` is not an integer.
    """

    def __init__(self, wait_until_step: int):
        validation.check_integer(wait_until_step, 'wait_until_step', optional=False)
        self._wait_until_step = int(wait_until_step)

    def begin(self):
        self._worker_is_started = False
        self._global_step = global_step_lib.require_global_step('_GlobalStepWaiterHook')

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info('Waiting for global step %d before starting training.', self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = int(run_context.session.run(self._global_step))
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > _PROGRESS_LOG_STEPS:
                logging.info(
                    'Waiting for global step %d before starting training. Current step is %d.',
                    self._wait_until_step,
                    current_step,
                )
                last_logged_step = current_step
            time.sleep(_POLL_SECS)
