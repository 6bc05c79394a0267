"""TF 2.15's `head/base_head.py`: the `Head` interface, and what its heads share.

A head turns a model's logits into the `EstimatorSpec` of a mode: predictions and export signatures, the loss and
its reduction, the evaluation metrics and the train op. The heads are built as v1 graph ops in the Estimator's
graph (the graph a `model_fn` runs in), under TF 2.15's op names (`head/losses/weighted_loss/Sum`, ...). Their
metrics are TF 2.15's Keras metrics by name and definition, made of `tf.compat.v1.metrics` (`HeadMetric`), so
an evaluation's values are TF 2.15's. Label vocabularies are looked up by comparison with a constant, not a
lookup table, so the graph exports.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.estimator import _optimizers
from compat_mts.estimator import export
from compat_mts.estimator.model_fn import EstimatorSpec, ModeKeys

DEFAULT_SERVING_KEY = 'serving_default'
CLASSIFY_SERVING_KEY = 'classification'
REGRESS_SERVING_KEY = 'regression'
PREDICT_SERVING_KEY = 'predict'

LOSS_REDUCTIONS = ('auto', 'sum', 'sum_over_batch_size')
_SUM_OVER_BATCH_SIZE = ('auto', 'sum_over_batch_size')
_LOSS_REGULARIZATION = 'regularization_loss'

LABEL_NONE_ERROR = (  # TF 2.15's words.
    'You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that your data contains '
    'your label feature. Check that your input_fn properly parses and returns labels.'
)


def check_loss_reduction(loss_reduction) -> None:
    """Raises ValueError (v1's message) unless `loss_reduction` is a `tf.keras.losses.Reduction` other than NONE."""
    if loss_reduction not in LOSS_REDUCTIONS:
        raise ValueError(
            'Invalid loss_reduction: {}. See `tf.losses.Reduction` for valid options.'.format(loss_reduction)
        )


def check_loss_fn(loss_fn) -> None:
    """Raises TF 2.15's ValueError unless `loss_fn` takes `labels` and `logits` (and maybe `features`,
    `loss_reduction`) only."""
    arguments = tf_internals.fn_args(loss_fn)
    for required in ('labels', 'logits'):
        if required not in arguments:
            raise ValueError(f'loss_fn must contain argument: {required}. Given arguments: {arguments}')
    invalid = sorted(set(arguments) - {'labels', 'logits', 'features', 'loss_reduction'})
    if invalid:
        raise ValueError(f'loss_fn has unexpected args: {invalid}')


def call_loss_fn(loss_fn: Callable, labels, logits, features, expected_loss_dim: int = 1) -> Any:
    """`loss_fn(labels=..., logits=..., features=...)`, `features` only if it names them, as TF 2.15 called it; the
    loss must be `[D0, ..., DN, expected_loss_dim]` for logits `[D0, ..., DN, logits_dimension]` (a ValueError
    eagerly, an assertion in a graph)."""
    extra = {'features': features} if 'features' in tf_internals.fn_args(loss_fn) else {}
    message = 'loss_fn must return Tensor of shape [D0, D1, ... DN, {}]. '.format(expected_loss_dim)
    with tf.compat.v1.name_scope('call_loss_fn'):
        loss = loss_fn(labels=labels, logits=logits, **extra)
        if tf.executing_eagerly():
            expected = _static_shape(logits)[:-1] + (expected_loss_dim,)
            if _static_shape(loss) != expected:
                raise ValueError(message, 'logits_shape: ', _static_shape(logits), 'loss_shape: ', _static_shape(loss))
            return loss
        logits_shape = tf.shape(logits, name='logits_shape')
        expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0, name='expected_loss_shape')
        actual = tf.shape(loss, name='loss_shape')
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(actual, expected)),
            [message, 'logits_shape: ', logits_shape, 'loss_shape: ', actual],
            name='check_loss_shape',
        )
        with tf.control_dependencies([check]):
            return tf.identity(loss)


