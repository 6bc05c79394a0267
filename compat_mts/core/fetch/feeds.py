"""The feeds of a run (`compat_mts.core.fetch`): a `feed_dict` split into the step's keyword arguments and the
legacy graphs' feeds, and the step's arguments checked against its signature, with v1's messages."""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import tensorflow as tf
from compat_mts.core import program as program_lib
from compat_mts.core import validation
from compat_mts.core.fetch.model import (
    SessionState,
    _STRUCTURES,
    _graph_runners,
    _is_callable_fetch,
    _is_graph_object,
    _is_reference,
    _is_tf_function,
    _runner_for,
)


def _check_feed_keys(feed_dict: dict | None, state: SessionState) -> tuple[dict, dict]:
    """Splits a merged feed into keyword arguments (string keys) and legacy graph feeds.

    A string key is a graph tensor's name only in one of the session's graphs; a placeholder's graph becomes
    one of the session's.
    """
    if not feed_dict:  # v1 took any false value (0, [], '') for no feeds too.
        return {}, {}
    if type(feed_dict) is not dict:  # A plain dict skips the check (the usual case).
        validation.check_feed_dict(feed_dict)
    kwargs, graph_feeds = {}, {}
    for key, value in feed_dict.items():
        if isinstance(key, str) and not (_graph_runners and ':' in key and state.has_name(key)):
            kwargs[key] = value
        elif isinstance(key, str):
            graph_feeds[key] = value
        elif _is_graph_object(key):
            runner = _runner_for(key)
            if runner is not None:
                state.given(runner)
            graph_feeds[key] = value
        elif _is_reference(key):  # `tensor.ref()`, what TensorFlow says to key a dict of tensors by.
            raise TypeError(
                f'`feed_dict` cannot feed {key.deref()!r} (given as .ref()): an eager tensor or variable holds '
                'its value and is not fed. `feed_dict` keys must be strings, the keyword arguments of the step '
                "callable (feed_dict={'x': batch} for a step `def train_step(x)`), or placeholders of a "
                '`compat_mts.wrap_graph` graph.'
            )
        else:
            raise TypeError(
                f'`feed_dict` keys must be strings (keyword arguments of the step callable) or '
                f'placeholders of a `compat_mts.wrap_graph` graph, got {key!r} of type {type(key).__name__}.'
            )
    return kwargs, graph_feeds


_PYTHON_SCALARS = (bool, int, float)


def _as_feeds(kwargs: dict) -> dict:
    """The keyword arguments of a `tf.function` step, with Python numbers as tensors, as v1 fed placeholders.

    A `tf.function` traces anew for every new Python value of an argument, so `feed_dict={'learning_rate': lr}`
    with a decaying `lr` would trace the step on every run; a tensor of the same dtype reuses the trace.
    """
    if not any(type(value) in _PYTHON_SCALARS for value in kwargs.values()):
        return kwargs
    return {key: tf.constant(value) if type(value) in _PYTHON_SCALARS else value for key, value in kwargs.items()}


# step -> `_parameters_of(step)`: the keyword arguments it takes, or None when it has no signature.
# Process-wide as `_direct_steps` is: a property of the step alone, dropped with it (weakly keyed). Without it,
# `inspect.signature` would cost every fed run (benchmarks/RESULTS.md, `--feed-dict`).
_step_parameters: weakref.WeakKeyDictionary = program_lib.PROGRAM.table(
    'fetches.step_parameters',
    weakref.WeakKeyDictionary(),
    "the keyword arguments of each step run with feeds, which `feed_dict`'s keys are checked against (weakly keyed)",
)


def _parameters_of(step: Any) -> tuple[tuple[str, ...], frozenset, frozenset, bool] | None:
    """The keyword arguments `feed_dict` can give `step`, or None when they cannot be known.

    `(names in order, the same as a set, the required ones, whether it takes **kwargs)`.

    A `tf.function`'s are its Python function's; a callable object's are its `__signature__` if it has one (a
    `repeat_steps` callable gives its one-step function's, to which it passes its feeds), else its `__call__`'s.
    """
    try:
        return _step_parameters[step]
    except (KeyError, TypeError):
        pass
    function = step.python_function if _is_tf_function(step) else step
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        parameters = None
    else:
        kinds = inspect.Parameter
        named = [
            p for p in signature.parameters.values() if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
        ]
        parameters = (
            tuple(p.name for p in named),
            frozenset(p.name for p in named),
            frozenset(p.name for p in named if p.default is kinds.empty),
            any(p.kind is kinds.VAR_KEYWORD for p in signature.parameters.values()),
        )
    try:
        _step_parameters[step] = parameters
    except TypeError:  # Not weakly referable: looked up again next time.
        pass
    return parameters


def _step_name(step: Any) -> str:
    return getattr(step, '__name__', None) or getattr(step, 'name', None) or type(step).__name__


def _check_step_arguments(request: Any, kwargs: dict) -> None:
    """Raises a TypeError naming the keys a step accepts when `feed_dict`'s string keys do not fit it.

    The one check of `feed_dict`'s string keys, made before anything runs, for every callable of the caller's
    fetches (each is given every key). Without it, a key such as 'x:0' (a graph tensor's name) reaches the
    `tf.function`, which renames it 'x_0' and fails with a binding error and a dump of the fed array. A step
    whose arguments cannot be known (`inspect.signature` fails) is called as it is.
    """
    if _is_callable_fetch(request):
        _check_arguments_of(request, kwargs)
    elif isinstance(request, _STRUCTURES):
        for leaf in tf.nest.flatten(request):
            if _is_callable_fetch(leaf):
                _check_arguments_of(leaf, kwargs)
    # No callable: `_call_callables` says the string keys have no step to go to.


def _check_arguments_of(step: Any, kwargs: dict) -> None:
    parameters = _parameters_of(step)
    if parameters is None:
        return
    names, accepted, required, takes_any = parameters
    if required <= kwargs.keys() and (takes_any or kwargs.keys() <= accepted):
        return  # Every run's case, in two set comparisons.
    unknown = [key for key in kwargs if key not in accepted and not takes_any]
    missing = [name for name in names if name in required and name not in kwargs]
    accepted = ', '.join(repr(name) for name in names) or 'none'
    problems = []
    if unknown:
        problems.append(f'{", ".join(map(repr, unknown))} {"is" if len(unknown) == 1 else "are"} not among them')
    if missing:
        problems.append(
            f'{", ".join(map(repr, missing))} {"is" if len(missing) == 1 else "are"} required and not given'
        )
    message = (
        f'`feed_dict` does not fit the step `{_step_name(step)}`, whose keyword arguments are {accepted}: '
        f"{'; '.join(problems)}. A step callable takes its inputs by argument name: feed_dict={{'x': batch}}."
    )
    tensor_names = [key for key in unknown if ':' in key]
    if tensor_names:
        message += (
            f' {tensor_names[0]!r} names a graph tensor (name:output_index): it feeds a placeholder of v1 graph '
            'code, which runs in a compat_mts session when that code is built by compat_mts.wrap_graph(build_fn) '
            'or in a tf.Graph().as_default() block, and its tensors are fetched.'
        )
    raise TypeError(message)
