"""The fetch model's fast paths (`compat_mts.core.fetch`): a `tf.function` step called directly, with the stale
global step read in its own call and, on runs that record no summaries, traced without them (`_DirectStep`,
`RecordingSwitch`), and a run of graph fetches only planned once (`_GraphOnlyPlan`).

Each gives what the general path gives (`compat_mts.core.fetch.FAST_PATHS = False` forces that one; tests/
test_general_fetch_path.py runs the session's tests both ways); the package decides when they are taken.
"""

from __future__ import annotations

import collections
import functools
import weakref
from typing import Any, Sequence

import tensorflow as tf
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import program as program_lib
from compat_mts.core.fetch.model import GraphRunner, STALE_GLOBAL_STEP, _is_callable_fetch, _is_graph_object


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

    A step traced under a `RecordingSwitch` (the session's summary recording) is called, on the runs where the
    switch is off, through a second trace made under `tf.summary.record_if(False)`: the step without its summary
    ops and their condition, which on those runs would have recorded nothing.
    """

    def __init__(self, step: Any):
        self._step = weakref.ref(step, functools.partial(_forget_direct_step, id(step)))
        # id(global step) or None (no read) -> [tf.function, its concrete call once known, the `RecordingSwitch`
        # its trace reads or None, the call of the trace without summaries once made]. The tf.function holds the
        # global step, so its id stays unique while the entry lives.
        self._functions: dict[int | None, list] = {}

    def is_for(self, step: Any) -> bool:
        return self._step() is step

    def call(self) -> Any:
        """The step's outputs."""
        return self.call_with(None, {})

    def call_after_read(self, global_step: tf.Variable, kwargs: dict) -> tuple:
        """`(global step before the step, the step's outputs)`."""
        return self.call_with(global_step, kwargs)

    def call_with(self, global_step: tf.Variable | None, kwargs: dict) -> Any:
        """`call_after_read(global_step, kwargs)`, or `call()` when `global_step` is None (then `kwargs` is empty)."""
        key = None if global_step is None else id(global_step)
        entry = self._functions.get(key)
        if entry is None:
            entry = self._functions[key] = [self._trace(global_step), None, None, None]
        function, concrete, switch, quiet = entry
        if kwargs:
            return function(**kwargs)
        if not _plain_eager_execution():  # A strategy scope, a SavedModel save, `run_functions_eagerly`.
            return function()
        if concrete is None:
            traced = function.get_concrete_function()
            concrete = entry[1] = tf_internals.ConcreteCall(traced, function.name)
            switch = entry[2] = _switch_read_by(traced)
        if switch is None or switch.on:
            return concrete()
        if quiet is None:
            quiet = entry[3] = self._trace_without_summaries(global_step, function) or concrete
        return quiet()

    def _trace(self, global_step: tf.Variable | None, step: Any = None) -> Any:
        """The tf.function calling the step (or `step`, a concrete function of it), after reading `global_step`."""
        step_ref = self._step  # Weak: the cache of direct steps is keyed by the step.
        if global_step is None:

            def call_step(**kwargs):
                return (step_ref() if step is None else step)(**kwargs)
        else:

            def call_step(**kwargs):
                stale = global_step.read_value()
                with tf.control_dependencies([stale]):
                    return stale, (step_ref() if step is None else step)(**kwargs)

        call_step.__name__ = self._step().name  # Profiles show the step's name.
        return tf.function(call_step, autograph=False)

    def _trace_without_summaries(self, global_step: tf.Variable | None, function: Any) -> Any:
        """The concrete call of the step traced again under `record_if(False)`, or None if it cannot stand in.

        It stands in for the step's own trace on the runs its switch is off when it is that trace less the summaries:
        it reads no variable the other does not, and its ops are the other's less those of the recording condition
        and its branches. A step whose Python reads state that changed since its first trace (a Python number, a
        flag) traces to other ops or constants, and keeps its own trace only; so does one whose Python fails when traced
        again.
        """
        step = self._step()
        try:
            quiet_step = tf_internals.trace_anew(step, tf.summary.record_if(False))
        except Exception:  # noqa: BLE001 - the step's Python failed on a trace its program never asked for.
            return None  # It keeps its own trace, which ran.
        if quiet_step is None:
            return None
        quiet = self._trace(global_step, quiet_step).get_concrete_function()
        read = {id(tensor) for tensor in function.get_concrete_function().captured_inputs}
        if any(id(tensor) not in read for tensor in quiet.captured_inputs):
            return None
        if not _less_summaries(step.get_concrete_function().graph, quiet_step.graph):
            return None
        return tf_internals.ConcreteCall(quiet, function.name)


def _op_counts(graph: Any) -> collections.Counter:
    """How many ops of each kind `graph` has, by type, device and, for a constant, value."""
    return collections.Counter(
        (op.type, op.device, op.node_def.attr['value'].SerializeToString() if op.type == 'Const' else b'')
        for op in graph.get_operations()
    )


# What a summary's recording condition adds to a step's own ops: the captured writer, step and switch, their reads,
# the condition (`logical_and` with the tf.distribute switch, a constant), the `cond` of each summary and the
# outputs it passes on.
_SUMMARY_OP_TYPES = frozenset(('Placeholder', 'ReadVariableOp', 'Const', 'LogicalAnd', 'If', 'StatelessIf', 'Identity'))


def _less_summaries(graph: Any, quiet_graph: Any) -> bool:
    """Whether `quiet_graph`'s ops are `graph`'s less only ops a summary's recording condition adds, and plus only
    the constant False a summary not recorded returns."""
    counts, quiet_counts = _op_counts(graph), _op_counts(quiet_graph)
    if any((kind, value) != ('Const', _false_value()) for kind, _, value in quiet_counts - counts):
        return False
    return all(kind in _SUMMARY_OP_TYPES for kind, _, _ in counts - quiet_counts)


def _false_value() -> bytes:
    """How `_op_counts` holds the value of a constant False (a `Const` op's `value` attribute, serialized)."""
    return tf.compat.v1.AttrValue(tensor=tf.make_tensor_proto(False)).SerializeToString()


class RecordingSwitch:
    """A `tf.summary.record_if` condition the host alone sets: a boolean variable, and its value as `on`.

    `compat_mts.summary`'s recorders gate the session's summaries with one, assigning the variable and `on`
    together; a direct step traced under it is called without its summary ops while it is off (`_DirectStep`).
    """

    __slots__ = ('variable', 'on')

    def __init__(self, variable: tf.Variable):
        self.variable = variable
        self.on = False
        _switches[id(variable.handle)] = self

    def __call__(self) -> tf.Variable:
        return self.variable


def _switch_read_by(concrete: Any) -> RecordingSwitch | None:
    """The one `RecordingSwitch` whose variable the concrete function reads, else None."""
    found = [_switches[id(tensor)] for tensor in concrete.captured_inputs if id(tensor) in _switches]
    return found[0] if len(found) == 1 else None


# id(switch variable's handle) -> its switch. Switches live for the process (one per summary writer, as the
# writers), and the handle with its variable, so ids stay theirs.
_switches: dict[int, RecordingSwitch] = program_lib.PROGRAM.table(
    'fetches.recording_switches', {}, "the summary recorders' switches, by their variable's handle", kind='process'
)


# id(step) -> its direct caller. Process-wide, not per session: it is a cache of what a `tf.function` step
# traces to, a property of the step alone, dropped with the step (weakly referenced); a step that runs in
# several sessions is traced once.
_direct_steps: dict[int, _DirectStep] = program_lib.PROGRAM.table(
    'fetches.direct_steps', {}, 'the direct caller of each tf.function step that has run (weakly keyed)'
)


def _forget_direct_step(key: int, step_ref: weakref.ref) -> None:
    direct = _direct_steps.get(key)
    if direct is not None and direct._step is step_ref:
        del _direct_steps[key]


_plain_eager_execution = tf_internals.plain_eager_execution
