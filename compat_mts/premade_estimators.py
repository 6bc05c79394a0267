"""The premade Estimators and heads of `tf.estimator`: their Keras successors, and those compat_mts lacks.

One table for two readers: `compat_mts.estimator` names the successor when a program asks for one of these, and
`compat-mts check` (`compat_mts.cli.check.catalogue`) when it finds one in a script. Standard library only, below
both (ARCHITECTURE.md, "Layers"): the estimator does not import the CLI, and the checker runs without TensorFlow.
"""

from __future__ import annotations

PREMADE_ESTIMATORS = {
    'BaselineClassifier': 'a Keras model with one bias (tf.keras.layers.Dense on constant input) and model.fit',
    'BaselineEstimator': 'a Keras model with one bias and model.fit',
    'BaselineRegressor': 'a Keras model with one bias and model.fit',
    'BoostedTreesClassifier': 'YDF (pip install ydf; ydf.GradientBoostedTreesLearner)',
    'BoostedTreesEstimator': 'YDF (pip install ydf; ydf.GradientBoostedTreesLearner)',
    'BoostedTreesRegressor': 'YDF (pip install ydf; ydf.GradientBoostedTreesLearner)',
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
}

# What tf.estimator had and compat_mts.estimator does not, with the successor to use instead.
_BOOSTED_TREES = (
    'YDF (pip install ydf; ydf.GradientBoostedTreesLearner(label=...).train(data), data a dict of NumPy arrays or '
    'a pandas DataFrame): TensorFlow Decision Forests 1.12, the newest, requires tensorflow==2.19.0 and does not '
    "install beside TF 2.21; TF 2.21 has the boosted-trees ensemble and quantile ops, but not tf.estimator's "
    'training loop on them (migration_guide/estimator.md)'
)
NOT_PROVIDED = {
    'BoostedTreesClassifier': _BOOSTED_TREES,
    'BoostedTreesEstimator': _BOOSTED_TREES,
    'BoostedTreesRegressor': _BOOSTED_TREES,
}
