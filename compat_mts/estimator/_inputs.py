"""Calling an `input_fn` and reading what it returns, as v1's Estimator did, inside the mode's graph."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunHook


class DatasetInitializerHook(SessionRunHook):
    """Initializes the iterator of the `input_fn`'s dataset when the session is created (again, on recovery)."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def call_input_fn(input_fn, mode: str, params: dict, config, input_context=None) -> Any:
    """Calls `input_fn` with the arguments it names among `mode`, `params`, `config` and, under a strategy,
    `input_context` (v1's), on the CPU.

    Raises:
      TypeError: `input_fn` is not callable (v1 said "unsupported callable").
      ValueError: `input_fn` built queue runners (`_check_no_queue_runners`).
    """
    validation.check_callable(
        input_fn,
        'input_fn',
        'a callable input_fn(mode, params, config) returning (features, labels) or a tf.data.Dataset',
    )
    arguments = tf_internals.fn_args(input_fn)
    kwargs = {}
    if 'mode' in arguments:
        kwargs['mode'] = mode
    if 'params' in arguments:
        kwargs['params'] = params
    if 'config' in arguments:
        kwargs['config'] = config
    if input_context is not None and 'input_context' in arguments:
        logging.info('The `input_fn` accepts an `input_context` which will be given by DistributionStrategy')
        kwargs['input_context'] = input_context
    queue_runners = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS))
    with tf.device('/cpu:0'):
        result = input_fn(**kwargs)
    _check_no_queue_runners(input_fn, tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)[queue_runners:])
    return result


def _check_no_queue_runners(input_fn, queue_runners: list) -> None:
    """Raises a ValueError naming `input_fn` and its queues if it built `queue_runners`, which nothing would run.

    v1's session started their threads (those of `tf.compat.v1.train.batch`, `shuffle_batch`, `*_input_producer`,
    a `QueueRunner` of the `input_fn`'s own); eagerly there are none, so the first step would wait on an empty
    queue. The `input_fn` is refused before anything runs instead, as `wrap_graph` refuses such a graph.
    """
    if not queue_runners:
        return
    name = getattr(input_fn, '__name__', None) or repr(input_fn)
    queues = ', '.join(sorted({runner.queue.name for runner in queue_runners}))
    raise ValueError(
        f'The input_fn {name} builds queue runners (queues: {queues}), as tf.compat.v1.train.batch, shuffle_batch, '
        '*_input_producer and QueueRunner do; compat_mts starts no queue-runner threads, so nothing would fill '
        'them. Return a tf.data.Dataset from the input_fn instead: migration_guide/queue_runners.md gives the '
        'dataset of each queue-runner op.'
    )


def parse_input_fn_result(result: Any) -> tuple[Any, Any, list]:
    """`(features, labels, input_hooks)` of what an `input_fn` returned (v1's rules).

    A `tf.data.Dataset` is read through an initializable iterator that a hook initializes when the session is
    created; its elements, like a returned tuple, are `(features, labels)` or `features` alone.

    Raises:
      ValueError: a list or tuple that is not of length 2 (v1's message).
    """
    hooks = []
    if isinstance(result, tf.data.Dataset) or hasattr(result, 'make_initializable_iterator'):
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        hooks.append(DatasetInitializerHook(iterator))
        result = iterator.get_next()
    features, labels = parse_iterator_result(result)
    return features, labels, hooks


def placeholders_like(dataset: tf.data.Dataset) -> tuple[Any, Any, list]:
    """`(features, labels, placeholders)`: placeholders shaped as `dataset`'s elements, in the graph being built.

    `placeholders` are the component tensors in `tf.nest.flatten(..., expand_composites=True)` order, as the
    elements' components come on a worker (a `tf.SparseTensor` is its indices, values and dense shape).

    Raises:
      TypeError: an element holds a component other than a dense or sparse tensor.
    """

    def placeholder(spec):
        if isinstance(spec, tf.SparseTensorSpec):
            return tf.compat.v1.sparse_placeholder(spec.dtype, spec.shape)
        if isinstance(spec, tf.TensorSpec):
            return tf.compat.v1.placeholder(spec.dtype, spec.shape)
        raise TypeError(
            f"On a parameter-server cluster, the input_fn's dataset elements must hold dense or sparse tensors; "
            f'this one holds a {type(spec).__name__}.'
        )

    element = tf.nest.map_structure(placeholder, dataset.element_spec)
    features, labels = parse_iterator_result(element)
    return features, labels, tf.nest.flatten(element, expand_composites=True)


def parse_iterator_result(result: Any) -> tuple[Any, Any]:
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError('input_fn should return (features, labels) as a len 2 tuple.')
        return result[0], result[1]
    return result, None


_PYTHON_SCALARS = (bool, int, float, complex, str, bytes)


def explain_model_fn_error(features: Any, error: TypeError) -> TypeError | None:
    """The error to raise for a `model_fn` that failed with `error` on features that are a Python scalar, or None.

    An `input_fn` that returns `5` hands v1's `model_fn` the features `5`, which most fail on in words that name
    neither (`'int' object is not subscriptable`). A `model_fn` that takes them (`w * features`) trains, as in v1.
    """
    if not isinstance(features, _PYTHON_SCALARS):
        return None
    return TypeError(
        '`input_fn` must return features (a tensor or a dict of name -> tensor), a (features, labels) tuple of them, '
        f'or a tf.data.Dataset of either; it returned the features {features!r} ({type(features).__name__}), on '
        f'which the model_fn failed: {error}'
    )


def warn_unless_from_dataset(features: Any) -> None:
    """v1's warning when prediction features do not come from a dataset: predict would never end."""
    tensors = [value for value in tf.nest.flatten(features) if isinstance(value, tf.Tensor)]
    if not any(tensor.op.type == 'IteratorGetNext' for tensor in tensors):
        logging.warning(
            'Input graph does not use tf.data.Dataset or contain a QueueRunner. That means predict '
            'yields forever. This is probably a mistake.'
        )
