"""The eager fetch and feed model: what `session.run(fetches, feed_dict)` does without a graph.

One place decides what a fetch is, for the sessions, the raw session and the hooks alike:

| fetch | result |
| --- | --- |
| a callable (a `tf.function` step, a plain function) | called once in this run; its return value, as NumPy |
| `tf.Variable` (or a Keras 3 variable) | its value, read after the run's callables have executed |
| eager `tf.Tensor` | its value |
| a string | a key of a dict a callable of this run returned, else the global step's name, else a session graph's name |
| `STALE_GLOBAL_STEP` | the global step as it was before this run's callables executed (what v1 hooks fetched) |
| a tensor or op of a `wrap_graph` graph | executed by the graph's runner, all graph fetches of a run in one call |
| list / tuple / namedtuple / dict of the above | the same structure back |
| None | None |

Only what was fetched is copied to the host: a step output nobody asked for stays a tensor.

The usual runs take fast paths (a `tf.function` step called directly, with the stale global step read in its own
call, and traced without its summaries for the runs that record none; a legacy graph's fetches planned once; a
plain variable fetched alone read directly), and the session skips the idle hooks whose `before_run` only asks for
the stale step. `COMPAT_MTS_GENERAL_FETCH_PATH=1` in the environment (read at import), or `FAST_PATHS = False` on
this module before a session is made, forces the general path for every run and has the session call every hook on
every run: what the fast paths are tested against (tests/test_general_fetch_path.py).

This module is the run (`Run`: the general path, and when each fast path is taken); what a fetch is, the
graphs a name resolves in and a session's own state are `model`; the feeds and the step's arguments, `feeds`;
the fast paths themselves (the direct step call, the graph-only plans), `fast_paths`. The names the rest of the
package uses are all here.
"""

from __future__ import annotations

import os
import re
from typing import Any, Sequence

import tensorflow as tf
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import validation
from compat_mts.core.fetch.fast_paths import (
    RecordingSwitch as RecordingSwitch,
    _DirectStep as _DirectStep,
    _GraphOnlyPlan,
    _direct_steps,
    _only_callable,
    _request_key,
)
from compat_mts.core.fetch.feeds import _as_feeds, _check_feed_keys, _check_step_arguments
from compat_mts.core.fetch.model import (
    GraphRunner as GraphRunner,
    OutputName as OutputName,
    STALE_GLOBAL_STEP as STALE_GLOBAL_STEP,
    SessionState as SessionState,
    _EAGER_TENSOR,
    _NOT_CALLED,
    _NO_PLAN,
    _STRUCTURES,
    _graph_key,
    _graph_only_plans,
    _graph_runners,
    _is_callable_fetch,
    _is_graph_object,
    _is_tf_function,
    _lookup_variable,
    _runner_for,
    _variable_names,
    graph_runner_of_global_step as graph_runner_of_global_step,
    graph_runners as graph_runners,
    register_graph_runner as register_graph_runner,
    to_numpy as to_numpy,
    unregister_graph_runner as unregister_graph_runner,
)


FAST_PATHS: bool = os.environ.get('COMPAT_MTS_GENERAL_FETCH_PATH', '') in ('', '0')
"""Whether runs take the fast paths; False (or `COMPAT_MTS_GENERAL_FETCH_PATH=1`) forces the general one."""


def fast_paths() -> bool:
    """Whether runs take the fast paths (`FAST_PATHS`), and sessions made now skip idle hooks."""
    return FAST_PATHS


