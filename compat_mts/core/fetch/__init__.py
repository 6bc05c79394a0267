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
call; a legacy graph's fetches planned once), and the session skips the idle hooks whose `before_run` only asks
for the stale step. `COMPAT_MTS_GENERAL_FETCH_PATH=1` in the environment (read at import), or `FAST_PATHS = False`
on this module before a session is made, forces the general path for every run and has the session call every
hook on every run: what the fast paths are tested against (tests/test_general_fetch_path.py).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import weakref
from typing import Any, Sequence

import tensorflow as tf
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import program as program_lib
from compat_mts.core import validation


FAST_PATHS: bool = os.environ.get('COMPAT_MTS_GENERAL_FETCH_PATH', '') in ('', '0')
"""Whether runs take the fast paths; False (or `COMPAT_MTS_GENERAL_FETCH_PATH=1`) forces the general one."""


def fast_paths() -> bool:
    """Whether runs take the fast paths (`FAST_PATHS`), and sessions made now skip idle hooks."""
    return FAST_PATHS


class _StaleGlobalStep:
    """The global step read before the step runs, as v1's `_get_or_create_global_step_read` gave it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return 'STALE_GLOBAL_STEP'


STALE_GLOBAL_STEP = _StaleGlobalStep()
"""A fetch: the global step as it was before this run's step executed, which v1's hooks fetched.