def check_prediction_keys(keys, valid_keys) -> None:
    """Raises TF 2.15's ValueError for a key not in `valid_keys`."""
    for key in keys:
        if key not in valid_keys:
            raise ValueError(
                'Prediction key must be in PredictionKeys, given: {}.Valid prediction keys include {}.'.format(
                    key, valid_keys
                )
            )


_LABEL_SHAPE_ERROR = (  # TF 2.15's words.
    'labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your n_classes argument to the head and/or '
    'the shape of your label.'
)
_LOGITS_SHAPE_ERROR = 'logits shape must be [D0, D1, ... DN, logits_dimension]'


def _static_shape(tensor) -> tuple | None:
    """The shape of `tensor` as a tuple, or None if its rank is unknown."""
    return None if tensor.shape.rank is None else tuple(tensor.shape.as_list())


def check_logits(logits, dimension: int):
    """`logits` as float32 `[D0, ..., DN, dimension]`: ValueError for a known other shape, else an assertion."""
    with tf.compat.v1.name_scope('logits') as scope:
        logits = tf.cast(logits, tf.float32)
        shape = _static_shape(logits)
        if shape is not None and len(shape) < 2:
            raise ValueError('logits must have rank at least 2.  Received rank {}, shape {}'.format(len(shape), shape))
        if shape is not None and shape[-1] is not None:
            if isinstance(dimension, int) and shape[-1] != dimension:
                raise ValueError('{}, got {}.'.format(_LOGITS_SHAPE_ERROR, logits.shape))
            return logits
        if tf.executing_eagerly():
            return logits
        actual = tf.shape(logits)
        checks = [tf.debugging.assert_rank_at_least(logits, 2, message=_LOGITS_SHAPE_ERROR)]
        checks.append(
            tf.compat.v1.debugging.assert_equal(dimension, actual[-1], data=[actual], message=_LOGITS_SHAPE_ERROR)
        )
        with tf.control_dependencies(checks):
            return tf.identity(logits, name=scope)


def dense_labels(labels, logits, dimension: int):
    """`labels` as `[D0, ..., DN, dimension]` for logits `[D0, ..., DN, logits_dimension]` (labels one rank short
    gain a last dimension of 1): TF 2.15's ValueError for None, a SparseTensor, a dict or a known other shape, else
    its assertion."""
    if labels is None:
        raise ValueError(LABEL_NONE_ERROR)
    if isinstance(labels, dict):
        raise ValueError(f'The head takes one labels tensor; got a dict of {sorted(labels)}.')
    if isinstance(labels, tf.sparse.SparseTensor):
        raise ValueError(
            'SparseTensor labels are not supported. Labels must be a Tensor of shape [D0, D1, ..., DN, {0}], e.g. '
            '[batch_size, {0}].Suggested Fix (1): Check the label feature in your data. Each example must contain '
            '{0} value(s). If not, your choice of label was probably incorrect. Suggested Fix (2): In your input_fn, '
            'use tf.sparse_tensor_to_dense() to turn labels into a Tensor.'.format(dimension)
        )
    with tf.compat.v1.name_scope('labels') as scope:
        labels = tf.convert_to_tensor(labels)
        if labels.shape.rank is not None and logits.shape.rank is not None:
            if labels.shape.rank == logits.shape.rank - 1:
                labels = tf.expand_dims(labels, -1)
        shape, logits_shape = _static_shape(labels), _static_shape(logits)
        if tf.executing_eagerly():
            if len(shape) < 2:
                raise ValueError(
                    'labels must have rank at least 2.  Received rank {}, shape {}'.format(len(shape), shape)
                )
        if shape is not None and len(shape) >= 2 and shape[-1] is not None and shape[-1] != dimension:
            raise ValueError(
                'Mismatched label shape. Expected labels dimension={}.  Received {}. Suggested Fix: If your '
                'classifier expects one-hot encoding label, check your n_classes argument to the estimator and/or '
                'the shape of your label. Otherwise, check the shape of your label.'.format(dimension, shape[-1])
            )
        if tf.executing_eagerly():
            expected = logits_shape[:-1] + (dimension,)
            if expected != shape:
                raise ValueError(
                    '{}, expected_labels_shape: {}. labels_shape: {}.'.format(
                        _LABEL_SHAPE_ERROR.format(dimension), expected, shape
                    )
                )
            return labels
        message = _LABEL_SHAPE_ERROR.format(dimension)
        rank = tf.debugging.assert_rank_at_least(labels, 2, message=message)
        with tf.control_dependencies([rank]):
            expected = tf.concat([tf.shape(logits)[:-1], [dimension]], axis=0)
            actual = tf.shape(labels)
            same = tf.compat.v1.debugging.assert_equal(
                expected,
                actual,
                message=message,
                data=['expected_labels_shape: ', expected, 'labels_shape: ', actual],
            )
        with tf.control_dependencies([same]):
            return tf.identity(labels, name=scope)


