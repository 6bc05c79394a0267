"""compat_mts: run TF1 `MonitoredTrainingSession` programs eagerly on TF2, and migrate them step by step.

The names are those of `tf.compat.v1.train` for this feature, with the same signatures and defaults,
plus the eager extras `set_global_step`, `reset_global_step`, `STALE_GLOBAL_STEP` and the `keras`
adapters.
"""

from compat_mts.fetches import STALE_GLOBAL_STEP
from compat_mts.global_step import (create_global_step, get_global_step, get_or_create_global_step,
                                    reset_global_step, set_global_step)
from compat_mts.hooks.checkpoint import CheckpointSaverHook, CheckpointSaverListener
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.hooks.stop import StopAtStepHook
from compat_mts.hooks.summary import SummarySaverHook
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.monitored_session import (ChiefSessionCreator, MonitoredSession, SingularMonitoredSession,
                                          StepContext, WorkerSessionCreator)
from compat_mts.scaffold import Scaffold
from compat_mts.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from compat_mts.training_session import USE_DEFAULT, MonitoredTrainingSession

__version__ = '0.1.0'