`SessionRunArgs(compat_mts.STALE_GLOBAL_STEP)` gets it without a second read after the step, so a hook's
trigger arithmetic is v1's.
"""


class OutputName(str):
    """A fetch name as v1's hooks read it: a step output or variable of that name, else `name:0` in a legacy graph.

    `LoggingTensorHook({'loss': 'loss'})` means the step's `'loss'` when the step returns one, and the tensor
    `loss:0` of the session's graph when it does not (v1's hooks read a name without `:` as the op's only
    output). A plain string `'loss'` fetched from a graph is the op, as in v1's `Session.run`.
    """

    __slots__ = ()


_STRUCTURES = (list, tuple, dict)
_DISTRIBUTED_VALUES = tf.distribute.DistributedValues
_NOT_CALLED = object()


class GraphRunner:
    """Interface of the runners that execute fetches of legacy graphs (see `compat_mts.legacy`).

    A runner claims the graph tensors, ops and names it owns; the fetch model hands it every claimed
    fetch and feed of one run at once, so that they execute in a single call. What else the core asks of
    a graph (its global step, default checkpoint and summary op for `Scaffold`, its GraphDef for
    `graph.pbtxt`) it asks through this interface too, so that the core never imports `compat_mts.legacy`.

    Attributes:
      global_step: the graph's global step variable, or None.
      checkpoint: what a session checkpoints by default when it runs this graph, or None.
      summary_op: the graph's merged summaries, or None.
    """

    global_step: tf.Variable | None = None
    checkpoint: Any = None
    summary_op: Any = None

    def owns(self, fetch: Any) -> bool:
        raise NotImplementedError

    def owns_name(self, name: str) -> bool:
        raise NotImplementedError

    def run(self, fetches: Sequence[Any], feeds: dict) -> list:
        raise NotImplementedError

    def graph_def(self):
        """The GraphDef (with shapes) that `save_graph_def` writes for this graph."""
        raise NotImplementedError

    def scheduled_global_step(self) -> int | None:
        """The global step after the steps scheduled so far, where runs return before their steps ran (a
        parameter-server chief's); None where the global step is read."""
        return None

    def checkpoint_of_saver(self, saver: Any) -> Any:
        """What a session checkpoints when the program passes `saver`, a v1 `Saver` built in this graph."""
        raise NotImplementedError


# The graphs of the program (`wrap_graph`, and the graphs sessions adopted), most recent last. Process-wide
# as v1's graphs were: a program builds them before, and independently of, the sessions that run them. Which
# of them a session prefers for names is the session's own (`SessionState.graph_runner`).
_graph_runners: list[GraphRunner] = program_lib.PROGRAM.table(
    'fetches.graph_runners', [], 'the wrap_graph and adopted graphs whose names and tensors `run` resolves'
)


def register_graph_runner(runner: GraphRunner) -> None:
    """Makes `runner`'s graph fetchable by `run`; the most recently registered runner wins on names."""
    if runner in _graph_runners:
        _graph_runners.remove(runner)
    _graph_runners.append(runner)


def unregister_graph_runner(runner: GraphRunner) -> None:
    """Makes `runner`'s graph no longer fetchable: a newer runner replaces it, or the program is done with it.

    The plans made for it go too, so that nothing here keeps the runner (its graph and functions) alive.
    """
    if runner in _graph_runners:
        _graph_runners.remove(runner)
    for key in [key for key, plan in _graph_only_plans.items() if getattr(plan, 'runner', None) is runner]:
        del _graph_only_plans[key]


def graph_runners() -> list[GraphRunner]:
    """The registered graph runners, most recently registered last."""
    return list(_graph_runners)


def graph_runner_of_global_step() -> GraphRunner | None:
    """The registered graph whose global step is the registered one: the graph of the current program.

    What `compat_mts.Scaffold` takes its defaults (checkpoint, summary op) from. Tied to the global step,
    so that `compat_mts.reset_global_step()` also ends a wrap_graph program's defaults.
    """
    step = global_step_lib.get_global_step()
    if step is None:
        return None
    for runner in reversed(_graph_runners):
        if runner.global_step is step:
            return runner
    return None


class SessionState:
    """What the runs of one session share and no other session sees; the session owns it, `Run` receives it.

    Two sessions open at once keep apart: each names its own graph first, and each writes the graph of
    its own last step. A name resolves only in the session's graphs (`runners`): a graph an earlier
    program of the process registered, and this session was not given, is never asked.

    Attributes:
      graph_runner: the graph the session runs (the program's graph it adopted, or the `wrap_graph` graph of
        its global step), asked first for names and given the feeds no fetch claims; None without one.
      given_graphs: the other graphs whose tensors, ops or placeholders the session's runs were given, in the
        order first given.
      last_step: the callable the session ran last as its step (see `Run`'s `session_step`), or None.
      last_step_kwargs: the keyword arguments it was called with.
      step_at_eager_fetch: the global step at the session's last run that fetched eager tensors alone, while no
        run since has run a callable or a graph fetch; else None (see `_refuse_outputs_of_a_called_step`).
    """

    __slots__ = ('graph_runner', 'given_graphs', 'last_step', 'last_step_kwargs', 'step_at_eager_fetch')

    def __init__(self, graph_runner: GraphRunner | None = None):
        self.graph_runner = graph_runner
        self.given_graphs: list[GraphRunner] = []
        self.last_step: Any = None
        self.last_step_kwargs: dict | None = None
        self.step_at_eager_fetch: int | None = None

    def given(self, runner: GraphRunner) -> None:
        """Records that a run of the session was given a tensor, op or placeholder of `runner`'s graph."""
        if runner is not self.graph_runner and runner not in self.given_graphs:
            self.given_graphs.append(runner)

    def runners(self) -> list[GraphRunner]:
        """The session's registered graphs, in the order they are asked for names: its own graph first, then the
        graphs it was given, most recently registered first."""
        ordered = [runner for runner in reversed(_graph_runners) if runner in self.given_graphs]
        own = self.graph_runner
        if own is not None and own in _graph_runners:
            ordered.insert(0, own)
        return ordered

    def has_name(self, name: str) -> bool:
        """Whether one of the session's graphs (`runners`) has a tensor or op called `name`."""
        return any(runner.owns_name(name) for runner in self.runners())


def _runner_for(fetch: Any) -> GraphRunner | None:
    for runner in reversed(_graph_runners):
        if runner.owns(fetch):
            return runner
    return None


def _is_graph_object(value: Any) -> bool:
    if isinstance(value, tf.Variable):  # A variable of a `wrap_graph` graph, as `build_fn` created it.
        return tf_internals.is_graph_variable(value)
    return isinstance(value, (tf.Tensor, tf.Operation)) and not isinstance(value, _EAGER_TENSOR)


def to_numpy(value: Any) -> Any:
    """Converts a (nested) step output to NumPy; leaves that are not tensors are returned as they are."""
    if value is None:  # The step of a train op returns nothing.
        return None
    if type(value) is dict and not any(isinstance(v, _STRUCTURES) for v in value.values()):
        return {key: _leaf_to_numpy(v) for key, v in value.items()}  # The common case, without tf.nest.
    if isinstance(value, _STRUCTURES):
        return tf.nest.map_structure(_leaf_to_numpy, value)
    return _leaf_to_numpy(value)


def _leaf_to_numpy(value: Any) -> Any:
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value.numpy()
    if isinstance(value, _DISTRIBUTED_VALUES):
        return tuple(_leaf_to_numpy(v) for v in value.values)
    return value


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


def _is_tf_function(value: Any) -> bool:
    return isinstance(value, tf.types.experimental.PolymorphicFunction)


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
            return self._execute()
        except tf.errors.OpError as error:
            _raise_for_an_events_file(error)
            raise

    def _execute(self) -> list:
        """Runs the callables, then resolves every request; returns one result per request."""
        if self._kwargs:
            _check_step_arguments(self._requests[0], self._kwargs)
        results = self._execute_step_only() if FAST_PATHS else None
        if results is not None:
            return results
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
        return [to_numpy(output)] + [int(stale)] * (len(requests) - 1)

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
                stale = int(global_step_lib.read_value(global_step))
        values = runner.run(plan.fetches, self._graph_feeds)
        return [pack(values, stale) for pack in plan.packers]

    def _call_direct(self, step: Any, direct: '_DirectStep', global_step: tf.Variable | None = None) -> Any:
        """Calls the caller's `step` through `direct`, after reading `global_step` into the result if given."""
        self._record_step(step)
        if global_step is None:
            return direct.call()
        return direct.call_after_read(global_step, _as_feeds(self._kwargs) if self._kwargs else {})

    def _record_step(self, step: Any) -> None:
        """Makes `step` the one whose graph `step_graph_def` returns (see `session_step`)."""
        state = self._state
        state.step_at_eager_fetch = None  # The step may move the global step.
        if self._session_step or state.last_step is None:
            state.last_step = step
            state.last_step_kwargs = self._kwargs

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
_EAGER_TENSOR = tf_internals.EAGER_TENSOR
_MAX_GRAPH_ONLY_PLANS = 64


def _request_key(request: Any) -> Any:
    """What identifies a request's shape and leaves: the leaves' ids (a program builds its fetch list anew per run)."""
    kind = type(request)
    if kind is list or kind is tuple:
        return (kind, *map(id, request))
    if kind is dict:
        return (kind, *request, *map(id, request.values()))
    return id(request)


class _GraphOnlyPlan:
    """How to resolve flat requests of graph fetches, `STALE_GLOBAL_STEP`s and None (`Run._execute_graph_only`).

    `fetches` is what the runner runs (every graph leaf, in request order, as the general path hands them
    over); `packers` rebuild each request's result from the runner's values and the stale step. The plan
    keeps the leaves, so that the ids in its key stay theirs.
    """

    __slots__ = ('runner', 'fetches', 'packers', 'needs_stale', 'leaves')

    def __init__(self, runner: GraphRunner, fetches: list, packers: list, needs_stale: bool, leaves: list):
        self.runner = runner
        self.fetches = fetches
        self.packers = packers
        self.needs_stale = needs_stale
        self.leaves = leaves

    @classmethod
    def build(cls, requests: Sequence[Any], runner: GraphRunner) -> '_GraphOnlyPlan | None':
        fetches: list = []
        leaves: list = []
        needs_stale = False

        def leaf_getter(leaf: Any):
            nonlocal needs_stale
            leaves.append(leaf)
            if leaf is STALE_GLOBAL_STEP:
                needs_stale = True
                return lambda values, stale: stale
            if leaf is None:
                return lambda values, stale: None
            if not _is_graph_object(leaf) or not runner.owns(leaf):
                return None
            position = len(fetches)
            fetches.append(leaf)
            return lambda values, stale: values[position]

        packers = []
        for request in requests:
            kind = type(request)
            if kind is list or kind is tuple or kind is dict:
                if kind is dict:
                    try:  # In tf.nest's order (sorted keys), as the general path hands the leaves over.
                        items = sorted(request.items(), key=lambda item: item[0])
                    except TypeError:
                        return None
                else:
                    items = list(enumerate(request))
                getters = {key: leaf_getter(leaf) for key, leaf in items}
                if any(getter is None for getter in getters.values()):
                    return None
                packers.append(
                    _structure_packer(
                        kind, [(key, getters[key]) for key in (request if kind is dict else range(len(request)))]
                    )
                )
            else:
                getter = leaf_getter(request)
                if getter is None:
                    return None
                packers.append(getter)
        if not fetches:
            return None
        return cls(runner, fetches, packers, needs_stale, leaves)


def _structure_packer(kind: type, getters: list):
    if kind is dict:
        return lambda values, stale: {key: getter(values, stale) for key, getter in getters}
    only_getters = [getter for _, getter in getters]
    return lambda values, stale: kind([getter(values, stale) for getter in only_getters])


_NO_PLAN = object()
# Request key -> `_GraphOnlyPlan`, or `_NO_PLAN`. Process-wide, as `_graph_runners` is: a plan is a property of the
# fetch objects and the runner that owns them, whichever session runs them.
_graph_only_plans: dict[tuple, Any] = program_lib.PROGRAM.table(
    'fetches.graph_only_plans', {}, 'a prepared call per set of graph fetches (a cache of the graphs)'
)


def _only_callable(leaves: list) -> Any:
    """The one callable among `leaves`, or None if there is none or more than one."""
    found = None
    for leaf in leaves:
        if _is_callable_fetch(leaf):
            if found is not None:
                return None
            found = leaf
    return found


class _DirectStep:
    """Calls a `tf.function` step as its own dispatch would, at less cost per call.

    A `tf.function` call binds its arguments, builds its tracing context and looks up its concrete
    function on every call, which costs about as much as a tiny model's step (benchmarks/RESULTS.md).
    Called without arguments in plain eager execution (no `tf.distribute` strategy in scope, not saving,
    `tf.config.run_functions_eagerly` off), that lookup always finds the same concrete function, so it is
    done once, and a concrete function without parameters that calls the step is called directly.
    Anything else goes through the `tf.function`s.

    `call_after_read` returns the global step as it was before the step ran together with the step's
    outputs, from one function that reads the variable and then calls the step: eagerly, a separate
    read op between two steps costs two to four times its own duration.
    """

    def __init__(self, step: Any):
        self._step = weakref.ref(step, functools.partial(_forget_direct_step, id(step)))
        # id(global step) or None (no read) -> [tf.function, its concrete function once known]. The
        # tf.function holds the global step, so its id stays unique while the entry lives.
        self._functions: dict[int | None, list] = {}

    def is_for(self, step: Any) -> bool:
        return self._step() is step

    def call(self) -> Any:
        """The step's outputs."""
        return self._call(None, {})

    def call_after_read(self, global_step: tf.Variable, kwargs: dict) -> tuple:
        """`(global step before the step, the step's outputs)`."""
        return self._call(global_step, kwargs)

    def _call(self, global_step: tf.Variable | None, kwargs: dict) -> Any:
        key = None if global_step is None else id(global_step)
        entry = self._functions.get(key)
        if entry is None:
            entry = self._functions[key] = [self._trace(global_step), None]
        function, concrete = entry
        if kwargs:
            return function(**kwargs)
        if not _plain_eager_context():
            return function()
        if concrete is None:
            concrete = entry[1] = tf_internals.ConcreteCall(function.get_concrete_function(), function.name)
        return concrete()

    def _trace(self, global_step: tf.Variable | None) -> Any:
        step_ref = self._step  # Weak: the cache of direct steps is keyed by the step.
        if global_step is None:

            def call_step(**kwargs):
                return step_ref()(**kwargs)
        else:

            def call_step(**kwargs):
                stale = global_step.read_value()
                with tf.control_dependencies([stale]):
                    return stale, step_ref()(**kwargs)

        call_step.__name__ = self._step().name  # Profiles show the step's name.
        return tf.function(call_step, autograph=False)


# id(step) -> its direct caller. Process-wide, not per session: it is a cache of what a `tf.function` step
# traces to, a property of the step alone, dropped with the step (weakly referenced); a step that runs in
# several sessions is traced once.
_direct_steps: dict[int, _DirectStep] = program_lib.PROGRAM.table(
    'fetches.direct_steps', {}, 'the direct caller of each tf.function step that has run (weakly keyed)'
)


def _direct_step(step: Any) -> _DirectStep | None:
    """The direct caller of a `tf.function` step that has run before, else None.

    The first call of a step goes through its `tf.function` alone: it may create variables, which a
    `tf.function` allows on its first call only.
    """
    if not FAST_PATHS or not isinstance(step, tf.types.experimental.PolymorphicFunction):
        return None
    direct = _direct_steps.get(id(step))
    if direct is not None and direct.is_for(step):
        return direct
    _direct_steps[id(step)] = _DirectStep(step)
    return None


def _forget_direct_step(key: int, step_ref: weakref.ref) -> None:
    direct = _direct_steps.get(key)
    if direct is not None and direct._step is step_ref:
        del _direct_steps[key]


_functions_run_eagerly = tf.config.functions_run_eagerly  # Looked up once: `tf.` attributes cost on every run.
_has_strategy = tf_internals.has_strategy
_in_save_context = tf_internals.in_save_context


def _plain_eager_context() -> bool:
    return not (_functions_run_eagerly() or _has_strategy() or _in_save_context())


def _graph_key(fetch: Any) -> Any:
    """What a graph fetch's value is kept under: a name as it is named in the graph, else the object's id."""
    if type(fetch) is OutputName:
        return fetch + ':0'
    return fetch if isinstance(fetch, str) else id(fetch)


def _is_callable_fetch(value: Any) -> bool:
    return callable(value) and not isinstance(value, (tf.Variable, tf.Tensor, tf.Operation, type))


def _variable_names() -> list[str]:
    step = global_step_lib.get_global_step()
    return [] if step is None else [global_step_lib.step_name(step)]


def _lookup_variable(name: str) -> tf.Variable | None:
    bare = global_step_lib.op_name(name)
    step = global_step_lib.get_global_step()
    if step is not None and global_step_lib.step_name(step) == bare:
        return step
    return None


def run_fetches(fetches: Any, feed_dict: dict | None = None, state: SessionState | None = None) -> Any:
    """Runs `fetches` alone (no hooks): what the raw session's `run` does, in the session's `state`."""
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


def _is_reference(key: Any) -> bool:
    """Whether `key` is what `tf.Tensor.ref()`/`tf.Variable.ref()` return (its class is not public; making a
    tensor to find it at import would start TensorFlow's runtime before a session's config could apply)."""
    return type(key).__name__ == 'Reference' and callable(getattr(key, 'deref', None))
