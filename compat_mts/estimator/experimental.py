"""`compat_mts.estimator.experimental`: what v1 had as `tf.estimator.experimental` (and its `compat.v1` twin).

The early-stopping hooks (`compat_mts.estimator.early_stopping`), `InMemoryEvaluatorHook`
(`compat_mts.estimator.in_memory_evaluator`), `build_raw_supervised_input_receiver_fn`
(`compat_mts.estimator.export`), `call_logit_fn` (`compat_mts.estimator.model_fn`) and the logit-function
builders (`compat_mts.estimator.logit_fns`), `KMeans` (`compat_mts.estimator.kmeans`). `LinearSDCA`,
`RNNClassifier` and `RNNEstimator` are not provided (migration_guide/estimator.md).
"""

from compat_mts.estimator.early_stopping import (
    make_early_stopping_hook,
    make_stop_at_checkpoint_step_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from compat_mts.estimator.export import build_raw_supervised_input_receiver_fn
from compat_mts.estimator.in_memory_evaluator import InMemoryEvaluatorHook
from compat_mts.estimator.kmeans import KMeans
from compat_mts.estimator.linear_sdca import LinearSDCA
from compat_mts.estimator.logit_fns import dnn_logit_fn_builder, linear_logit_fn_builder
from compat_mts.estimator.model_fn import call_logit_fn
from compat_mts.estimator.rnn import RNNClassifier, RNNEstimator

__all__ = [
    'InMemoryEvaluatorHook',
    'KMeans',
    'LinearSDCA',
    'RNNClassifier',
    'RNNEstimator',
    'build_raw_supervised_input_receiver_fn',
    'call_logit_fn',
    'dnn_logit_fn_builder',
    'linear_logit_fn_builder',
    'make_early_stopping_hook',
    'make_stop_at_checkpoint_step_hook',
    'stop_if_higher_hook',
    'stop_if_lower_hook',
    'stop_if_no_decrease_hook',
    'stop_if_no_increase_hook',
]

# What v1's experimental namespace had and this one does not, with what to use instead.
_NOT_PROVIDED = {
    'LinearSDCA': 'LinearClassifier or LinearRegressor with optimizer="Ftrl" (their default), or a Keras linear '
    'model. TF 2.21 still has the SDCA kernels (tf.raw_ops.SdcaOptimizerV2), but compat_mts does not build '
    "tf.estimator's SDCA graph (its example-state hash table and the kernel's loop) yet",
    'RNNClassifier': 'an Estimator whose model_fn runs a tf-keras recurrent layer (TF_USE_LEGACY_KERAS=1) on '
    "tf.compat.v1.feature_column.sequence_* columns, or a Keras model; compat_mts does not build TF 2.15's RNN "
    'Estimators yet',
    'RNNEstimator': 'an Estimator whose model_fn runs a tf-keras recurrent layer (TF_USE_LEGACY_KERAS=1) on '
    "tf.compat.v1.feature_column.sequence_* columns, or a Keras model; compat_mts does not build TF 2.15's RNN "
    'Estimators yet',
}


def __getattr__(name: str):
    if name in _NOT_PROVIDED:
        raise AttributeError(
            f'compat_mts.estimator.experimental.{name} is not provided; use instead: {_NOT_PROVIDED[name]} '
            '(migration_guide/estimator.md).'
        )
    raise AttributeError(f"module 'compat_mts.estimator.experimental' has no attribute {name!r}")