def _refuse_outputs_of_a_called_step(request: Any, global_step: tf.Variable | None, state: SessionState) -> None:
    """Raises when the session's run is given a step's outputs, from calling the step instead of passing it.

    `sess.run(train_step())` runs the step outside the session, before the run, and gives the run eager tensors
    only: the run itself runs nothing, and hooks that fetch the step's outputs by name fail later. v1 allowed
    fetching a tensor, and an eager tensor fetched is its value, so eager tensors alone are not refused as such:

    - a dict of eager tensors only is (a step's named outputs; a program fetches values by name from the step);
    - a lone eager tensor, or a list or tuple of them, is when the global step moved since the session's previous
      run, which ran nothing either (no callable, no graph fetch of this session ran in between): something
      outside the session ran a step, and this run fetches what it returned. The first such run of a session
      cannot be told from a fetch of a tensor (the step before it is not read on the usual run, which would cost
      every step), so it is the second that raises. A program without a registered global step is not checked.
    """
    if isinstance(request, dict):
        leaves = tf.nest.flatten(request)
        if leaves and all(type(leaf) is _EAGER_TENSOR for leaf in leaves):
            raise TypeError(
                f'sess.run got the outputs of a step that already ran (a dict of values: {sorted(request)}), so '
                'this run would run nothing and the global step would not move. Pass the step, do not call it: '
                "sess.run(train_step), with its arguments in feed_dict={'x': batch}, not sess.run(train_step(...))."
            )
        return
    # The top level only: a list of fetches (`[train_op, 'loss']`) is told apart at its first leaf, without a
    # flatten on every run.
    leaves = request if isinstance(request, (list, tuple)) else [request]
    if not leaves or not all(type(leaf) is _EAGER_TENSOR for leaf in leaves):
        return
    if global_step is None:
        global_step = global_step_lib.get_global_step()
    if type(global_step) not in _PLAIN_VARIABLES:
        return  # None, or a distributed global step, which other workers move.
    now = int(global_step_lib.read_value(global_step))
    before, state.step_at_eager_fetch = state.step_at_eager_fetch, now
    if before is None or before == now:
        return
    what = 'an eager tensor' if leaves[0] is request else f'{len(leaves)} eager tensor{"s" if len(leaves) > 1 else ""}'
    raise TypeError(
        f'sess.run got the outputs of a step that already ran ({what}): the global step moved from {before} to '
        f'{now} since the previous run of this session, which ran nothing either, so a step ran outside the '
        'session, and this run would run nothing. Pass the step, do not call it: sess.run(train_step), with its '
        "arguments in feed_dict={'x': batch}, not sess.run(train_step(...))."
    )


_EVENTS_FILE = re.compile(r'([^\s{}]*events\.out\.tfevents\.[^\s;]*)[;:]? *([^\n]*)')


def events_file_error(error: tf.errors.OpError) -> tuple[str, str] | None:
    """`(events file, the system's reason)` when `error` is a summary writer's failure to write an events file."""
    message = error.message or ''
    match = _EVENTS_FILE.search(message) if 'events.out.tfevents' in message else None
    if match is None:
        return None
    return match.group(1), match.group(2).strip() or type(error).__name__


def _raise_for_an_events_file(error: tf.errors.OpError) -> None:
    """Raises an error of `error`'s class naming the summary directory when a summary op of the step failed to
    write its events file (a full disk, a read-only file system); returns for any other error.

    TensorFlow's message is a graph error pointing into `tf.summary`, with the events file deep inside it.
    """
    found = events_file_error(error)
    if found is None:
        return
    events_file, reason = found
    directory = os.path.dirname(events_file)
    raise type(error)(
        None,
        None,
        f'The summaries of this run could not be written into {directory}: {reason} ({events_file}). The step '
        'stopped at its summary op, so this run may be partly done; checkpoints are not affected, the last one is '
        'kept. Free some space, or give the summaries another directory (summary_dir=...), and run again to '
        'resume from the last checkpoint.',
    ) from error


def _refuse_a_keras_model(fetch: Any) -> None:
    """Raises a TypeError saying what a step is when `fetch`, whose call failed, is a Keras model."""
    model = validation.keras_class_of(fetch, 'Model')
    if model is not None:
        raise TypeError(
            f'The fetch is a Keras model ({model}), and a Keras model is not a step: calling it needs inputs and '
            'trains nothing. A step is a callable that trains one batch, e.g. a tf.function that calls the model, '
            'computes the loss, applies the gradients and increments the global step '
            "(global_step.assign_add(1)), and returns {'loss': loss}: session.run(train_step). To train the "
            'model with model.fit instead, give it the hooks as one callback: '
            'model.fit(..., callbacks=[compat_mts.keras.HooksCallback(hooks)]).'
        ) from None


