"""The eager fetch and feed model: what `session.run(fetches, feed_dict)` does without a graph.

One place decides what a fetch is, for the sessions, the raw session and the hooks alike:

| fetch | result |
| --- | --- |
| a callable (a `tf.function` step, a plain function) | called once in this run; its return value, as NumPy |
| `tf.Variable` | its value, read after the run's callables have executed |
| eager `tf.Tensor` | its value |
| a string | a key of a dict returned by a callable of this run, else a registered variable's name (`'global_step'`), else a name in a wrapped legacy graph |
| `STALE_GLOBAL_STEP` | the global step as it was before this run's callables executed (what v1 hooks fetched) |
| a tensor or op of a `wrap_graph` graph | executed by the graph's runner, all graph fetches of a run in one call |
| list / tuple / namedtuple / dict of the above | the same structure back |
| None | None |

Only what was fetched is copied to the host: a step output nobody asked for stays a tensor.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from compat_mts import global_step as global_step_lib


class _StaleGlobalStep:
    """The global step read before the step runs, as v1's `_get_or_create_global_step_read` gave it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return 'STALE_GLOBAL_STEP'


STALE_GLOBAL_STEP = _StaleGlobalStep()

_STRUCTURES = (list, tuple, dict)
_NOT_CALLED = object()


class GraphRunner:
    """Interface of the runners that execute fetches of legacy graphs (see `compat_mts.legacy`).

    A runner claims the graph tensors, ops and names it owns; the fetch model hands it every claimed
    fetch and feed of one run at once, so that they execute in a single call.
    """

    def owns(self, fetch: Any) -> bool:
        raise NotImplementedError

    def owns_name(self, name: str) -> bool:
        raise NotImplementedError

    def run(self, fetches: Sequence[Any], feeds: dict) -> list:
        raise NotImplementedError


_graph_runners: list[GraphRunner] = []
_last_step: list = [None, None]  # The caller's most recent callable fetch and its keyword arguments.
_named_variables: dict[str, tf.Variable] = {}


def register_graph_runner(runner: GraphRunner) -> None:
    """Makes `runner`'s graph fetchable by `run`; the most recently registered runner wins on names."""
    if runner in _graph_runners:
        _graph_runners.remove(runner)
    _graph_runners.append(runner)


def register_variable(name: str, variable: tf.Variable) -> None:
    """Makes `variable` fetchable by `name` (and `name:0`)."""
    _named_variables[name] = variable


def unregister_variable(name: str) -> None:
    _named_variables.pop(name, None)


def _runner_for(fetch: Any) -> GraphRunner | None:
    for runner in reversed(_graph_runners):
        if runner.owns(fetch):
            return runner
    return None


def _is_graph_object(value: Any) -> bool:
    if isinstance(value, tf.Variable):  # A variable of a `wrap_graph` graph, as `build_fn` created it.
        return getattr(value, '_in_graph_mode', False)
    return isinstance(value, (tf.Tensor, tf.Operation)) and not isinstance(value, tf.__internal__.EagerTensor)


def to_numpy(value: Any) -> Any:
    """Converts a (nested) step output to NumPy; leaves that are not tensors are returned as they are."""
    if type(value) is dict and not any(isinstance(v, _STRUCTURES) for v in value.values()):
        return {key: _leaf_to_numpy(v) for key, v in value.items()}  # The common case, without tf.nest.
    if isinstance(value, _STRUCTURES):
        return tf.nest.map_structure(_leaf_to_numpy, value)
    return _leaf_to_numpy(value)


def _leaf_to_numpy(value: Any) -> Any:
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value.numpy()
    if isinstance(value, tf.distribute.DistributedValues):
        return tuple(_leaf_to_numpy(v) for v in value.values)
    return value


def _check_feed_keys(feed_dict: dict | None) -> tuple[dict, dict]:
    """Splits a merged feed into keyword arguments (string keys) and legacy graph feeds."""
    if not feed_dict:
        return {}, {}
    kwargs, graph_feeds = {}, {}
    for key, value in feed_dict.items():
        if isinstance(key, str) and not (_graph_runners and ':' in key and _claims_name(key)):
            kwargs[key] = value
        elif _is_graph_object(key) or isinstance(key, str):
            graph_feeds[key] = value
        else:
            raise TypeError(
                f'`feed_dict` keys must be strings (keyword arguments of the step callable) or '
                f'placeholders of a `compat_mts.wrap_graph` graph, got {key!r} of type {type(key).__name__}.')
    return kwargs, graph_feeds


def graph_has_name(name: str) -> bool:
    """Whether a wrapped legacy graph (`compat_mts.wrap_graph`) has a tensor or op called `name`."""
    return _claims_name(name)


def _claims_name(name: str) -> bool:
    return any(runner.owns_name(name) for runner in _graph_runners)


