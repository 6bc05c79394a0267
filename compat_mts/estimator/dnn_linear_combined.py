"""TF 2.15's `canned/dnn_linear_combined.py`: the wide & deep, a DNN tower and a linear tower with summed logits.

Each tower is trained by its own optimizer: the DNN's (Adagrad at 0.001 by default) counts the global step, the
linear one (Ftrl at min(0.005, 1/sqrt(#columns))) its own steps (`training/Ftrl/iter`), as in TF 2.15.
"""

from __future__ import annotations

import dataclasses
import math

import tensorflow as tf

from compat_mts.estimator import _canned_base
from compat_mts.estimator import dnn
from compat_mts.estimator import linear
from compat_mts.estimator.estimator import Estimator

_SUM_OVER_BATCH_SIZE = _canned_base.SUM_OVER_BATCH_SIZE
_COMBINED_DNN_LEARNING_RATE = 0.001
_COMBINED_LINEAR_LEARNING_RATE = 0.005


def towers(
    linear_feature_columns,
    linear_optimizer,
    dnn_feature_columns,
    dnn_optimizer,
    dnn_hidden_units,
    dnn_activation_fn,
    dnn_dropout,
    batch_norm,
    linear_sparse_combiner,
) -> list[_canned_base.Tower]:
    """The DNN tower then the linear one, either of them absent without its columns; at least one."""
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError('Either linear_feature_columns or dnn_feature_columns must be defined.')
    built = []
    if linear_feature_columns:
        wide = linear.tower(linear_feature_columns, linear_optimizer, linear_sparse_combiner, None, 'linear_')
        learning_rate = min(_COMBINED_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(wide.feature_columns)))
        built.append(dataclasses.replace(wide, learning_rate=learning_rate))
    if dnn_feature_columns:
        deep = dnn.tower(
            dnn_hidden_units,
            dnn_feature_columns,
            dnn_optimizer,
            dnn_activation_fn,
            dnn_dropout,
            batch_norm,
            _COMBINED_DNN_LEARNING_RATE,
            'dnn_',
        )
        if not built:
            return [deep]
        built.insert(0, deep)
        built[1] = _with_summaries(built[1])
    return built


def _with_summaries(wide: _canned_base.Tower) -> _canned_base.Tower:
    """The linear tower beside a DNN, which also records its logits' `linear/...` summaries, as TF 2.15's."""

    def build(features, mode, units):
        logits, variables, update_ops = wide.build(features, mode, units)
        _canned_base.root_summaries(logits, 'linear')
        return logits, variables, update_ops

    return dataclasses.replace(wide, build=build)


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
        head = _canned_base.classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        model_fn = _canned_base.model_fn(
            head,
            towers(
                linear_feature_columns,
                linear_optimizer,
                dnn_feature_columns,
                dnn_optimizer,
                dnn_hidden_units,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
                linear_sparse_combiner,
            ),
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
        head = _canned_base.regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = _canned_base.model_fn(
            head,
            towers(
                linear_feature_columns,
                linear_optimizer,
                dnn_feature_columns,
                dnn_optimizer,
                dnn_hidden_units,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
                linear_sparse_combiner,
            ),
        )
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(Estimator):
    """A wide & deep estimator with a given head, v1's `tf.estimator.DNNLinearCombinedEstimator` (TF 2.15's).

    The model is `DNNLinearCombinedClassifier`'s; `head` (any of `compat_mts.estimator`'s heads) makes the
    loss, predictions, metrics and export signatures.

    Args:
      head: a `compat_mts.estimator.Head`.
      model_dir: where checkpoints and events go.
      linear_feature_columns: as for `DNNLinearCombinedClassifier`.
      linear_optimizer: as for `DNNLinearCombinedClassifier`.
      dnn_feature_columns: as for `DNNLinearCombinedClassifier`.
      dnn_optimizer: as for `DNNLinearCombinedClassifier`.
      dnn_hidden_units: as for `DNNLinearCombinedClassifier`.
      dnn_activation_fn: the hidden layers' activation.
      dnn_dropout: None, or the probability of dropping a hidden unit in training.
      config: a `compat_mts.estimator.RunConfig`.
      batch_norm: whether to batch-normalize after each hidden layer.
      linear_sparse_combiner: 'sum', 'mean' or 'sqrtn'.

    Raises:
      ValueError: as for `DNNLinearCombinedClassifier`.
    """

    def __init__(
        self,
        head,
        model_dir=None,
        linear_feature_columns=None,
        linear_optimizer='Ftrl',
        dnn_feature_columns=None,
        dnn_optimizer='Adagrad',
        dnn_hidden_units=None,
        dnn_activation_fn=tf.nn.relu,
        dnn_dropout=None,
        config=None,
        batch_norm=False,
        linear_sparse_combiner='sum',
    ):
        model_fn = _canned_base.model_fn(
            head,
            towers(
                linear_feature_columns,
                linear_optimizer,
                dnn_feature_columns,
                dnn_optimizer,
                dnn_hidden_units,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
                linear_sparse_combiner,
            ),
        )
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)
