"""`compat_mts.estimator.experimental`: what v1 had as `tf.estimator.experimental` (and its `compat.v1` twin).

The early-stopping hooks (`compat_mts.estimator.early_stopping`), `InMemoryEvaluatorHook`
(`compat_mts.estimator.in_memory_evaluator`), `build_raw_supervised_input_receiver_fn`
(`compat_mts.estimator.export`) and `call_logit_fn` (`compat_mts.estimator.model_fn`). The experimental
Estimators (`LinearSDCA`, `RNNClassifier`, `RNNEstimator`, `KMeans`) and the logit-function builders are
not provided (migration_guide/estimator.md).
"""

from compat_mts.estimator.early_stopping import (
    make_early_stopping_hook,
    make_stop_at_checkpoint_step_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from compat_mts.estimator.in_memory_evaluator import InMemoryEvaluatorHook

__all__ = [
    'InMemoryEvaluatorHook',
    'make_early_stopping_hook',
    'make_stop_at_checkpoint_step_hook',
    'stop_if_higher_hook',
    'stop_if_lower_hook',
    'stop_if_no_decrease_hook',
    'stop_if_no_increase_hook',
]
