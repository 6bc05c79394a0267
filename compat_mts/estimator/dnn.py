"""TF 2.15's `canned/dnn.py`: `DNNClassifier`, `DNNRegressor` and the DNN tower they and the wide & deep share.

The network is v1 graph code, as TF 2.15 built it: `tf.compat.v1.feature_column.input_layer` under
`dnn/input_from_feature_columns`, the hidden layers `dnn/hiddenlayer_<i>` (dropout, batch normalization) and
`dnn/logits`, each with its `fraction_of_zero_values` and `activation` summaries.
"""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator import _canned_base
from compat_mts.estimator import _optimizers
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.model_fn import ModeKeys

_SUM_OVER_BATCH_SIZE = _canned_base.SUM_OVER_BATCH_SIZE


def _check_hidden_units(argument: str, hidden_units) -> list:
    try:
        units = list(hidden_units)
    except TypeError:
        units = None
    if not units or not all(isinstance(unit, int) and not isinstance(unit, bool) and unit > 0 for unit in units):
        raise ValueError(
            f'`{argument}` must be a non-empty list of positive integers (units per hidden layer, e.g. [10, 10]); '
            f'got {hidden_units!r}.'
        )
    return units


def _check_dropout(argument: str, dropout) -> None:
    if dropout is not None and not (isinstance(dropout, (int, float)) and 0 <= dropout < 1):
        raise ValueError(f'`{argument}` must be None or a probability in [0, 1); got {dropout!r}.')


def tower(
    hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm, learning_rate=None, prefix=''
) -> _canned_base.Tower:
    """The DNN tower, its arguments checked (named with `prefix`, 'dnn_' in the wide & deep)."""
    feature_columns = _canned_base.check_feature_columns(f'{prefix}feature_columns', feature_columns, dense=True)
    if prefix and not hidden_units:
        raise ValueError('dnn_hidden_units must be defined when dnn_feature_columns is specified.')
    hidden_units = _check_hidden_units(f'{prefix}hidden_units', hidden_units)
    _optimizers.check_optimizer(f'{prefix}optimizer', optimizer)
    _check_dropout(f'{prefix}dropout', dropout)

    def build(features, mode, units):
        return _dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, dropout, batch_norm)

    return _canned_base.Tower(build, optimizer, learning_rate, tuple(feature_columns))


def _dense_layer(inputs, units: int, activation):
    kernel = tf.compat.v1.get_variable(
        'kernel', [inputs.shape[-1], units], initializer=tf.compat.v1.glorot_uniform_initializer()
    )
    bias = tf.compat.v1.get_variable('bias', [units], initializer=tf.compat.v1.zeros_initializer())
    outputs = tf.nn.bias_add(tf.matmul(inputs, kernel), bias)
    return activation(outputs) if activation is not None else outputs


def _dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, dropout, batch_norm):
    """TF 2.15's DNN: the input layer, hidden layers (dropout, batch normalization) and logits, under `dnn`."""
    training = mode == ModeKeys.TRAIN
    update_ops = []
    with tf.compat.v1.variable_scope('dnn'):
        with tf.compat.v1.variable_scope('input_from_feature_columns'):
            net = tf.compat.v1.feature_column.input_layer(features, feature_columns)
        for layer_id, layer_units in enumerate(hidden_units):
            with tf.compat.v1.variable_scope('hiddenlayer_%d' % layer_id):
                net = _dense_layer(net, layer_units, activation_fn)
                if dropout is not None and training:
                    net = tf.nn.dropout(net, rate=dropout)
                if batch_norm:
                    net, layer_updates = _batch_normalization(net, 'batchnorm_%d' % layer_id, training)
                    update_ops.extend(layer_updates)
            _canned_base.root_summaries(net, 'dnn/hiddenlayer_%d' % layer_id)
        with tf.compat.v1.variable_scope('logits'):
            logits = _dense_layer(net, units, None)
        _canned_base.root_summaries(logits, 'dnn/logits')
    variables = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope='dnn/')
    return logits, variables, update_ops


def _batch_normalization(net, name: str, training: bool):
    """Batch normalization as TF 2.15's DNN did it (momentum 0.999, epsilon 0.001)."""
    with tf.compat.v1.variable_scope(name):
        size = net.shape[-1]
        gamma = tf.compat.v1.get_variable('gamma', [size], initializer=tf.compat.v1.ones_initializer())
        beta = tf.compat.v1.get_variable('beta', [size], initializer=tf.compat.v1.zeros_initializer())
        moving_mean = tf.compat.v1.get_variable(
            'moving_mean', [size], initializer=tf.compat.v1.zeros_initializer(), trainable=False
        )
        moving_variance = tf.compat.v1.get_variable(
            'moving_variance', [size], initializer=tf.compat.v1.ones_initializer(), trainable=False
        )
        if not training:
            return tf.nn.batch_normalization(net, moving_mean, moving_variance, beta, gamma, 0.001), []
        mean, variance = tf.nn.moments(net, axes=[0])
        updates = [
            moving_mean.assign_sub((moving_mean - mean) * (1 - 0.999)),
            moving_variance.assign_sub((moving_variance - variance) * (1 - 0.999)),
        ]
        return tf.nn.batch_normalization(net, mean, variance, beta, gamma, 0.001), updates


