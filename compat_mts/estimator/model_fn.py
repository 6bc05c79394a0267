"""`ModeKeys` and `EstimatorSpec`: what a `model_fn` is told and what it returns, with v1's validation; and
v1's `call_logit_fn`, which calls a logit function as the Estimator calls a `model_fn`."""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.estimator import _hooks
from compat_mts.estimator import _scaffold

LOSS_METRIC_KEY = 'loss'
AVERAGE_LOSS_METRIC_KEY = 'average_loss'


class ModeKeys:
    """Standard names for model modes: `TRAIN`, `EVAL` and `PREDICT` (v1's strings)."""

    TRAIN = 'train'
    EVAL = 'eval'
    PREDICT = 'infer'


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


_DEFAULT_GRAPH_ERROR = (
    '{0} with "{1}" must be from the default graph. Possible causes of this error include: \n\n'
    '1) {0} was created outside the context of the default graph.\n\n'
    '2) The object passed through to EstimatorSpec was not created in the most recent call to "model_fn".'
)


class EstimatorSpec(
    collections.namedtuple(
        'EstimatorSpec',
        [
            'mode',
            'predictions',
            'loss',
            'train_op',
            'eval_metric_ops',
            'export_outputs',
            'training_chief_hooks',
            'training_hooks',
            'scaffold',
            'evaluation_hooks',
            'prediction_hooks',
        ],
    )
):
    """Ops and objects returned from a `model_fn` and passed to an `Estimator` (v1's fields and checks).

    A `model_fn` runs as v1 graph code (`compat_mts.wrap_graph` builds it), so the tensors and ops here are
    those of that graph, checked as v1 checked them: `TRAIN` needs `loss` and `train_op`, `EVAL` needs
    `loss`, `PREDICT` needs `predictions`; `loss` must be a scalar (a `[1]` loss is reshaped);
    `eval_metric_ops` are `(value, update_op)` pairs such as `tf.compat.v1.metrics.*` return.

    Differences from v1, because no `tf.compat.v1.Session` runs the graph:

    - `scaffold` may be a `tf.compat.v1.train.Scaffold` or a `compat_mts.Scaffold`; it is kept as the
      `compat_mts.Scaffold` with the same `init_op`, `init_fn`, `local_init_op`, `ready_op`,
      `ready_for_local_init_op`, `summary_op`, feeds and `saver`: a `tf.compat.v1.train.Saver` of the graph
      saves and restores the checkpoints (its `var_list` under its names, its `max_to_keep`), as in v1; without
      one, the checkpoint saves every global variable under its v1 name, as v1's default `Saver` did.
    - hooks may be compat_mts hooks, your own `tf.compat.v1.train.SessionRunHook` subclasses, or the
      `tf.compat.v1.train` built-in hooks that `compat_mts` re-implements with the same arguments
      (`LoggingTensorHook`, `NanTensorHook`, `StopAtStepHook`, `StepCounterHook`, `SummarySaverHook`,
      `FinalOpsHook`, `FeedFnHook`, `GlobalStepWaiterHook`); those are replaced by their compat_mts twins.
    - `eval_metric_ops` values are `(value, update_op)` tuples or Keras metric objects (Keras 3 or tf-keras)
      updated in the model_fn (`metric.update_state(...)`), as in TF 2.15; a Keras 3 metric's update is the
      assignments its `update_state` made to its variables, which become local variables.
    - `export_outputs` values are `compat_mts.estimator.export` outputs.

    Example:

    ```python
    return compat_mts.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    ```

    Raises:
      ValueError: a field the mode needs is missing, or a tensor is not of the model_fn's graph (v1's messages),
        or `mode` is neither one of `ModeKeys` nor None (v1 took it).
      TypeError: a field has the wrong type (v1's messages).
    """

    def __new__(
        cls,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metric_ops=None,
        export_outputs=None,
        training_chief_hooks=None,
        training_hooks=None,
        scaffold=None,
        evaluation_hooks=None,
        prediction_hooks=None,
    ):
        # v1 took any mode, then checked none of the fields a mode needs; None (a `model_fn` without `mode`) is
        # kept, and the spec serves the mode the Estimator called for, as in v1.
        if mode is not None and mode not in _MODES:
            raise ValueError(
                f'`mode` must be one of ModeKeys.TRAIN ({ModeKeys.TRAIN!r}), ModeKeys.EVAL ({ModeKeys.EVAL!r}) '
                f'or ModeKeys.PREDICT ({ModeKeys.PREDICT!r}): the mode the model_fn was called with (or None); '
                f'got {mode!r}.'
            )
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            from compat_mts.estimator import export

            export_outputs = export.export_outputs_or_default(export_outputs, predictions)
        return super().__new__(
            cls,
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            export_outputs=export_outputs,
            training_chief_hooks=_validate_hooks(training_chief_hooks),
            training_hooks=_validate_hooks(training_hooks),
            scaffold=_scaffold.as_compat_scaffold(scaffold),
            evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks),
        )

    def _replace(self, **kwds):
        """A new EstimatorSpec with the given fields replaced; the mode cannot change (v1's message)."""
        if 'mode' in kwds and self.mode != kwds['mode']:
            raise ValueError('mode of EstimatorSpec cannot be changed.')
        fields = [kwds.pop(name, value) for name, value in zip(self._fields, self)]
        return EstimatorSpec(*fields)


def _check_in_default_graph(value: Any, what: str, key: Any = None) -> None:
    """TF 2.15's check that `value` (of `key`) is of the default graph; none when executing eagerly, as there."""
    if tf.executing_eagerly() or getattr(value, 'graph', None) is tf.compat.v1.get_default_graph():
        return
    name = getattr(value, 'name', value)
    raise ValueError(_DEFAULT_GRAPH_ERROR.format(what, name if key is None else '{0}: {1}'.format(key, name)))


