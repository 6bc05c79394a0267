"""Work of one long script shared by forked processes: `compat-mts upgrade` renames and edits a 120,000-line file
in parts that do not depend on each other (pieces of statements), one process per core.

The processes are forked, so each starts with the caller's state (the script's syntax tree, libcst and the rename
tables loaded) and only the parts' results travel back. Forking is used only where it is safe and available:
not once TensorFlow runs in the process (it is not fork-safe), and not on a system without `fork`.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from typing import Callable, Sequence, TypeVar

_Item = TypeVar('_Item')
_Result = TypeVar('_Result')

MIN_LINES = 3_000  # A script shorter than this is upgraded in one process: forking would cost more than it saves.

# The function of the current `forked_map`, which its forked processes inherit (a closure cannot be pickled).
_job: Callable | None = None


def usable_processes() -> int:
    """How many processes can share a script's work here: the cores this process may run on, or 1 where it
    cannot fork (TensorFlow imported, or no `fork`)."""
    if 'tensorflow' in sys.modules or 'fork' not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)


def pool(processes: int, collect: bool = False) -> concurrent.futures.ProcessPoolExecutor:
    """A pool of `processes` forked processes that end with this one, even when it is killed (`kill -9`, the
    OOM killer): a worker left behind would wait for work forever.

    The workers start with Python's cyclic collector as it is here (paused while a long file is upgraded: the
    parts of its work need it no more than the whole did); with `collect`, on: workers that take many files
    each, which pause it per file, then collect what each file's work left between files.
    """
    context = multiprocessing.get_context('fork')
    return concurrent.futures.ProcessPoolExecutor(
        processes, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), collect)
    )


_PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent ends.


def _start_worker(parent: int, collect: bool) -> None:
    """In a worker: the collector on with `collect`; the worker ends with its parent."""
    if collect:
        gc.enable()
    _end_with_parent(parent)


def _end_with_parent(parent: int) -> None:
    """In a worker: asks Linux for SIGKILL when the parent ends (elsewhere the pool's own shutdown stands), and
    ends at once if the parent ended before it asked."""
    if sys.platform.startswith('linux'):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _run(index: int):
    return _job(index)  # type: ignore[misc]


def forked_map(function: Callable[[_Item], _Result], items: Sequence[_Item], processes: int) -> list[_Result]:
    """`[function(item) for item in items]`, computed by `processes` forked processes (in this one when
    `processes` is 1 or there is one item). Each result must pickle; an exception of `function` is raised here.
    """
    global _job
    if processes <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    if _job is not None:
        raise RuntimeError('forked_map is not reentrant')
    _job = lambda index: function(items[index])  # noqa: E731
    try:
        with pool(min(processes, len(items))) as workers:
            return list(workers.map(_run, range(len(items))))
    finally:
        _job = None
