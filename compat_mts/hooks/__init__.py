"""The built-in hooks, one family per module; every name is also re-exported from `compat_mts`.

`compat_mts.hooks.StopAtStepHook is compat_mts.StopAtStepHook`. Names are imported on first use (PEP 562),
as `compat_mts` imports its own.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    'CheckpointSaverHook': 'compat_mts.hooks.checkpoint',
    'CheckpointSaverListener': 'compat_mts.hooks.checkpoint',
    'FeedFnHook': 'compat_mts.hooks.feed_fn',
    'FinalOpsHook': 'compat_mts.hooks.final_ops',
    'LoggingTensorHook': 'compat_mts.hooks.logging',
    'NanLossDuringTrainingError': 'compat_mts.hooks.nan',
    'NanTensorHook': 'compat_mts.hooks.nan',
    'ProfilerHook': 'compat_mts.hooks.profiler',
    'StepCounterHook': 'compat_mts.hooks.step_counter',
    'StopAtStepHook': 'compat_mts.hooks.stop',
    'SummarySaverHook': 'compat_mts.hooks.summary',
    'SecondOrStepTimer': 'compat_mts.hooks.timer',
    'GlobalStepWaiterHook': 'compat_mts.hooks.waiter',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'compat_mts.hooks' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