def weights(features: dict | None, weight_column, logits, allow_per_logit_weights: bool = False):
    """The examples' weights, float32, `[D0, ..., DN, 1]` (or `[D0, ..., DN, logits_dimension]` if
    `allow_per_logit_weights`) for logits `[D0, ..., DN, logits_dimension]`; weights one rank short gain a last
    dimension of 1; 1.0 without a column. TF 2.15's ValueError for a known other shape, else its assertion."""
    if weight_column is None:
        return tf.constant(1.0)
    if not isinstance(weight_column, str) and not hasattr(weight_column, 'key'):
        raise TypeError(
            'Weight column must be either a string or NumericColumn. Given type: {}.'.format(type(weight_column))
        )
    key = weight_column if isinstance(weight_column, str) else weight_column.key
    if not features or key not in features:
        raise ValueError(f'`weight_column` {key!r} is not among the features: {sorted(features or ())}')
    if allow_per_logit_weights:
        message = 'weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or [D0, D1, ... DN, logits_dimension]'
    else:
        message = 'weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]'
    with tf.compat.v1.name_scope('weights') as scope:
        values = tf.convert_to_tensor(features[key])
        normalizer = getattr(weight_column, 'normalizer_fn', None)
        if normalizer is not None:
            values = normalizer(values)
        if not (values.dtype.is_floating or values.dtype.is_integer):
            raise ValueError('Weight column should be castable to float. Given dtype: {}'.format(values.dtype))
        values = tf.cast(values, tf.float32, name='weights')
        shape, logits_shape = _static_shape(values), _static_shape(logits)
        one_short = shape is not None and logits_shape is not None and len(shape) == len(logits_shape) - 1
        if tf.executing_eagerly():
            supported = [logits_shape[:-1] if one_short else logits_shape[:-1] + (1,)]
            if allow_per_logit_weights and not one_short:
                supported.append(logits_shape)
            if shape not in supported:
                raise ValueError('{}, logits_shape: {}. weights_shape: {}.'.format(message, logits_shape, shape))
            return tf.expand_dims(values, -1, name=scope) if one_short else values
        actual, logits_actual = tf.shape(values), tf.shape(logits)
        data = ['logits_shape: ', logits_actual, 'weights_shape: ', actual]
        if one_short:
            same = tf.compat.v1.debugging.assert_equal(logits_actual[:-1], actual, message=message, data=data)
            with tf.control_dependencies([same]):
                return tf.expand_dims(values, -1, name=scope)
        one_per_example = tf.concat([logits_actual[:-1], [1]], axis=0)
        if allow_per_logit_weights:
            fits = tf.reduce_any(
                [
                    tf.reduce_all(tf.equal(logits_actual, actual)),
                    tf.reduce_all(tf.equal(one_per_example, actual)),
                ]
            )
            same = tf.debugging.Assert(fits, [message] + data)
        else:
            same = tf.compat.v1.debugging.assert_equal(one_per_example, actual, message=message, data=data)
        with tf.control_dependencies([same]):
            return tf.identity(values, name=scope)


