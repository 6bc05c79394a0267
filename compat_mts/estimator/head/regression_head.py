"""TF 2.15's `head/regression_head.py`: `RegressionHead` (mean squared error), `PoissonRegressionHead`,
`LogisticRegressionHead`."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from compat_mts.estimator import export
from compat_mts.estimator.head import base_head


class RegressionHead(base_head.Head):
    """A head for regression, v1's `tf.estimator.RegressionHead` (TF 2.15's).

    Mean squared error (or `loss_fn`) of `label_dimension` values per example. Predictions `predictions` (the
    logits, or `inverse_link_fn(logits)` with `logits` beside); metrics `average_loss`, `label/mean`,
    `prediction/mean` (keys suffixed `/<name>` for a named head); export signatures `serving_default` and
    `regression` (regress), `predict`.

    Args:
      label_dimension: the number of regression targets per example.
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example (or each
        target: `[batch, label_dimension]`).
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      loss_fn: `loss_fn(labels, logits[, features])` returning the unweighted loss, `[batch, label_dimension]`.
      inverse_link_fn: maps the logits to the predictions (`tf.math.exp` for a Poisson model).
      name: the head's name (its ops' scope, its keys' suffix).

    Raises:
      ValueError: `label_dimension` below 1, an unknown `loss_reduction`, a `loss_fn` of other arguments
        (TF 2.15's messages).
    """

    _per_logit_weights = True

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column=None,
        loss_reduction: str = 'sum_over_batch_size',
        loss_fn=None,
        inverse_link_fn: Callable | None = None,
        name: str | None = None,
    ):
        if label_dimension < 1:
            raise ValueError('Invalid label_dimension {}.'.format(label_dimension))
        base_head.check_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.check_loss_fn(loss_fn)
        self._logits_dimension = label_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._inverse_link_fn = inverse_link_fn
        self._name = name

    @property
    def loss_fn(self):
        """The custom loss function, or None."""
        return self._loss_fn

    @property
    def inverse_link_fn(self):
        """The function from logits to predictions, or None."""
        return self._inverse_link_fn

    def _processed_labels(self, logits, labels):
        return tf.cast(base_head.dense_labels(labels, logits, self._logits_dimension), tf.float32)

    def _unweighted_loss(self, logits, labels, features):
        if self._loss_fn:
            return base_head.call_loss_fn(self._loss_fn, labels, logits, features, self._logits_dimension)
        return tf.compat.v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )

    def predictions(self, logits, keys=None) -> dict:
        """`predictions` (and `logits` with an `inverse_link_fn`), as TF 2.15's head.

        Args:
          logits: `[batch, label_dimension]`.
          keys: unused (TF 2.15's regression head returned every key).

        Returns:
          A dict of prediction keys to tensors.
        """
        del keys  # TF 2.15's regression head returned every key.
        logits = base_head.check_logits(logits, self._logits_dimension)
        with tf.compat.v1.name_scope('predictions'):
            if self._inverse_link_fn:
                return {'predictions': self._inverse_link_fn(logits), 'logits': logits}
            return {'predictions': logits}

    def _export_outputs(self, predictions: dict) -> dict:
        regression = export.RegressionOutput(value=predictions['predictions'])
        return {
            base_head.DEFAULT_SERVING_KEY: regression,
            base_head.REGRESS_SERVING_KEY: regression,
            base_head.PREDICT_SERVING_KEY: export.PredictOutput(predictions),
        }

    def metrics(self, regularization_losses=None) -> dict:
        """TF 2.15's metrics of a regression head, by key (not yet updated)."""
        eval_metrics = {
            self._summary_key(key): base_head.mean_metric(key)
            for key in ('average_loss', 'label/mean', 'prediction/mean')
        }
        return self._with_regularization(eval_metrics, regularization_losses)

    def update_metrics(self, eval_metrics: dict, features, logits, labels, regularization_losses=None) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with a batch, as TF 2.15's head did; returns them.

        Args:
          eval_metrics: the dict `metrics()` returned.
          features: the features dict (the weight column).
          logits: `[batch, label_dimension]`.
          labels: the labels.
          regularization_losses: the regularization losses, or None.

        Returns:
          `eval_metrics`.
        """
        logits = base_head.check_logits(logits, self._logits_dimension)
        predicted = self.predictions(logits)['predictions']
        unweighted_loss, example_weights, labels = self._loss_and_weights(logits, labels, features)
        example_weights = base_head.metric_weights(example_weights, unweighted_loss)
        eval_metrics[self._summary_key('average_loss')].update_state(unweighted_loss, example_weights)
        eval_metrics[self._summary_key('label/mean')].update_state(labels, example_weights)
        eval_metrics[self._summary_key('prediction/mean')].update_state(predicted, example_weights)
        self._regularization_metric(eval_metrics, regularization_losses)
        return eval_metrics


class PoissonRegressionHead(RegressionHead):
    """A head for Poisson regression, v1's `tf.estimator.PoissonRegressionHead` (TF 2.15's).

    The loss is `tf.nn.log_poisson_loss` of the labels and the logits (the log of the rate); the predictions
    are `exp(logits)`, with `logits` beside.

    Args:
      label_dimension: the number of regression targets per example.
      weight_column: as for `RegressionHead`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      compute_full_loss: whether the loss includes Stirling's approximation of `log(labels!)`.
      name: the head's name.
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column=None,
        loss_reduction: str = 'sum_over_batch_size',
        compute_full_loss: bool = True,
        name: str | None = None,
    ):
        self._compute_full_loss = compute_full_loss
        super().__init__(label_dimension, weight_column, loss_reduction, self._poisson_loss, tf.math.exp, name)

    def _poisson_loss(self, labels, logits):
        return tf.nn.log_poisson_loss(targets=labels, log_input=logits, compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
    """A head for logistic regression, v1's `tf.estimator.LogisticRegressionHead` (TF 2.15's).

    Sigmoid cross entropy of labels in [0, 1] (an assertion checks them) and one logit; the predictions are
    `sigmoid(logits)`, with `logits` beside; a regression head's metrics and signatures.

    Args:
      weight_column: as for `RegressionHead`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      name: the head's name.
    """

    def __init__(self, weight_column=None, loss_reduction: str = 'sum_over_batch_size', name: str | None = None):
        super().__init__(1, weight_column, loss_reduction, self._logistic_loss, tf.math.sigmoid, name)

    def _logistic_loss(self, labels, logits):
        labels = base_head.check_label_range(labels, 2, message='Labels must be in range [0, 1]')
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
