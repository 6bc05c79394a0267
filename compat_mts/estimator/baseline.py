"""TF 2.15's `canned/baseline.py`: `BaselineClassifier` and `BaselineRegressor`, which ignore the features.

The logits are one trained bias per logit, `baseline/bias`, trained by Ftrl at learning rate 0.3 by default.
"""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator import _canned_base
from compat_mts.estimator import _optimizers
from compat_mts.estimator.estimator import Estimator

_SUM_OVER_BATCH_SIZE = _canned_base.SUM_OVER_BATCH_SIZE
_BASELINE_LEARNING_RATE = 0.3


def tower(optimizer) -> _canned_base.Tower:
    """TF 2.15's baseline: one bias `baseline/bias` per logit, trained by `optimizer` (Ftrl, 0.3)."""
    _optimizers.check_optimizer('optimizer', optimizer)
    return _canned_base.Tower(_bias_logits, optimizer, _BASELINE_LEARNING_RATE)


def _bias_logits(features, mode, units):
    del mode  # The same in every mode.
    if not features:
        raise ValueError('There are no features.')
    first = tf.convert_to_tensor(features[sorted(features)[0]])
    batch_size = tf.shape(first)[0]
    with tf.compat.v1.name_scope('baseline'):
        bias = tf.compat.v1.Variable(tf.zeros([units]), name='bias', use_resource=True)
        logits = tf.math.multiply(bias, tf.ones([batch_size, units]))
    return logits, [bias], []


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
        head = _canned_base.classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _canned_base.model_fn(head, [tower(optimizer)])
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
        head = _canned_base.regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _canned_base.model_fn(head, [tower(optimizer)])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class BaselineEstimator(Estimator):
    """An estimator that ignores the features, with a given head, v1's `tf.estimator.BaselineEstimator`.

    The logits are one trained bias per logit of `head` (`baseline/bias`), Ftrl at learning rate 0.3 by default.

    Args:
      head: a `compat_mts.estimator.Head`.
      model_dir: where checkpoints and events go.
      optimizer: as for `DNNClassifier` (default 'Ftrl').
      config: a `compat_mts.estimator.RunConfig`.

    Raises:
      ValueError: an unknown optimizer name.
    """

    def __init__(self, head, model_dir=None, optimizer='Ftrl', config=None):
        model_fn = _canned_base.model_fn(head, [tower(optimizer)])
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)
