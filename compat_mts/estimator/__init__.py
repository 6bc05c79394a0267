"""`compat_mts.estimator`: TF1 `tf.estimator` programs on the eager session; change `tf.estimator` to this.

`Estimator`, `EstimatorSpec`, `ModeKeys`, `RunConfig`, `TrainSpec`, `EvalSpec`, `train_and_evaluate`,
`WarmStartSettings`, the exporters and `export` keep v1's names, signatures, defaults and messages; the
session hooks `tf.estimator` re-exported are compat_mts's. Premade Estimators (`DNNClassifier`, ...) are not
here: their successor is Keras (migration_guide/estimator.md).
"""

from compat_mts.estimator import export
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
    'CheckpointSaverHook', 'CheckpointSaverListener', 'Estimator', 'EstimatorSpec', 'EvalSpec', 'Exporter',
    'FeedFnHook', 'FinalExporter', 'FinalOpsHook', 'GlobalStepWaiterHook', 'LatestExporter', 'LoggingTensorHook',
    'ModeKeys', 'NanLossDuringTrainingError', 'NanTensorHook', 'ProfilerHook', 'RunConfig', 'SecondOrStepTimer',
    'SessionRunArgs', 'SessionRunContext', 'SessionRunHook', 'SessionRunValues', 'StepCounterHook',
    'StopAtStepHook', 'SummarySaverHook', 'TrainSpec', 'VocabInfo', 'WarmStartSettings', 'export',
    'train_and_evaluate',
]

_KERAS_INSTEAD = {
    'BaselineClassifier': 'a Keras model with one bias (tf.keras.layers.Dense on constant input) and model.fit',
    'BaselineEstimator': 'a Keras model with one bias and model.fit',
    'BaselineRegressor': 'a Keras model with one bias and model.fit',
    'BoostedTreesClassifier': 'TensorFlow Decision Forests (tfdf.keras.GradientBoostedTreesModel)',
    'BoostedTreesEstimator': 'TensorFlow Decision Forests (tfdf.keras.GradientBoostedTreesModel)',
    'BoostedTreesRegressor': 'TensorFlow Decision Forests (tfdf.keras.GradientBoostedTreesModel)',
    'DNNClassifier': 'tf.keras.Sequential of Dense layers ending in Dense(n_classes), compiled with '
                     'SparseCategoricalCrossentropy(from_logits=True), and model.fit',
    'DNNEstimator': 'tf.keras.Sequential of Dense layers and model.fit',
    'DNNRegressor': 'tf.keras.Sequential of Dense layers ending in Dense(1), compiled with loss="mse", and model.fit',
    'DNNLinearCombinedClassifier': 'a Keras functional model adding a linear and a deep branch, and model.fit',
    'DNNLinearCombinedEstimator': 'a Keras functional model adding a linear and a deep branch, and model.fit',
    'DNNLinearCombinedRegressor': 'a Keras functional model adding a linear and a deep branch, and model.fit',
    'LinearClassifier': 'tf.keras.Sequential([tf.keras.layers.Dense(n_classes)]) and model.fit',
    'LinearEstimator': 'tf.keras.Sequential([tf.keras.layers.Dense(units)]) and model.fit',
    'LinearRegressor': 'tf.keras.Sequential([tf.keras.layers.Dense(1)]) with loss="mse" and model.fit',
    'BinaryClassHead': 'a Keras loss (BinaryCrossentropy) and metrics',
    'MultiClassHead': 'a Keras loss (SparseCategoricalCrossentropy) and metrics',
    'MultiHead': 'a Keras model with several outputs and losses',
    'MultiLabelHead': 'a Keras loss (BinaryCrossentropy over labels) and metrics',
    'PoissonRegressionHead': 'a Keras loss (Poisson) and metrics',
    'LogisticRegressionHead': 'a Keras loss (BinaryCrossentropy) and metrics',
    'RegressionHead': 'a Keras loss (MeanSquaredError) and metrics',
    'BestExporter': 'LatestExporter, or keras.callbacks.ModelCheckpoint(save_best_only=True)',
}


def __getattr__(name: str):
    if name in _KERAS_INSTEAD:
        raise AttributeError(
            f'compat_mts.estimator.{name} is not provided: compat_mts.estimator runs custom model_fn Estimators '
            f'only, and the premade Estimators and heads left TensorFlow with tf.estimator. Use Keras instead: '
            f'{_KERAS_INSTEAD[name]}. migration_guide/estimator.md shows the move, stage by stage.')
    raise AttributeError(f"module 'compat_mts.estimator' has no attribute {name!r}")
