"""Argument checks of every public constructor, in one place.

Those of a scaffold and a saver (`check_scaffold`, `check_saver`) live next to `Scaffold`, in
`compat_mts.session.scaffold`: they test for its class, and that module imports this one.

Each check raises a `TypeError` (wrong type) or `ValueError` (right type, wrong value) whose message names
the argument, the value given and what is accepted, before anything is created or written. What v1
accepted is accepted with v1's meaning:

- `None` and `''` as a session's `checkpoint_dir`, `summary_dir` or `checkpoint_filename_with_path`
  both mean "none" (v1 tested them with `if checkpoint_dir:`);
- `max_wait_secs=None` waits forever, as v1's `SessionManager.wait_for_session` did; so does `inf`.

NaN is never a number of seconds: v1 took it silently, and then never triggered, never waited or waited
forever, depending on the comparison it ended up in. `inf` keeps the meaning v1's arithmetic gave it, and
every message says which: a wait that never runs out (`max_wait_secs`, `stop_grace_period_secs`), or a
timer that, after its first trigger, never triggers on time again (`every_secs`, `save_secs`, ...: for
`save_checkpoint_secs`, checkpoints at creation and at the end only). Steps are integers, so never `inf`,
and fit the global step's int64 (at most `2**63 - 1`): v1 took a larger one and never reached it; here it is
refused, since the step counters of `repeat_steps` and of a parameter-server chief are int64 too. A path
never holds a NUL byte: the file system cannot name it, and v1 failed at the first save.
"""

from __future__ import annotations

import collections.abc
import json
import math
import numbers
import os
from typing import Any

import tensorflow as tf

from compat_mts.core import global_step as global_step_lib


def _given(value: Any) -> str:
    return f'{value!r} ({type(value).__name__})'


# Plain values.


def check_bool(value: Any, argument: str) -> None:
    """`value` must be a bool."""
    if not isinstance(value, bool):
        raise TypeError(f'`{argument}` must be a bool, got {_given(value)}.')


INT64_MAX = 2**63 - 1  # The largest global step.


def check_integer(value: Any, argument: str, *, optional: bool = True, accepted: str | None = None) -> None:
    """`value` must be an integer (not a bool) that fits an int64, or None when `optional`.

    Args:
      accepted: what the message says is accepted, when the default ("None or an integer") is not it.

    Raises:
      TypeError: not an integer (nor None, when `optional`).
      ValueError: beyond the int64 range of the global step.
    """
    if value is None and optional:
        return
    accepted = accepted or ('None or an integer' if optional else 'an integer')
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f'`{argument}` must be {accepted}, got {_given(value)}.')
    check_step_range(value, argument, accepted)


INT32_MAX = 2**31 - 1  # The most steps one run loops over (a `tf.while_loop` counter).


def check_steps_per_run(value: Any, argument: str = 'steps_per_run', *, below_one: str | None = None) -> None:
    """`value` must be K, the steps of one run: a positive integer that a `tf.while_loop`'s int32 counter holds.

    Args:
      below_one: the message for an integer below 1, when v1 had its own (`repeat_steps`).

    Raises:
      TypeError: not an integer.
      ValueError: below 1, or more than 2**31 - 1.
    """
    accepted = 'a positive integer'
    check_integer(value, argument, optional=False, accepted=accepted)
    if value < 1:
        raise ValueError(below_one or f'`{argument}` must be {accepted}, got {value}.')
    if value > INT32_MAX:
        raise ValueError(
            f'`{argument}` must be {accepted} of at most 2**31 - 1 = {INT32_MAX} (the steps of one run are '
            f'counted by an int32 loop counter), got {value}.'
        )


def check_step_range(value: numbers.Real, argument: str, accepted: str) -> None:
    """Raises a ValueError when `value` (a number of steps) is beyond the int64 range of the global step."""
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise ValueError(
            f'`{argument}` must be {accepted} within the range of the int64 global step (at most 2**63 - 1 = '
            f'{INT64_MAX}), got {value!r}.'
        )