class Run:
    """Resolves the fetches of one `run()` call: the caller's and every hook's, from the same execution.

    Args:
      requests: fetch structures; `requests[0]` is the caller's, whose callables receive the string
        keys of `feed_dict` as keyword arguments. Callables of later requests are called without
        arguments, once each even if several requests name them.
      feed_dict: the merged feeds of the run.
      step_reader: reads the global step; used only when `STALE_GLOBAL_STEP` is fetched.
    """

    def __init__(self, requests: Sequence[Any], feed_dict: dict | None = None,
                 step_reader: Callable[[], int] | None = None):
        self._requests = requests
        self._kwargs, self._graph_feeds = _check_feed_keys(feed_dict)
        self._step_reader = step_reader
        self._outputs: dict[int, Any] = {}
        self._named: dict[str, Any] = {}
        self._graph_values: dict[int, Any] = {}

    def execute(self) -> list:
        """Runs the callables, then resolves every request; returns one result per request."""
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
        stale = self._read_stale() if needs_stale else None
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

    def _read_stale(self) -> int:
        if self._step_reader is not None:
            return self._step_reader()
        step = global_step_lib.require_global_step('STALE_GLOBAL_STEP')
        return global_step_lib.step_reader(step)()

    def _call_callables(self, flat: list) -> None:
        for index, leaves in enumerate(flat):
            for leaf in leaves:
                if not _is_callable_fetch(leaf) or id(leaf) in self._outputs:
                    continue
                if index == 0:
                    _last_step[:] = (leaf, self._kwargs)
                output = leaf(**self._kwargs) if index == 0 and self._kwargs else leaf()
                self._outputs[id(leaf)] = output
                if isinstance(output, dict):
                    self._named.update(output)
        if self._kwargs and not any(_is_callable_fetch(leaf) for leaf in flat[0]):
            raise ValueError(
                f'`feed_dict` has string keys {sorted(self._kwargs)}, which are keyword arguments of '
                'the step callable, but the fetches of this run hold no callable.')

    def _run_graph_fetches(self, flat: list) -> None:
        by_runner: dict[int, tuple[GraphRunner, list]] = {}
        for leaves in flat:
            for leaf in leaves:
                if isinstance(leaf, str) and (leaf in self._named or leaf in _named_variables):
                    continue
                if isinstance(leaf, str) or _is_graph_object(leaf):
                    runner = self._graph_runner_of(leaf)
                    if runner is not None:
                        by_runner.setdefault(id(runner), (runner, []))[1].append(leaf)
        if self._graph_feeds and not by_runner and _graph_runners:
            by_runner[id(_graph_runners[-1])] = (_graph_runners[-1], [])
        for runner, fetches in by_runner.values():
            values = runner.run(fetches, self._graph_feeds)
            for fetch, value in zip(fetches, values):
                self._graph_values[_graph_key(fetch)] = value

    @staticmethod
    def _graph_runner_of(leaf: Any) -> GraphRunner | None:
        if isinstance(leaf, str):
            for runner in reversed(_graph_runners):
                if runner.owns_name(leaf):
                    return runner
            return None
        runner = _runner_for(leaf)
        if runner is None:
            raise TypeError(
                f'{leaf!r} is a graph-mode tensor or op of a graph compat_mts does not run. Build the '
                'graph with `compat_mts.wrap_graph(build_fn)` and fetch its tensors, or fetch a '
                'callable (a tf.function step), a tf.Variable or an eager tensor.')
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
        raise TypeError(
            f'Fetch argument {leaf!r} has invalid type {type(leaf).__name__}: a fetch must be a callable '
            '(the step), a tf.Variable, an eager tf.Tensor, a string name, None, or a list, tuple or '
            'dict of these.')

    def _resolve_name(self, name: str) -> Any:
        if name in self._named:
            return to_numpy(self._named[name])
        variable = _lookup_variable(name)
        if variable is not None:
            return global_step_lib.read_value(variable)
        if name in self._graph_values:
            return self._graph_values[name]
        available = sorted(set(self._named) | set(_variable_names()))
        raise KeyError(
            f'Fetch name {name!r} is neither an output of the callables of this run nor a registered '
            f'variable. Available names: {available}.')


def _graph_key(fetch: Any) -> Any:
    return fetch if isinstance(fetch, str) else id(fetch)


def _is_callable_fetch(value: Any) -> bool:
    return callable(value) and not isinstance(value, (tf.Variable, tf.Tensor, tf.Operation, type))


def _variable_names() -> list[str]:
    names = list(_named_variables)
    step = global_step_lib.get_global_step()
    if step is not None:
        names.append(global_step_lib.step_name(step))
    return names


def _lookup_variable(name: str) -> tf.Variable | None:
    bare = name[:-2] if name.endswith(':0') else name
    if bare in _named_variables:
        return _named_variables[bare]
    step = global_step_lib.get_global_step()
    if step is not None and global_step_lib.step_name(step) == bare:
        return step
    return None


def run_fetches(fetches: Any, feed_dict: dict | None = None) -> Any:
    """Runs `fetches` alone (no hooks): what the raw session's `run` does."""
    return Run([fetches], feed_dict).execute()[0]


def step_graph_def():
    """The GraphDef of the most recently run `tf.function` step (with shapes), or None.

    What `save_graph_def` writes as `graph.pbtxt` and to TensorBoard, in place of v1's default graph.
    """
    from compat_mts import legacy  # pylint: disable=import-outside-toplevel
    wrapped_graph = legacy.wrapped_graph_of_global_step()
    if wrapped_graph is not None:  # A `wrap_graph` program writes its graph, as v1 its default graph.
        return wrapped_graph.graph.as_graph_def(add_shapes=True)
    step_fn, kwargs = _last_step
    get_concrete_function = getattr(step_fn, 'get_concrete_function', None)
    if get_concrete_function is None:
        return None
    return get_concrete_function(**(kwargs or {})).graph.as_graph_def(add_shapes=True)
