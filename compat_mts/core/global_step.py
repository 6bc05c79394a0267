"""The process-wide global step: creating, finding, registering and reading it cheaply.

v1 kept the global step in the graph's `GLOBAL_STEP` collection. Eagerly there is no graph, so
compat_mts keeps one registered integer `tf.Variable` per process. It is created like v1's
(`int64`, named `global_step`, not trainable) and with `ONLY_FIRST_REPLICA` aggregation so that it
behaves under `tf.distribute` strategies. `set_global_step` registers a variable the program
already has (for example `optimizer.iterations`), and `reset_global_step` forgets it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np
import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import program as program_lib

GLOBAL_STEP_NAME = 'global_step'

_registered: tf.Variable | None = None
_registered_name: str | None = None


def _graph_mode() -> bool:
    """Whether a v1 graph is being built (`wrap_graph`, or v1 graph mode); not inside a `tf.function` trace."""
    if tf.executing_eagerly():
        return False
    with tf.init_scope():  # Lifts out of `tf.function` traces, not out of a v1 graph.
        return not tf.executing_eagerly()


def in_graph_mode() -> bool:
    """Whether the caller is building a v1 graph: in `wrap_graph`, or a program's `with tf.Graph().as_default():`."""
    return _graph_mode()


@contextlib.contextmanager
def outside_graph_mode() -> Iterator[None]:
    """Runs the block eagerly when called while a v1 graph is being built (see `in_graph_mode`).

    compat_mts's own objects (summary writers, switches, the session's work) live in the eager context, also
    when a v1 program creates them inside `with tf.Graph().as_default():`.
    """
    if _graph_mode():
        with tf_internals.eager_mode():
            yield
    else:
        yield


def outside_graph(graph: tf.Graph) -> contextlib.AbstractContextManager:
    """`outside_graph_mode()` for a caller that knows which v1 graph the program builds: cheaper when it is that one.

    A session created inside the program's `with tf.Graph().as_default():` runs there on every step; the default
    graph being that plain graph already says a v1 graph is being built, without `tf.init_scope()` to tell it
    from a `tf.function` trace.
    """
    if not _executing_eagerly() and _get_default_graph() is graph:
        return tf_internals.eager_mode()
    return outside_graph_mode()


_executing_eagerly = tf.executing_eagerly
_get_default_graph = tf.compat.v1.get_default_graph


def get_global_step(graph=None) -> tf.Variable | None:
    """Returns the registered global step variable, or None.

    Args:
        graph: v1's argument. Given a `tf.Graph` (or called while a v1 graph is being built, as inside
            `wrap_graph`), the graph's own global step is returned, as `tf.compat.v1.train.get_global_step`
            does.
    """
    if graph is not None or _graph_mode():
        return tf.compat.v1.train.get_global_step(graph)
    return _registered


def create_global_step(graph=None) -> tf.Variable:
    """Creates and registers the global step.

    Raises:
        ValueError: v1's '"global_step" already exists.' when one is registered.
    """
    global _registered
    if graph is not None or _graph_mode():
        return tf.compat.v1.train.create_global_step(graph)
    if _registered is not None:
        raise ValueError('"global_step" already exists.')
    _registered = tf.Variable(
        0,
        dtype=tf.int64,
        trainable=False,
        name=GLOBAL_STEP_NAME,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )
    return _registered


def get_or_create_global_step(graph=None) -> tf.Variable:
    """Returns the global step, creating and registering it first if there is none."""
    if graph is not None or _graph_mode():
        return tf.compat.v1.train.get_or_create_global_step(graph)
    return _registered if _registered is not None else create_global_step()