def check_seconds(
    value: Any,
    argument: str,
    *,
    infinity: str,
    optional: bool = True,
    non_negative: bool = False,
    accepted: str | None = None,
) -> None:
    """`value` must be a number of seconds: a real number (not a bool), never NaN.

    Args:
      infinity: what `inf` means for this argument (v1's arithmetic), for the message.
      optional: None is accepted.
      non_negative: negative numbers are rejected.
      accepted: what the message says is accepted, when the default is not it.

    Raises:
      TypeError: not a real number (nor None, when `optional`).
      ValueError: NaN, or a negative number where `non_negative`.
    """
    if value is None and optional:
        return
    if accepted is None:
        accepted = (
            ('None or ' if optional else '')
            + ('a non-negative' if non_negative else 'a')
            + f' number of seconds (inf {infinity})'
        )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f'`{argument}` must be {accepted}, got {_given(value)}.')
    if math.isnan(value):
        raise ValueError(f'`{argument}` must be {accepted}, got {value!r}: NaN is not a number of seconds.')
    if non_negative and value < 0:
        raise ValueError(f'`{argument}` must be {accepted}, got {value!r}.')


def check_max_wait_secs(value: Any) -> None:
    """`max_wait_secs`: None or a non-negative number of seconds; None and `inf` wait forever, as in v1."""
    check_seconds(
        value,
        'max_wait_secs',
        non_negative=True,
        infinity='waits forever',
        accepted='None or a non-negative number of seconds (None and inf wait forever, as in v1)',
    )


def seconds_or_forever(value: float | None) -> float:
    """`max_wait_secs` as a number: None is "wait forever" (`inf`), as in v1's `wait_for_session`."""
    return math.inf if value is None else value


def check_stop_grace_period_secs(value: Any) -> None:
    """`stop_grace_period_secs`: a non-negative number; `inf` waits until the threads end (v1's `Coordinator.join`)."""
    check_seconds(
        value, 'stop_grace_period_secs', optional=False, non_negative=True, infinity='waits until the threads end'
    )


def check_optional_callable(value: Any, argument: str) -> None:
    """`value` must be None, a callable, or an op/tensor of a graph the session runs."""
    if value is None or callable(value) or isinstance(value, (tf.Operation, tf.Tensor)):
        return
    raise TypeError(f'`{argument}` must be None or a callable, got {type(value).__name__}.')


def check_callable(value: Any, argument: str, what: str) -> None:
    """`value` must be callable; `what` says what it is called for (`'a callable returning a feed dict'`)."""
    if not callable(value):
        raise TypeError(f'`{argument}` must be {what}, got {type(value).__name__}.')


def check_non_empty_string(value: Any, argument: str) -> None:
    """`value` must be a non-empty string."""
    if not isinstance(value, str) or not value:
        raise TypeError(f'`{argument}` must be a non-empty string, got {value!r}.')


def check_optional_dict(value: Any, argument: str) -> None:
    """`value` must be None or a dict."""
    if value is not None and not isinstance(value, dict):
        raise TypeError(f'`{argument}` must be None or a dict, got {type(value).__name__}.')


def check_feed_dict(value: Any) -> None:
    """`feed_dict` must be None or a mapping (what v1 iterated with `.items()`)."""
    if value is not None and not isinstance(value, collections.abc.Mapping):
        raise TypeError(
            '`feed_dict` must be None or a dict of feeds: string keys (keyword arguments of the step callable) '
            f"or tensors and names ('x:0') of a wrap_graph graph, to values; got {_given(value)}."
        )


# Paths.

_PATH_TYPES = (str, bytes, os.PathLike)


