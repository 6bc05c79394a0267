"""`LoggingTensorHook`: logs named values every N local steps, every N seconds, or at the end."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import validation
from compat_mts.hooks.timer import NeverTriggerTimer, SecondOrStepTimer
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook, StepsPerRunMixin


class LoggingTensorHook(StepsPerRunMixin, SessionRunHook):
    """Logs the given values every N local steps, every N seconds, or at the end (v1's arguments and lines).

    `tensors` is a dict of tag → value, logged in sorted tag order, or a list of values, logged in the
    given order with the value itself as its tag. A value is a name (`'loss'`: a key of the dict the
    step returns, else a registered variable such as `'global_step'`, else a tensor of a `wrap_graph`
    graph, where as in v1 `'loss'` means `'loss:0'`), a `tf.Variable`, a callable evaluated after the
    step, or a `wrap_graph` tensor;
    all are fetched from the same run as the step, on the runs that log only. v1 resolved names when the
    session began; eagerly a step's outputs exist once it has run, so an unknown name raises a `KeyError`
    listing the available names at the first logging run.

    The lines are v1's, with NumPy's `suppress=True` print option: `loss = 0.25, step = 3 (0.412 sec)`,
    just `loss = 0.25, step = 1` the first time, or exactly `formatter(values)` with a `formatter`.
    `every_n_iter` counts local steps of this session (from 0 at `begin`), not global steps; under
    `compat_mts.repeat_steps` a run is K local steps, so lines land on K-step boundaries.

    `at_end=True` logs once more in `end()`: variables, tensors and callables are evaluated then, as in
    v1; a name of a step output, which cannot be evaluated without running a step, is logged with its
    value from the session's last run (with `at_end`, names are fetched on every run for that).

    Args:
      tensors: A dict of tag → value, or a list or tuple of values, each its own tag. A value is a name,
        a `tf.Variable`, a callable evaluated after the step, or a `wrap_graph` tensor (see above).
      every_n_iter: Log on every `every_n_iter`-th local step of this session (a positive integer), or
        None.
      every_n_secs: Log on the first run and then at most once every `every_n_secs` seconds, or None.
        Exactly one of `every_n_iter` and `every_n_secs` is given, unless `at_end` alone is.
      at_end: Also log once in `end()` (default False); with both periods None, log only then.
      formatter: None for v1's `tag = value, ...` lines, or a function from the dict of tag → NumPy value
        to the text logged.

    Example:

    ```python
    hook = compat_mts.LoggingTensorHook({'loss': 'loss', 'step': 'global_step'}, every_n_iter=100)
    ```

    Raises:
      ValueError: not "at_end and/or exactly one of every_n_iter and every_n_secs", `every_n_iter` not
        positive (v1's messages), a value that is not a fetch, or `every_n_secs` is NaN (`inf` logs
        the first run only).
      TypeError: `tensors` is not a dict or list, or another argument has the wrong type.
    """

    def __init__(
        self,
        tensors: dict | list | tuple,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict], str] | None = None,
    ):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError('either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.')
        validation.check_integer(every_n_iter, 'every_n_iter')
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError('invalid every_n_iter=%s.' % every_n_iter)
        validation.check_seconds(every_n_secs, 'every_n_secs', infinity='logs the first run only')
        validation.check_bool(at_end, 'at_end')
        if formatter is not None and not callable(formatter):
            raise TypeError(f'`formatter` must be None or a callable, got {type(formatter).__name__}.')
        self._tags, self._fetches = _tags_and_fetches(tensors)
        self._formatter = formatter
        self._timer = (
            NeverTriggerTimer()
            if only_log_at_end
            else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        )
        self._log_at_end = at_end
        self._named = [index for index, fetch in enumerate(self._fetches) if isinstance(fetch, str)]

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._last_named_values: dict[int, Any] = {}
        self._use_fetches(self._fetches)

    def after_create_session(self, session, coord):
        # Names are read as v1 read them, in the graphs of this session alone (its fetch state says which), now
        # that they exist: a graph of an earlier program in the process is not this session's.
        state = getattr(session, 'fetch_state', None)
        self._use_fetches(
            [
                _as_graph_tensor_name(fetch, state) if isinstance(fetch, str) and state is not None else fetch
                for fetch in self._fetches
            ]
        )

    def _use_fetches(self, fetches: list) -> None:
        self._current_fetches = fetches
        self._request = SessionRunArgs(fetches)  # Immutable: one serves every run.
        self._named_request = SessionRunArgs([fetches[index] for index in self._named])

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return self._request
        if self._log_at_end and self._named:
            return self._named_request
        return None

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_values(run_values.results)
            named_values = [run_values.results[index] for index in self._named]
        else:
            named_values = run_values.results
        if self._log_at_end and self._named:
            self._last_named_values = dict(zip(self._named, named_values))
        self._iter_count += self._steps_per_run

    def end(self, session):
        if not self._log_at_end or session is None:
            return
        values = dict(self._last_named_values)
        missing = [index for index in range(len(self._fetches)) if index not in values]
        if missing:
            values.update(zip(missing, session.run([self._current_fetches[index] for index in missing])))
        self._log_values([values[index] for index in range(len(self._fetches))])

    def _log_values(self, results: list) -> None:
        with np.printoptions(suppress=True):
            elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
            if self._formatter:
                logging.info(self._formatter(dict(zip(self._tags, results))))
                return
            stats = ', '.join('%s = %s' % (tag, value) for tag, value in zip(self._tags, results))
            if elapsed_secs is not None:
                logging.info('%s (%.3f sec)', stats, elapsed_secs)
            else:
                logging.info('%s', stats)


def _tags_and_fetches(tensors: Any) -> tuple[list, list]:
    """v1's tags in logging order (sorted for a dict, given order for a list) and their fetches.

    A list item is its own tag, as in v1. Eager tensors and variables cannot be dict keys (unhashable),
    so theirs is their text: a variable's is its v1 graph-mode text, `<tf.Variable 'w:0' shape=...>`.
    """
    if isinstance(tensors, dict):
        tags = sorted(tensors)
        fetches = [tensors[tag] for tag in tags]
    elif isinstance(tensors, (str, bytes)) or not isinstance(tensors, Iterable):
        raise TypeError(
            '`tensors` must be a dict of tag -> value or a list of values (names, variables, tensors or '
            f'callables), got {tensors!r}; for one name write [{tensors!r}].'
        )
    else:
        fetches = list(tensors)
        tags = [_list_tag(item) for item in fetches]
    for fetch in fetches:
        if not validation.is_fetch(fetch):
            raise ValueError(
                f'Passed {fetch!r} should be a name (str), a tf.Variable, a tensor or a callable returning tensors.'
            )
    return tags, fetches


def _as_graph_tensor_name(name: str, state: fetches_lib.SessionState) -> str:
    """v1's reading of a name without `:` in a graph: the op's only output, `name:0`.

    Only a name of one of the session's graphs (`state.runners()`) is read so, and a step output or variable of
    that name still comes first (`compat_mts.core.fetch.OutputName`).

    Raises:
      ValueError: the op has several outputs (v1's message).
    """
    if ':' in name or not state.has_name(name + ':0'):
        return name
    if state.has_name(name + ':1'):
        raise ValueError('Name %s is ambiguous, as this `Operation` has multiple outputs (at least 2).' % name)
    return fetches_lib.OutputName(name)


def _list_tag(item: Any) -> Any:
    if isinstance(item, tf.Variable):
        return f"<tf.Variable '{item.name}' shape={item.shape} dtype={item.dtype.name}>"
    if isinstance(item, tf_internals.EAGER_TENSOR):
        return str(item)
    return item