def set_global_step(variable, *, name: str | None = None) -> tf.Variable:
    """Registers an existing integer scalar variable as the global step (e.g. `optimizer.iterations`).

    A Keras 3 optimizer's `iterations` is a `keras.Variable`, which is not a `tf.Variable`; a Keras
    variable is registered as the `tf.Variable` it holds.

    Args:
        variable: a `tf.Variable` or Keras variable of an integer dtype, a scalar.
        name: the name hooks know the step by: `StepCounterHook`'s `<name>/sec` tag and the fetch name.
            Default: the variable's own name (a Keras 3 Adam's `iterations` is `adam/iteration`); pass
            `'global_step'` to keep v1's `global_step/sec` tag.

    Returns:
        The registered `tf.Variable`.

    Raises:
        TypeError: `variable` is not a `tf.Variable` (or Keras variable) of an integer dtype, or `name`
            is not a non-empty string.
        ValueError: `variable` is not a scalar.
    """
    global _registered, _registered_name
    variable = as_tf_variable(variable)
    if not isinstance(variable, tf.Variable):
        raise TypeError(f'`variable` must be a tf.Variable of an integer dtype, got {type(variable).__name__}.')
    if not variable.dtype.is_integer:
        raise TypeError(
            f'`variable` must be a tf.Variable of an integer dtype (int32 or int64), got {variable.dtype.name}.'
        )
    if variable.shape.rank != 0:
        raise ValueError(f'`variable` must be a scalar, got shape {variable.shape}.')
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f'`name` must be None or a non-empty string, got {name!r}.')
    _registered = variable
    _registered_name = name
    return variable


def registration() -> tuple[tf.Variable | None, str | None]:
    """The registered global step and the name it was registered under (None for either when not given), for
    `restore_registration` to put back once something that registers its own step is done."""
    return _registered, _registered_name


def restore_registration(saved: tuple[tf.Variable | None, str | None]) -> None:
    """Registers again what `registration()` returned: that global step and name, or none."""
    global _registered, _registered_name
    _registered, _registered_name = saved


def as_tf_variable(value):
    """The `tf.Variable` a Keras 3 variable holds; any other value as it is."""
    if not isinstance(value, tf.Variable) and type(value).__module__.startswith('keras'):
        held = getattr(value, 'value', None)
        if isinstance(held, tf.Variable):
            return held
    return value


def reset_global_step() -> None:
    """Forgets the registered global step, so the next `get_or_create_global_step()` creates a new one."""
    global _registered, _registered_name
    _registered = None
    _registered_name = None


program_lib.PROGRAM.register(
    'global_step.registered',
    'the registered global step and its name',
    size=lambda: int(_registered is not None),
    clear=reset_global_step,
)


def require_global_step(user: str) -> tf.Variable:
    """Returns the global step or raises v1's error for `user` (the class that needs it)."""
    step = get_global_step()
    if step is None:
        raise RuntimeError(f'Global step should be created to use {user}.')
    return step


def op_name(name: str) -> str:
    """`name` without the `:0` of a tensor's first output: `'dense/kernel:0'` is `'dense/kernel'`, as v1 named
    variables in checkpoints, tags and fetches. Every place that strips the suffix uses this one."""
    return name[:-2] if name.endswith(':0') else name


def variable_name(variable: Any) -> str:
    """The unique name of a variable as v1 would say it: a Keras 3 variable's path, else its op name."""
    return op_name(getattr(variable, 'path', None) or variable.name)


def step_name(variable: tf.Variable) -> str:
    """The op name of a step variable, as v1 used it in tags: `global_step` for the default one.

    The registered global step goes by the `name` it was registered under, if one was given.
    """
    if variable is _registered and _registered_name is not None:
        return _registered_name
    return op_name(variable.name)


_PLAIN_VARIABLES = tf_internals.PLAIN_VARIABLE_TYPES


def step_reader(variable: tf.Variable) -> Callable[[], int]:
    """Returns a function that reads `variable` (an integer scalar) to a Python int, cheaply."""
    return lambda: int(read_value(variable))


def read_value(variable: tf.Variable) -> np.ndarray:
    """Reads `variable` to NumPy as cheaply as TensorFlow allows.

    `Variable.numpy()` costs several times a plain read op (name scopes, a copy), and the session reads
    the step on every run, so a plain resource variable is read with the read op directly.
    """
    if type(variable) in _PLAIN_VARIABLES:
        return tf_internals.read_plain_variable(variable)
    return variable.value().numpy()