def _check_tensor_or_operation(value: Any, name: str) -> None:
    if not (isinstance(value, tf.Operation) or isinstance(value, (tf.Tensor, tf.Variable))):
        raise TypeError('{} must be Operation or Tensor, given: {}'.format(name, value))


def _check_tensor(value: Any, name: str) -> Any:
    if not isinstance(value, (tf.Tensor, tf.Variable)):
        raise TypeError('{} must be Tensor, given: {}'.format(name, value))
    return value


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError('Missing train_op.')
        return None
    _check_tensor_or_operation(train_op, 'train_op')
    _check_in_default_graph(train_op, 'train_op')
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError('Missing loss.')
        return None
    loss = _check_tensor(loss, 'loss')
    _check_in_default_graph(loss, 'loss')
    shape = loss.shape
    if shape.num_elements() not in (None, 1):
        raise ValueError('Loss must be scalar, given: {}'.format(loss))
    if not shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError('Missing predictions.')
        return {}
    if isinstance(predictions, dict):
        predictions = {key: _check_tensor(value, 'predictions[{}]'.format(key)) for key, value in predictions.items()}
        for key, value in predictions.items():
            _check_in_default_graph(value, 'prediction values', key)
        return predictions
    predictions = _check_tensor(predictions, 'predictions')
    _check_in_default_graph(predictions, 'prediction values')
    return predictions


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError('All hooks must be SessionRunHook instances, given: {}'.format(hook))
    return tuple(_hooks.as_compat_hooks(hooks))


_ASSIGNMENTS = ('AssignVariableOp', 'AssignAddVariableOp', 'AssignSubVariableOp')


def _is_metric_object(value: Any) -> bool:
    """Whether `value` is a Keras metric (Keras 3, tf-keras): it has `update_state`, `result` and `variables`."""
    return (
        callable(getattr(value, 'update_state', None))
        and callable(getattr(value, 'result', None))
        and (hasattr(value, 'variables'))
    )


def _graph_variable(variable: Any) -> tf.Variable:
    return variable if isinstance(variable, tf.Variable) else variable.value  # Keras 3 wraps a tf.Variable.


def _metric_updates(metric: Any) -> list:
    """The ops of the model_fn's graph that `metric.update_state(...)` made.

    tf-keras records them (`updates`); Keras 3 returns nothing, so they are its variables' assignments other than
    their initializers.
    """
    recorded = list(getattr(metric, 'updates', None) or [])
    if recorded:
        return recorded[:1]
    updates = []
    for variable in metric.variables:
        variable = _graph_variable(variable)
        initializer = getattr(variable, 'initializer', None)
        updates.extend(op for op in variable.handle.consumers() if op.type in _ASSIGNMENTS and op is not initializer)
    return updates


def _metric_as_pair(metric: Any) -> tuple:
    """A Keras metric object as TF 2.15 took it: `(result(), its update op)`, its variables local ones."""
    updates = _metric_updates(metric)
    if not updates:
        raise ValueError('Please call update_state(...) on the "{metric_name}" metric'.format(metric_name=metric.name))
    graph = tf.compat.v1.get_default_graph()
    global_variables = graph.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
    for variable in map(_graph_variable, metric.variables):
        if variable in global_variables:  # Keras 3 made them global; a checkpoint must not hold them.
            global_variables.remove(variable)
        for collection in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES, tf.compat.v1.GraphKeys.METRIC_VARIABLES):
            if variable not in graph.get_collection(collection):
                graph.add_to_collection(collection, variable)
    update = updates[0] if len(updates) == 1 else tf.group(*updates)
    return metric.result(), update


def _validate_eval_metric_ops(eval_metric_ops) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError('eval_metric_ops must be a dict, given: {}'.format(eval_metric_ops))
    eval_metric_ops = {
        key: _metric_as_pair(value) if _is_metric_object(value) else value for key, value in eval_metric_ops.items()
    }
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(
                'Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {} for key: {}'.format(
                    value, key
                )
            )
        metric_value, metric_update = value
        for member in tf.nest.flatten(metric_value):
            _check_tensor_or_operation(member, 'eval_metric_ops[{}]'.format(key))
        _check_tensor_or_operation(metric_update, 'eval_metric_ops[{}]'.format(key))
    for key, value in eval_metric_ops.items():
        for member in tf.nest.flatten(value):
            _check_in_default_graph(member, 'eval_metric_ops', key)
    return dict(eval_metric_ops)


def call_logit_fn(logit_fn, features, mode: str, params, config) -> Any:
    """Calls `logit_fn(features, ...)` with those of `mode`, `params` and `config` it names (v1's, experimental).

    Args:
      logit_fn: a function of `features` (and optionally `mode`, `params`, `config`) returning logits.
      features: the features dict.
      mode: a `ModeKeys` value.
      params: the hyperparameters.
      config: the `RunConfig`.

    Returns:
      What `logit_fn` returned: a tensor, or a dict of strings to tensors.

    Raises:
      ValueError: `logit_fn` returned something else (v1's message).
    """
    arguments = tf_internals.fn_args(logit_fn)
    given = {'mode': mode, 'params': params, 'config': config}
    logits = logit_fn(features=features, **{name: value for name, value in given.items() if name in arguments})
    is_dict = isinstance(logits, dict) and all(
        isinstance(key, str) and isinstance(value, tf.Tensor) for key, value in logits.items()
    )
    if not (is_dict or isinstance(logits, tf.Tensor)):
        raise ValueError(
            'logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  logit_fn returned: %s'
            % logits
        )
    return logits
