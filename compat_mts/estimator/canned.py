"""The premade Estimators on `tf.feature_column`, by the names of their families' modules.

`dnn`, `linear`, `dnn_linear_combined` and `baseline` hold them, as TF 2.15's `canned/` did; this module keeps
`compat_mts.estimator.canned.DNNClassifier`, ... importable.
"""

from compat_mts.estimator.baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
from compat_mts.estimator.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from compat_mts.estimator.dnn_linear_combined import (
    DNNLinearCombinedClassifier,
    DNNLinearCombinedEstimator,
    DNNLinearCombinedRegressor,
)
from compat_mts.estimator.linear import LinearClassifier, LinearEstimator, LinearRegressor

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
]
