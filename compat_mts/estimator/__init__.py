"""`compat_mts.estimator`: TF1 `tf.estimator` programs on the eager session; change `tf.estimator` to this.

`Estimator`, `EstimatorSpec`, `ModeKeys`, `RunConfig`, `TrainSpec`, `EvalSpec`, `train_and_evaluate`,
`WarmStartSettings`, the exporters (`BestExporter` too), `export`, `add_metrics`, `classifier_parse_example_spec`,
`regressor_parse_example_spec`, `inputs` (`numpy_input_fn`, `pandas_input_fn`) and `experimental` (the
early-stopping hooks, `InMemoryEvaluatorHook`, the logit-function builders, `KMeans`) keep v1's names, signatures,
defaults and messages; the session hooks `tf.estimator` re-exported are compat_mts's. The premade Estimators on
`tf.feature_column` (`DNNClassifier`, `DNNRegressor`, `LinearClassifier`, `LinearRegressor`,
`DNNLinearCombinedClassifier`, `DNNLinearCombinedRegressor`, `BaselineClassifier`, `BaselineRegressor`) and those
taking a head (`DNNEstimator`, `LinearEstimator`, `DNNLinearCombinedEstimator`, `BaselineEstimator`) are TF 2.15's,
with its checkpoint names; the heads (`Head`, `BinaryClassHead`, `MultiClassHead`, `MultiLabelHead`,
`RegressionHead`, `PoissonRegressionHead`, `LogisticRegressionHead`, `MultiHead`, in `head`) are TF 2.15's too. The
names in `_NOT_PROVIDED` (boosted trees) raise an AttributeError naming their successor
(migration_guide/estimator.md). `tpu` is v1's `tf.compat.v1.estimator.tpu` (`TPUEstimator` with `use_tpu=False`,
`experimental.EmbeddingConfigSpec`).
"""

from compat_mts import premade_estimators
from compat_mts.estimator import experimental
from compat_mts.estimator import export
from compat_mts.estimator import inputs
from compat_mts.estimator import tpu
from compat_mts.estimator.baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
from compat_mts.estimator.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from compat_mts.estimator.dnn_linear_combined import (
    DNNLinearCombinedClassifier,
    DNNLinearCombinedEstimator,
    DNNLinearCombinedRegressor,
)
from compat_mts.estimator.estimator import Estimator, VocabInfo, WarmStartSettings
from compat_mts.estimator.head import (
    BinaryClassHead,
    Head,
    LogisticRegressionHead,
    MultiClassHead,
    MultiHead,
    MultiLabelHead,
    PoissonRegressionHead,
    RegressionHead,
)
from compat_mts.estimator.export.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from compat_mts.estimator.extenders import add_metrics
from compat_mts.estimator.linear import LinearClassifier, LinearEstimator, LinearRegressor
from compat_mts.estimator.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec
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
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues

__all__ = [
    'BaselineClassifier',
    'BaselineEstimator',
    'BaselineRegressor',
    'DNNClassifier',
    'DNNEstimator',
    'DNNLinearCombinedClassifier',
    'DNNLinearCombinedEstimator',
    'DNNLinearCombinedRegressor',
    'DNNRegressor',
    'LinearClassifier',
    'LinearEstimator',
    'LinearRegressor',
    'BestExporter',
    'BinaryClassHead',
    'Head',
    'LogisticRegressionHead',
    'MultiClassHead',
    'MultiHead',
    'MultiLabelHead',
    'PoissonRegressionHead',
    'RegressionHead',
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
    'add_metrics',
    'classifier_parse_example_spec',
    'experimental',
    'export',
    'inputs',
    'regressor_parse_example_spec',
    'tpu',
    'train_and_evaluate',
]

# What tf.estimator had and compat_mts.estimator does not, with the successor to use instead.
_NOT_PROVIDED = premade_estimators.NOT_PROVIDED


def __getattr__(name: str):
    if name in _NOT_PROVIDED:
        raise AttributeError(
            f'compat_mts.estimator.{name} is not provided; use instead: {_NOT_PROVIDED[name]}. '
            'migration_guide/estimator.md shows the move, stage by stage.'
        )
    raise AttributeError(f"module 'compat_mts.estimator' has no attribute {name!r}")
