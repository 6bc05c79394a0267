"""TF 2.15's `canned/linear.py`: `LinearClassifier`, `LinearRegressor` and the linear tower of the wide & deep.

The model is `tf.compat.v1.feature_column.linear_model` under `linear` (weights
`linear/linear_model/<column>/weights`, bias `linear/linear_model/bias_weights`), with TF 2.15's `bias` and
`fraction_of_zero_weights` summaries.
"""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator import _canned_base
from compat_mts.estimator import _optimizers
from compat_mts.estimator import head as head_lib
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.linear_sdca import LinearSDCA
from compat_mts.estimator.model_fn import ModeKeys

_SUM_OVER_BATCH_SIZE = _canned_base.SUM_OVER_BATCH_SIZE
_LINEAR_LEARNING_RATE = 0.2  # LinearClassifier/LinearRegressor with an optimizer name.


def tower(feature_columns, optimizer, sparse_combiner, learning_rate, prefix='') -> _canned_base.Tower:
    """The linear tower, its arguments checked (named with `prefix`, 'linear_' in the wide & deep)."""
    feature_columns = _canned_base.check_feature_columns(f'{prefix}feature_columns', feature_columns, dense=False)
    _optimizers.check_optimizer(f'{prefix}optimizer', optimizer)
    _check_sparse_combiner(f'{prefix}sparse_combiner', sparse_combiner)

    def build(features, mode, units):
        del mode  # A linear model is the same in every mode.
        logits, variables = _linear_logits(features, units, feature_columns, sparse_combiner)
        return logits, variables, []

    return _canned_base.Tower(build, optimizer, learning_rate, tuple(feature_columns))


def _check_sparse_combiner(argument: str, sparse_combiner) -> None:
    if sparse_combiner not in ('mean', 'sqrtn', 'sum'):
        raise ValueError(f"`{argument}` must be one of 'mean', 'sqrtn', 'sum'; got {sparse_combiner!r}.")


def _linear_logits(features, units, feature_columns, sparse_combiner, columns_to_variables=None):
    """TF 2.15's linear model under `linear`, with its `bias` and `fraction_of_zero_weights` summaries.

    `columns_to_variables`, a dict, receives each column's weights (the bias under 'bias'), as `cols_to_vars`.
    """
    columns_to_variables = {} if columns_to_variables is None else columns_to_variables
    with tf.compat.v1.variable_scope('linear'):
        logits = tf.compat.v1.feature_column.linear_model(
            features, feature_columns, units=units, sparse_combiner=sparse_combiner, cols_to_vars=columns_to_variables
        )
    bias = columns_to_variables['bias'][0]
    weights = [variable for key, variables in columns_to_variables.items() if key != 'bias' for variable in variables]
    with tf.compat.v1.get_default_graph().name_scope(None):
        if units > 1:
            tf.compat.v1.summary.histogram('bias', bias)
        else:
            tf.compat.v1.summary.scalar('bias', bias[0])
        tf.compat.v1.summary.scalar('fraction_of_zero_weights', _fraction_of_zero(weights))
    return logits, [bias, *weights]


def _fraction_of_zero(variables: list):
    if not variables:
        return tf.constant(0.0)
    zeros = tf.add_n([tf.reduce_sum(tf.cast(tf.equal(variable, 0), tf.int64)) for variable in variables])
    size = sum(int(variable.shape.num_elements()) for variable in variables)
    return tf.cast(zeros, tf.float32) / float(size)


def _sdca_model_fn(head, feature_columns, optimizer: LinearSDCA):
    """TF 2.15's `_sdca_model_fn`: the linear model trained by `optimizer`'s SDCA step, its hook on the chief."""
    feature_columns = _canned_base.check_feature_columns('feature_columns', feature_columns, dense=False)
    loss_type = 'logistic_loss' if isinstance(head, head_lib.BinaryClassHead) else 'squared_loss'

    def sdca_model_fn(features, labels, mode, config):
        del config  # Unused, as in TF 2.15.
        features = _canned_base.check_features(features)
        columns_to_variables = {}
        logits, _ = _linear_logits(features, 1, feature_columns, 'sum', columns_to_variables)
        if mode != ModeKeys.TRAIN:
            return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits)
        bias = columns_to_variables.pop('bias')[0]
        train_op, hook = optimizer.train_step(
            features, labels, columns_to_variables, bias, head.weight_column, loss_type
        )
        spec = head.create_estimator_spec(
            features=features, mode=mode, labels=labels, train_op_fn=lambda loss: train_op, logits=logits
        )
        return spec._replace(training_chief_hooks=(*spec.training_chief_hooks, hook))

    return _canned_base.quiet(sdca_model_fn)


