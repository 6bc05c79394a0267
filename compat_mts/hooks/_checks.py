"""Argument checks shared by the hooks' constructors."""

from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf

from compat_mts import global_step as global_step_lib


def check_optional_int(value: Any, argument: str) -> None:
    """`value` must be None or an integer (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
        raise TypeError(f'`{argument}` must be None or an integer, got {value!r} ({type(value).__name__}).')


def check_optional_number(value: Any, argument: str) -> None:
    """`value` must be None or a real number (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f'`{argument}` must be None or a number, got {value!r} ({type(value).__name__}).')


def check_optional_path(value: Any, argument: str) -> None:
    """`value` must be None or a path (str or os.PathLike)."""
    if value is not None and not isinstance(value, (str, bytes)) and not hasattr(value, '__fspath__'):
        raise TypeError(f'`{argument}` must be None or a directory path, got {type(value).__name__}.')


def check_bool(value: Any, argument: str) -> None:
    """`value` must be a bool."""
    if not isinstance(value, bool):
        raise TypeError(f'`{argument}` must be a bool, got {value!r} ({type(value).__name__}).')


def is_fetch(value: Any) -> bool:
    """Whether `value` is one fetch of the eager fetch model (`compat_mts.fetches`).

    That is a name (str), a `tf.Variable` (or Keras 3 variable), a tensor (eager, or of a `wrap_graph`
    graph) or a callable.
    """
    if isinstance(value, (str, tf.Tensor, tf.Variable, tf.Operation)):
        return True
    if global_step_lib.as_tf_variable(value) is not value:  # A Keras 3 variable.
        return True
    return callable(value) and not isinstance(value, type)


def check_fetch(value: Any, argument: str, nested: bool = False) -> None:
    """`value` must be one fetch or, with `nested`, None or a list/tuple/dict of fetches and Nones."""
    leaves = tf.nest.flatten(value) if nested else [value]
    for leaf in leaves:
        if not (nested and leaf is None) and not is_fetch(leaf):
            accepted = 'a name (str), a tf.Variable, a tensor or a callable'
            if nested:
                accepted += ', or a list, tuple or dict of these'
            raise TypeError(f'`{argument}` must be {accepted}; got {leaf!r} ({type(leaf).__name__}).')
