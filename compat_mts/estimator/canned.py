"""The premade Estimators on `tf.feature_column`, by the names of their families' modules.

`dnn`, `linear`, `dnn_linear_combined` and `baseline` hold them, as TF 2.15's `canned/` did; this module keeps
`compat_mts.estimator.canned.DNNClassifier`, ... importable.
"""

from compat_mts.estimator.baseline import BaselineClassifier, BaselineRegressor
from compat_mts.estimator.dnn import DNNClassifier, DNNRegressor
from compat_mts.estimator.dnn_linear_combined import DNNLinearCombinedClassifier, DNNLinearCombinedRegressor
from compat_mts.estimator.linear import LinearClassifier, LinearRegressor

__all__ = [
    'BaselineClassifier',
    'BaselineRegressor',
    'DNNClassifier',
    'DNNLinearCombinedClassifier',
    'DNNLinearCombinedRegressor',
    'DNNRegressor',
    'LinearClassifier',
    'LinearRegressor',
]
