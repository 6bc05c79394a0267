"""`dnn_logit_fn_builder` and `linear_logit_fn_builder`: v1's `tf.compat.v1.estimator.experimental` builders.

Each returns a `logit_fn` that a custom `model_fn` calls (directly or through `call_logit_fn`) to build TF 2.15's
network in the Estimator's graph, with TF 2.15's variable names: the DNN's `hiddenlayer_<i>/kernel`,
`hiddenlayer_<i>/batchnorm_<i>/...` and `logits/kernel` (no `dnn/` scope: the premade `DNNClassifier` adds it,
the builder did not), the linear model's `linear_model/<column>/weights` and `linear_model/bias_weights`, and
the summaries TF 2.15 wrote for them. The layers are those of the premade Estimators (`estimator.canned`).
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from compat_mts.estimator import _canned_base, dnn, linear
from compat_mts.estimator.model_fn import ModeKeys


def _check_units(units) -> None:
    if isinstance(units, bool) or not isinstance(units, int):
        raise ValueError('units must be an int.  Given type: {}'.format(type(units)))


def dnn_logit_fn_builder(
    units: int,
    hidden_units,
    feature_columns,
    activation_fn: Callable,
    dropout: float | None,
    input_layer_partitioner,
    batch_norm: bool,
) -> Callable:
    """v1's `tf.compat.v1.estimator.experimental.dnn_logit_fn_builder`: a `logit_fn(features, mode)` of a DNN.

    The `logit_fn` builds the input layer of `feature_columns` (`input_from_feature_columns`), one fully
    connected layer per entry of `hidden_units` (`hiddenlayer_<i>`, glorot-uniform kernels, zero biases, then
    dropout in training and batch normalization with momentum 0.999, its moving-average updates in the
    `UPDATE_OPS` collection as v1's layers put them), and a `logits` layer of `units`; and TF 2.15's
    `<layer>/fraction_of_zero_values` and `<layer>/activation` summaries.

    Args:
      units: the logits' dimension.
      hidden_units: units per hidden layer.
      feature_columns: dense `tf.feature_column` columns.
      activation_fn: the hidden layers' activation.
      dropout: None, or the probability of dropping a hidden unit in training.
      input_layer_partitioner: None (a partitioner of the input layer's variables is not built here).
      batch_norm: whether to batch-normalize after each hidden layer.

    Returns:
      `logit_fn(features, mode)`, returning the logits tensor.

    Raises:
      ValueError: `units` not an int (v1's message); `hidden_units`, `feature_columns` or `dropout` not
        accepted, or an `input_layer_partitioner`, each naming the argument.
    """
    _check_units(units)
    hidden_units = dnn._check_hidden_units('hidden_units', hidden_units)
    feature_columns = _canned_base.check_feature_columns('feature_columns', feature_columns, dense=True)
    dnn._check_dropout('dropout', dropout)
    if input_layer_partitioner is not None:
        raise ValueError(
            '`input_layer_partitioner` must be None: partitioned variables are not built by compat_mts '
            f'(one process holds the whole model); got {input_layer_partitioner!r}.'
        )

    def dnn_logit_fn(features, mode):
        """The DNN's logits of `features` in `mode` (a `ModeKeys` value)."""
        training = mode == ModeKeys.TRAIN
        with tf.compat.v1.variable_scope('input_from_feature_columns'):
            net = tf.compat.v1.feature_column.input_layer(features, feature_columns)
        for layer_id, layer_units in enumerate(hidden_units):
            with tf.compat.v1.variable_scope('hiddenlayer_%d' % layer_id) as scope:
                net = dnn._dense_layer(net, layer_units, activation_fn)
                if dropout is not None and training:
                    net = tf.nn.dropout(net, rate=dropout)
                if batch_norm:
                    net, updates = dnn._batch_normalization(net, 'batchnorm_%d' % layer_id, training)
                    for update in updates:
                        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, update)
            _canned_base.root_summaries(net, scope.name)
        with tf.compat.v1.variable_scope('logits') as scope:
            logits = dnn._dense_layer(net, units, None)
        _canned_base.root_summaries(logits, scope.name)
        return logits

    return dnn_logit_fn


def linear_logit_fn_builder(units: int, feature_columns, sparse_combiner: str = 'sum') -> Callable:
    """v1's `tf.compat.v1.estimator.experimental.linear_logit_fn_builder`: a `logit_fn(features)` of a linear model.

    The `logit_fn` builds `tf.compat.v1.feature_column.linear_model` (`linear_model/<column>/weights`,
    `linear_model/bias_weights`) and TF 2.15's `bias` (a scalar for one unit, else a histogram) and
    `fraction_of_zero_weights` summaries.

    Args:
      units: the logits' dimension.
      feature_columns: `tf.feature_column` columns, categorical and crossed ones included.
      sparse_combiner: how a multivalent categorical column's weights combine: 'sum', 'mean' or 'sqrtn'.

    Returns:
      `logit_fn(features)`, returning the logits tensor.

    Raises:
      ValueError: `units` not an int, or `feature_columns` or `sparse_combiner` not accepted, naming the argument.
    """
    _check_units(units)
    feature_columns = _canned_base.check_feature_columns('feature_columns', feature_columns, dense=False)
    linear._check_sparse_combiner('sparse_combiner', sparse_combiner)

    def linear_logit_fn(features):
        """The linear model's logits of `features`."""
        columns_to_variables = {}
        logits = tf.compat.v1.feature_column.linear_model(
            features, feature_columns, units=units, sparse_combiner=sparse_combiner, cols_to_vars=columns_to_variables
        )
        bias = columns_to_variables.pop('bias')[0]
        weights = [variable for variables in columns_to_variables.values() for variable in variables]
        if units > 1:
            tf.compat.v1.summary.histogram('bias', bias)
        else:
            tf.compat.v1.summary.scalar('bias', bias[0])
        tf.compat.v1.summary.scalar('fraction_of_zero_weights', linear._fraction_of_zero(weights))
        return logits

    return linear_logit_fn
