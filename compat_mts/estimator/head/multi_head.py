"""TF 2.15's `head/multi_head.py`: `MultiHead`, several named heads on one model, their losses summed."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from compat_mts.estimator import export
from compat_mts.estimator.head import base_head
from compat_mts.estimator.model_fn import EstimatorSpec, ModeKeys


def _no_op_train_fn(loss):
    del loss  # Each head's own spec only gives its predictions and export outputs.
    return tf.no_op()


class MultiHead(base_head.Head):
    """A head of several named heads, v1's `tf.estimator.MultiHead` (TF 2.15's).

    The logits are a dict of each head's name to its logits, or one tensor split along its last dimension in the
    heads' order; the labels a dict by head name. The loss is the sum of the heads' losses (each times its
    `head_weights` entry); predictions are keyed `(head name, prediction key)`; the metrics are each head's
    (suffixed `/<name>`) and `loss/<name>`; the export signatures are the first head's default as
    `serving_default`, each head's as `<name>` and `<name>/<signature>`, and a merged `predict`
    (`<name>/<prediction key>`).

    Args:
      heads: the heads, each with a `name`.
      head_weights: one weight per head for its loss, or None for 1.

    Raises:
      ValueError: no heads, a head without a name, `head_weights` of another length (TF 2.15's messages).
    """

    def __init__(self, heads, head_weights=None):
        if not heads:
            raise ValueError('Must specify heads. Given: {}'.format(heads))
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(
                'heads and head_weights must have the same size. Given len(heads): {}. Given len(head_weights): '
                '{}.'.format(len(heads), len(head_weights))
            )
        for head in heads:
            if head.name is None:
                raise ValueError('All given heads must have name specified. Given: {}'.format(head))
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else ()
        self._logits_dimension = sum(head.logits_dimension for head in heads)

    @property
    def name(self) -> str:
        """The heads' names joined by '_'."""
        return '_'.join(head.name for head in self._heads)

    @property
    def heads(self) -> tuple:
        """The heads."""
        return self._heads

    @property
    def head_weights(self) -> tuple:
        """The heads' loss weights (empty for 1 each)."""
        return self._head_weights

    @property
    def loss_reduction(self) -> str:
        """The heads' loss reduction; ValueError if they differ."""
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError('The loss_reduction must be the same for different heads. Given: {}'.format(reductions))
        return reductions[0]

    def _split_logits(self, logits) -> dict:
        if isinstance(logits, dict):
            missing = sorted(set(head.name for head in self._heads) - set(logits))
            if missing:
                raise ValueError('logits has missing values for head(s): {}'.format(missing))
            return logits
        with tf.compat.v1.name_scope('split_logits'):
            logits = tf.convert_to_tensor(logits)
            dimensions = [head.logits_dimension for head in self._heads]
            last = logits.shape[-1]
            if last is not None and last != self._logits_dimension:
                raise ValueError(
                    'Could not split logits of shape %r among the heads with individual logits dimensions: %r. The '
                    'last dimension of the logits tensor should equal %d but is %d.'
                    % (logits.shape.as_list(), dimensions, last, self._logits_dimension)
                )
            parts = tf.split(logits, dimensions, axis=-1)
        return {head.name: part for head, part in zip(self._heads, parts)}

    def _check_labels(self, labels) -> None:
        if labels is None:
            return
        if not isinstance(labels, dict):
            raise ValueError('labels must be a dict. Given: {}'.format(labels))
        missing = sorted(set(head.name for head in self._heads) - set(labels))
        if missing:
            raise ValueError('labels has missing values for head(s): {}'.format(missing))

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The heads' losses (each times its weight) summed, plus the regularization.

        Args:
          labels: a dict of head name to labels.
          logits: a dict of head name to logits, or one tensor to split.
          features: the features dict.
          mode: passed to the heads.
          regularization_losses: scalar losses added to the sum, or None.

        Returns:
          A scalar tensor.
        """
        logits = self._split_logits(logits)
        self._check_labels(labels)
        losses = [head.loss(labels[head.name], logits[head.name], features=features, mode=mode) for head in self._heads]
        with tf.compat.v1.name_scope('merge_losses'):
            if self._head_weights:
                losses = [tf.math.multiply(loss, weight) for loss, weight in zip(losses, self._head_weights)]
            loss = tf.math.add_n(losses)
            if regularization_losses is not None:
                loss = loss + tf.math.add_n(regularization_losses)
        return loss

    def predictions(self, logits, keys=None) -> dict:
        """Every head's predictions, keyed `(head name, prediction key)`.

        Args:
          logits: a dict of head name to logits, or one tensor to split.
          keys: unused, as in TF 2.15.

        Returns:
          A dict of `(head name, key)` to tensors.
        """
        del keys  # TF 2.15's MultiHead returned every key.
        logits = self._split_logits(logits)
        predictions = {}
        with tf.compat.v1.name_scope('merge_pred'):
            for head in self._heads:
                for key, value in head.predictions(logits[head.name]).items():
                    predictions[(head.name, key)] = value
        return predictions

    def metrics(self, regularization_losses=None) -> dict:
        """`loss/<name>` per head (and `regularization_loss`); the heads' own come from `update_metrics`."""
        eval_metrics = self._with_regularization({}, regularization_losses)
        for head in self._heads:
            eval_metrics[f'loss/{head.name}'] = base_head.mean_metric(f'loss/{head.name}')
        return eval_metrics

    def update_metrics(self, eval_metrics: dict, features, logits, labels, regularization_losses=None) -> dict:
        """Updates `eval_metrics` and adds each head's metrics, updated, as TF 2.15's MultiHead did.

        Args:
          eval_metrics: the dict `metrics()` returned.
          features: the features dict.
          logits: a dict of head name to logits, or one tensor to split.
          labels: a dict of head name to labels.
          regularization_losses: the regularization losses, or None.

        Returns:
          `eval_metrics`, with the heads' metrics.
        """
        logits = self._split_logits(logits)
        self._check_labels(labels)
        self._regularization_metric(eval_metrics, regularization_losses)
        for head in self._heads:
            head_loss = head.loss(labels[head.name], logits[head.name], features=features)
            eval_metrics[f'loss/{head.name}'].update_state(head_loss)
            eval_metrics.update(
                head.update_metrics(head.metrics(), features, logits[head.name], labels[head.name]) or {}
            )
        return eval_metrics

    def _export_outputs(self, specs: list) -> dict:
        first = specs[0].export_outputs or {}
        if base_head.DEFAULT_SERVING_KEY not in first:
            raise ValueError(
                '{} did not specify default export_outputs. Given: {} Suggested fix: Use one of the heads in '
                'tf.estimator, or include key {} in export_outputs.'.format(
                    self._heads[0].name, first, base_head.DEFAULT_SERVING_KEY
                )
            )
        outputs = {base_head.DEFAULT_SERVING_KEY: first[base_head.DEFAULT_SERVING_KEY]}
        merged = {}
        for head, spec in zip(self._heads, specs):
            for key, value in spec.export_outputs.items():
                outputs[head.name if key == base_head.DEFAULT_SERVING_KEY else f'{head.name}/{key}'] = value
                if key == base_head.PREDICT_SERVING_KEY and isinstance(value, export.PredictOutput):
                    for name, tensor in value.outputs.items():
                        merged[f'{head.name}/{name}'] = tensor
        outputs[base_head.PREDICT_SERVING_KEY] = export.PredictOutput(merged)
        return outputs

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
        """The `EstimatorSpec` of `mode`: the heads' merged predictions, export outputs, loss and metrics.

        Args:
          features: the features dict.
          mode: a `ModeKeys` value.
          logits: a dict of head name to logits, or one tensor to split in the heads' order.
          labels: a dict of head name to labels (TRAIN and EVAL).
          optimizer: as for `Head.create_estimator_spec`.
          trainable_variables: the variables `optimizer` trains.
          train_op_fn: `train_op_fn(loss)` returns the train op; in place of `optimizer`.
          update_ops: ops run with the train op.
          regularization_losses: scalar losses added to the merged loss.

        Returns:
          An `EstimatorSpec`.

        Raises:
          ValueError: missing logits or labels of a head, and what `Head.create_estimator_spec` refuses.
        """
        with tf.compat.v1.name_scope(self.name):
            logits = self._split_logits(logits)
            self._check_labels(labels)
            specs = [
                head.create_estimator_spec(
                    features=features,
                    mode=mode,
                    logits=logits[head.name],
                    labels=labels[head.name] if labels else None,
                    train_op_fn=_no_op_train_fn,
                )
                for head in self._heads
            ]
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=self._export_outputs(specs))
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = self.update_metrics(
                    self.metrics(regularization_losses), features, logits, labels, regularization_losses
                )
                eval_metric_ops = {key: metric.as_pair() for key, metric in metrics.items()}
                return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=eval_metric_ops)
            with tf.compat.v1.get_default_graph().name_scope(None):
                tf.compat.v1.summary.scalar('loss', loss)
                if regularization_losses is not None:
                    tf.compat.v1.summary.scalar('regularization_loss', tf.math.add_n(regularization_losses))
                train_op = base_head.train_op_of(
                    loss, self.loss_reduction, optimizer, trainable_variables, train_op_fn, update_ops
                )
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)
