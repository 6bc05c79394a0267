"""TF 2.15's heads (`tensorflow_estimator/python/estimator/head/`): one module per family, as there.

`Head` (`base_head`), `BinaryClassHead`, `MultiClassHead`, `MultiLabelHead`, `RegressionHead`,
`PoissonRegressionHead`, `LogisticRegressionHead` and `MultiHead`; `compat_mts.estimator` re-exports them.
"""

from compat_mts.estimator.head.base_head import Head
from compat_mts.estimator.head.binary_class_head import BinaryClassHead
from compat_mts.estimator.head.multi_class_head import MultiClassHead
from compat_mts.estimator.head.multi_head import MultiHead
from compat_mts.estimator.head.multi_label_head import MultiLabelHead
from compat_mts.estimator.head.regression_head import LogisticRegressionHead, PoissonRegressionHead, RegressionHead

__all__ = [
    'BinaryClassHead',
    'Head',
    'LogisticRegressionHead',
    'MultiClassHead',
    'MultiHead',
    'MultiLabelHead',
    'PoissonRegressionHead',
    'RegressionHead',
]
