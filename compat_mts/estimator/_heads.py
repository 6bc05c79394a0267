"""The premade Estimators' heads: logits to TF 2.15's predictions, loss, metrics, summaries and export outputs.

A head turns the model's logits into the `EstimatorSpec` of a mode. The keys, shapes, dtypes, the loss and its
reduction, the evaluation metrics and the export signatures are those of TF 2.15's `BinaryClassHead`,
`MultiClassHead` and `RegressionHead` (the heads its `DNNClassifier`, ... used); they are built here as v1 graph
ops (`tf.compat.v1.metrics` in place of the Keras 2 metrics TF 2.15 used, with the same definitions). Label
vocabularies are looked up by comparison with a constant, not a lookup table, so the graph exports.
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from compat_mts.estimator import export
from compat_mts.estimator.model_fn import EstimatorSpec, ModeKeys

LOSS_REDUCTIONS = ('auto', 'sum', 'sum_over_batch_size')
_SUM_OVER_BATCH_SIZE = ('auto', 'sum_over_batch_size')


def check_loss_reduction(loss_reduction) -> None:
    """Raises ValueError (v1's message) unless `loss_reduction` is a `tf.keras.losses.Reduction` other than NONE."""
    if loss_reduction not in LOSS_REDUCTIONS:
        raise ValueError(
            'Invalid loss_reduction: {}. See `tf.losses.Reduction` for valid options.'.format(loss_reduction)
        )


def _weights(features: dict, weight_column, logits):
    if weight_column is None:
        return tf.constant(1.0, dtype=logits.dtype)
    key = weight_column if isinstance(weight_column, str) else weight_column.key
    if key not in features:
        raise ValueError(f'`weight_column` {key!r} is not among the features: {sorted(features)}')
    weights = tf.cast(tf.convert_to_tensor(features[key]), logits.dtype)
    return tf.reshape(weights, [-1, 1])


def _reduce(unweighted_loss, weights, loss_reduction):
    """The training loss, under TF 2.15's names (`head/losses/weighted_loss/Sum`, `.../value`)."""
    with tf.compat.v1.name_scope('weighted_loss'):
        weighted = tf.multiply(unweighted_loss, weights)
        total = tf.reduce_sum(weighted)
        if loss_reduction not in _SUM_OVER_BATCH_SIZE:
            return total
        with tf.compat.v1.name_scope('num_elements') as scope:
            count = tf.cast(tf.size(weighted, name=scope), total.dtype)
        return tf.math.divide_no_nan(total, count, name='value')


def _labels_as_column(labels, dimension: int = 1):
    if isinstance(labels, dict) or labels is None:
        raise ValueError(f'The premade Estimators take one labels tensor from the input_fn; got {labels!r}.')
    labels = tf.convert_to_tensor(labels)
    return tf.reshape(labels, [-1, dimension], name='labels')


class _Head:
    """What the three heads share: the spec of each mode from logits, labels and a train op function."""

    logits_dimension: int

    def __init__(self, weight_column=None, loss_reduction='sum_over_batch_size'):
        check_loss_reduction(loss_reduction)
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction

    @property
    def loss_reduction(self) -> str:
        """How the loss is reduced over the batch (a `tf.keras.losses.Reduction` value)."""
        return self._loss_reduction

    def create_estimator_spec(
        self, features: dict, mode: str, logits, labels, train_op_fn: Callable | None
    ) -> EstimatorSpec:
        with tf.compat.v1.name_scope('head'):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=self.export_outputs(predictions))
            with tf.compat.v1.name_scope('losses'):  # TF 2.15's op names: a hook may fetch them by name.
                unweighted_loss, label_values = self.unweighted_loss(logits, labels)
                weights = _weights(features, self._weight_column, logits)
                loss = _reduce(unweighted_loss, weights, self._loss_reduction)
            if mode == ModeKeys.EVAL:
                metrics = self.metrics(predictions, label_values, unweighted_loss, weights)
                return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=metrics)
        with tf.compat.v1.get_default_graph().name_scope(None):
            tf.compat.v1.summary.scalar('loss', loss)
            train_op = train_op_fn(loss)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


