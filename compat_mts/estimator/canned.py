"""The premade Estimators: `DNNClassifier`, `LinearRegressor`, ... on `tf.feature_column`, as TF 2.15 had them.

Each one is an `Estimator` whose `model_fn` builds, as v1 graph code, what TF 2.15's premade Estimator built:
`tf.compat.v1.feature_column.input_layer` under `dnn/input_from_feature_columns`, the hidden layers
`dnn/hiddenlayer_<i>` and `dnn/logits`, `tf.compat.v1.feature_column.linear_model` under `linear`, the bias
`baseline/bias`; the head of `compat_mts.estimator._heads`; the optimizers of `compat_mts.estimator._optimizers`.
So the checkpoint variables (optimizer slots included) have TF 2.15's names and shapes, and a `model_dir` written
by TF 2.15's premade Estimator resumes here, and the other way round.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts import program as program_lib
from compat_mts.estimator import _heads
from compat_mts.estimator import _optimizers
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.model_fn import ModeKeys

_SUM_OVER_BATCH_SIZE = 'sum_over_batch_size'
_LINEAR_LEARNING_RATE = 0.2  # LinearClassifier/LinearRegressor with an optimizer name.
_COMBINED_DNN_LEARNING_RATE = 0.001
_COMBINED_LINEAR_LEARNING_RATE = 0.005
_BASELINE_LEARNING_RATE = 0.3


@functools.cache
def _column_bases() -> tuple[type, type]:
    """`tf.feature_column`'s `FeatureColumn` and `DenseColumn`, found from a public column's type, not imported.

    Made on first use: making a column logs TensorFlow's deprecation warning, which `import compat_mts.estimator`
    must not print.
    """
    with tf_internals.deprecations_silenced():  # The program's own first call is warned about, as in TF 2.15.
        bases = type(tf.feature_column.numeric_column('x')).__mro__
    return tuple(next(base for base in bases if base.__name__ == name) for name in ('FeatureColumn', 'DenseColumn'))


program_lib.PROGRAM.register(
    'estimator.column_bases',
    "tf.feature_column's two base classes, found once (TensorFlow's types, not a program's)",
    size=lambda: _column_bases.cache_info().currsize,
    kind='process',
)


_V1_COLUMN_ERROR = (  # TF 2.15's words.
    'Received a feature column from TensorFlow v1, but this is a TensorFlow v2 Estimator. Please either use v2 '
    'feature columns (accessible via tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 '
    'Estimator for use with v1 feature columns (accessible via tf.compat.v1.estimator.* and '
    'tf.compat.v1.feature_column.*, respectively.'
)


def _is_v1_column(column) -> bool:
    """Whether `column` is one of v1's `_FeatureColumn`s only (`shared_embedding_columns` in a graph)."""
    return any(base.__name__ == '_FeatureColumn' for base in type(column).__mro__)


def _check_feature_columns(argument: str, feature_columns, dense: bool) -> list:
    """The columns as a list; a clear ValueError naming `argument` for anything else."""
    feature_column_type, dense_column_type = _column_bases()
    if isinstance(feature_columns, feature_column_type):
        feature_columns = [feature_columns]
    if feature_columns is None or isinstance(feature_columns, (str, bytes, dict)):
        raise ValueError(f'`{argument}` must be an iterable of `tf.feature_column` columns; got {feature_columns!r}.')
    try:
        feature_columns = list(feature_columns)
    except TypeError:
        raise ValueError(
            f'`{argument}` must be an iterable of `tf.feature_column` columns; got {feature_columns!r}.'
        ) from None
    if not feature_columns:
        raise ValueError(f'`{argument}` must hold at least one `tf.feature_column` column; got an empty list.')
    for column in feature_columns:
        if not isinstance(column, feature_column_type) and _is_v1_column(column):
            raise ValueError(_V1_COLUMN_ERROR)
        if not isinstance(column, feature_column_type):
            raise ValueError(
                f'`{argument}` must hold `tf.feature_column` columns (numeric_column, bucketized_column, ...); '
                f'got {column!r} of type {type(column).__name__}.'
            )
        if dense and not isinstance(column, dense_column_type):
            raise ValueError(
                f'`{argument}` of a DNN must hold dense columns; {column.name!r} is categorical. Wrap it in '
                'tf.feature_column.embedding_column or tf.feature_column.indicator_column.'
            )
    return feature_columns


