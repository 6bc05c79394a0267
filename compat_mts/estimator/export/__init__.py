"""`compat_mts.estimator.export`: serving inputs and outputs of `Estimator.export_saved_model`, as in v1.

`tf.estimator.export` named what a SavedModel receives (`ServingInputReceiver`, `SupervisedInputReceiver`)
and returns (`PredictOutput`, `ClassificationOutput`, `RegressionOutput`, `EvalOutput`). The names, arguments
and checks are v1's, and so are the signatures an output makes (`as_signature_def`): a `ClassificationOutput` a
*classify* signature and a `RegressionOutput` a *regress* one (TF Serving's Classify and Regress APIs), each
taking the one string receiver tensor as `inputs`, and a `PredictOutput` a *predict* signature taking the
receiver tensors by their keys. The SavedModel itself is a TF2 SavedModel (`compat_mts.estimator.export._saved_model`),
which `tf.saved_model.load(path)` loads.
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

DEFAULT_SERVING_SIGNATURE_DEF_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_SINGLE_FEATURE_DEFAULT_NAME = 'feature'
_SINGLE_RECEIVER_DEFAULT_NAME = 'input'
_SINGLE_LABEL_DEFAULT_NAME = 'label'
_SINGLE_STRING_INPUT = (
    '{} signatures can only accept a single tensor input of type tf.string. Please check to make sure that you '
    'have structured the serving_input_receiver_fn so that it creates a single string placeholder. If your model '
    'function expects multiple inputs, then use `tf.io.parse_example()` to parse the string into multiple '
    'tensors.\n Received: {}'
)


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
      receiver_tensors_alternatives: a dict of names to other groups of tensors of the graph (a tensor, named
        `'input'`, or a dict of them) to feed instead, such as the features downstream of `parse_example`;
        each group makes one more signature per export output, named `'<group name>:<output key>'` (v1's).

    Raises:
      ValueError: v1's messages for missing or non-tensor values, non-string keys and alternatives that are
        not a dict.
    """

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        self.features = _wrap_and_check(features, 'feature', _SINGLE_FEATURE_DEFAULT_NAME)
        self.receiver_tensors = _wrap_and_check(receiver_tensors, 'receiver_tensor', _SINGLE_RECEIVER_DEFAULT_NAME)
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError(
                    'receiver_tensors_alternatives must be a dict: {}.'.format(receiver_tensors_alternatives)
                )
            receiver_tensors_alternatives = {
                name: _wrap_and_check(tensors, 'receiver_tensors_alternative', _SINGLE_RECEIVER_DEFAULT_NAME)
                for name, tensors in receiver_tensors_alternatives.items()
            }
        self.receiver_tensors_alternatives = receiver_tensors_alternatives


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
    `tf.TensorSpec`); each placeholder has the feature's dtype, the shape `[default_batch_size]` followed by the
    feature's dimensions after the first (v1's: a scalar feature gets `[default_batch_size]`), and the feature's
    key as its name (v1 took the tensor's op name, which eager tensors do not have).
    """
    if not isinstance(features, dict):
        raise TypeError('`features` must be a dict of feature names to tensors, given: {}'.format(features))

    def serving_input_receiver_fn():
        receiver_tensors = {}
        for name, tensor in features.items():
            shape = tf.TensorShape([default_batch_size]).concatenate(tf.TensorShape(tensor.shape)[1:])
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


def _tensor_info(tensor: tf.Tensor):
    """The `TensorInfo` of a graph tensor: its name, dtype and static shape (what v1's `build_tensor_info` made).

    Raises:
      NotImplementedError: a `SparseTensor` or `RaggedTensor` (v1 also exported those).
    """
    if not isinstance(tensor, tf.Tensor):
        raise NotImplementedError(
            'compat_mts.estimator exports signatures of dense tensors only; a receiver tensor is a {}: {}. Feed '
            'serialized tf.Examples (build_parsing_serving_input_receiver_fn) or dense tensors.'.format(
                type(tensor).__name__, tensor
            )
        )
    return tf.compat.v1.TensorInfo(
        name=tensor.name, dtype=tensor.dtype.as_datatype_enum, tensor_shape=tensor.shape.as_proto()
    )


def _signature_def(inputs: dict, outputs: dict, method_name: str):
    return tf.compat.v1.saved_model.build_signature_def(
        {key: _tensor_info(tensor) for key, tensor in inputs.items()},
        {key: _tensor_info(tensor) for key, tensor in outputs.items()},
        method_name,
    )


def _single_string_input(receiver_tensors: dict, kind: str) -> tf.Tensor:
    """The one string receiver tensor a classify or regress signature takes as `inputs` (v1's check)."""
    values = list(receiver_tensors.values())
    if len(values) != 1 or values[0].dtype != tf.string:
        raise ValueError(_SINGLE_STRING_INPUT.format(kind, receiver_tensors))
    return values[0]


class ExportOutput:
    """Base class of what one signature of the exported SavedModel returns: `outputs`, a dict of tensors."""

    @property
    def outputs(self) -> dict:
        """The signature's outputs: a dict of output keys to tensors of the PREDICT graph."""
        raise NotImplementedError

    def as_signature_def(self, receiver_tensors: dict):
        """The `SignatureDef` taking `receiver_tensors` (a dict of keys to graph tensors) and returning `outputs`.

        Raises:
          ValueError: the receiver tensors or the outputs do not fit the signature's method (v1's messages).
        """
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
        """The outputs given, by key."""
        return self._outputs

    def as_signature_def(self, receiver_tensors: dict):
        """A predict signature (`tensorflow/serving/predict`): the receiver tensors by key, the outputs by key."""
        return _signature_def(receiver_tensors, self._outputs, tf.compat.v1.saved_model.PREDICT_METHOD_NAME)


class ClassificationOutput(ExportOutput):
    """A signature returning `scores` (float32) and/or `classes` (string), under those keys (v1's checks)."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, tf.Tensor) and scores.dtype.is_floating):
            raise ValueError('Classification scores must be a float32 Tensor; got {}'.format(scores))
        if classes is not None and not (isinstance(classes, tf.Tensor) and classes.dtype == tf.string):
            raise ValueError('Classification classes must be a string Tensor; got {}'.format(classes))
        if scores is None and classes is None:
            raise ValueError(
                'Cannot create a ClassificationOutput with empty arguments. At least one of `scores` and '
                '`classes` must be defined.'
            )
        self.scores = scores
        self.classes = classes

    @property
    def outputs(self) -> dict:
        """`scores` and/or `classes`, those given."""
        outputs = {}
        if self.scores is not None:
            outputs['scores'] = self.scores
        if self.classes is not None:
            outputs['classes'] = self.classes
        return outputs

    def as_signature_def(self, receiver_tensors: dict):
        """A classify signature (`tensorflow/serving/classify`): the one string receiver tensor as `inputs`.

        Raises:
          ValueError: not exactly one receiver tensor, not a string one, or scores that are not float32.
        """
        examples = _single_string_input(receiver_tensors, 'Classification')
        if self.scores is not None and self.scores.dtype != tf.float32:
            raise ValueError('Classification scores must be a float Tensor.')
        return _signature_def(
            {tf.compat.v1.saved_model.CLASSIFY_INPUTS: examples},
            self.outputs,
            tf.compat.v1.saved_model.CLASSIFY_METHOD_NAME,
        )


class RegressionOutput(ExportOutput):
    """A signature returning `value` (float32) under the key `'outputs'` (v1's check)."""

    def __init__(self, value):
        if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
            raise ValueError('Regression output value must be a float32 Tensor; got {}'.format(value))
        self.value = value

    @property
    def outputs(self) -> dict:
        """`{'outputs': value}`."""
        return {'outputs': self.value}

    def as_signature_def(self, receiver_tensors: dict):
        """A regress signature (`tensorflow/serving/regress`): the one string receiver tensor as `inputs`.

        Raises:
          ValueError: not exactly one receiver tensor, not a string one, or a value that is not float32.
        """
        examples = _single_string_input(receiver_tensors, 'Regression')
        if self.value.dtype != tf.float32:
            raise ValueError(
                'Regression output tensors must be of type float. Found tensors with type {}.'.format(
                    self.value.dtype.as_datatype_enum
                )
            )
        return _signature_def(
            {tf.compat.v1.saved_model.REGRESS_INPUTS: examples},
            self.outputs,
            tf.compat.v1.saved_model.REGRESS_METHOD_NAME,
        )


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
