"""`compat_mts.estimator.experimental`: what v1 had as `tf.estimator.experimental` (and its `compat.v1` twin).

The early-stopping hooks (`compat_mts.estimator.early_stopping`), `InMemoryEvaluatorHook`
(`compat_mts.estimator.in_memory_evaluator`), `build_raw_supervised_input_receiver_fn`
(`compat_mts.estimator.export`), `call_logit_fn` (`compat_mts.estimator.model_fn`) and the logit-function
builders (`compat_mts.estimator.logit_fns`), `KMeans` (`compat_mts.estimator.kmeans`), `LinearSDCA`
(`compat_mts.estimator.linear_sdca`), `RNNClassifier` and `RNNEstimator` (`compat_mts.estimator.rnn`).
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