def reduce_loss(unweighted_loss, example_weights, loss_reduction: str):
    """The training loss, under TF 2.15's names (`head/losses/weighted_loss/Sum`, `.../value`)."""
    with tf.compat.v1.name_scope('weighted_loss'):
        weighted = tf.multiply(unweighted_loss, example_weights)
        total = tf.reduce_sum(weighted)
        if loss_reduction not in _SUM_OVER_BATCH_SIZE:
            return total
        with tf.compat.v1.name_scope('num_elements') as scope:
            count = tf.cast(tf.size(weighted, name=scope), total.dtype)
        return tf.math.divide_no_nan(total, count, name='value')


def check_label_range(labels, n_classes: int, message: str | None = None):
    """`labels` once every one is in `[0, n_classes)`: TF 2.15's ValueError eagerly, its assertions in a graph."""
    with tf.compat.v1.name_scope('check_label_range'):
        if tf.executing_eagerly():
            if not tf.reduce_all(tf.math.less_equal(labels, n_classes - 1)):
                raise ValueError(message or 'Labels must be <= {} - 1'.format(n_classes))
            if not tf.reduce_all(tf.math.greater_equal(labels, 0)):
                raise ValueError(message or 'Labels must be >= 0')
            return labels
        in_range = [
            tf.compat.v1.debugging.assert_less_equal(
                labels, tf.cast(n_classes - 1, labels.dtype), message=message or 'Labels must be <= n_classes - 1'
            ),
            tf.compat.v1.debugging.assert_non_negative(labels, message=message or 'Labels must be >= 0'),
        ]
        with tf.control_dependencies(in_range):
            return tf.identity(labels)


def vocabulary_ids(labels, vocabulary: list):
    """String labels as their ids in `vocabulary`; an assertion names the vocabulary for a string not in it."""
    if labels.dtype != tf.string:
        raise ValueError('Labels dtype should be string if there is a vocabulary. Instead got {}'.format(labels.dtype))
    matches = tf.equal(labels[..., tf.newaxis], tf.constant(vocabulary))
    ids = tf.where(
        tf.reduce_any(matches, axis=-1),
        tf.argmax(tf.cast(matches, tf.int32), axis=-1, output_type=tf.int64),
        tf.constant(-1, tf.int64),
    )
    known = tf.debugging.assert_non_negative(
        ids, message=f'`label_vocabulary` {vocabulary} does not hold every label of the input'
    )
    with tf.control_dependencies([known]):
        return tf.identity(ids)


def class_names(n_classes: int, vocabulary: list | None):
    """The classes' strings: the vocabulary, or '0', '1', ..."""
    if vocabulary is not None:
        return tf.constant(vocabulary)
    return tf.strings.as_string(tf.range(n_classes))


def per_example(values, logits):
    """`values` (one row per class) tiled over the batch of `logits`."""
    multiples = tf.concat([tf.shape(logits)[:1], [1]], axis=0)
    return tf.tile(values[tf.newaxis], multiples)


def classification_outputs(predictions: dict, n_classes: int, vocabulary: list | None) -> dict:
    """A classifier's export outputs: `serving_default` and `classification` (classify), `predict`."""
    scores = predictions['probabilities']
    classes = per_example(class_names(n_classes, vocabulary), scores)
    classification = export.ClassificationOutput(scores=scores, classes=classes)
    return {
        DEFAULT_SERVING_KEY: classification,
        CLASSIFY_SERVING_KEY: classification,
        PREDICT_SERVING_KEY: export.PredictOutput(predictions),
    }


def _keras_metrics():
    """The Keras metrics of eager heads: Keras 2's (`tf_keras`, TF 2.15's own) if installed, else `tf.keras`'s."""
    try:
        return importlib.import_module('tf_keras').metrics
    except ImportError:
        return tf.keras.metrics


def _broadcast(sample_weight, values):
    if sample_weight is None:
        return None
    return tf.broadcast_to(tf.cast(sample_weight, tf.float32), tf.shape(values))