def _check_sdca(sparse_combiner, too_many_dimensions: bool, message: str) -> None:
    """TF 2.15's checks of a linear Estimator with a `LinearSDCA` optimizer."""
    if sparse_combiner != 'sum':
        raise ValueError('sparse_combiner must be "sum" when optimizer is a LinearSDCA object.')
    if too_many_dimensions:
        raise ValueError(message)


def _linear_model_fn(head, feature_columns, optimizer, sparse_combiner):
    if isinstance(optimizer, LinearSDCA):
        return _sdca_model_fn(head, feature_columns, optimizer)
    return _canned_base.model_fn(head, [tower(feature_columns, optimizer, sparse_combiner, _LINEAR_LEARNING_RATE)])


class LinearClassifier(Estimator):
    """A linear classifier, v1's `tf.estimator.LinearClassifier` (TF 2.15's signature and head).

    The model is `tf.compat.v1.feature_column.linear_model` under `linear` (weights
    `linear/linear_model/<column>/weights`, bias `linear/linear_model/bias_weights`), trained by Keras 2's Ftrl
    at learning rate 0.2 by default; the head is `DNNClassifier`'s.

    Args:
      feature_columns: `tf.feature_column` columns, categorical and crossed ones included.
      model_dir: where checkpoints and events go.
      n_classes: as for `DNNClassifier`.
      weight_column: as for `DNNClassifier`.
      label_vocabulary: as for `DNNClassifier`.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      sparse_combiner: how a multivalent categorical column's weights combine: 'sum', 'mean' or 'sqrtn'.

    Raises:
      ValueError: as for `DNNClassifier`; an unknown `sparse_combiner`.
    """

    def __init__(
        self,
        feature_columns,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer='Ftrl',
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        sparse_combiner='sum',
    ):
        if isinstance(optimizer, LinearSDCA):
            _check_sdca(sparse_combiner, n_classes > 2, 'LinearSDCA cannot be used in a multi-class setting.')
        head = _canned_base.classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _linear_model_fn(head, feature_columns, optimizer, sparse_combiner)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """A linear regressor, v1's `tf.estimator.LinearRegressor` (TF 2.15's signature and head).

    The model is `LinearClassifier`'s; the head is `DNNRegressor`'s.

    Args:
      feature_columns: `tf.feature_column` columns, categorical and crossed ones included.
      model_dir: where checkpoints and events go.
      label_dimension: the number of regression targets per example.
      weight_column: as for `DNNClassifier`.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      sparse_combiner: 'sum', 'mean' or 'sqrtn'.

    Raises:
      ValueError: as for `LinearClassifier`; `label_dimension` not a positive integer.
    """

    def __init__(
        self,
        feature_columns,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer='Ftrl',
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        sparse_combiner='sum',
    ):
        if isinstance(optimizer, LinearSDCA):
            _check_sdca(sparse_combiner, label_dimension > 1, 'LinearSDCA can only be used with one-dimensional label.')
        head = _canned_base.regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _linear_model_fn(head, feature_columns, optimizer, sparse_combiner)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(Estimator):
    """An estimator for linear models with a given head, v1's `tf.estimator.LinearEstimator` (TF 2.15's).

    The model is `LinearClassifier`'s; `head` (any of `compat_mts.estimator`'s heads) makes the loss,
    predictions, metrics and export signatures.

    Args:
      head: a `compat_mts.estimator.Head`.
      feature_columns: `tf.feature_column` columns, categorical and crossed ones included.
      model_dir: where checkpoints and events go.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.
      sparse_combiner: 'sum', 'mean' or 'sqrtn'.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.

    Raises:
      ValueError: as for `LinearClassifier`.
    """

    def __init__(
        self,
        head,
        feature_columns,
        model_dir=None,
        optimizer='Ftrl',
        config=None,
        sparse_combiner='sum',
        warm_start_from=None,
    ):
        linear = tower(feature_columns, optimizer, sparse_combiner, _LINEAR_LEARNING_RATE)
        model_fn = _canned_base.model_fn(head, [linear])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)
