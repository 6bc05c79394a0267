"""Preemption: SIGTERM during training ends it after the current step, with a checkpoint, and exit code 42.

A scheduler that preempts a job sends SIGTERM and, after a grace period, SIGKILL. v1 left SIGTERM to
Python's default (the process dies at once; the steps since the last checkpoint are lost). TF2's answer is
`tf.distribute.experimental.PreemptionCheckpointHandler`: save at an agreed step, then `sys.exit(42)`.
compat_mts gives every session that saves checkpoints that behaviour, without a per-step cost:

- while such a session is open, SIGTERM only sets a flag (a signal handler must not do more); the run in
  progress completes, and `should_stop()` becomes True;
- in a multi-worker cluster the flag joins the stop agreement every run already has, so every worker stops
  after the same run, even those that got no signal;
- the session closes as after any stop: `CheckpointSaverHook.end()` saves the checkpoint of the current
  global step (every worker takes part, only the chief writes it where it is visible), summaries are
  flushed; then `close()` raises `SystemExit(PREEMPTION_EXIT_CODE)`, so the process exits with 42, the code
  `PreemptionCheckpointHandler` uses and cluster managers restart on. The next start resumes from that
  checkpoint.

Why not `PreemptionCheckpointHandler` itself: it keeps its cluster-wide state under fixed coordination-service
keys, so one handler serves one training loop per process lifetime (the first handler's shutdown makes every
later one stop listening), it needs a call before every step, and it adds its own counter variable to the
program's checkpoint. A compat_mts program may create many sessions, and its sessions already agree on when
to stop.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

from tensorflow.compat.v1 import logging

PREEMPTION_EXIT_CODE = 42
"""The exit code of a process whose training was preempted by SIGTERM after its checkpoint was saved."""


class SigtermWatcher:
    """Calls `on_signal()` when the process gets SIGTERM, between `install()` and `uninstall()`.

    Python runs signal handlers in the main thread only, so a session created in another thread leaves
    SIGTERM alone (`install()` returns False).
    """

    def __init__(self, on_signal: Callable[[], None]):
        self._on_signal = on_signal
        self._previous = None
        self._installed = False

    def install(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            logging.info('The session was created outside the main thread; SIGTERM is not watched.')
            return False
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        self._installed = True
        return True

    def uninstall(self) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self._previous is None else self._previous)
            self._installed = False

    def _handle(self, signum, frame) -> None:
        del signum, frame
        self._on_signal()