def _graph_weights(sample_weight, values):
    """`_broadcast(sample_weight, values)` for a `tf.compat.v1.metrics` metric, but a scalar weight as it is.

    Those metrics broadcast a scalar weight themselves (`weights * ones_like(values)`, the same ones), where a
    weight of a shape known only when the graph runs gets a runtime check of two `tf.cond`s per metric, which
    cost time to build and to instantiate, and TF 2.15's heads (of Keras metrics) did not have.
    """
    if sample_weight is not None and tf.convert_to_tensor(sample_weight).shape.rank == 0:
        return tf.cast(sample_weight, tf.float32)
    return _broadcast(sample_weight, values)


def metric_weights(example_weights, unweighted_loss):
    """The examples' weights as a head's metrics take them: broadcast to the loss, a scalar (no weight column)
    kept a scalar, which the metrics broadcast to their values alike (`_graph_weights`)."""
    if example_weights.shape.rank == 0:
        return example_weights
    return tf.broadcast_to(example_weights, tf.shape(unweighted_loss))


class HeadMetric:
    """One evaluation metric of a head: the Keras metric TF 2.15's head made.

    `Head.metrics()` makes them, `Head.update_metrics(...)` updates each (its `update_state` takes the Keras
    metric's arguments); `result()` is the value. In the Estimator's graph the metric is built of
    `tf.compat.v1.metrics` (`updates` is its update op, as `EstimatorSpec(eval_metric_ops=...)` takes a Keras
    metric); run eagerly it is the Keras metric itself (`tf.keras.metrics`), updated at each call, as TF 2.15's
    heads were used eagerly.

    Args:
      name: the metric's name (TF 2.15's Keras metric's).
      build: `build(*args, **kwargs)` returns the `(value, update_op)` pair of `tf.compat.v1.metrics`.
      keras: `keras(name)` makes the Keras metric an eager head updates.
    """

    def __init__(self, name: str, build: Callable[..., tuple], keras: Callable[[str], Any]):
        self.name = name
        self._build = build
        self._keras = keras
        self._eager = None
        self._eager_result: Callable | None = None
        self._pair = None
        self._variables: list = []

    def _eager_metric(self):
        if self._eager is None:
            self._eager = self._keras(self.name)
        return self._eager

    def update_state(self, *args, **kwargs):
        """Updates the metric with a batch (eagerly), or builds its value and update op in the default graph."""
        if tf.executing_eagerly():
            return self._eager_metric().update_state(*args, **kwargs)
        graph = tf.compat.v1.get_default_graph()
        before = {id(variable) for variable in graph.get_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES)}
        self._pair = self._build(*args, **kwargs)
        self._variables = [
            variable
            for variable in graph.get_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES)
            if id(variable) not in before
        ]
        return self._pair[1]

    def follow(self, source: HeadMetric, fn: Callable) -> None:
        """Makes the metric `fn` of `source`'s value (`accuracy_baseline` of `label/mean`)."""
        if tf.executing_eagerly():
            self._eager_result = lambda: fn(source.result())
            return
        value, update = source.as_pair()
        self._pair = (fn(value), fn(update))

    def result(self):
        """The metric's value tensor; ValueError before `update_state` in a graph."""
        if self._eager_result is not None:
            return self._eager_result()
        if tf.executing_eagerly():
            return self._eager_metric().result()
        if self._pair is None:
            raise ValueError(f'Please call update_state(...) on the "{self.name}" metric')
        return self._pair[0]

    def reset_state(self) -> None:
        """Resets an eager metric's state to that of no batch."""
        if self._eager is not None:
            self._eager.reset_state()

    @property
    def updates(self) -> list:
        """The update op, once `update_state` has built it in a graph."""
        return [] if self._pair is None else [self._pair[1]]

    @property
    def variables(self) -> list:
        """The metric's variables."""
        if self._eager is not None:
            return list(self._eager.variables)
        return list(self._variables)

    def as_pair(self) -> tuple:
        """`(value, update_op)`, as `eval_metric_ops` take a metric."""
        self.result()
        return self._pair