def optional_directory(value: Any, argument: str) -> str | None:
    """A path argument that v1 tested with `if value:`; returns it as a str, or None for None and ''.

    Raises:
      TypeError: not None, a str, bytes or an os.PathLike.
    """
    if value is None:
        return None
    accepted = "None or a path (str or os.PathLike; '' is None, as in v1)"
    if not isinstance(value, _PATH_TYPES):
        raise TypeError(f'`{argument}` must be {accepted}, got {_given(value)}.')
    return _without_nul(os.fsdecode(value), argument, accepted) or None


def path(value: Any, argument: str, *, empty: str | None = None) -> str:
    """A path argument that must be given; returns it as a str.

    Args:
      empty: what `''` means for this argument (the message says so); `''` is rejected when this is None.

    Raises:
      TypeError: not a str, bytes or an os.PathLike.
      ValueError: `''` where it has no meaning.
    """
    accepted = 'a directory path (str or os.PathLike' + (f"; '' is {empty}" if empty else '') + ')'
    if not isinstance(value, _PATH_TYPES):
        raise TypeError(f'`{argument}` must be {accepted}, got {_given(value)}.')
    decoded = _without_nul(os.fsdecode(value), argument, accepted)
    if not decoded and empty is None:
        raise ValueError(f"`{argument}` must be {accepted}, got ''; use '.' for the working directory.")
    return decoded


def _without_nul(decoded: str, argument: str, accepted: str) -> str:
    if '\0' in decoded:
        raise ValueError(f'`{argument}` must be {accepted} without NUL bytes, got {decoded!r}.')
    return decoded


# Hooks, listeners, session creators, scaffolds. Passing the class itself is a common slip.


def class_message(argument: str, cls: type, replacement: str | None = None, verb: str = 'holds') -> str:
    if replacement is not None:
        return (
            f'`{argument}` {verb} the class tf.compat.v1.train.{replacement}, a graph-mode class that needs '
            f'a tf.compat.v1.Session. Pass an instance of compat_mts.{replacement} instead: '
            f'compat_mts.{replacement}(...).'
        )
    return (
        f'`{argument}` {verb} the class {cls.__name__} itself, not an instance of it. Instantiate it: '
        f'{cls.__name__}(...).'
    )


def _is_v1_builtin(cls: type) -> bool:
    return (cls.__module__ or '').startswith('tensorflow.')


def _v1_replacement(cls: type) -> str | None:
    """The compat_mts name of a `tf.compat.v1.train` class, or None for any other class."""
    return cls.__name__.lstrip('_') if _is_v1_builtin(cls) else None


def check_hooks(hooks: Any, argument: str = 'hooks') -> list:
    """`hooks` as a list: None is `[]`; each item must pass `check_hook`."""
    hooks = hook_list(hooks, argument)
    for hook in hooks:
        check_hook(hook, argument)
    return hooks


def hook_list(hooks: Any, argument: str = 'hooks') -> list:
    """`hooks` as a list, None as `[]`, its items unchecked.

    Raises:
      TypeError: a single hook (not in a list), a hook class, or something that is not iterable.
    """
    if hooks is None:
        return []
    if isinstance(hooks, tf.compat.v1.train.SessionRunHook):
        raise TypeError(
            f'`{argument}` must be a list of SessionRunHook instances, got a single hook; wrap it in a list: '
            f'[{type(hooks).__name__}(...)].'
        )
    if isinstance(hooks, type) and issubclass(hooks, tf.compat.v1.train.SessionRunHook):
        raise TypeError(class_message(argument, hooks, _v1_replacement(hooks), verb='is'))
    try:
        return list(hooks)
    except TypeError:
        raise TypeError(f'`{argument}` must be a list of SessionRunHook instances, got {_given(hooks)}.') from None


def keras_class_of(value: Any, base: str) -> str | None:
    """The name of `value`'s class when it is a Keras `base` (`'Model'`, `'callbacks.Callback'`), else None.

    Read from the class's bases, so that Keras is not imported to tell (tf.keras, Keras 3 and tf_keras alike).
    """
    module_tail, _, name = base.rpartition('.')
    for cls in type(value).__mro__:
        module = cls.__module__ or ''
        if cls.__name__ == name and module.split('.')[0] in _KERAS_PACKAGES and module_tail in module:
            return type(value).__name__
    return None


