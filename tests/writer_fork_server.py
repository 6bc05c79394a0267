"""A fork server of writer processes for the kill -9 soak test: TensorFlow is imported once, here.

Importing TensorFlow takes about five seconds of CPU; twenty restarts of a writer would spend most of the
test there. This process imports it (and compat_mts, and the test model) without starting TensorFlow's
runtime, then forks one writer per `start` line read on stdin. Each writer is a real process of its own,
which the test kills with SIGKILL: it runs `tests/train_until.py`'s program on DIRECTORY until LAST_STEP,
printing `restored <step> <w>` and `step <n>` lines (and `done` when it finishes). The server reaps each
writer as it ends and prints `ended <pid> <exit status>`; it exits when stdin closes.

Usage: writer_fork_server.py DIRECTORY LAST_STEP
"""

from __future__ import annotations

import os
import sys
import traceback

import compat_mts  # noqa: F401  (imported here, once, for the writers)
from compat_mts.session import monitored_session, training_session  # noqa: F401
from tests import train_until


def main(directory: str, last_step: int) -> None:
    print('ready', flush=True)
    for command in sys.stdin:
        if command.strip() != 'start':
            continue
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                print('writer', os.getpid(), flush=True)
                train_until.main(directory, last_step)
                print('done', flush=True)
            except BaseException:  # Reported on stderr and in the exit status.
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        print('ended', pid, status, flush=True)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