def mean_metric(name: str) -> HeadMetric:
    """`tf.keras.metrics.Mean(name)`: `update_state(values, sample_weight=None)`."""

    def build(values, sample_weight=None):
        values = tf.cast(values, tf.float32)
        return tf.compat.v1.metrics.mean(values, weights=_graph_weights(sample_weight, values))

    return HeadMetric(name, build, lambda name: _EagerBroadcast(_keras_metrics().Mean(name=name)))


def accuracy_metric(name: str, threshold: float | None = None) -> HeadMetric:
    """`tf.keras.metrics.Accuracy` (class ids), or `BinaryAccuracy(threshold=...)` (probabilities)."""

    def build(y_true, y_pred, sample_weight=None):
        if threshold is not None:
            y_pred = tf.cast(y_pred > threshold, tf.float32)
        return tf.compat.v1.metrics.accuracy(
            labels=y_true, predictions=y_pred, weights=_graph_weights(sample_weight, y_pred)
        )

    def keras(name):
        if threshold is None:
            return _keras_metrics().Accuracy(name=name)
        return _keras_metrics().BinaryAccuracy(name=name, threshold=threshold)

    return HeadMetric(name, build, keras)


def precision_recall_metric(name: str, kind: str, threshold: float | None = None) -> HeadMetric:
    """`tf.keras.metrics.Precision`/`Recall` (`kind`), of class ids, or of probabilities at `threshold`."""

    def build(y_true, y_pred, sample_weight=None):
        weights = _graph_weights(sample_weight, y_pred)
        if threshold is None:
            metric = tf.compat.v1.metrics.precision if kind == 'precision' else tf.compat.v1.metrics.recall
            return metric(labels=y_true, predictions=y_pred, weights=weights)
        metric = (
            tf.compat.v1.metrics.precision_at_thresholds
            if kind == 'precision'
            else tf.compat.v1.metrics.recall_at_thresholds
        )
        value, update = metric(labels=y_true, predictions=y_pred, thresholds=[threshold], weights=weights)
        return tf.squeeze(value), tf.squeeze(update)

    def keras(name):
        metric = _keras_metrics().Precision if kind == 'precision' else _keras_metrics().Recall
        return metric(name=name, thresholds=threshold)

    return HeadMetric(name, build, keras)


def auc_metric(name: str, curve: str = 'ROC') -> HeadMetric:
    """`tf.keras.metrics.AUC(curve=...)`: 200 thresholds, interpolated as Keras did."""

    def build(y_true, y_pred, sample_weight=None):
        y_pred = tf.cast(y_pred, tf.float32)
        return tf.compat.v1.metrics.auc(
            labels=tf.cast(y_true, tf.float32),
            predictions=y_pred,
            weights=_graph_weights(sample_weight, y_pred),
            curve=curve,
            summation_method='careful_interpolation' if curve == 'PR' else 'trapezoidal',
        )

    return HeadMetric(name, build, lambda name: _EagerAuc(_keras_metrics().AUC(name=name, curve=curve)))


class _EagerBroadcast:
    """A Keras `Mean` updated as TF 2.15's heads did: the values as float32, the weights broadcast to them."""

    def __init__(self, metric):
        self._metric = metric
        self.variables = metric.variables

    def update_state(self, values, sample_weight=None):
        values = tf.cast(values, tf.float32)
        return self._metric.update_state(values, sample_weight=_broadcast(sample_weight, values))

    def result(self):
        return self._metric.result()

    def reset_state(self) -> None:
        self._metric.reset_state()


class _EagerAuc(_EagerBroadcast):
    """A Keras `AUC` updated as TF 2.15's heads did: the predictions as float32, the weights broadcast to them."""

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = tf.cast(y_pred, tf.float32)
        return self._metric.update_state(y_true, y_pred, sample_weight=_broadcast(sample_weight, y_pred))