_KERAS_PACKAGES = ('keras', 'tf_keras')


def check_hook(hook: Any, argument: str = 'hooks') -> None:
    """Raises a TypeError for a non-hook, a hook class, or a graph-mode v1 hook (naming the replacement).

    A Keras callback is named as one, with the hook that runs callbacks in a session
    (`compat_mts.keras.CallbackHook`).
    """
    if isinstance(hook, type) and issubclass(hook, tf.compat.v1.train.SessionRunHook):
        raise TypeError(class_message(argument, hook, _v1_replacement(hook)))
    if isinstance(hook, tf.compat.v1.train.SessionRunHook) and _is_v1_builtin(type(hook)):
        name = type(hook).__name__.lstrip('_')
        raise TypeError(
            f'`{argument}` holds tf.compat.v1.train.{name}, a graph-mode hook that needs a tf.compat.v1.Session. '
            f'Use compat_mts.{name} instead; it takes the same arguments.'
        )
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
        callback = keras_class_of(hook, 'callbacks.Callback')
        if callback is not None:
            raise TypeError(
                f'`{argument}` holds {callback}, a Keras callback; a session calls SessionRunHooks. Run Keras '
                f'callbacks in a session through one hook: {argument}=[compat_mts.keras.CallbackHook([callback, '
                '...], model=model)].'
            )
        raise TypeError(
            f'`{argument}` must hold SessionRunHook instances (compat_mts.SessionRunHook or '
            f'tf.compat.v1.train.SessionRunHook subclasses), got {type(hook).__name__}.'
        )