def _quiet(model_fn: Callable) -> Callable:
    """`model_fn` printing no deprecation warning of the v1 APIs it is built on (`input_layer`, `linear_model`,
    `tf.compat.v1.metrics`): TF 2.15 printed none for them either; a program sees those of its own calls."""

    def quiet_model_fn(features, labels, mode, config):
        with tf_internals.deprecations_silenced():
            return model_fn(features, labels, mode, config)

    return quiet_model_fn


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


def _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction) -> _heads.ClassificationHead:
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f'`n_classes` must be an integer >= 2 (2 for a binary classifier); got {n_classes!r}.')
    if label_vocabulary is not None:
        if not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(
                'label_vocabulary should be a list or a tuple. Given type: {}'.format(type(label_vocabulary))
            )
        if len(label_vocabulary) != n_classes or len(set(label_vocabulary)) != n_classes:
            raise ValueError(
                f'`label_vocabulary` must hold `n_classes` ({n_classes}) distinct strings; got {label_vocabulary!r}.'
            )
    return _heads.ClassificationHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def _regression_head(label_dimension, weight_column, loss_reduction) -> _heads.RegressionHead:
    if isinstance(label_dimension, bool) or not isinstance(label_dimension, int) or label_dimension < 1:
        raise ValueError(f'`label_dimension` must be a positive integer; got {label_dimension!r}.')
    return _heads.RegressionHead(label_dimension, weight_column, loss_reduction)


def _check_features(features) -> dict:
    if not isinstance(features, dict):
        raise ValueError('features should be a dictionary of `Tensor`s. Given type: {}'.format(type(features)))
    return features


def _check_column_keys(features: dict, feature_columns) -> None:
    """Raises TF 2.15's ValueError, naming also the keys the input_fn yields and the column, for a missing key."""
    for column in feature_columns or ():
        for key in tf.compat.v1.feature_column.make_parse_example_spec([column]):
            if key not in features:
                raise ValueError(
                    f'Feature {key} is not in features dictionary. The input_fn yields the features '
                    f'{sorted(features)}; the feature column {column.name!r} ({type(column).__name__}) reads '
                    f'{key!r}.'
                )


def _root_summaries(logits, tag: str) -> None:
    """TF 2.15's per-layer summaries: `<tag>/fraction_of_zero_values` and the `<tag>/activation` histogram."""
    with tf.compat.v1.get_default_graph().name_scope(None):
        tf.compat.v1.summary.scalar(f'{tag}/fraction_of_zero_values', tf.math.zero_fraction(logits))
        tf.compat.v1.summary.histogram(f'{tag}/activation', logits)


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
            _root_summaries(net, 'dnn/hiddenlayer_%d' % layer_id)
        with tf.compat.v1.variable_scope('logits'):
            logits = _dense_layer(net, units, None)
        _root_summaries(logits, 'dnn/logits')
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


def _linear_logits(features, units, feature_columns, sparse_combiner):
    """TF 2.15's linear model under `linear`, with its `bias` and `fraction_of_zero_weights` summaries."""
    columns_to_variables = {}
    with tf.compat.v1.variable_scope('linear'):
        logits = tf.compat.v1.feature_column.linear_model(
            features, feature_columns, units=units, sparse_combiner=sparse_combiner, cols_to_vars=columns_to_variables
        )
    bias = columns_to_variables.pop('bias')[0]
    weights = [variable for variables in columns_to_variables.values() for variable in variables]
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