class Head:
    """Interface for the head/top of a model: v1's `tf.estimator.Head` (TF 2.15's `base_head.Head`).

    A head computes, from a model's logits, its predictions, loss, evaluation metrics and the `EstimatorSpec` of
    each mode. A custom `model_fn` calls it:

    ```python
    def model_fn(features, labels, mode):
        head = compat_mts.estimator.RegressionHead()
        w = tf.compat.v1.get_variable('w', [2, head.logits_dimension])
        logits = tf.matmul(features['x'], w)
        return head.create_estimator_spec(
            features, mode, logits, labels,
            train_op_fn=lambda loss: tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step()))
    ```

    Subclasses give `_processed_labels`, `_unweighted_loss`, `predictions`, `metrics`, `update_metrics` and
    `_export_outputs`.
    """

    _name: str | None = None
    _weight_column = None
    _loss_reduction = 'sum_over_batch_size'
    _logits_dimension = 1
    _per_logit_weights = False

    @property
    def name(self) -> str | None:
        """The head's name: it suffixes the metrics' and summaries' keys, and is the ops' name scope."""
        return self._name

    @property
    def logits_dimension(self) -> int:
        """The size of the last dimension of the logits the head takes."""
        return self._logits_dimension

    @property
    def loss_reduction(self) -> str:
        """How the training loss is reduced over the batch (a `tf.keras.losses.Reduction` value)."""
        return self._loss_reduction

    @property
    def weight_column(self):
        """The feature name or numeric column weighting each example, or None."""
        return self._weight_column

    def _summary_key(self, key: str) -> str:
        return f'{key}/{self._name}' if self._name else key

    def _processed_labels(self, logits, labels):
        raise NotImplementedError

    def _unweighted_loss(self, logits, labels, features):
        raise NotImplementedError

    def _export_outputs(self, predictions: dict) -> dict:
        raise NotImplementedError

    def predictions(self, logits, keys=None) -> dict:
        """The predictions of `logits`, a dict of prediction keys to tensors (those of `keys`, if given)."""
        raise NotImplementedError

    def metrics(self, regularization_losses=None) -> dict:
        """The evaluation metrics (`HeadMetric`s, not yet updated) by their keys."""
        raise NotImplementedError

    def update_metrics(self, eval_metrics: dict, features, logits, labels, regularization_losses=None) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with a batch; returns them."""
        raise NotImplementedError

    def _loss_and_weights(self, logits, labels, features):
        labels = self._processed_labels(logits, labels)
        example_weights = weights(features, self._weight_column, logits, self._per_logit_weights)
        return self._unweighted_loss(logits, labels, features), example_weights, labels

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The regularized training loss: the weighted loss reduced by `loss_reduction`, plus the regularization.

        Args:
          labels: the labels tensor.
          logits: the logits, `[batch, logits_dimension]`.
          features: the features dict (the weight column's values).
          mode: unused, as in TF 2.15.
          regularization_losses: scalar losses added to the loss, or None.

        Returns:
          A scalar tensor.
        """
        del mode  # Unused, as in TF 2.15.
        with tf.compat.v1.name_scope('losses'):  # TF 2.15's op names: a hook may fetch them by name.
            logits = check_logits(logits, self.logits_dimension)
            unweighted_loss, example_weights, _ = self._loss_and_weights(logits, labels, features)
            loss = reduce_loss(unweighted_loss, example_weights, self._loss_reduction)
            if regularization_losses is not None:
                loss = loss + tf.math.add_n(regularization_losses)
        return loss

    def _regularization_metric(self, eval_metrics: dict, regularization_losses) -> None:
        if regularization_losses is not None:
            eval_metrics[self._summary_key(_LOSS_REGULARIZATION)].update_state(
                values=tf.math.add_n(regularization_losses)
            )

    def _with_regularization(self, eval_metrics: dict, regularization_losses) -> dict:
        if regularization_losses is not None:
            eval_metrics[self._summary_key(_LOSS_REGULARIZATION)] = mean_metric(_LOSS_REGULARIZATION)
        return eval_metrics

    def create_estimator_spec(
        self,
        features,
        mode: str,
        logits,
        labels=None,
        optimizer=None,
        trainable_variables=None,
        train_op_fn: Callable | None = None,
        update_ops=None,
        regularization_losses=None,
    ) -> EstimatorSpec:
        """The `EstimatorSpec` of `mode` for `logits`: TF 2.15's predictions, export outputs, loss, metrics.

        Args:
          features: the features dict (the weight column's values).
          mode: a `ModeKeys` value.
          logits: the logits, `[batch, logits_dimension]`.
          labels: the labels tensor (TRAIN and EVAL).
          optimizer: trains the loss in TRAIN mode over `trainable_variables`: a Keras 2 optimizer (its own
            `iterations`, as in TF 2.15) or what the premade Estimators take (a name, a Keras 3 optimizer, a
            `tf.compat.v1.train.Optimizer`), which count the global step.
          trainable_variables: the variables `optimizer` trains.
          train_op_fn: `train_op_fn(loss)` returns the train op; in place of `optimizer`.
          update_ops: ops run with the train op (batch normalization's moving averages).
          regularization_losses: scalar losses added to the training loss.

        Returns:
          An `EstimatorSpec`.

        Raises:
          ValueError: in TRAIN mode, neither or both of `optimizer` and `train_op_fn`, `optimizer` without
            `trainable_variables`, `update_ops` not a list or tuple (TF 2.15's messages).
        """
        with tf.compat.v1.name_scope(self._name or 'head'):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=self._export_outputs(predictions))
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = self.update_metrics(
                    self.metrics(regularization_losses), features, logits, labels, regularization_losses
                )
                eval_metric_ops = {key: metric.as_pair() for key, metric in metrics.items()}
                return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=eval_metric_ops)
        with tf.compat.v1.get_default_graph().name_scope(None):
            tf.compat.v1.summary.scalar(self._summary_key('loss'), loss)
            if regularization_losses is not None:
                tf.compat.v1.summary.scalar(
                    self._summary_key(_LOSS_REGULARIZATION), tf.math.add_n(regularization_losses)
                )
            train_op = train_op_of(loss, self._loss_reduction, optimizer, trainable_variables, train_op_fn, update_ops)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


