"""TensorFlow's import-time objects out of the cyclic garbage collector's way: a quick exit, cheaper collections.

`import tensorflow` leaves about 350,000 objects the collector tracks (modules, functions, classes, their
dicts), and none of them ever becomes garbage. Python's full collections walk them all: those at the
interpreter's exit made a TensorFlow 2.21 program end 0.8 to 1.4 s after its last line (0.1 to 0.2 s with them
frozen, benchmarks/RESULTS.md), and every full collection during training walked them again. So when TensorFlow's
import ends, `gc.freeze()` moves every object the process has by then into the collector's permanent
generation, as `gc.freeze`'s documentation suggests for objects made once at start-up.

What it changes for a program:

- The objects made after TensorFlow's import (the program's models, sessions, writers, files) are collected
  as before, at the exit too: a file left open in a reference cycle is still flushed when the process ends.
- The objects that existed when TensorFlow's import ended are not collected when they form unreachable
  cycles; they are still freed by reference counting. With `import compat_mts` before `import tensorflow`,
  that moment is the end of TensorFlow's import; with TensorFlow imported first, it is `import compat_mts`.
- `gc.get_objects()` does not list frozen objects. compat_mts's own lookups among the process's objects
  (`live_objects`) include them.

`COMPAT_MTS_KEEP_GC=1` in the environment turns this off.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any, Callable

from compat_mts import _quiet_start

OPT_OUT_VARIABLE = 'COMPAT_MTS_KEEP_GC'


def live_objects() -> list[Any]:
    """Every object the collector tracks, the frozen ones included (`gc.get_objects()` leaves those out).

    The frozen objects are listed by unfreezing them for the call; the garbage made since the freeze is
    collected first (a collection that walks only it), so that freezing again keeps no garbage for good.
    """
    if not gc.get_freeze_count():
        return gc.get_objects()
    gc.collect()
    gc.unfreeze()
    try:
        return gc.get_objects()
    finally:
        gc.freeze()


class _FreezeAfterTensorFlowImport(_quiet_start.TensorFlowImportHook):
    """`gc.freeze()` once TensorFlow's import is done (the quiet start's included, when it has one)."""

    def around(self, run: Callable[[], None], module: Any) -> None:
        run()
        gc.freeze()


def install() -> None:
    """Freezes the objects of TensorFlow's import when it ends, or now if it has (see the module docstring)."""
    if os.environ.get(OPT_OUT_VARIABLE, '').strip().lower() in ('1', 'true', 'yes'):
        return
    if 'tensorflow' in sys.modules:
        gc.freeze()
    elif not any(isinstance(finder, _FreezeAfterTensorFlowImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FreezeAfterTensorFlowImport())
