"""TF 2.15's `head/multi_label_head.py`: `MultiLabelHead`, sigmoid cross entropy of each of `n_classes` labels."""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator.head import base_head

_VALID_KEYS = ('logits', 'probabilities', 'classes')


def _class_ids(classes, n_classes: int, label_vocabulary) -> tuple:
    """`classes_for_class_based_metrics` as class ids (TF 2.15's checks and messages)."""
    if not classes:
        return ()
    classes = tuple(classes)
    if isinstance(classes[0], str):
        if not label_vocabulary:
            raise ValueError('label_vocabulary must be provided when classes_for_class_based_metrics are strings.')
        return tuple(list(label_vocabulary).index(name) for name in classes)
    for class_id in classes:
        if class_id < 0 or class_id >= n_classes:
            raise ValueError(
                'All classes_for_class_based_metrics must be in range [0, {}]. Given: {}'.format(
                    n_classes - 1, class_id
                )
            )
    return classes


class MultiLabelHead(base_head.Head):
    """A head for multi-label classification, v1's `tf.estimator.MultiLabelHead` (TF 2.15's).

    Each example has any number of `n_classes` classes: labels are a multi-hot `[batch, n_classes]` tensor, or a
    `SparseTensor` of class ids (or of strings of `label_vocabulary`). The loss is the sigmoid cross entropy of
    each class, averaged over the classes. Predictions `logits`, `probabilities`, `classes`; metrics
    `average_loss`, `auc`, `auc_precision_recall` (with `accuracy/positive_threshold_<t>`, `precision/...`,
    `recall/...` for each of `thresholds`, and `probability_mean/<class>`, `auc/<class>`,
    `auc_precision_recall/<class>` for each of `classes_for_class_based_metrics`); export signatures
    `serving_default`, `classification`, `predict`.

    Args:
      n_classes: the number of classes, more than 1.
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example.
      thresholds: probabilities in (0, 1) for the thresholded metrics.
      label_vocabulary: the classes' strings, for string labels.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      loss_fn: `loss_fn(labels, logits[, features])` returning the unweighted loss, `[batch, 1]`.
      classes_for_class_based_metrics: class ids or strings with metrics of their own.
      name: the head's name (its ops' scope, its keys' suffix).

    Raises:
      ValueError: `n_classes` below 2, a threshold outside (0, 1), a vocabulary not a list of `n_classes`, an
        unknown `loss_reduction` or class (TF 2.15's messages).
    """

    def __init__(
        self,
        n_classes: int,
        weight_column=None,
        thresholds=None,
        label_vocabulary=None,
        loss_reduction: str = 'sum_over_batch_size',
        loss_fn=None,
        classes_for_class_based_metrics=None,
        name: str | None = None,
    ):
        if n_classes is None or n_classes < 2:
            raise ValueError('n_classes must be > 1 for multi-label classification. Given: {}'.format(n_classes))
        thresholds = tuple(thresholds) if thresholds else ()
        for threshold in thresholds:
            if threshold <= 0.0 or threshold >= 1.0:
                raise ValueError('thresholds must be in (0, 1) range. Given: {}'.format(threshold))
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ValueError(
                    'label_vocabulary must be a list or tuple. Given type: {}'.format(type(label_vocabulary))
                )
            if len(label_vocabulary) != n_classes:
                raise ValueError(
                    'Length of label_vocabulary must be n_classes ({}). Given: {}'.format(
                        n_classes, len(label_vocabulary)
                    )
                )
            label_vocabulary = list(label_vocabulary)
        if loss_fn:
            base_head.check_loss_fn(loss_fn)
        base_head.check_loss_reduction(loss_reduction)
        self._class_ids = _class_ids(classes_for_class_based_metrics, n_classes, label_vocabulary)
        self._n_classes = n_classes
        self._logits_dimension = n_classes
        self._weight_column = weight_column
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
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

    @property
    def classes_for_class_based_metrics(self) -> tuple:
        """The class ids with metrics of their own."""
        return self._class_ids

    def _processed_labels(self, logits, labels):
        if labels is None:
            raise ValueError(base_head.LABEL_NONE_ERROR)
        if isinstance(labels, tf.sparse.SparseTensor):
            values = labels.values
            if values.dtype == tf.string:
                if self._label_vocabulary is None:
                    raise ValueError('Labels dtype should be integer if there is no label_vocabulary.')
                values = base_head.vocabulary_ids(values, self._label_vocabulary)
            elif not values.dtype.is_integer:
                raise ValueError('Labels dtype should be integer. Instead got {}.'.format(values.dtype))
            else:
                values = base_head.check_label_range(
                    values,
                    self._n_classes,
                    message=f'labels must be an integer SparseTensor with values in [0, {self._n_classes})',
                )
            ids = tf.sparse.SparseTensor(labels.indices, tf.cast(values, tf.int64), labels.dense_shape)
            labels = tf.cast(tf.sparse.to_indicator(ids, self._n_classes), tf.int64)
        else:
            labels = base_head.check_label_range(
                tf.convert_to_tensor(labels),
                2,
                message='labels must be an integer indicator Tensor with values in [0, 1]',
            )
        return base_head.dense_labels(labels, logits, self._n_classes)

    def _unweighted_loss(self, logits, labels, features):
        if self._loss_fn:
            return base_head.call_loss_fn(self._loss_fn, labels, logits, features, 1)
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(
            multi_class_labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        return tf.math.reduce_mean(loss, axis=-1, keepdims=True)

    def predictions(self, logits, keys=None) -> dict:
        """TF 2.15's predictions (those of `keys`, if given): `logits`, `probabilities`, `classes`.

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
        everything = {'logits': logits}
        with tf.compat.v1.name_scope('predictions'):
            everything['probabilities'] = tf.math.sigmoid(logits, name='probabilities')
            everything['classes'] = base_head.per_example(
                base_head.class_names(self._n_classes, self._label_vocabulary), logits
            )
        return {key: everything[key] for key in _VALID_KEYS if key in keys}

    def _export_outputs(self, predictions: dict) -> dict:
        return base_head.classification_outputs(predictions, self._n_classes, self._label_vocabulary)

    def _class_keys(self, class_id: int) -> tuple:
        if self._label_vocabulary is None:
            return tuple(self._summary_key(f'{kind}/class%d' % class_id) for kind in _CLASS_METRICS)
        name = self._label_vocabulary[class_id]
        return tuple(self._summary_key(f'{kind}/{name}') for kind in _CLASS_METRICS)

    def metrics(self, regularization_losses=None) -> dict:
        """TF 2.15's metrics of a multi-label head, by key (not yet updated)."""
        key = self._summary_key
        eval_metrics = {
            key('average_loss'): base_head.mean_metric('average_loss'),
            key('auc'): base_head.auc_metric('auc'),
            key('auc_precision_recall'): base_head.auc_metric('auc_precision_recall', curve='PR'),
        }
        self._with_regularization(eval_metrics, regularization_losses)
        for threshold in self._thresholds:
            name = key('accuracy/positive_threshold_%g' % threshold)
            eval_metrics[name] = base_head.accuracy_metric(name, threshold)
            for kind in ('precision', 'recall'):
                name = key(f'{kind}/positive_threshold_%g' % threshold)
                eval_metrics[name] = base_head.precision_recall_metric(name, kind, threshold)
        for class_id in self._class_ids:
            mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
            eval_metrics[mean_key] = base_head.mean_metric(mean_key)
            eval_metrics[auc_key] = base_head.auc_metric(auc_key)
            eval_metrics[auc_pr_key] = base_head.auc_metric(auc_pr_key, curve='PR')
        return eval_metrics

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
        key = self._summary_key
        logits = base_head.check_logits(logits, self._n_classes)
        probabilities = self.predictions(logits, ['probabilities'])['probabilities']
        unweighted_loss, example_weights, labels = self._loss_and_weights(logits, labels, features)
        eval_metrics[key('average_loss')].update_state(
            unweighted_loss, tf.broadcast_to(example_weights, tf.shape(unweighted_loss))
        )
        example_weights = tf.broadcast_to(example_weights, tf.shape(probabilities))
        eval_metrics[key('auc')].update_state(labels, probabilities, example_weights)
        eval_metrics[key('auc_precision_recall')].update_state(labels, probabilities, example_weights)
        self._regularization_metric(eval_metrics, regularization_losses)
        for threshold in self._thresholds:
            for kind in ('accuracy', 'precision', 'recall'):
                eval_metrics[key(f'{kind}/positive_threshold_%g' % threshold)].update_state(
                    labels, probabilities, example_weights
                )
        for class_id in self._class_ids:
            mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
            class_probabilities = probabilities[..., class_id : class_id + 1]
            class_labels = labels[..., class_id : class_id + 1]
            class_weights = example_weights[..., class_id : class_id + 1]
            eval_metrics[mean_key].update_state(class_probabilities, class_weights)
            eval_metrics[auc_key].update_state(class_labels, class_probabilities, class_weights)
            eval_metrics[auc_pr_key].update_state(class_labels, class_probabilities, class_weights)
        return eval_metrics


_CLASS_METRICS = ('probability_mean', 'auc', 'auc_precision_recall')