def check_listeners(listeners: Any, argument: str = 'listeners') -> list:
    """`listeners` as a list of `CheckpointSaverListener` instances (compat_mts's or v1's); None is `[]`."""
    if listeners is None:
        return []
    if isinstance(listeners, tf.compat.v1.train.CheckpointSaverListener):
        raise TypeError(
            f'`{argument}` must be a list of CheckpointSaverListener instances, got a single '
            'listener; wrap it in a list.'
        )
    if isinstance(listeners, type):
        listeners = [listeners]
    try:
        listeners = list(listeners)
    except TypeError:
        raise TypeError(
            f'`{argument}` must be a list of CheckpointSaverListener instances, got {type(listeners).__name__}.'
        ) from None
    for listener in listeners:
        if isinstance(listener, type) and issubclass(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError(class_message(argument, listener))
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError(f'`{argument}` must hold CheckpointSaverListener instances, got {type(listener).__name__}.')
    return listeners


def check_session_creator(creator: Any) -> None:
    """`session_creator` must be None or a session creator instance (anything with `create_session()`).

    Subclasses of `compat_mts.SessionCreator` and of `tf.compat.v1.train.SessionCreator` are; v1's own
    creators make graph-mode sessions and are named with their replacement.
    """
    if creator is None:
        return
    if isinstance(creator, type) and callable(getattr(creator, 'create_session', None)):
        raise TypeError(class_message('session_creator', creator, _v1_replacement(creator), verb='is'))
    if isinstance(creator, tf.compat.v1.train.SessionCreator) and _is_v1_builtin(type(creator)):
        name = type(creator).__name__
        raise TypeError(
            f'`session_creator` is a tf.compat.v1.train.{name}, which creates a graph-mode tf.compat.v1.Session. '
            f'Use compat_mts.{name} instead; it takes the same arguments.'
        )
    if not callable(getattr(creator, 'create_session', None)):
        raise TypeError(
            '`session_creator` must be a session creator: compat_mts.ChiefSessionCreator, WorkerSessionCreator '
            f'or a subclass of compat_mts.SessionCreator, got {type(creator).__name__}.'
        )


def check_created_session(session: Any, creator: Any) -> Any:
    """Returns `session`, what `creator.create_session()` returned, if a session can run on it.

    Raises:
      TypeError: it is a graph-mode `tf.compat.v1.Session`, or has no `run` and `close`.
    """
    name = type(creator).__name__
    if isinstance(session, (tf.compat.v1.Session, tf.compat.v1.InteractiveSession)):
        raise TypeError(
            f'{name}.create_session() returned a tf.compat.v1.Session, which runs graphs. Eagerly it must '
            'return the session of a compat_mts creator, e.g. '
            'compat_mts.ChiefSessionCreator(...).create_session().'
        )
    if not (callable(getattr(session, 'run', None)) and callable(getattr(session, 'close', None))):
        raise TypeError(
            f'{name}.create_session() must return a session (with run() and close()), such as the one '
            f'compat_mts.ChiefSessionCreator(...).create_session() returns; it returned {type(session).__name__}.'
        )
    return session


# Fetches.


def is_fetch(value: Any) -> bool:
    """Whether `value` is one fetch of the eager fetch model (`compat_mts.core.fetch`).

    That is a name (str), a `tf.Variable` (or Keras 3 variable), a tensor (eager, or of a graph the
    session runs) or a callable.
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


def read_tf_config() -> dict:
    """`TF_CONFIG` as a dict (`{}` when unset), checked the way every task of a cluster needs it.

    A job manager (Kubeflow TFJob, AI Platform, SageMaker, TonY) writes `TF_CONFIG` for each task it starts. A
    mistake in it would otherwise surface as a bare `JSONDecodeError`, or, for a task index past the end of its
    job, as a process that quietly trains alone. The evaluator may be listed in `cluster` or not, and its index
    has no upper bound (it is not part of the training cluster), as in TF 2.15.

    Raises:
      ValueError: `TF_CONFIG` is not JSON, not an object, or its `cluster`/`task` do not describe a task of the
        cluster (no task type, a type not in it, an index out of range); the message names `TF_CONFIG` and what
        is wrong.
    """
    text = os.environ.get('TF_CONFIG') or ''
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValueError(f'TF_CONFIG is not JSON ({error}): {text[:200]!r}') from None
    if not isinstance(config, dict):
        raise ValueError(f'TF_CONFIG must be a JSON object with "cluster" and "task", got {text[:200]!r}.')
    cluster = config.get('cluster') or {}
    task = config.get('task') or {}
    if not isinstance(cluster, dict) or not all(isinstance(tasks, (list, dict)) for tasks in cluster.values()):
        raise ValueError(f'TF_CONFIG["cluster"] must map each job name to its list of addresses, got {cluster!r}.')
    if not isinstance(task, dict):
        raise ValueError(f'TF_CONFIG["task"] must be an object {{"type": ..., "index": ...}}, got {task!r}.')
    if not cluster:
        return config
    task_type, index = task.get('type'), task.get('index', 0)
    if not isinstance(index, int) or isinstance(index, bool):
        try:
            index = int(index)
        except (TypeError, ValueError):
            raise ValueError(f'TF_CONFIG["task"]["index"] must be an integer, got {index!r}.') from None
    if index < 0:
        raise ValueError(f'TF_CONFIG["task"]["index"] must be >= 0, got {index}.')
    if not task_type:
        raise ValueError(f'TF_CONFIG has a "cluster" ({sorted(cluster)}), so its "task" must name a "type": {task!r}.')
    if task_type != 'evaluator':
        if task_type not in cluster:
            raise ValueError(
                f'TF_CONFIG names the task {task_type!r}, which is not a job of its cluster {sorted(cluster)}.'
            )
        if index >= len(cluster[task_type]):
            raise ValueError(
                f'TF_CONFIG names the task {task_type}:{index}, but its cluster has {len(cluster[task_type])} '
                f'{task_type} task(s) (indices 0 to {len(cluster[task_type]) - 1}).'
            )
    return config