class ClassificationHead(_Head):
    """TF 2.15's `BinaryClassHead` (`n_classes == 2`) or `MultiClassHead` (more classes)."""

    def __init__(self, n_classes: int, weight_column=None, label_vocabulary=None, loss_reduction='sum_over_batch_size'):
        super().__init__(weight_column, loss_reduction)
        self._n_classes = n_classes
        self._vocabulary = list(label_vocabulary) if label_vocabulary is not None else None
        self._binary = n_classes == 2
        self.logits_dimension = 1 if self._binary else n_classes

    def _class_names(self):
        if self._vocabulary is not None:
            return tf.constant(self._vocabulary)
        return tf.strings.as_string(tf.range(self._n_classes))

    def predictions(self, logits) -> dict:
        predictions = {'logits': logits}
        with tf.compat.v1.name_scope('predictions'):
            if self._binary:
                predictions['logistic'] = tf.math.sigmoid(logits, name='logistic')
                scores = tf.concat((tf.zeros_like(logits), logits), axis=-1, name='two_class_logits')
            else:
                scores = logits
            predictions['probabilities'] = tf.nn.softmax(scores, name='probabilities')
            class_ids = tf.expand_dims(tf.argmax(scores, axis=-1, name='class_ids'), axis=-1)
            predictions['class_ids'] = class_ids
            if self._vocabulary is not None:
                predictions['classes'] = tf.gather(self._class_names(), class_ids, name='classes')
            else:
                predictions['classes'] = tf.strings.as_string(class_ids, name='str_classes')
            batch_size = tf.shape(logits)[:1]
            multiples = tf.concat([batch_size, [1]], axis=0)
            predictions['all_class_ids'] = tf.tile(tf.range(self._n_classes)[tf.newaxis], multiples)
            predictions['all_classes'] = tf.tile(self._class_names()[tf.newaxis], multiples)
        return predictions

    def export_outputs(self, predictions: dict) -> dict:
        scores = predictions['probabilities']
        classes = tf.tile(self._class_names()[tf.newaxis], tf.concat([tf.shape(scores)[:1], [1]], axis=0))
        classification = export.ClassificationOutput(scores=scores, classes=classes)
        outputs = {'serving_default': classification, 'classification': classification}
        if self._binary:
            outputs['regression'] = export.RegressionOutput(value=predictions['logistic'])
        outputs['predict'] = export.PredictOutput(predictions)
        return outputs

    def _label_ids(self, labels):
        labels = _labels_as_column(labels)
        if self._vocabulary is None:
            if not labels.dtype.is_integer and not self._binary:
                raise ValueError('Labels dtype should be integer. Instead got {}.'.format(labels.dtype))
            # TF 2.15's binary head takes labels as float32: booleans (`tf.equal(label, '>50K')`) included.
            label_ids = tf.cast(labels, tf.float32) if self._binary else labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(
                    'Labels dtype should be string if there is a vocabulary. Instead got {}'.format(labels.dtype)
                )
            matches = tf.equal(labels, tf.constant(self._vocabulary)[tf.newaxis])
            label_ids = tf.where(
                tf.reduce_any(matches, axis=1, keepdims=True),
                tf.argmax(tf.cast(matches, tf.int32), axis=1, output_type=tf.int64)[:, tf.newaxis],
                tf.constant(-1, tf.int64),
            )
            assert_known = tf.debugging.assert_non_negative(
                label_ids, message=f'`label_vocabulary` {self._vocabulary} does not hold every label of the input'
            )
            with tf.control_dependencies([assert_known]):
                label_ids = tf.identity(label_ids)
        in_range = [
            tf.debugging.assert_less_equal(
                label_ids, tf.cast(self._n_classes - 1, label_ids.dtype), message='Labels must be <= n_classes - 1'
            ),
            tf.debugging.assert_non_negative(label_ids, message='Labels must be >= 0'),
        ]
        with tf.control_dependencies(in_range):
            return tf.identity(label_ids)

    def unweighted_loss(self, logits, labels):
        label_ids = self._label_ids(labels)
        if self._binary:
            loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(label_ids, logits.dtype), logits=logits)
        else:
            loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
                labels=label_ids, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
            )
            loss = tf.expand_dims(loss, axis=-1)
        return loss, label_ids

    def metrics(self, predictions: dict, label_ids, unweighted_loss, weights) -> dict:
        weights = tf.broadcast_to(weights, tf.shape(unweighted_loss))
        metrics_lib = tf.compat.v1.metrics
        class_ids = predictions['class_ids']
        metrics = {
            'accuracy': metrics_lib.accuracy(labels=label_ids, predictions=class_ids, weights=weights),
            'average_loss': metrics_lib.mean(unweighted_loss, weights=weights),
        }
        if not self._binary:
            return metrics
        labels = tf.cast(label_ids, tf.float32)
        logistic = predictions['logistic']
        label_mean = metrics_lib.mean(labels, weights=weights)
        metrics.update(
            {
                'precision': metrics_lib.precision(labels=label_ids, predictions=class_ids, weights=weights),
                'recall': metrics_lib.recall(labels=label_ids, predictions=class_ids, weights=weights),
                'prediction/mean': metrics_lib.mean(logistic, weights=weights),
                'label/mean': label_mean,
                'accuracy_baseline': (
                    tf.maximum(label_mean[0], 1.0 - label_mean[0]),
                    tf.maximum(label_mean[1], 1.0 - label_mean[1]),
                ),
                'auc': metrics_lib.auc(labels=labels, predictions=logistic, weights=weights, curve='ROC'),
                'auc_precision_recall': metrics_lib.auc(
                    labels=labels,
                    predictions=logistic,
                    weights=weights,
                    curve='PR',
                    summation_method='careful_interpolation',
                ),
            }
        )
        return metrics


class RegressionHead(_Head):
    """TF 2.15's `RegressionHead`: mean squared error, `predictions`, `regression` and `predict` signatures."""

    def __init__(self, label_dimension: int = 1, weight_column=None, loss_reduction='sum_over_batch_size'):
        if label_dimension < 1:
            raise ValueError('Invalid label_dimension {}.'.format(label_dimension))
        super().__init__(weight_column, loss_reduction)
        self.logits_dimension = label_dimension

    def predictions(self, logits) -> dict:
        return {'predictions': logits}

    def export_outputs(self, predictions: dict) -> dict:
        regression = export.RegressionOutput(value=predictions['predictions'])
        return {'serving_default': regression, 'regression': regression, 'predict': export.PredictOutput(predictions)}

    def unweighted_loss(self, logits, labels):
        labels = tf.cast(_labels_as_column(labels, self.logits_dimension), logits.dtype)
        loss = tf.compat.v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        return loss, labels

    def metrics(self, predictions: dict, labels, unweighted_loss, weights) -> dict:
        weights = tf.broadcast_to(weights, tf.shape(unweighted_loss))
        metrics_lib = tf.compat.v1.metrics
        return {
            'average_loss': metrics_lib.mean(unweighted_loss, weights=weights),
            'label/mean': metrics_lib.mean(labels, weights=weights),
            'prediction/mean': metrics_lib.mean(predictions['predictions'], weights=weights),
        }