class Run:
    """Resolves the fetches of one `run()` call: the caller's and every hook's, from the same execution.

    Args:
      requests: fetch structures; `requests[0]` is the caller's, whose callables receive the string
        keys of `feed_dict` as keyword arguments. Callables of later requests are called without
        arguments, once each even if several requests name them.
      feed_dict: the merged feeds of the run.
      global_step: the variable `STALE_GLOBAL_STEP` reads (default: the registered global step).
      session_step: whether the caller's callable is the session's step, whose graph `step_graph_def`
        returns: True for a session's own run. A run on the raw session (a hook's, or in `run_step_fn`)
        names the step only while the session has run none.
      state: the state of the session the run belongs to; a run outside any session gets a fresh one.
    """

    def __init__(
        self,
        requests: Sequence[Any],
        feed_dict: dict | None = None,
        global_step: tf.Variable | None = None,
        session_step: bool = False,
        state: SessionState | None = None,
    ):
        self._requests = requests
        self._state = state if state is not None else SessionState()
        self._kwargs, self._graph_feeds = _check_feed_keys(feed_dict, self._state)
        self._global_step = global_step
        self._session_step = session_step
        self._outputs: dict[int, Any] = {}
        self._named: dict[str, Any] = {}
        self._graph_values: dict[int, Any] = {}

    def execute(self) -> list:
        """Runs the callables, then resolves every request; returns one result per request.

        Raises:
          tf.errors.OpError: what the run raised; a summary op's failure to write its events file in words that
            name the summary directory (`_raise_for_an_events_file`).
        """
        try:
            if FAST_PATHS and not self._kwargs:  # The step-only path takes no arguments.
                results = self._execute_step_only()
                if results is not None:
                    return results
            return self._execute()
        except tf.errors.OpError as error:
            _raise_for_an_events_file(error)
            raise

    def _execute(self) -> list:
        """Runs the callables, then resolves every request; returns one result per request."""
        if self._kwargs:
            _check_step_arguments(self._requests[0], self._kwargs)
        if self._session_step and not self._kwargs and not _is_callable_fetch(self._requests[0]):
            _refuse_outputs_of_a_called_step(self._requests[0], self._global_step, self._state)
        if _graph_runners and not self._kwargs and FAST_PATHS:
            results = self._execute_graph_only()
            if results is not None:
                return results
        flat = []
        needs_stale = False
        for request in self._requests:
            if isinstance(request, _STRUCTURES):
                leaves = tf.nest.flatten(request)
                needs_stale = needs_stale or any(leaf is STALE_GLOBAL_STEP for leaf in leaves)
            else:
                leaves = [request]
                needs_stale = needs_stale or request is STALE_GLOBAL_STEP
            flat.append(leaves)
        stale = self._step_with_stale_read(flat) if needs_stale else None
        self._call_callables(flat)
        if _graph_runners:
            self._run_graph_fetches(flat)
        results = []
        for request, leaves in zip(self._requests, flat):
            if isinstance(request, _STRUCTURES):
                results.append(tf.nest.pack_sequence_as(request, [self._resolve(leaf, stale) for leaf in leaves]))
            else:
                results.append(self._resolve(request, stale))
        return results

    def _execute_step_only(self) -> list | None:
        """The usual run, quickly: a `tf.function` step, and the hooks' `STALE_GLOBAL_STEP`s; else None."""
        requests = self._requests
        for request in requests[1:]:
            if request is not STALE_GLOBAL_STEP:
                return None
        if self._kwargs or self._graph_feeds:
            return None
        step = requests[0]
        direct = _direct_step(step)
        if direct is None:
            return None
        if len(requests) == 1:
            return [to_numpy(self._call_direct(step, direct))]
        if type(self._global_step) not in _PLAIN_VARIABLES:
            return None  # No global step given, or a distributed one: the general path.
        stale, output = self._call_direct(step, direct, self._global_step)
        return [None if output is None else to_numpy(output)] + [int(stale)] * (len(requests) - 1)

    def _execute_graph_only(self) -> list | None:
        """The usual run of a legacy graph program, quickly: graph fetches and `STALE_GLOBAL_STEP`s; else None.

        Every request is one of those, or a flat list, tuple or dict of them, and one runner (the newest)
        owns every graph fetch. What the general path would work out on every run (which leaf goes to the
        runner, where each result comes from) is worked out once per shape of the requests
        (`_GraphOnlyPlan`); the runner gets the same fetches in the same order as from the general path.
        """
        requests = self._requests
        key = tuple(_request_key(request) for request in requests)
        plan = _graph_only_plans.get(key)
        runner = _graph_runners[-1]
        if plan is _NO_PLAN:
            return None
        if plan is None or plan.runner is not runner:  # New, or planned for a runner since replaced.
            plan = _GraphOnlyPlan.build(requests, runner)
            if len(_graph_only_plans) >= _MAX_GRAPH_ONLY_PLANS:
                _graph_only_plans.clear()
            # Requests that do not fit are remembered too, so that they are not looked at again. (Their key's
            # ids may come back as other objects', which then take the general path, as correct.)
            _graph_only_plans[key] = _NO_PLAN if plan is None else plan
            if plan is None:
                return None
        self._state.step_at_eager_fetch = None  # The graph's fetches may move the global step.
        if runner is not self._state.graph_runner:
            self._state.given(runner)
        stale = None
        if plan.needs_stale:
            global_step = self._global_step
            if global_step is None:
                return None
            stale = runner.scheduled_global_step()
            if stale is None:
                stale, values = runner.run_after_read(plan.fetches, self._graph_feeds, global_step)
                return [pack(values, stale) for pack in plan.packers]
        values = runner.run(plan.fetches, self._graph_feeds)
        return [pack(values, stale) for pack in plan.packers]

    def _call_direct(self, step: Any, direct: '_DirectStep', global_step: tf.Variable | None = None) -> Any:
        """Calls the caller's `step` through `direct`, after reading `global_step` into the result if given."""
        self._record_step(step)
        return direct.call_with(
            global_step, _as_feeds(self._kwargs) if global_step is not None and self._kwargs else {}
        )

    def _record_step(self, step: Any) -> None:
        """Makes `step` the one whose graph `step_graph_def` returns (see `session_step`)."""
        _record_step(self._state, step, self._kwargs, self._session_step)

    def _step_with_stale_read(self, flat: list) -> int:
        """Reads the global step before any callable runs; in the step's own call when it can.

        An eager read between two steps costs two to four times its own duration (see
        benchmarks/RESULTS.md), so a `tf.function` step is called through `_DirectStep.call_after_read`,
        which returns the read with the step's outputs from one call.
        """
        global_step = self._global_step
        if global_step is None:
            global_step = global_step_lib.require_global_step('STALE_GLOBAL_STEP')
        step = _only_callable(flat[0])
        direct = _direct_step(step) if step is not None else None
        if direct is None or type(global_step) not in _PLAIN_VARIABLES:
            return int(global_step_lib.read_value(global_step))
        stale, output = self._call_direct(step, direct, global_step)
        self._outputs[id(step)] = output
        if isinstance(output, dict):
            self._named.update(output)
        return int(stale)

    def _call_callables(self, flat: list) -> None:
        for index, leaves in enumerate(flat):
            for leaf in leaves:
                if not _is_callable_fetch(leaf) or id(leaf) in self._outputs:
                    continue
                direct = _direct_step(leaf) if index == 0 and not self._kwargs else None
                try:
                    if direct is not None:
                        output = self._call_direct(leaf, direct)
                    elif index == 0:
                        self._record_step(leaf)
                        output = leaf(**(_as_feeds(self._kwargs) if _is_tf_function(leaf) else self._kwargs))
                    else:
                        self._state.step_at_eager_fetch = None  # A hook's callable may move the global step.
                        output = leaf()
                except TypeError:  # Only when the call failed: a Keras model gets a message of its own.
                    _refuse_a_keras_model(leaf)
                    raise
                self._outputs[id(leaf)] = output
                if isinstance(output, dict):
                    self._named.update(output)
        if self._kwargs and not any(_is_callable_fetch(leaf) for leaf in flat[0]):
            raise ValueError(
                f'`feed_dict` has string keys {sorted(self._kwargs)}, which are keyword arguments of '
                'the step callable, but the fetches of this run hold no callable.'
            )

    def _run_graph_fetches(self, flat: list) -> None:
        by_runner: dict[int, tuple[GraphRunner, list]] = {}
        for leaves in flat:
            for leaf in leaves:
                if isinstance(leaf, str) and leaf in self._named:
                    continue
                if isinstance(leaf, str) or _is_graph_object(leaf):
                    runner = self._graph_runner_of(leaf)
                    if runner is not None:
                        by_runner.setdefault(id(runner), (runner, []))[1].append(leaf)
        if self._graph_feeds and not by_runner:
            runners = self._state.runners()
            if runners:
                by_runner[id(runners[0])] = (runners[0], [])
        if by_runner:
            self._state.step_at_eager_fetch = None  # The graph's fetches may move the global step.
        for runner, fetches in by_runner.values():
            values = runner.run(
                [_graph_key(fetch) if type(fetch) is OutputName else fetch for fetch in fetches], self._graph_feeds
            )
            for fetch, value in zip(fetches, values):
                self._graph_values[_graph_key(fetch)] = value

    def _graph_runner_of(self, leaf: Any) -> GraphRunner | None:
        if isinstance(leaf, str):
            name = _graph_key(leaf)
            for runner in self._state.runners():
                if runner.owns_name(name):
                    return runner
            return None
        runner = _runner_for(leaf)
        if runner is None:
            raise TypeError(
                f'{leaf!r} is a graph-mode tensor or op of a graph compat_mts does not run. Build the '
                'graph with `compat_mts.wrap_graph(build_fn)` and fetch its tensors, or fetch a '
                'callable (a tf.function step), a tf.Variable or an eager tensor.'
            )
        self._state.given(runner)
        return runner

    def _resolve(self, leaf: Any, stale: int | None) -> Any:
        if leaf is STALE_GLOBAL_STEP:
            return stale
        if leaf is None:
            return None
        output = self._outputs.get(id(leaf), _NOT_CALLED)
        if output is not _NOT_CALLED:
            return to_numpy(output)
        if isinstance(leaf, str):
            return self._resolve_name(leaf)
        if isinstance(leaf, tf.Variable) and not _is_graph_object(leaf):
            return global_step_lib.read_value(leaf)
        if _is_graph_object(leaf):
            if _graph_key(leaf) not in self._graph_values:
                self._graph_runner_of(leaf)  # Raises, naming wrap_graph.
            return self._graph_values[_graph_key(leaf)]
        if isinstance(leaf, tf.Tensor):
            return leaf.numpy()
        variable = global_step_lib.as_tf_variable(leaf)  # A Keras 3 variable.
        if variable is not leaf:
            return global_step_lib.read_value(variable)
        raise TypeError(
            f'Fetch argument {leaf!r} has invalid type {type(leaf).__name__}: a fetch must be a callable '
            '(the step), a tf.Variable, an eager tf.Tensor, a string name, None, or a list, tuple or '
            'dict of these.'
        )

    def _resolve_name(self, name: str) -> Any:
        if name in self._named:
            return to_numpy(self._named[name])
        variable = _lookup_variable(name)
        if variable is not None:
            return global_step_lib.read_value(variable)
        if _graph_key(name) in self._graph_values:
            return self._graph_values[_graph_key(name)]
        available = sorted(set(self._named) | set(_variable_names()))
        raise KeyError(
            f'Fetch name {name!r} is not an output of the callables of this run, a registered variable, nor a '
            "tensor or operation of the graphs being run (a `wrap_graph` graph, an Estimator's model_fn graph): "
            f'no op of theirs is named {name.split(":")[0]!r}. Available names: {available}.'
        )


