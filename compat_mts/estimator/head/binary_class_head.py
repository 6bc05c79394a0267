"""TF 2.15's `head/binary_class_head.py`: `BinaryClassHead`, sigmoid cross entropy on one logit per example."""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator import export
from compat_mts.estimator.head import base_head

_SIGNATURES = ('serving_default', 'classification', 'regression', 'predict')  # TF 2.15's order.
_VALID_KEYS = ('logits', 'logistic', 'probabilities', 'class_ids', 'classes', 'all_class_ids', 'all_classes')


def check_label_vocabulary(label_vocabulary) -> list | None:
    """The vocabulary as a list; TF 2.15's ValueError for anything but a list or a tuple."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError('label_vocabulary should be a list or a tuple. Given type: {}'.format(type(label_vocabulary)))
    return None if label_vocabulary is None else list(label_vocabulary)


def check_thresholds(thresholds) -> tuple:
    """The thresholds as a tuple; TF 2.15's ValueError for one outside (0, 1)."""
    thresholds = tuple(thresholds) if thresholds else ()
    for threshold in thresholds:
        if threshold <= 0.0 or threshold >= 1.0:
            raise ValueError('thresholds not in (0, 1): {}.'.format((thresholds,)))
    return thresholds


class BinaryClassHead(base_head.Head):
    """A head for binary classification, v1's `tf.estimator.BinaryClassHead` (TF 2.15's).

    Sigmoid cross entropy of one logit per example. Predictions `logits`, `logistic`, `probabilities`,
    `class_ids`, `classes`, `all_class_ids`, `all_classes`; metrics `accuracy`, `precision`, `recall`,
    `prediction/mean`, `label/mean`, `accuracy_baseline`, `auc`, `auc_precision_recall`, `average_loss` (and
    `accuracy/positive_threshold_<t>`, `precision/...`, `recall/...` for each of `thresholds`), each key
    suffixed `/<name>` for a named head; export signatures `serving_default` and `classification` (classify),
    `regression` (the logistic), `predict`.

    Args:
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example.
      thresholds: probabilities in (0, 1) for the thresholded metrics.
      label_vocabulary: the two classes' strings, for string labels; None for labels 0 and 1 (or booleans).
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      loss_fn: `loss_fn(labels, logits[, features])` returning the unweighted loss, `[batch, 1]`.
      name: the head's name (its ops' scope, its keys' suffix).

    Raises:
      ValueError: a `label_vocabulary` not a list or tuple, a threshold outside (0, 1), an unknown
        `loss_reduction`, a `loss_fn` of other arguments (TF 2.15's messages).
    """

    def __init__(
        self,
        weight_column=None,
        thresholds=None,
        label_vocabulary=None,
        loss_reduction: str = 'sum_over_batch_size',
        loss_fn=None,
        name: str | None = None,
    ):
        self._label_vocabulary = check_label_vocabulary(label_vocabulary)
        self._thresholds = check_thresholds(thresholds)
        base_head.check_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.check_loss_fn(loss_fn)
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def thresholds(self) -> tuple:
        """The thresholds of the thresholded metrics."""
        return self._thresholds

    @property
    def label_vocabulary(self) -> list | None:
        """The classes' strings, or None."""
        return self._label_vocabulary

    @property
    def loss_fn(self):
        """The custom loss function, or None."""
        return self._loss_fn

    def _processed_labels(self, logits, labels):
        labels = base_head.dense_labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = base_head.vocabulary_ids(labels, self._label_vocabulary)
        # TF 2.15's binary head takes labels as float32: booleans (`tf.equal(label, '>50K')`) included.
        return base_head.check_label_range(tf.cast(labels, tf.float32), 2)

    def _unweighted_loss(self, logits, labels, features):
        if self._loss_fn:
            return base_head.call_loss_fn(self._loss_fn, labels, logits, features, 1)
        labels = tf.cast(labels, logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):  # TF 2.15's tf.nn message (TF 2.21 words it anew).
            raise ValueError(f'logits and labels must have the same shape ({logits.shape} vs {labels.shape})')
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def predictions(self, logits, keys=None) -> dict:
        """TF 2.15's predictions (those of `keys`, if given): `logits`, `logistic`, `probabilities`, ...

        Args:
          logits: `[batch, 1]`.
          keys: prediction keys to return; None for all.

        Returns:
          A dict of prediction keys to tensors.
        """
        if keys:
            base_head.check_prediction_keys(keys, _VALID_KEYS)
        keys = keys or _VALID_KEYS
        logits = base_head.check_logits(logits, 1)
        names = base_head.class_names(2, self._label_vocabulary)
        everything = {'logits': logits}
        with tf.compat.v1.name_scope('predictions'):
            everything['logistic'] = tf.math.sigmoid(logits, name='logistic')
            scores = tf.concat((tf.zeros_like(logits), logits), axis=-1, name='two_class_logits')
            everything['probabilities'] = tf.nn.softmax(scores, name='probabilities')
            class_ids = tf.expand_dims(tf.argmax(scores, axis=-1, name='class_ids'), axis=-1)
            everything['class_ids'] = class_ids
            if self._label_vocabulary is not None:
                everything['classes'] = tf.gather(names, class_ids, name='classes')
            else:
                everything['classes'] = tf.strings.as_string(class_ids, name='str_classes')
            everything['all_class_ids'] = base_head.per_example(tf.range(2), logits)
            everything['all_classes'] = base_head.per_example(names, logits)
        return {key: everything[key] for key in _VALID_KEYS if key in keys}

    def _export_outputs(self, predictions: dict) -> dict:
        outputs = base_head.classification_outputs(predictions, 2, self._label_vocabulary)
        outputs[base_head.REGRESS_SERVING_KEY] = export.RegressionOutput(value=predictions['logistic'])
        return {key: outputs[key] for key in _SIGNATURES}

    def metrics(self, regularization_losses=None) -> dict:
        """TF 2.15's metrics of a binary head, by key (not yet updated)."""
        key = self._summary_key
        eval_metrics = {
            key('average_loss'): base_head.mean_metric('average_loss'),
            key('accuracy'): base_head.accuracy_metric('accuracy'),
            key('precision'): base_head.precision_recall_metric('precision', 'precision'),
            key('recall'): base_head.precision_recall_metric('recall', 'recall'),
            key('prediction/mean'): base_head.mean_metric('prediction/mean'),
            key('label/mean'): base_head.mean_metric('label/mean'),
            key('accuracy_baseline'): base_head.mean_metric('accuracy_baseline'),
            key('auc'): base_head.auc_metric('auc'),
            key('auc_precision_recall'): base_head.auc_metric('auc_precision_recall', curve='PR'),
        }
        self._with_regularization(eval_metrics, regularization_losses)
        for threshold in self._thresholds:
            for kind, make in (
                ('accuracy', lambda name, t: base_head.accuracy_metric(name, t)),
                ('precision', lambda name, t: base_head.precision_recall_metric(name, 'precision', t)),
                ('recall', lambda name, t: base_head.precision_recall_metric(name, 'recall', t)),
            ):
                name = key(f'{kind}/positive_threshold_%g' % threshold)
                eval_metrics[name] = make(name, threshold)
        return eval_metrics

    def update_metrics(self, eval_metrics: dict, features, logits, labels, regularization_losses=None) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with a batch, as TF 2.15's head did; returns them.

        Args:
          eval_metrics: the dict `metrics()` returned.
          features: the features dict (the weight column).
          logits: `[batch, 1]`.
          labels: the labels.
          regularization_losses: the regularization losses, or None.

        Returns:
          `eval_metrics`.
        """
        key = self._summary_key
        logits = base_head.check_logits(logits, 1)
        predictions = self.predictions(logits, ['logistic', 'class_ids'])
        class_ids, logistic = predictions['class_ids'], predictions['logistic']
        unweighted_loss, example_weights, labels = self._loss_and_weights(logits, labels, features)
        example_weights = base_head.metric_weights(example_weights, unweighted_loss)
        eval_metrics[key('accuracy')].update_state(labels, class_ids, example_weights)
        eval_metrics[key('average_loss')].update_state(unweighted_loss, example_weights)
        eval_metrics[key('precision')].update_state(labels, class_ids, example_weights)
        eval_metrics[key('recall')].update_state(labels, class_ids, example_weights)
        eval_metrics[key('prediction/mean')].update_state(logistic, example_weights)
        label_mean = eval_metrics[key('label/mean')]
        label_mean.update_state(labels, example_weights)
        eval_metrics[key('accuracy_baseline')].follow(label_mean, lambda mean: tf.maximum(mean, 1.0 - mean))
        eval_metrics[key('auc')].update_state(labels, logistic, example_weights)
        eval_metrics[key('auc_precision_recall')].update_state(labels, logistic, example_weights)
        self._regularization_metric(eval_metrics, regularization_losses)
        for threshold in self._thresholds:
            for kind in ('accuracy', 'precision', 'recall'):
                eval_metrics[key(f'{kind}/positive_threshold_%g' % threshold)].update_state(
                    labels, logistic, example_weights
                )
        return eval_metrics
