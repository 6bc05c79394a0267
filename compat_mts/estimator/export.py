"""`compat_mts.estimator.export`: serving inputs and outputs of `Estimator.export_saved_model`, as in v1.

`tf.estimator.export` named what a SavedModel receives (`ServingInputReceiver`) and returns
(`PredictOutput`, `ClassificationOutput`, `RegressionOutput`). The names, arguments and checks are v1's.
What differs is the SavedModel: it is a TF2 SavedModel written by `tf.saved_model.save`, whose signatures
are all *predict* signatures (TF2 has no classify or regress method signatures), with the output keys v1
used (`scores`/`classes`, `outputs`, or the `PredictOutput`'s keys). `tf.saved_model.load(path)` loads it.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

DEFAULT_SERVING_SIGNATURE_DEF_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_SINGLE_FEATURE_DEFAULT_NAME = 'feature'
_SINGLE_RECEIVER_DEFAULT_NAME = 'input'
_SINGLE_LABEL_DEFAULT_NAME = 'label'


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor))


def _wrap_and_check(tensors: Any, name: str, default_key: str) -> dict:
    if tensors is None:
        raise ValueError('{}s must be defined.'.format(name))
    if not isinstance(tensors, dict):
        tensors = {default_key: tensors}
    for key, value in tensors.items():
        if not isinstance(key, str):
            raise ValueError('{} keys must be strings: {}.'.format(name, key))
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