def _combined_model_fn(
    head,
    linear_feature_columns,
    linear_optimizer,
    linear_learning_rate,
    dnn_feature_columns,
    dnn_optimizer,
    dnn_learning_rate,
    dnn_hidden_units,
    dnn_activation_fn,
    dnn_dropout,
    batch_norm,
    linear_sparse_combiner,
):
    """The `model_fn` of every DNN and linear premade Estimator: the DNN's logits plus the linear model's.

    The DNN's optimizer counts the global step; a linear model alone has its optimizer count it, one beside a DNN
    counts its own steps (`training/Ftrl/iter`), as in TF 2.15.
    """

    def model_fn(features, labels, mode, config):
        del config  # Unused, as in TF 2.15.
        features = _check_features(features)
        _check_column_keys(features, dnn_feature_columns)
        _check_column_keys(features, linear_feature_columns)
        dnn = linear = None
        if dnn_feature_columns:
            dnn = _dnn_logits(
                features,
                mode,
                head.logits_dimension,
                dnn_hidden_units,
                dnn_feature_columns,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
            )
        if linear_feature_columns:
            linear = _linear_logits(features, head.logits_dimension, linear_feature_columns, linear_sparse_combiner)
            if dnn is not None:
                _root_summaries(linear[0], 'linear')
        if dnn is not None and linear is not None:
            logits = dnn[0] + linear[0]
        else:
            logits = (dnn or linear)[0]

        def train_op_fn(loss):
            global_step = tf.compat.v1.train.get_global_step()
            loss = _optimizers.scaled_for_replicas(loss, head.loss_reduction)
            with tf.compat.v1.name_scope('training'):
                train_ops = []
                if dnn is not None:
                    train_ops.append(
                        _optimizers.apply_gradients(dnn_optimizer, dnn_learning_rate, loss, dnn[1], global_step)
                    )
                    train_ops.extend(dnn[2])
                if linear is not None:
                    train_ops.append(
                        _optimizers.apply_gradients(
                            linear_optimizer, linear_learning_rate, loss, linear[1], None if dnn else global_step
                        )
                    )
                return tf.group(*train_ops)

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)

    return _quiet(model_fn)


def _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm) -> Callable:
    hidden_units = _check_hidden_units('hidden_units', hidden_units)
    feature_columns = _check_feature_columns('feature_columns', feature_columns, dense=True)
    _optimizers.check_optimizer('optimizer', optimizer)
    _check_dropout('dropout', dropout)
    return _combined_model_fn(
        head,
        None,
        None,
        None,
        feature_columns,
        optimizer,
        None,
        hidden_units,
        activation_fn,
        dropout,
        batch_norm,
        'sum',
    )


def _linear_model_fn(head, feature_columns, optimizer, sparse_combiner) -> Callable:
    feature_columns = _check_feature_columns('feature_columns', feature_columns, dense=False)
    _optimizers.check_optimizer('optimizer', optimizer)
    _check_sparse_combiner('sparse_combiner', sparse_combiner)
    return _combined_model_fn(
        head,
        feature_columns,
        optimizer,
        _LINEAR_LEARNING_RATE,
        None,
        None,
        None,
        None,
        None,
        None,
        False,
        sparse_combiner,
    )


def _check_sparse_combiner(argument: str, sparse_combiner) -> None:
    if sparse_combiner not in ('mean', 'sqrtn', 'sum'):
        raise ValueError(f"`{argument}` must be one of 'mean', 'sqrtn', 'sum'; got {sparse_combiner!r}.")


def _dnn_linear_combined_model_fn(
    head,
    linear_feature_columns,
    linear_optimizer,
    dnn_feature_columns,
    dnn_optimizer,
    dnn_hidden_units,
    dnn_activation_fn,
    dnn_dropout,
    batch_norm,
    linear_sparse_combiner,
) -> Callable:
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError('Either linear_feature_columns or dnn_feature_columns must be defined.')
    linear_learning_rate = None
    if linear_feature_columns:
        linear_feature_columns = _check_feature_columns('linear_feature_columns', linear_feature_columns, dense=False)
        _optimizers.check_optimizer('linear_optimizer', linear_optimizer)
        _check_sparse_combiner('linear_sparse_combiner', linear_sparse_combiner)
        linear_learning_rate = min(_COMBINED_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(linear_feature_columns)))
    if dnn_feature_columns:
        dnn_feature_columns = _check_feature_columns('dnn_feature_columns', dnn_feature_columns, dense=True)
        if not dnn_hidden_units:
            raise ValueError('dnn_hidden_units must be defined when dnn_feature_columns is specified.')
        dnn_hidden_units = _check_hidden_units('dnn_hidden_units', dnn_hidden_units)
        _optimizers.check_optimizer('dnn_optimizer', dnn_optimizer)
        _check_dropout('dnn_dropout', dnn_dropout)
    return _combined_model_fn(
        head,
        linear_feature_columns,
        linear_optimizer,
        linear_learning_rate,
        dnn_feature_columns,
        dnn_optimizer,
        _COMBINED_DNN_LEARNING_RATE,
        dnn_hidden_units,
        dnn_activation_fn,
        dnn_dropout,
        batch_norm,
        linear_sparse_combiner,
    )