class DNNClassifier(Estimator):
    """A classifier for TensorFlow DNN models, v1's `tf.estimator.DNNClassifier` (TF 2.15's signature).

    The feature columns feed `hidden_units` fully connected layers (`dnn/hiddenlayer_<i>`, `activation_fn`,
    optional `dropout` and `batch_norm`) and a logits layer (`dnn/logits`). The head is TF 2.15's binary or
    multi-class head: predictions `logits`, (`logistic`), `probabilities`, `class_ids`, `classes`,
    `all_class_ids`, `all_classes`; metrics `accuracy`, `average_loss`, `loss` (binary adds `auc`,
    `auc_precision_recall`, `precision`, `recall`, `label/mean`, `prediction/mean`, `accuracy_baseline`);
    export signatures `serving_default`, `classification`, (`regression`), `predict`. The default optimizer is
    Keras 2's Adagrad at its learning rate 0.001, as in TF 2.15.

    Example:

    ```python
    columns = [tf.feature_column.numeric_column(name) for name in ('SepalLength', 'PetalLength')]
    classifier = compat_mts.estimator.DNNClassifier(feature_columns=columns, hidden_units=[10, 10], n_classes=3)
    classifier.train(input_fn, steps=1000)
    ```

    Args:
      hidden_units: units per hidden layer, e.g. `[64, 32]`.
      feature_columns: dense `tf.feature_column` columns (numeric, bucketized, embedding, indicator).
      model_dir: where checkpoints and events go (see `Estimator`).
      n_classes: the number of label classes (2, the default, is binary); labels are class ids in
        `[0, n_classes)`, or strings of `label_vocabulary`.
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example's loss.
      label_vocabulary: the labels' strings, `n_classes` of them; None for integer labels.
      optimizer: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (TF 2.15's Keras 2 optimizers, with their
        checkpoint names), a Keras 2 optimizer (tf-keras's `optimizers.legacy`, any subclass), a Keras 3
        optimizer of those five kinds, a `tf.compat.v1.train.Optimizer`, or a callable returning one.
      activation_fn: the hidden layers' activation.
      dropout: None, or the probability of dropping a hidden unit in training.
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto' (`tf.keras.losses.Reduction`).
      batch_norm: whether to batch-normalize after each hidden layer.

    Raises:
      ValueError: a feature column that is not a dense `tf.feature_column` column, `hidden_units` empty,
        `n_classes < 2`, a `label_vocabulary` of the wrong type or length, an unknown optimizer name or
        `loss_reduction`: from the constructor, before anything is written to `model_dir`.
    """

    def __init__(
        self,
        hidden_units,
        feature_columns,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer='Adagrad',
        activation_fn=tf.nn.relu,
        dropout=None,
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        batch_norm=False,
    ):
        head = _canned_base.classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        dnn = tower(hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm)
        model_fn = _canned_base.model_fn(head, [dnn])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A regressor for TensorFlow DNN models, v1's `tf.estimator.DNNRegressor` (TF 2.15's signature).

    The network is `DNNClassifier`'s; the head is TF 2.15's regression head: mean squared error, prediction key
    `predictions`, metrics `average_loss`, `loss`, `label/mean`, `prediction/mean`, signatures
    `serving_default`, `regression`, `predict`.

    Args:
      hidden_units: units per hidden layer.
      feature_columns: dense `tf.feature_column` columns.
      model_dir: where checkpoints and events go.
      label_dimension: the number of regression targets per example.
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example's loss.
      optimizer: as for `DNNClassifier`.
      activation_fn: the hidden layers' activation.
      dropout: None, or the probability of dropping a hidden unit in training.
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      batch_norm: whether to batch-normalize after each hidden layer.

    Raises:
      ValueError: as for `DNNClassifier`; `label_dimension` not a positive integer.
    """

    def __init__(
        self,
        hidden_units,
        feature_columns,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer='Adagrad',
        activation_fn=tf.nn.relu,
        dropout=None,
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        batch_norm=False,
    ):
        head = _canned_base.regression_head(label_dimension, weight_column, loss_reduction)
        dnn = tower(hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm)
        model_fn = _canned_base.model_fn(head, [dnn])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(Estimator):
    """An estimator for TensorFlow DNN models with a given head, v1's `tf.estimator.DNNEstimator` (TF 2.15's).

    The network is `DNNClassifier`'s; `head` (any of `compat_mts.estimator`'s heads, `MultiHead` too) makes
    the loss, predictions, metrics and export signatures.

    Example:

    ```python
    estimator = compat_mts.estimator.DNNEstimator(
        head=compat_mts.estimator.MultiLabelHead(n_classes=3), feature_columns=columns, hidden_units=[10])
    ```

    Args:
      head: a `compat_mts.estimator.Head`.
      hidden_units: units per hidden layer.
      feature_columns: dense `tf.feature_column` columns.
      model_dir: where checkpoints and events go.
      optimizer: as for `DNNClassifier` (default 'Adagrad').
      activation_fn: the hidden layers' activation.
      dropout: None, or the probability of dropping a hidden unit in training.
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      batch_norm: whether to batch-normalize after each hidden layer.

    Raises:
      ValueError: as for `DNNClassifier`.
    """

    def __init__(
        self,
        head,
        hidden_units,
        feature_columns,
        model_dir=None,
        optimizer='Adagrad',
        activation_fn=tf.nn.relu,
        dropout=None,
        config=None,
        warm_start_from=None,
        batch_norm=False,
    ):
        dnn = tower(hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm)
        model_fn = _canned_base.model_fn(head, [dnn])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)
