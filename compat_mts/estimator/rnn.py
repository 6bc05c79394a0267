"""TF 2.15's `canned/rnn.py`: `RNNEstimator` and `RNNClassifier` (v1's `tf.estimator.experimental`), on tf-keras.

TF 2.15 built the network as a Keras 2 model, `rnn_model`: the sequence feature columns through
`SequenceFeatures` (the context columns through `DenseFeatures`, repeated at each step), a Keras recurrent layer
masked by the sequence lengths, and a `Dense` logits layer, all called in the Estimator's v1 graph and trained by
a Keras 2 optimizer (Adagrad at 0.05 with gradient clip norm 5 by default). TF 2.21's `tf.keras` is Keras 3, which
builds no v1 graph; tf-keras (`pip install tf_keras`, Keras 2 for TF 2.21) is the same Keras 2, so the model and
the optimizer are built from it here: the variables (`rnn_model/rnn/simple_rnn_cell/kernel`,
`rnn_model/logits/kernel`, the optimizer's slots), the predictions and the metrics are TF 2.15's.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import tensorflow as tf

from compat_mts.estimator import _canned_base
from compat_mts.estimator import _optimizers
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.model_fn import ModeKeys

_DEFAULT_LEARNING_RATE = 0.05
_DEFAULT_CLIP_NORM = 5.0
_CELL_NAMES = ('simple_rnn', 'lstm', 'gru')
_LAYERS = {'simple_rnn': 'SimpleRNN', 'lstm': 'LSTM', 'gru': 'GRU'}
_CELLS = {'simple_rnn': 'SimpleRNNCell', 'lstm': 'LSTMCell', 'gru': 'GRUCell'}
_KERAS2_OPTIMIZERS = {'Adagrad': 'Adagrad', 'Adam': 'Adam', 'Ftrl': 'Ftrl', 'RMSProp': 'RMSprop', 'SGD': 'SGD'}


class _UseDefault:
    """The default `cell_type`: 'simple_rnn', unless `rnn_cell_fn` is given (TF 2.15's `USE_DEFAULT`)."""

    def __repr__(self) -> str:
        return 'USE_DEFAULT'


USE_DEFAULT = _UseDefault()


def _tf_keras():
    """tf-keras, Keras 2 for TF 2.21, which builds the RNN in the v1 graph as TF 2.15's Keras did."""
    try:
        return importlib.import_module('tf_keras')
    except ImportError:
        raise ImportError(
            "RNNClassifier and RNNEstimator build TF 2.15's Keras 2 recurrent model, which TF 2.21's tf.keras "
            '(Keras 3) cannot build in a v1 graph; they need tf-keras, Keras 2 for this TensorFlow: '
            'pip install tf_keras'
        ) from None


def _single_cell(keras, units: int, cell_type):
    cell_class = getattr(keras.layers, _CELLS[cell_type]) if cell_type in _CELLS else cell_type
    if not callable(cell_class):
        raise ValueError(
            '`cell_type` should be a class producing a RNN cell, or a string specifying the cell type. Supported '
            'strings are: {}.'.format(list(_CELL_NAMES))
        )
    cell = cell_class(units=units)
    if hasattr(cell, '_enable_caching_device'):
        cell._enable_caching_device = True  # As TF 2.15: the v1 session reads each weight once per step.
    if not hasattr(cell, 'call') or not hasattr(cell, 'state_size'):
        raise ValueError('RNN cell should have a `call` and `state_size` method.')
    return cell


def _check_cell_arguments(rnn_cell_fn, units, cell_type) -> None:
    if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
        raise ValueError('units and cell_type must not be specified when using rnn_cell_fn')


def _rnn_layer(keras, rnn_cell_fn, units, cell_type, return_sequences: bool):
    """TF 2.15's recurrent layer: `SimpleRNN`/`LSTM`/`GRU` for one int of `units`, else `RNN` of the cells."""
    if cell_type in _LAYERS and isinstance(units, int):
        return getattr(keras.layers, _LAYERS[cell_type])(units=units, return_sequences=return_sequences)
    if not rnn_cell_fn:
        cell_type = 'simple_rnn' if cell_type is USE_DEFAULT else cell_type
        cells = [_single_cell(keras, count, cell_type) for count in units]
        cell = cells[0] if len(cells) == 1 else cells
    else:
        cell = rnn_cell_fn()
    return keras.layers.RNN(cell=cell, return_sequences=return_sequences)


def _rnn_model(keras, rnn_layer, units: int, sequence_feature_columns, context_feature_columns):
    """TF 2.15's `RNNModel` (`rnn_model`): sequence input, the masked recurrent layer, the `logits` layer."""

    class RNNModel(keras.Model):
        def __init__(self):
            super().__init__(name='rnn_model')
            self._sequence_features_layer = keras.experimental.SequenceFeatures(sequence_feature_columns)
            self._dense_features_layer = None
            if context_feature_columns:
                self._dense_features_layer = keras.layers.DenseFeatures(context_feature_columns)
            self._rnn_layer = rnn_layer
            self._logits_layer = keras.layers.Dense(units=units, name='logits')

        def call(self, inputs, training=None):
            if not isinstance(inputs, dict):
                raise ValueError('inputs should be a dictionary of `Tensor`s. Given type: {}'.format(type(inputs)))
            with tf.name_scope('sequence_input_layer'):
                sequence_input, sequence_length = self._sequence_features_layer(inputs, training=training)
                tf.compat.v1.summary.histogram('sequence_length', sequence_length)
                if self._dense_features_layer is not None:
                    context_input = self._dense_features_layer(inputs, training=training)
                    sequence_input = _concatenate_context(context_input, sequence_input)
            mask = tf.sequence_mask(sequence_length)
            return self._logits_layer(self._rnn_layer(sequence_input, mask=mask, training=training))

    return RNNModel()


def _concatenate_context(context_input, sequence_input):
    """The context input repeated at each step and appended to the sequence input (v1's
    `concatenate_context_input`)."""
    if sequence_input.shape.rank != 3:
        raise ValueError('sequence_input must have rank 3. Given rank: {}'.format(sequence_input.shape.rank))
    if context_input.shape.rank != 2:
        raise ValueError('context_input must have rank 2. Given rank: {}'.format(context_input.shape.rank))
    steps = tf.shape(sequence_input)[1]
    tiled = tf.tile(tf.expand_dims(tf.cast(context_input, sequence_input.dtype), 1), [1, steps, 1])
    return tf.concat([sequence_input, tiled], 2)


def _optimizer(keras, optimizer):
    """TF 2.15's optimizer of the RNN: a name is Keras 2's optimizer at 0.05 with clip norm 5; counts the step.

    Raises:
      ValueError: an unknown name, or what is (or a callable returns) no Keras optimizer: TF 2.15's messages.
    """
    if isinstance(optimizer, str):
        if optimizer not in _KERAS2_OPTIMIZERS:
            raise ValueError(
                'Unsupported optimizer name: {}. Supported names are: {}'.format(
                    optimizer, tuple(sorted(_KERAS2_OPTIMIZERS))
                )
            )
        optimizer = getattr(keras.optimizers.legacy, _KERAS2_OPTIMIZERS[optimizer])(
            learning_rate=_DEFAULT_LEARNING_RATE
        )
        optimizer.clipnorm = _DEFAULT_CLIP_NORM
    elif callable(optimizer) and not _optimizers.is_keras2_optimizer(optimizer):
        optimizer = optimizer()
    if not _optimizers.is_keras_optimizer(optimizer):
        raise ValueError(
            'The given object is not a tf.keras.optimizers.Optimizer instance. Given: {}'.format(optimizer)
        )
    if _optimizers.is_keras2_optimizer(optimizer):
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return optimizer


def _model_fn(head, sequence_feature_columns, context_feature_columns, units, cell_type, rnn_cell_fn, optimizer):
    def rnn_model_fn(features, labels, mode, config):
        del config  # Unused, as in TF 2.15.
        keras = _tf_keras()
        train_optimizer = _optimizer(keras, optimizer) if mode == ModeKeys.TRAIN else None
        layer = _rnn_layer(keras, rnn_cell_fn, units, cell_type, return_sequences=False)
        model = _rnn_model(keras, layer, head.logits_dimension, sequence_feature_columns, context_feature_columns)
        logits = model(features, mode == ModeKeys.TRAIN)
        return head.create_estimator_spec(
            features=features,
            mode=mode,
            labels=labels,
            optimizer=train_optimizer,
            logits=logits,
            update_ops=model.updates,
            trainable_variables=model.trainable_variables,
        )

    return _canned_base.quiet(rnn_model_fn)


def _check_return_sequences(return_sequences, head_given: bool) -> None:
    """Refuses `return_sequences=True`; given a head (`RNNEstimator`), with TF 2.15's message first: no head of
    compat_mts is a sequential one."""
    if return_sequences:
        raise ValueError(
            (
                'Provided head must be a `_SequentialHead` object when `return_sequences` is set to True. '
                if head_given
                else ''
            )
            + "`return_sequences=True` needs TF 2.15's sequential head (`SequentialHeadWrapper`, a private class of "
            'tf.estimator), which compat_mts does not provide; use return_sequences=False (one prediction per '
            'sequence), or a Keras model with return_sequences=True (migration_guide/estimator.md).'
        )


class RNNEstimator(Estimator):
    """An Estimator for recurrent models with a given head, v1's `tf.estimator.experimental.RNNEstimator`.

    TF 2.15's model (`rnn_model`, see the module's docstring) on `sequence_feature_columns` (columns of
    `tf.feature_column.sequence_*`, or embedding/indicator columns of them) and `context_feature_columns`
    (dense columns repeated at each step); `head` makes the loss, predictions, metrics and export signatures.
    The recurrent layer is tf-keras's.

    Example:

    ```python
    tokens = tf.feature_column.sequence_categorical_column_with_identity('tokens', num_buckets=10)
    estimator = compat_mts.estimator.experimental.RNNEstimator(
        head=compat_mts.estimator.RegressionHead(),
        sequence_feature_columns=[tf.feature_column.embedding_column(tokens, 4)],
        units=[8], cell_type='lstm')
    ```

    Args:
      head: a `compat_mts.estimator.Head`.
      sequence_feature_columns: the sequence columns.
      context_feature_columns: None, or dense columns given to the RNN at each step.
      units: an int (one `SimpleRNN`/`LSTM`/`GRU` layer) or a list of ints (stacked cells); with `cell_type`,
        not with `rnn_cell_fn`.
      cell_type: 'simple_rnn' (the default), 'lstm', 'gru', or a class making a Keras RNN cell of `units`.
      rnn_cell_fn: a function of no argument returning a tf-keras RNN cell (or a list of them); in place of
        `units` and `cell_type`.
      return_sequences: False; True (TF 2.15's sequential heads) is refused, see the error.
      model_dir: where checkpoints and events go.
      optimizer: 'Adagrad' (the default), 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (Keras 2's, at learning rate 0.05
        with gradient clip norm 5, as in TF 2.15), a Keras 2 optimizer (`tf_keras.optimizers.legacy`), or what
        the head's `create_estimator_spec` takes; or a callable returning one.
      config: a `compat_mts.estimator.RunConfig`.

    Raises:
      ValueError: `units` or `cell_type` given with `rnn_cell_fn`, `return_sequences=True`; an unknown
        `cell_type` or optimizer name, when the model is built (TF 2.15's messages).
      ImportError: tf-keras is not installed, when the model is built.
    """

    def __init__(
        self,
        head,
        sequence_feature_columns,
        context_feature_columns=None,
        units=None,
        cell_type=USE_DEFAULT,
        rnn_cell_fn: Callable | None = None,
        return_sequences: bool = False,
        model_dir: str | None = None,
        optimizer: Any = 'Adagrad',
        config=None,
    ):
        _check_return_sequences(return_sequences, head_given=True)
        _check_cell_arguments(rnn_cell_fn, units, cell_type)
        model_fn = _model_fn(
            head, sequence_feature_columns, context_feature_columns, units, cell_type, rnn_cell_fn, optimizer
        )
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
    """A classifier for recurrent models, v1's `tf.estimator.experimental.RNNClassifier` (TF 2.15's).

    `RNNEstimator` with `DNNClassifier`'s head: binary for `n_classes=2`, multi-class (softmax cross entropy)
    above.

    Args:
      sequence_feature_columns: as for `RNNEstimator`.
      context_feature_columns: as for `RNNEstimator`.
      units: as for `RNNEstimator`.
      cell_type: as for `RNNEstimator`.
      rnn_cell_fn: as for `RNNEstimator`.
      return_sequences: as for `RNNEstimator`.
      model_dir: where checkpoints and events go.
      n_classes: the number of label classes (2, the default, is binary).
      weight_column: a feature name or `tf.feature_column.numeric_column` weighting each example's loss.
      label_vocabulary: the labels' strings, `n_classes` of them; None for integer labels.
      optimizer: as for `RNNEstimator`.
      loss_reduction: 'sum_over_batch_size' (the default), 'sum' or 'auto'.
      sequence_mask: the feature name of the sequence mask of TF 2.15's sequential predictions (used with
        `return_sequences=True` only).
      config: a `compat_mts.estimator.RunConfig`.

    Raises:
      ValueError: as for `RNNEstimator`; as for `DNNClassifier`'s `n_classes` and `label_vocabulary`.
    """

    def __init__(
        self,
        sequence_feature_columns,
        context_feature_columns=None,
        units=None,
        cell_type=USE_DEFAULT,
        rnn_cell_fn: Callable | None = None,
        return_sequences: bool = False,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column=None,
        label_vocabulary=None,
        optimizer: Any = 'Adagrad',
        loss_reduction: str = _canned_base.SUM_OVER_BATCH_SIZE,
        sequence_mask: str = 'sequence_mask',
        config=None,
    ):
        _check_return_sequences(return_sequences, head_given=False)
        head = _canned_base.classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        del sequence_mask  # Only for return_sequences=True, which RNNEstimator refuses.
        super().__init__(
            head=head,
            sequence_feature_columns=sequence_feature_columns,
            context_feature_columns=context_feature_columns,
            units=units,
            cell_type=cell_type,
            rnn_cell_fn=rnn_cell_fn,
            return_sequences=return_sequences,
            model_dir=model_dir,
            optimizer=optimizer,
            config=config,
        )
