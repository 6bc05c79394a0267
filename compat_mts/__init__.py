"""compat_mts: run TF1 `MonitoredTrainingSession` programs eagerly on TF2, and migrate them step by step.

The names are those of `tf.compat.v1.train` for this feature, with the same signatures and defaults,
plus the eager extras `set_global_step`, `reset_global_step`, `reset`, `STALE_GLOBAL_STEP`, `repeat_steps`, the
`keras` adapters, `estimator` (v1's `tf.estimator` on the eager session) and `parameter_server_strategy` (v1's
ps/worker programs on `tf.distribute.ParameterServerStrategy`). `compat_mts.hooks` re-exports the
built-in hooks under the same names; `compat_mts.distribute` (`compat_mts.deploy.distribute`) says what a
session does in a cluster.

Log lines go through TensorFlow's `tensorflow` logger (`tf.compat.v1.logging`) with v1's formats, so
`tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)` shows them where v1 programs showed theirs.

Names are imported on first use (PEP 562), so that `compat-mts check`, which needs no TensorFlow, starts
at once; `import compat_mts as mts; mts.MonitoredTrainingSession` reads exactly as an eager import.

Importing compat_mts imports no TensorFlow, but arranges for TensorFlow to start without its C++ start-up
lines on stderr (`compat_mts._quiet_start`; `COMPAT_MTS_SHOW_TF_STARTUP=1` keeps them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = '0.1.0'

_EXPORTS = {
    'STALE_GLOBAL_STEP': 'compat_mts.core.fetch',
    'create_global_step': 'compat_mts.core.global_step',
    'get_global_step': 'compat_mts.core.global_step',
    'get_or_create_global_step': 'compat_mts.core.global_step',
    'reset_global_step': 'compat_mts.core.global_step',
    'reset': 'compat_mts.core.program',
    'set_global_step': 'compat_mts.core.global_step',
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
    'ChiefSessionCreator': 'compat_mts.session.session_creators',
    'MonitoredSession': 'compat_mts.session.monitored_session',
    'SessionCreator': 'compat_mts.session.session_creators',
    'SingularMonitoredSession': 'compat_mts.session.monitored_session',
    'StepContext': 'compat_mts.session.monitored_session',
    'WorkerSessionCreator': 'compat_mts.session.session_creators',
    'Scaffold': 'compat_mts.session.scaffold',
    'Supervisor': 'compat_mts.supervisor',
    'HookCapabilities': 'compat_mts.session.session_run_hook',
    'SessionRunArgs': 'compat_mts.session.session_run_hook',
    'SessionRunContext': 'compat_mts.session.session_run_hook',
    'SessionRunHook': 'compat_mts.session.session_run_hook',
    'SessionRunValues': 'compat_mts.session.session_run_hook',
    'RepeatedStep': 'compat_mts.session.steps',
    'repeat_steps': 'compat_mts.session.steps',
    'USE_DEFAULT': 'compat_mts.session.training_session',
    'MonitoredTrainingSession': 'compat_mts.session.training_session',
    'wrap_graph': 'compat_mts.legacy',
    'ClusterError': 'compat_mts.deploy.distribute',
    'ParameterServerError': 'compat_mts.deploy.parameter_server',
    'parameter_server_strategy': 'compat_mts.deploy.parameter_server',
    'CheckpointMismatchError': 'compat_mts.checkpoint_dir.checkpoints',
    'DamagedCheckpointsError': 'compat_mts.checkpoint_dir.checkpoints',
    'CheckpointDirectoryInUseError': 'compat_mts.checkpoint_dir.checkpoints',
}
# The subpackages and modules that are public names of the package, and where each is.
_SUBMODULES = {
    'deploy': 'compat_mts.deploy',
    'distribute': 'compat_mts.deploy.distribute',
    'estimator': 'compat_mts.estimator',
    'hooks': 'compat_mts.hooks',
    'keras': 'compat_mts.keras',
    'legacy': 'compat_mts.legacy',
    'slim_learning': 'compat_mts.slim_learning',
}

# TensorFlow's C++ start-up lines stay off stderr (COMPAT_MTS_SHOW_TF_STARTUP=1 shows them): see _quiet_start.
importlib.import_module('compat_mts._quiet_start').install()
# TensorFlow's import-time objects leave the cyclic collector's generations (COMPAT_MTS_KEEP_GC=1 keeps them):
# a quicker exit, cheaper collections. See _frozen_imports.
importlib.import_module('compat_mts._frozen_imports').install()
# The modules' paths before the concept folders keep working for one release: see _moved.
importlib.import_module('compat_mts._moved').install()

__all__ = sorted(list(_EXPORTS) + list(_SUBMODULES))

if TYPE_CHECKING:  # What IDEs and type checkers see; `__getattr__` imports the same names on first use.
    from compat_mts.checkpoint_dir.checkpoints import (
        CheckpointDirectoryInUseError,
        CheckpointMismatchError,
        DamagedCheckpointsError,
    )
    from compat_mts.deploy.distribute import ClusterError
    from compat_mts.core.fetch import STALE_GLOBAL_STEP
    from compat_mts.core.global_step import (
        create_global_step,
        get_global_step,
        get_or_create_global_step,
        reset_global_step,
        set_global_step,
    )
    from compat_mts.hooks.checkpoint import CheckpointSaverHook, CheckpointSaverListener
    from compat_mts.hooks.feed_fn import FeedFnHook
    from compat_mts.hooks.final_ops import FinalOpsHook
    from compat_mts.hooks.logging import LoggingTensorHook
    from compat_mts.hooks.nan import NanLossDuringTrainingError, NanTensorHook
    from compat_mts.hooks.profiler import ProfilerHook
    from compat_mts.hooks.step_counter import StepCounterHook
    from compat_mts.hooks.stop import StopAtStepHook
    from compat_mts.hooks.summary import SummarySaverHook
    from compat_mts.hooks.timer import SecondOrStepTimer
    from compat_mts.hooks.waiter import GlobalStepWaiterHook
    from compat_mts.legacy import wrap_graph
    from compat_mts.session.monitored_session import MonitoredSession, SingularMonitoredSession, StepContext
    from compat_mts.deploy.parameter_server import parameter_server_strategy, ParameterServerError
    from compat_mts.core.program import reset
    from compat_mts.session.scaffold import Scaffold
    from compat_mts.supervisor import Supervisor
    from compat_mts.session.session_creators import ChiefSessionCreator, SessionCreator, WorkerSessionCreator
    from compat_mts.session.session_run_hook import (
        HookCapabilities,
        SessionRunArgs,
        SessionRunContext,
        SessionRunHook,
        SessionRunValues,
    )
    from compat_mts.session.steps import repeat_steps, RepeatedStep
    from compat_mts.session.training_session import MonitoredTrainingSession, USE_DEFAULT
    from compat_mts.deploy import distribute
    from compat_mts import deploy, estimator, hooks, keras, legacy, slim_learning


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = importlib.import_module(_SUBMODULES[name])
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'compat_mts' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