def _baseline_model_fn(head, optimizer, weight_column) -> Callable:
    """TF 2.15's baseline: one bias `baseline/bias` per logit, trained by `optimizer` (Ftrl, 0.3)."""
    _optimizers.check_optimizer('optimizer', optimizer)

    def model_fn(features, labels, mode, config):
        del config  # Unused, as in TF 2.15.
        features = _check_features(features)
        if not features:
            raise ValueError('There are no features.')
        first = tf.convert_to_tensor(features[sorted(features)[0]])
        batch_size = tf.shape(first)[0]
        with tf.compat.v1.name_scope('baseline'):
            bias = tf.compat.v1.Variable(tf.zeros([head.logits_dimension]), name='bias', use_resource=True)
            logits = tf.math.multiply(bias, tf.ones([batch_size, head.logits_dimension]))

        def train_op_fn(loss):
            with tf.compat.v1.name_scope('training'):
                return _optimizers.apply_gradients(
                    optimizer,
                    _BASELINE_LEARNING_RATE,
                    _optimizers.scaled_for_replicas(loss, head.loss_reduction),
                    [bias],
                    tf.compat.v1.train.get_global_step(),
                )

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)

    return _quiet(model_fn)


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
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm)
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
        head = _regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


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
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
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
        head = _regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _linear_model_fn(head, feature_columns, optimizer, sparse_combiner)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(Estimator):
    """A wide & deep classifier, v1's `tf.estimator.DNNLinearCombinedClassifier` (TF 2.15's signature).

    The logits are the sum of `DNNClassifier`'s network (`dnn/...`) and `LinearClassifier`'s model
    (`linear/...`), each trained by its own optimizer; the DNN's counts the global step, the linear one its own
    steps (`training/Ftrl/iter`), as in TF 2.15. The head is `DNNClassifier`'s.

    Args:
      model_dir: where checkpoints and events go.
      linear_feature_columns: the wide part's `tf.feature_column` columns (categorical, crossed, ...).
      linear_optimizer: the wide part's optimizer: Ftrl at min(0.005, 1/sqrt(#columns)) by default.
      dnn_feature_columns: the deep part's dense columns.
      dnn_optimizer: the deep part's optimizer: Adagrad at 0.001 by default.
      dnn_hidden_units: units per hidden layer of the deep part; needed with `dnn_feature_columns`.
      dnn_activation_fn: the hidden layers' activation.
      dnn_dropout: None, or the probability of dropping a hidden unit in training.
      n_classes: as for `DNNClassifier`.
      weight_column: as for `DNNClassifier`.
      label_vocabulary: as for `DNNClassifier`.
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      batch_norm: whether to batch-normalize after each hidden layer.
      linear_sparse_combiner: 'sum', 'mean' or 'sqrtn'.

    Raises:
      ValueError: neither column list, `dnn_feature_columns` without `dnn_hidden_units`, and what
        `DNNClassifier` and `LinearClassifier` refuse, each naming the argument.
    """

    def __init__(
        self,
        model_dir=None,
        linear_feature_columns=None,
        linear_optimizer='Ftrl',
        dnn_feature_columns=None,
        dnn_optimizer='Adagrad',
        dnn_hidden_units=None,
        dnn_activation_fn=tf.nn.relu,
        dnn_dropout=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        batch_norm=False,
        linear_sparse_combiner='sum',
    ):
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _dnn_linear_combined_model_fn(
            head,
            linear_feature_columns,
            linear_optimizer,
            dnn_feature_columns,
            dnn_optimizer,
            dnn_hidden_units,
            dnn_activation_fn,
            dnn_dropout,
            batch_norm,
            linear_sparse_combiner,
        )
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """A wide & deep regressor, v1's `tf.estimator.DNNLinearCombinedRegressor` (TF 2.15's signature).

    The model is `DNNLinearCombinedClassifier`'s; the head is `DNNRegressor`'s.

    Args:
      model_dir: where checkpoints and events go.
      linear_feature_columns: as for `DNNLinearCombinedClassifier`.
      linear_optimizer: as for `DNNLinearCombinedClassifier`.
      dnn_feature_columns: as for `DNNLinearCombinedClassifier`.
      dnn_optimizer: as for `DNNLinearCombinedClassifier`.
      dnn_hidden_units: as for `DNNLinearCombinedClassifier`.
      dnn_activation_fn: the hidden layers' activation.
      dnn_dropout: None, or the probability of dropping a hidden unit in training.
      label_dimension: the number of regression targets per example.
      weight_column: as for `DNNClassifier`.
      config: a `compat_mts.estimator.RunConfig`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      batch_norm: whether to batch-normalize after each hidden layer.
      linear_sparse_combiner: 'sum', 'mean' or 'sqrtn'.

    Raises:
      ValueError: as for `DNNLinearCombinedClassifier`; `label_dimension` not a positive integer.
    """

    def __init__(
        self,
        model_dir=None,
        linear_feature_columns=None,
        linear_optimizer='Ftrl',
        dnn_feature_columns=None,
        dnn_optimizer='Adagrad',
        dnn_hidden_units=None,
        dnn_activation_fn=tf.nn.relu,
        dnn_dropout=None,
        label_dimension=1,
        weight_column=None,
        config=None,
        warm_start_from=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
        batch_norm=False,
        linear_sparse_combiner='sum',
    ):
        head = _regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _dnn_linear_combined_model_fn(
            head,
            linear_feature_columns,
            linear_optimizer,
            dnn_feature_columns,
            dnn_optimizer,
            dnn_hidden_units,
            dnn_activation_fn,
            dnn_dropout,
            batch_norm,
            linear_sparse_combiner,
        )
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class BaselineClassifier(Estimator):
    """A classifier that ignores the features and learns the labels' prior, v1's `tf.estimator.BaselineClassifier`.

    The logits are one trained bias per class (`baseline/bias`), Ftrl at learning rate 0.3 by default; the head
    is `DNNClassifier`'s.

    Args:
      model_dir: where checkpoints and events go.
      n_classes: as for `DNNClassifier`.
      weight_column: as for `DNNClassifier`.
      label_vocabulary: as for `DNNClassifier`.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.

    Raises:
      ValueError: `n_classes < 2`, a `label_vocabulary` of the wrong type or length, an unknown optimizer name or
        `loss_reduction`.
    """

    def __init__(
        self,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer='Ftrl',
        config=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
    ):
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _baseline_model_fn(head, optimizer, weight_column)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
    """A regressor that ignores the features and learns the labels' mean, v1's `tf.estimator.BaselineRegressor`.

    The prediction is one trained bias per label dimension (`baseline/bias`), Ftrl at learning rate 0.3 by
    default; the head is `DNNRegressor`'s.

    Args:
      model_dir: where checkpoints and events go.
      label_dimension: the number of regression targets per example.
      weight_column: as for `DNNClassifier`.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.

    Raises:
      ValueError: `label_dimension` not a positive integer, an unknown optimizer name or `loss_reduction`.
    """

    def __init__(
        self,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer='Ftrl',
        config=None,
        loss_reduction=_SUM_OVER_BATCH_SIZE,
    ):
        head = _regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _baseline_model_fn(head, optimizer, weight_column)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)
