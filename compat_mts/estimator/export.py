"""`compat_mts.estimator.export`: serving inputs and outputs of `Estimator.export_saved_model`, as in v1.

`tf.estimator.export` named what a SavedModel receives (`ServingInputReceiver`, `SupervisedInputReceiver`) and
returns (`PredictOutput`, `ClassificationOutput`, `RegressionOutput`, `EvalOutput`). The names, arguments and
checks are v1's.
What differs is the SavedModel: it is a TF2 SavedModel written by `tf.saved_model.save`, whose signatures
are all *predict* signatures (TF2 has no classify or regress method signatures), with the output keys v1
used (`scores`/`classes`, `outputs`, or the `PredictOutput`'s keys). `tf.saved_model.load(path)` loads it.
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

DEFAULT_SERVING_SIGNATURE_DEF_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_SINGLE_FEATURE_DEFAULT_NAME = 'feature'
_SINGLE_RECEIVER_DEFAULT_NAME = 'input'
_SINGLE_LABEL_DEFAULT_NAME = 'label'


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor))


def _wrap_and_check(tensors: Any, name: str, default_key: str, allow_int_keys: bool = False) -> dict:
    if tensors is None:
        raise ValueError('{}s must be defined.'.format(name))
    if not isinstance(tensors, dict):
        tensors = {default_key: tensors}
    for key, value in tensors.items():
        if not isinstance(key, str) and not allow_int_keys:
            raise ValueError('{} keys must be strings: {}.'.format(name, key))
        if not isinstance(key, (str, int)):
            raise ValueError('{} keys must be strings or ints: {}.'.format(name, key))
        if not _is_tensor(value):
            raise ValueError('{} must be a Tensor or SparseTensor: {}.'.format(name, value))
    return tensors


class ServingInputReceiver:
    """What a serving input receiver function returns: the `features` for `model_fn` and the tensors fed.

    Args:
      features: a tensor or dict of tensors, passed to `model_fn` (a lone tensor as `{'feature': tensor}`).
      receiver_tensors: the placeholders the SavedModel's signatures take (a lone one is named `'input'`).
      receiver_tensors_alternatives: not supported (v1 made extra signatures of them).

    Raises:
      ValueError: v1's messages for missing or non-tensor values and non-string keys.
      NotImplementedError: `receiver_tensors_alternatives` is given.
    """

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        self.features = _wrap_and_check(features, 'feature', _SINGLE_FEATURE_DEFAULT_NAME)
        self.receiver_tensors = _wrap_and_check(receiver_tensors, 'receiver_tensor', _SINGLE_RECEIVER_DEFAULT_NAME)
        if receiver_tensors_alternatives:
            raise NotImplementedError('receiver_tensors_alternatives are not supported by compat_mts.estimator.')
        self.receiver_tensors_alternatives = None


class TensorServingInputReceiver(ServingInputReceiver):
    """A `ServingInputReceiver` whose `features` reach `model_fn` as one tensor, not a dict (v1's)."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        if not _is_tensor(features):
            raise ValueError('feature must be a Tensor or SparseTensor: {}.'.format(features))
        super().__init__(features, receiver_tensors, receiver_tensors_alternatives)
        self.features = features


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A serving input receiver function that feeds placeholders shaped like `features` (v1's).

    `features` is a dict of names to tensors (or anything with a `shape` and `dtype`, such as
    `tf.TensorSpec`); each placeholder has the feature's dtype, its shape with the batch dimension
    `default_batch_size`, and the feature's key as its name (v1 took the tensor's op name, which eager
    tensors do not have).
    """
    if not isinstance(features, dict):
        raise TypeError('`features` must be a dict of feature names to tensors, given: {}'.format(features))

    def serving_input_receiver_fn():
        receiver_tensors = {}
        for name, tensor in features.items():
            shape = tf.TensorShape(tensor.shape).as_list()
            if shape:
                shape[0] = default_batch_size
            receiver_tensors[name] = tf.compat.v1.placeholder(dtype=tensor.dtype, shape=shape, name=name)
        return ServingInputReceiver(receiver_tensors, dict(receiver_tensors))

    return serving_input_receiver_fn


class SupervisedInputReceiver(
    collections.namedtuple('SupervisedInputReceiver', ['features', 'labels', 'receiver_tensors'])
):
    """What a supervised (training or evaluation) input receiver function returns: features, labels, inputs (v1's).

    Args:
      features: a tensor or a dict of (string or integer keys to) tensors, passed to `model_fn`.
      labels: the same, for the labels.
      receiver_tensors: the tensors fed (a lone one is named `'input'`).

    Raises:
      ValueError: v1's messages for missing or non-tensor values and bad keys.
    """

    def __new__(cls, features, labels, receiver_tensors):
        _wrap_and_check(features, 'feature', _SINGLE_FEATURE_DEFAULT_NAME, allow_int_keys=True)
        _wrap_and_check(labels, 'label', _SINGLE_LABEL_DEFAULT_NAME, allow_int_keys=True)
        receiver_tensors = _wrap_and_check(receiver_tensors, 'receiver_tensor', _SINGLE_RECEIVER_DEFAULT_NAME)
        return super().__new__(cls, features=features, labels=labels, receiver_tensors=receiver_tensors)


def _placeholder_like(tensor, default_batch_size, name=None):
    shape = tf.TensorShape(tensor.shape).as_list()
    if shape:
        shape[0] = default_batch_size
    return tf.compat.v1.placeholder(dtype=tensor.dtype, shape=shape, name=name)


def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """A supervised input receiver function feeding placeholders shaped like `features` and `labels` (v1's).

    The placeholders reach `model_fn` as the features and labels, a dict for a dict (with its keys as their
    names) and a tensor for a tensor (fed as `'input'` and `'label'`). `Estimator.export_saved_model` writes
    the PREDICT graph only (TF2 SavedModels have no train or eval graphs), so the receiver serves a program's
    own graph code, as v1's `experimental_export_all_saved_models` used it.

    Args:
      features: a tensor, or a dict of names to tensors (or `tf.TensorSpec`s).
      labels: the same, for the labels.
      default_batch_size: the batch dimension of the placeholders; None: any.

    Returns:
      A function without arguments returning a `SupervisedInputReceiver`.

    Raises:
      ValueError: `features` and `labels` share a key (v1's message).
    """
    feature_keys = features.keys() if isinstance(features, dict) else [_SINGLE_RECEIVER_DEFAULT_NAME]
    label_keys = labels.keys() if isinstance(labels, dict) else [_SINGLE_LABEL_DEFAULT_NAME]
    overlap_keys = set(feature_keys) & set(label_keys)
    if overlap_keys:
        raise ValueError('Features and labels must have distinct keys. Found overlapping keys: {}'.format(overlap_keys))

    def placeholders(values, default_name):
        if not isinstance(values, dict):
            placeholder = _placeholder_like(values, default_batch_size)
            return placeholder, {default_name: placeholder}
        received = {name: _placeholder_like(value, default_batch_size, name=name) for name, value in values.items()}
        return received, received

    def supervised_input_receiver_fn():
        received_features, receiver_features = placeholders(features, _SINGLE_RECEIVER_DEFAULT_NAME)
        received_labels, receiver_labels = placeholders(labels, _SINGLE_LABEL_DEFAULT_NAME)
        return SupervisedInputReceiver(received_features, received_labels, {**receiver_features, **receiver_labels})

    return supervised_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A serving input receiver function that parses serialized `tf.Example`s with `feature_spec` (v1's)."""

    def serving_input_receiver_fn():
        serialized = tf.compat.v1.placeholder(dtype=tf.string, shape=[default_batch_size], name='input_example_tensor')
        features = tf.compat.v1.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {'examples': serialized})

    return serving_input_receiver_fn


class ExportOutput:
    """Base class of what one signature of the exported SavedModel returns: `outputs`, a dict of tensors."""

    @property
    def outputs(self) -> dict:
        raise NotImplementedError


class PredictOutput(ExportOutput):
    """A signature returning `outputs` (a tensor, named `'output'`, or a dict of them)."""

    def __init__(self, outputs):
        if not isinstance(outputs, dict):
            outputs = {'output': outputs}
        for key, value in outputs.items():
            if not isinstance(key, str):
                raise ValueError('Prediction output key must be a string; got {}.'.format(key))
            if not isinstance(value, tf.Tensor):
                raise ValueError('Prediction output value must be a Tensor; got {}.'.format(value))
        self._outputs = dict(outputs)

    @property
    def outputs(self) -> dict:
        return self._outputs


class ClassificationOutput(ExportOutput):
    """A signature returning `scores` (float32) and/or `classes` (string), under those keys (v1's checks)."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, tf.Tensor) and scores.dtype.is_floating):
            raise ValueError('Classification scores must be a float32 Tensor; got {}'.format(scores))
        if classes is not None and not (isinstance(classes, tf.Tensor) and classes.dtype == tf.string):
            raise ValueError('Classification classes must be a string Tensor; got {}'.format(classes))
        if scores is None and classes is None:
            raise ValueError('At least one of scores and classes must be set.')
        self.scores = scores
        self.classes = classes

    @property
    def outputs(self) -> dict:
        outputs = {}
        if self.scores is not None:
            outputs['scores'] = self.scores
        if self.classes is not None:
            outputs['classes'] = self.classes
        return outputs


class RegressionOutput(ExportOutput):
    """A signature returning `value` (float32) under the key `'outputs'` (v1's check)."""

    def __init__(self, value):
        if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
            raise ValueError('Regression output value must be a float32 Tensor; got {}'.format(value))
        self.value = value

    @property
    def outputs(self) -> dict:
        return {'outputs': self.value}


class EvalOutput(ExportOutput):
    """The outputs of an evaluation: `loss`, `predictions` and `metrics` under v1's keys.

    The keys are v1's: `loss` (or `loss/<key>`), `predictions/<key>`, and for each metric
    `metrics/<name>/value` and `metrics/<name>/update_op` (a tuple key is joined with `/`). `outputs` is
    all of them. `Estimator.export_saved_model` writes the PREDICT graph only, so an `EvalOutput` there is a
    signature of those tensors; v1 wrote it in the EVAL graph of `experimental_export_all_saved_models`.

    Args:
      loss: a tensor or a dict of tensors.
      predictions: a tensor or a dict of tensors.
      metrics: a `(value, update_op)` pair or a dict of them (`tf.compat.v1.metrics.*`).

    Raises:
      ValueError: a key that is not a string, or a value or update op of the wrong type (v1's messages).
    """

    def __init__(self, loss=None, predictions=None, metrics=None):
        self._loss = None if loss is None else _prefixed(_checked_outputs(loss, 'loss'), 'loss')
        self._predictions = (
            None if predictions is None else _prefixed(_checked_outputs(predictions, 'predictions'), 'predictions')
        )
        self._metrics = None if metrics is None else _checked_metrics(metrics)

    @property
    def loss(self) -> dict | None:
        """`{key: tensor}` of the loss, or None."""
        return self._loss

    @property
    def predictions(self) -> dict | None:
        """`{key: tensor}` of the predictions, or None."""
        return self._predictions

    @property
    def metrics(self) -> dict | None:
        """`{key: tensor}` of the metrics' values and update ops, or None."""
        return self._metrics

    @property
    def outputs(self) -> dict:
        return {**(self._loss or {}), **(self._predictions or {}), **(self._metrics or {})}


def _output_key(key, error_label: str) -> str:
    if isinstance(key, tuple):
        key = '/'.join(key)
    if not isinstance(key, str):
        raise ValueError('{} output key must be a string; got {}.'.format(error_label, key))
    return key


def _checked_outputs(outputs, default_name: str) -> dict:
    if not isinstance(outputs, dict):
        outputs = {default_name: outputs}
    checked = {}
    for key, value in outputs.items():
        key = _output_key(key, default_name)
        if not isinstance(value, tf.Tensor):
            raise ValueError('{} output value must be a Tensor; got {}.'.format(default_name, value))
        checked[key] = value
    return checked


def _prefixed(outputs: dict, prefix: str) -> dict:
    return {(key if key.find(prefix) == 0 else prefix + '/' + key): value for key, value in outputs.items()}


def _checked_metrics(metrics) -> dict:
    if not isinstance(metrics, dict):
        metrics = {'metrics': metrics}
    outputs = {}
    for key, value in metrics.items():
        if not isinstance(value, tuple):
            raise ValueError(
                '{} must be a (value, update_op) pair of tf.compat.v1.metrics; got {}. Keras metrics do not '
                'build v1 graphs.'.format(key, value)
            )
        metric_value, update_op = value
        key = _output_key(key, 'metrics')
        key = key if key.find('metrics') == 0 else 'metrics/' + key
        if not isinstance(metric_value, tf.Tensor):
            raise ValueError('{} output value must be a Tensor; got {}.'.format(key, metric_value))
        if not isinstance(update_op, (tf.Tensor, tf.Operation)):
            raise ValueError('{} update_op must be a Tensor or Operation; got {}.'.format(key, update_op))
        if not isinstance(update_op, tf.Tensor):
            with tf.control_dependencies([update_op]):
                update_op = tf.constant([], name='metric_op_wrapper')
        outputs[key + '/value'] = metric_value
        outputs[key + '/update_op'] = update_op
    return outputs


def export_outputs_or_default(export_outputs, predictions) -> dict:
    """v1's validation of `EstimatorSpec.export_outputs` in PREDICT mode, and its default signature.

    Raises:
      TypeError: `export_outputs` is not a dict of `ExportOutput`s.
      ValueError: several outputs and none is the default serving signature.
    """
    if export_outputs is None:
        export_outputs = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError('export_outputs must be dict, given: {}'.format(export_outputs))
    for value in export_outputs.values():
        if not isinstance(value, ExportOutput):
            raise TypeError('Values in export_outputs must be ExportOutput objects. Given: {}'.format(export_outputs))
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        ((key, value),) = export_outputs.items()
        if key != DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            export_outputs[DEFAULT_SERVING_SIGNATURE_DEF_KEY] = value
    if len(export_outputs) > 1 and DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs:
        raise ValueError(
            'Multiple export_outputs were provided, but none of them is specified as the default.  '
            'Do this by naming one of them with signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.'
        )
    return export_outputs
