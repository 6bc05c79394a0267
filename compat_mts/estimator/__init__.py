"""`compat_mts.estimator`: TF1 `tf.estimator` programs on the eager session; change `tf.estimator` to this.

`Estimator`, `EstimatorSpec`, `ModeKeys`, `RunConfig`, `TrainSpec`, `EvalSpec`, `train_and_evaluate`,
`WarmStartSettings`, the exporters and `export` keep v1's names, signatures, defaults and messages; the
session hooks `tf.estimator` re-exported are compat_mts's. `tpu` is v1's `tf.compat.v1.estimator.tpu`
(`TPUEstimator` with `use_tpu=False`). Premade Estimators (`DNNClassifier`, ...) are not
here: their successor is Keras (migration_guide/estimator.md).
"""

from compat_mts.premade_estimators import PREMADE_ESTIMATORS
from compat_mts.estimator import export
from compat_mts.estimator import tpu
from compat_mts.estimator.estimator import Estimator, VocabInfo, WarmStartSettings
from compat_mts.estimator.exporter import Exporter, FinalExporter, LatestExporter
from compat_mts.estimator.model_fn import EstimatorSpec, ModeKeys
from compat_mts.estimator.run_config import RunConfig
from compat_mts.estimator.training import EvalSpec, TrainSpec, train_and_evaluate
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
from compat_mts.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues

__all__ = [
    'CheckpointSaverHook',
    'CheckpointSaverListener',
    'Estimator',
    'EstimatorSpec',
    'EvalSpec',
    'Exporter',
    'FeedFnHook',
    'FinalExporter',
    'FinalOpsHook',
    'GlobalStepWaiterHook',
    'LatestExporter',
    'LoggingTensorHook',
    'ModeKeys',
    'NanLossDuringTrainingError',
    'NanTensorHook',
    'ProfilerHook',
    'RunConfig',
    'SecondOrStepTimer',
    'SessionRunArgs',
    'SessionRunContext',
    'SessionRunHook',
    'SessionRunValues',
    'StepCounterHook',
    'StopAtStepHook',
    'SummarySaverHook',
    'TrainSpec',
    'VocabInfo',
    'WarmStartSettings',
    'export',
    'tpu',
    'train_and_evaluate',
]

# The premade Estimators and heads, which compat_mts.estimator leaves to Keras (shared with `compat-mts check`).
_KERAS_INSTEAD = PREMADE_ESTIMATORS


def __getattr__(name: str):
    if name in _KERAS_INSTEAD:
        raise AttributeError(
            f'compat_mts.estimator.{name} is not provided: compat_mts.estimator runs custom model_fn Estimators '
            f'only, and the premade Estimators and heads left TensorFlow with tf.estimator. Use Keras instead: '
            f'{_KERAS_INSTEAD[name]}. migration_guide/estimator.md shows the move, stage by stage.'
        )
    raise AttributeError(f"module 'compat_mts.estimator' has no attribute {name!r}")