_LIBRARY_PACKAGES = ('keras', 'tf_keras', 'tensorflow')


def _defines_get_updates(optimizer) -> bool:
    """Whether `optimizer`'s class (a Keras optimizer subclassed by the program) defines its own `get_updates`."""
    for cls in type(optimizer).__mro__:
        if 'get_updates' in vars(cls):
            return cls.__module__.split('.')[0] not in _LIBRARY_PACKAGES
    return False


def train_op_of(loss, loss_reduction: str, optimizer, trainable_variables, train_op_fn, update_ops):
    """TF 2.15's train op of a head, under `training`: `optimizer` over `trainable_variables` (the first op of its
    `get_updates(loss, trainable_variables)` if its class defines its own, as TF 2.15 took), or `train_op_fn`."""
    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError('update_ops should be a list or a tuple. Given type: {}.'.format(type(update_ops)))
    with tf.compat.v1.name_scope('training'):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError('train_op_fn and optimizer cannot both be set.')
            if not _optimizers.is_keras_optimizer(optimizer):
                raise ValueError(
                    'The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received optimizer of '
                    f'type {type(optimizer)}'
                )
            if trainable_variables is None:
                raise ValueError('trainable_variables cannot be None. Given {}'.format(trainable_variables))
            if not isinstance(trainable_variables, (list, tuple)):
                raise ValueError(
                    'trainable_variables should be a list or a tuple. Given type: {}.'.format(type(trainable_variables))
                )
            loss = _optimizers.scaled_for_replicas(loss, loss_reduction)
            if _defines_get_updates(optimizer):
                train_op = optimizer.get_updates(loss, list(trainable_variables))[0]
            else:
                _optimizers.check_optimizer('optimizer', optimizer)
                step = None if _optimizers.is_keras2_optimizer(optimizer) else tf.compat.v1.train.get_global_step()
                train_op = _optimizers.apply_gradients(optimizer, None, loss, list(trainable_variables), step)
        elif train_op_fn is not None:
            train_op = train_op_fn(loss)
        else:
            raise ValueError('train_op_fn and optimizer cannot both be None.')
        if update_ops is not None:
            train_op = tf.group(train_op, *update_ops)
        return train_op
