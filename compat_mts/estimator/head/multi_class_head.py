"""TF 2.15's `head/multi_class_head.py`: `MultiClassHead`, softmax cross entropy over `n_classes` logits."""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator.head import base_head
from compat_mts.estimator.head.binary_class_head import check_label_vocabulary

_VALID_KEYS = ('logits', 'probabilities', 'class_ids', 'classes', 'all_class_ids', 'all_classes')


class MultiClassHead(base_head.Head):
    """A head for multi-class classification, v1's `tf.estimator.MultiClassHead` (TF 2.15's).

    Sparse softmax cross entropy of `n_classes` logits per example; labels are class ids in `[0, n_classes)`, or
    strings of `label_vocabulary`. Predictions `logits`, `probabilities`, `class_ids`, `classes`,
    `all_class_ids`, `all_classes`; metrics `accuracy`, `average_loss` (keys suffixed `/<name>` for a named
    head); export signatures `serving_default` and `classification` (classify), `predict`.

    Args:
      n_classes: the number of classes, more than 2.
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example.
      label_vocabulary: the classes' strings, for string labels; None for integer labels.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      loss_fn: `loss_fn(labels, logits[, features])` returning the unweighted loss, `[batch, 1]`.
      name: the head's name (its ops' scope, its keys' suffix).

    Raises:
      ValueError: `n_classes` None or of 2 or less, a `label_vocabulary` not a list or tuple of `n_classes`, an unknown
        `loss_reduction`, a `loss_fn` of other arguments (TF 2.15's messages).
    """

    def __init__(
        self,
        n_classes: int,
        weight_column=None,
        label_vocabulary=None,
        loss_reduction: str = 'sum_over_batch_size',
        loss_fn=None,
        name: str | None = None,
    ):
        if n_classes is None:
            raise ValueError('n_classes cannot be None')
        if isinstance(n_classes, int) and n_classes <= 2:
            raise ValueError('n_classes must be > 2: %s.' % n_classes)
        self._label_vocabulary = check_label_vocabulary(label_vocabulary)
        if self._label_vocabulary is not None and len(self._label_vocabulary) != n_classes:
            raise ValueError(
                '"label_vocabulary" does not have "n_classes" items. len(label_vocabulary)={}, n_classes={}, '
                'label_vocabulary={}'.format(len(self._label_vocabulary), n_classes, label_vocabulary)
            )
        base_head.check_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.check_loss_fn(loss_fn)
        self._n_classes = n_classes
        self._logits_dimension = n_classes
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

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
        elif not labels.dtype.is_integer:
            raise ValueError('Labels dtype should be integer. Instead got {}.'.format(labels.dtype))
        return base_head.check_label_range(labels, self._n_classes)

    def _unweighted_loss(self, logits, labels, features):
        if self._loss_fn:
            return base_head.call_loss_fn(self._loss_fn, labels, logits, features, 1)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
            labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        return tf.expand_dims(loss, axis=-1)

    def predictions(self, logits, keys=None) -> dict:
        """TF 2.15's predictions (those of `keys`, if given): `logits`, `probabilities`, `class_ids`, ...

        Args:
          logits: `[batch, n_classes]`.
          keys: prediction keys to return; None for all.

        Returns:
          A dict of prediction keys to tensors.
        """
        if keys:
            base_head.check_prediction_keys(keys, _VALID_KEYS)
        keys = keys or _VALID_KEYS
        logits = base_head.check_logits(logits, self._n_classes)
        names = base_head.class_names(self._n_classes, self._label_vocabulary)
        everything = {'logits': logits}
        with tf.compat.v1.name_scope('predictions'):
            everything['probabilities'] = tf.nn.softmax(logits, name='probabilities')
            class_ids = tf.expand_dims(tf.argmax(logits, axis=-1, name='class_ids'), axis=-1)
            everything['class_ids'] = class_ids
            if self._label_vocabulary is not None:
                everything['classes'] = tf.gather(names, class_ids, name='classes')
            else:
                everything['classes'] = tf.strings.as_string(class_ids, name='str_classes')
            everything['all_class_ids'] = base_head.per_example(tf.range(self._n_classes), logits)
            everything['all_classes'] = base_head.per_example(names, logits)
        return {key: everything[key] for key in _VALID_KEYS if key in keys}

    def _export_outputs(self, predictions: dict) -> dict:
        return base_head.classification_outputs(predictions, self._n_classes, self._label_vocabulary)

    def metrics(self, regularization_losses=None) -> dict:
        """TF 2.15's metrics of a multi-class head, by key (not yet updated)."""
        eval_metrics = {
            self._summary_key('accuracy'): base_head.accuracy_metric('accuracy'),
            self._summary_key('average_loss'): base_head.mean_metric('average_loss'),
        }
        return self._with_regularization(eval_metrics, regularization_losses)

    def update_metrics(self, eval_metrics: dict, features, logits, labels, regularization_losses=None) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with a batch, as TF 2.15's head did; returns them.

        Args:
          eval_metrics: the dict `metrics()` returned.
          features: the features dict (the weight column).
          logits: `[batch, n_classes]`.
          labels: the labels.
          regularization_losses: the regularization losses, or None.

        Returns:
          `eval_metrics`.
        """
        logits = base_head.check_logits(logits, self._n_classes)
        class_ids = self.predictions(logits, ['class_ids'])['class_ids']
        unweighted_loss, example_weights, labels = self._loss_and_weights(logits, labels, features)
        example_weights = base_head.metric_weights(example_weights, unweighted_loss)
        eval_metrics[self._summary_key('accuracy')].update_state(labels, class_ids, example_weights)
        eval_metrics[self._summary_key('average_loss')].update_state(unweighted_loss, example_weights)
        self._regularization_metric(eval_metrics, regularization_losses)
        return eval_metrics