_PLAIN_VARIABLES = tf_internals.PLAIN_VARIABLE_TYPES
_MAX_GRAPH_ONLY_PLANS = 64


def _direct_step(step: Any) -> _DirectStep | None:
    """The direct caller of a `tf.function` step that has run before, else None.

    The first call of a step goes through its `tf.function` alone: it may create variables, which a
    `tf.function` allows on its first call only.
    """
    if not FAST_PATHS:
        return None
    direct = _direct_steps.get(id(step))
    if direct is not None and direct.is_for(step):  # `step` itself was found a `tf.function` before.
        return direct
    if isinstance(step, tf.types.experimental.PolymorphicFunction):
        _direct_steps[id(step)] = _DirectStep(step)
    return None


def _record_step(state: SessionState, step: Any, kwargs: dict, session_step: bool) -> None:
    """Records that `step` runs now: it may move the global step, and (for the session's step, or a first one) it is
    the step whose graph `step_graph_def` returns."""
    state.step_at_eager_fetch = None
    if session_step or state.last_step is None:
        state.last_step = step
        state.last_step_kwargs = kwargs


def run_step_and_stale(step: Any, global_step: tf.Variable | None, state: SessionState) -> tuple | None:
    """The session's usual run, with the least Python: `(the step's outputs as NumPy, the stale global step)`.

    What `Run([step, STALE_GLOBAL_STEP], None, global_step, session_step=True, state=state).execute()` gives on its
    step-only path (`Run._execute_step_only`): `step` a `tf.function` that has run before, called directly with the
    read of the plain `global_step` in its call. None where that path would not be taken (the caller runs `Run`).

    Raises:
      tf.errors.OpError: what the step raised, a summary op's failure to write its events file in words that name
        the summary directory.
    """
    if not FAST_PATHS or type(global_step) not in _PLAIN_VARIABLES:
        return None
    direct = _direct_step(step)
    if direct is None:
        return None
    _record_step(state, step, {}, session_step=True)
    try:
        stale, output = direct.call_with(global_step, {})
    except tf.errors.OpError as error:
        _raise_for_an_events_file(error)
        raise
    return (None if output is None else to_numpy(output)), int(stale)


def run_fetches(fetches: Any, feed_dict: dict | None = None, state: SessionState | None = None) -> Any:
    """Runs `fetches` alone (no hooks): what the raw session's `run` does, in the session's `state`.

    A plain eager variable without feeds (a hook's read of the global step after the run) is read directly: the
    general path would resolve it to the same read.
    """
    if FAST_PATHS and not feed_dict and type(fetches) in _PLAIN_VARIABLES and not _is_graph_object(fetches):
        return global_step_lib.read_value(fetches)
    return Run([fetches], feed_dict, state=state).execute()[0]


def step_graph_def(state: SessionState | None):
    """The GraphDef of the step the session of `state` ran last (with shapes), or None.

    What `save_graph_def` writes as `graph.pbtxt` and to TensorBoard, in place of v1's default graph. A
    session that runs a legacy graph writes that graph, as v1 its default graph.
    """
    if state is None:
        return None
    if state.graph_runner is not None:
        return state.graph_runner.graph_def()
    step_fn = state.last_step
    get_concrete_function = getattr(step_fn, 'get_concrete_function', None)
    if get_concrete_function is None:
        return None
    return get_concrete_function(**(state.last_step_kwargs or {})).graph.as_graph_def(add_shapes=True)
