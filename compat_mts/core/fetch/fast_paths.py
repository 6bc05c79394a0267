"""The fetch model's fast paths (`compat_mts.core.fetch`): a `tf.function` step called directly, with the stale
global step read in its own call (`_DirectStep`), and a run of graph fetches only planned once (`_GraphOnlyPlan`).

Each gives what the general path gives (`compat_mts.core.fetch.FAST_PATHS = False` forces that one; tests/
test_general_fetch_path.py runs the session's tests both ways); the package decides when they are taken.
"""

from __future__ import annotations

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
        return self.call_with(None, {})

    def call_after_read(self, global_step: tf.Variable, kwargs: dict) -> tuple:
        """`(global step before the step, the step's outputs)`."""
        return self.call_with(global_step, kwargs)

    def call_with(self, global_step: tf.Variable | None, kwargs: dict) -> Any:
        """`call_after_read(global_step, kwargs)`, or `call()` when `global_step` is None (then `kwargs` is empty)."""
        key = None if global_step is None else id(global_step)
        entry = self._functions.get(key)
        if entry is None:
            entry = self._functions[key] = [self._trace(global_step), None]
        function, concrete = entry
        if kwargs:
            return function(**kwargs)
        if _functions_run_eagerly() or _has_strategy() or _in_save_context():  # Not plain eager execution.
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


def _forget_direct_step(key: int, step_ref: weakref.ref) -> None:
    direct = _direct_steps.get(key)
    if direct is not None and direct._step is step_ref:
        del _direct_steps[key]


_functions_run_eagerly = tf.config.functions_run_eagerly  # Looked up once: `tf.` attributes cost on every run.
_has_strategy = tf_internals.has_strategy
_in_save_context = tf_internals.in_save_context
