"""What a fetch is (`compat_mts.core.fetch`, the model): `STALE_GLOBAL_STEP`, the graphs a name can resolve in
(`GraphRunner` and the program's runners), a session's own state (`SessionState`), and the values handed back
(`to_numpy`)."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import program as program_lib


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
_EAGER_TENSOR = tf_internals.EAGER_TENSOR
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

    def run_after_read(self, fetches: Sequence[Any], feeds: dict, variable: tf.Variable) -> tuple[int, list]:
        """`run(fetches, feeds)`, and the value `variable` (the global step) had before it, read first."""
        return int(global_step_lib.read_value(variable)), self.run(fetches, feeds)

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


_NO_PLAN = object()
# Request key -> `_GraphOnlyPlan`, or `_NO_PLAN`. Process-wide, as `_graph_runners` is: a plan is a property of the
# fetch objects and the runner that owns them, whichever session runs them.
_graph_only_plans: dict[tuple, Any] = program_lib.PROGRAM.table(
    'fetches.graph_only_plans', {}, 'a prepared call per set of graph fetches (a cache of the graphs)'
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


def _is_reference(key: Any) -> bool:
    """Whether `key` is what `tf.Tensor.ref()`/`tf.Variable.ref()` return (its class is not public; making a
    tensor to find it at import would start TensorFlow's runtime before a session's config could apply)."""
    return type(key).__name__ == 'Reference' and callable(getattr(key, 'deref', None))


def _is_tf_function(value: Any) -> bool:
    return isinstance(value, tf.types.experimental.PolymorphicFunction)
