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

import contextlib
import gc
import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

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


class _FreezingLoader(importlib.abc.Loader):
    """TensorFlow's loader (the quiet start's, when it has one), with `gc.freeze()` once the import is done."""

    def __init__(self, loader: importlib.abc.Loader):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        gc.freeze()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _FreezeAfterTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` through the finders after it, once, and gives its loader a `_FreezingLoader`."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != 'tensorflow':
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        for finder in list(sys.meta_path):
            find_spec = getattr(finder, 'find_spec', None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _FreezingLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Freezes the objects of TensorFlow's import when it ends, or now if it has (see the module docstring)."""
    if os.environ.get(OPT_OUT_VARIABLE, '').strip().lower() in ('1', 'true', 'yes'):
        return
    if 'tensorflow' in sys.modules:
        gc.freeze()
    elif not any(isinstance(finder, _FreezeAfterTensorFlowImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FreezeAfterTensorFlowImport())
