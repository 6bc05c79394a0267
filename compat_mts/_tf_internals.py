"""The private TensorFlow APIs compat_mts uses, in one place, each with a public fallback.

A private API is faster or does what no public one does; TensorFlow may move it in any release. Each one is
probed here once, at import: when it is there, compat_mts uses it; when it is not, the public fallback beside
it, which costs speed (or, where said, a nicety), never an ImportError. `COMPAT_MTS_NO_PRIVATE_TF=1` in the
environment (before compat_mts is imported) turns every private path off, so that the fallbacks are tested:
tests/test_tf_internals.py runs the core tests so.

The rest of compat_mts imports no `tensorflow.python` module in the session's modules; the estimator, the
legacy checkpoint converter and the multi-worker cluster (`compat_mts.distribute`, the coordination service)
still do, being used only by the programs that need them.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from typing import Any, Callable

import numpy as np
import tensorflow as tf

PRIVATE_TF = os.environ.get('COMPAT_MTS_NO_PRIVATE_TF', '').lower() not in ('1', 'true', 'yes')


def _probe(get: Callable[[], Any]) -> Any:
    """`get()`, or None when private APIs are off or TensorFlow moved what `get` reaches for."""
    if not PRIVATE_TF:
        return None
    try:
        return get()
    except (ImportError, AttributeError):
        return None


def _context():
    from tensorflow.python.eager import context  # pylint: disable=import-outside-toplevel

    return context


_private_context = _probe(_context)

# Leaving a v1 graph for the eager context.
_eager_mode = _probe(lambda: _private_context.eager_mode) or getattr(
    getattr(tf.__internal__, 'eager_context', None), 'eager_mode', None
)


def eager_mode():
    """A context in which ops run eagerly, also inside a program's `with tf.Graph().as_default():`."""
    if _eager_mode is None:  # Neither the private nor the `tf.__internal__` one: the default graph stays.
        return contextlib.nullcontext()
    return _eager_mode()


# Variables and tensors.


def _plain_variable_types() -> tuple:
    from tensorflow.python.ops import resource_variable_ops  # pylint: disable=import-outside-toplevel

    return resource_variable_ops.ResourceVariable, resource_variable_ops.UninitializedVariable


def _subclasses_named(base: type, names: tuple) -> tuple:
    """The subclasses of `base` called `names`, in that order, found without creating any object.

    Nothing may be created at import: a tensor would start TensorFlow's runtime, after which a
    `MultiWorkerMirroredStrategy` or `log_device_placement` can no longer be configured.
    """
    found, pending = {}, [base]
    while pending:
        for subclass in pending.pop().__subclasses__():
            if subclass.__name__ in names:
                found.setdefault(subclass.__name__, subclass)
            pending.append(subclass)
    return tuple(found[name] for name in names if name in found)


PLAIN_VARIABLE_TYPES: tuple = _probe(_plain_variable_types) or _subclasses_named(
    tf.Variable, ('ResourceVariable', 'UninitializedVariable')
)
"""The classes of a plain eager variable (not distributed, not a Keras wrapper): the fast paths' test."""

RESOURCE_VARIABLE = PLAIN_VARIABLE_TYPES[0]
"""The plain variable class; calling it directly creates a variable outside any `tf.distribute` creator."""

EAGER_TENSOR: type = _probe(lambda: tf.__internal__.EagerTensor) or _subclasses_named(tf.Tensor, ('EagerTensor',))[0]


def is_graph_variable(value: Any) -> bool:
    """Whether the variable `value` lives in a v1 graph (`wrap_graph`'s `build_fn` made it), not eagerly."""
    if PRIVATE_TF:
        in_graph_mode = getattr(value, '_in_graph_mode', None)
        if in_graph_mode is not None:
            return in_graph_mode
    handle = getattr(value, 'handle', None)
    return handle is not None and tf.is_symbolic_tensor(handle)


def _read_variable_op():
    from tensorflow.python.ops import gen_resource_variable_ops  # pylint: disable=import-outside-toplevel

    return gen_resource_variable_ops.read_variable_op


_read_op = _probe(_read_variable_op)
_tensor_numpy = _probe(lambda: EAGER_TENSOR._numpy)  # pylint: disable=protected-access


def read_plain_variable(variable: Any) -> np.ndarray:
    """The value of a plain variable (of `PLAIN_VARIABLE_TYPES`) as NumPy, by the bare read op when possible.

    `Variable.numpy()` costs several times a plain read op (name scopes, a copy).
    """
    if _read_op is not None and _tensor_numpy is not None:
        return _tensor_numpy(_read_op(variable.handle, variable.dtype))
    return variable.read_value().numpy()


def tensor_numpy(tensor: Any) -> np.ndarray:
    """An eager tensor's value, without `numpy()`'s copy when possible."""
    return _tensor_numpy(tensor) if _tensor_numpy is not None else tensor.numpy()


def _eager_tensor_constructor():
    from tensorflow.python.framework import ops  # pylint: disable=import-outside-toplevel

    constructor = ops.EagerTensor
    device_name = _private_context.context
    return lambda array, dtype: constructor(array, device_name().device_name, dtype.as_datatype_enum)


_eager_tensor = _probe(_eager_tensor_constructor)


def eager_tensor(array: np.ndarray, dtype: tf.DType) -> Any:
    """`array` as an eager tensor of `dtype` (already checked to fit), without `tf.constant`'s conversions."""
    if _eager_tensor is not None:
        return _eager_tensor(array, dtype)
    return tf.constant(array, dtype=dtype)


def is_resource_variable(variable: Any) -> bool:
    """Whether `variable` (of a v1 graph) is a resource variable, not a v1 reference variable."""
    return hasattr(variable, 'handle') and getattr(variable.handle, 'dtype', None) == tf.resource


# Functions.

_call_function = _probe(lambda: _private_context.Context.call_function)  # Called on `context()`, not at import.


def call_function(function: Any, name: str, args: list, captures: list, output_count: int) -> list:
    """Calls the concrete `function` (registered as `name`) on `args`; its flat outputs.

    By name through the eager context, as `ConcreteFunction` calls it in the end: its Python layers (tape and
    structure handling) cost as much as running a small graph. The fallback is the function's own call.
    """
    if _call_function is not None:
        return _private_context.context().call_function(name, args + captures, output_count)
    del name, captures, output_count
    return [output for output in tf.nest.flatten(function(*args)) if output is not None]


_record = _probe(lambda: __import__('tensorflow.python.eager.record', fromlist=['x']))
_interpolate_errors = _probe(
    lambda: (
        __import__(
            'tensorflow.python.eager.polymorphic_function.atomic_function', fromlist=['x']
        ).InterpolateRuntimeError
    )
)


class ConcreteCall:
    """Calls a concrete function without parameters as `ConcreteFunction.__call__` does, with less Python.

    In plain eager execution with no gradient tape recording, such a call comes down to calling the concrete
    function's atomic function by name with the captured inputs, then packing the flat outputs into the traced
    structure; the layers above (argument binding, tape checks, the captures flattened again, nested structure
    packing) cost more than the call itself on a tiny step. So those two things only are done, with the inputs
    and the packing worked out once. Errors get the function's node names and traceback as `AtomicFunction`
    gives them (`InterpolateRuntimeError`).

    Anything out of the ordinary goes through `ConcreteFunction.__call__`: a tape recording, the profiler
    tracing (as the step's own call, named `name`), a capture resolved at call time, outputs with resource
    handle data, control captures, or a TensorFlow without the private attributes used here (and
    `COMPAT_MTS_NO_PRIVATE_TF=1`).
    """

    __slots__ = ('_concrete', '_name', '_atomic', '_call_function', '_function_name', '_inputs', '_count', '_pack')

    def __init__(self, concrete: Any, name: str):
        self._concrete = concrete
        self._name = name
        self._atomic = None
        self._pack = None
        if _call_function is not None and _record is not None and _interpolate_errors is not None:
            try:
                self._plan()
            except AttributeError:  # Another TensorFlow's internals: the public call only.
                self._atomic = None

    def _plan(self) -> None:
        concrete = self._concrete
        atomic = concrete._inference_function  # pylint: disable=protected-access
        flat_outputs = atomic.function_type.flat_outputs
        if any(callable(capture) for capture in concrete._captured_inputs) or any(  # pylint: disable=protected-access
            output.dtype._handle_data for output in flat_outputs
        ):  # pylint: disable=protected-access
            return
        function_type = concrete.function_type
        if function_type is None or function_type.parameters or atomic._call_options.control_captures:  # pylint: disable=protected-access
            return
        inputs = list(concrete.captured_inputs)
        if len(inputs) != len(atomic.cached_definition.signature.input_arg):
            return
        self._call_function = _private_context.context().call_function
        self._function_name, self._inputs, self._count = atomic.name, inputs, len(flat_outputs)
        self._pack = _output_packer(concrete.structured_outputs, self._count) or atomic.function_type.pack_output
        self._atomic = atomic

    def __call__(self) -> Any:
        atomic = self._atomic
        if (
            atomic is None
            or _record.could_possibly_record()
            or trace_enabled()
            or (self._concrete._inference_function is not atomic)
        ):  # pylint: disable=protected-access
            if trace_enabled():
                with Trace(self._name, tf_function_call='concrete'):
                    return self._concrete()
            return self._concrete()
        with _interpolate_errors(atomic):
            outputs = self._call_atomic()
        return self._pack(outputs)

    def _call_atomic(self) -> list:
        """The step itself: its atomic function, called by name with the captured inputs."""
        return self._call_function(self._function_name, self._inputs, self._count)


def _output_packer(structure: Any, count: int) -> Callable | None:
    """A packer of `count` flat outputs into `structure` for the common step outputs, else None.

    The step's own output (`structure`, or the second of `(stale global step, output)`) is None, a tensor,
    or a flat dict of tensors; anything else is packed by the function type.
    """

    def leaf_packer(value, start):
        if value is None:
            return (lambda outputs: None), start
        if isinstance(value, tf.Tensor):
            return (lambda outputs: outputs[start]), start + 1
        if type(value) is dict and all(isinstance(v, tf.Tensor) for v in value.values()):
            keys = sorted(value)  # tf.nest's order.
            return (lambda outputs: dict(zip(keys, outputs[start : start + len(keys)]))), start + len(keys)
        return None, start

    if type(structure) is tuple and len(structure) == 2 and isinstance(structure[0], tf.Tensor):
        packer, end = leaf_packer(structure[1], 1)  # The direct step's read, then the step's output.
        if packer is None or end != count:
            return None
        return lambda outputs: (outputs[0], packer(outputs))
    packer, end = leaf_packer(structure, 0)
    return packer if packer is not None and end == count else None


def _fn_args():
    from tensorflow.python.util import function_utils  # pylint: disable=import-outside-toplevel

    return function_utils.fn_args


_private_fn_args = _probe(_fn_args)


def fn_args(fn: Callable) -> tuple:
    """The names of `fn`'s arguments, as v1's `function_utils.fn_args` gave them (`self` of a method included)."""
    if _private_fn_args is not None:
        return tuple(_private_fn_args(fn))
    if inspect.ismethod(fn):
        return ('self',) + tuple(inspect.signature(fn).parameters)
    return tuple(inspect.signature(fn).parameters)


_save_context = _probe(lambda: __import__('tensorflow.python.saved_model.save_context', fromlist=['x']))


def in_save_context() -> bool:
    """Whether a SavedModel is being saved. Unknown without the private API: then True, which only turns off
    the direct step call (`compat_mts.fetches`)."""
    return _save_context.in_save_context() if _save_context is not None else True


# The profiler.

_trace = _probe(lambda: __import__('tensorflow.python.profiler.trace', fromlist=['x']))
Trace = _trace.Trace if _trace is not None else tf.profiler.experimental.Trace


def trace_enabled() -> bool:
    """Whether the profiler is tracing; without the private API, assumed so (a `Trace` that records nothing)."""
    return _trace.enabled() if _trace is not None else True


# Parameter-server clusters (compat_mts.parameter_server). No public API places the variables that
# `tf.compat.v1.wrap_function` lifts out of an imported graph, or gives a ParameterServerStrategy's cluster;
# without these, parameter-server clusters are refused with an error that says so.


def _wrap_function_module():
    from tensorflow.python.eager import wrap_function  # pylint: disable=import-outside-toplevel

    wrap_function._lift_single_variable  # pylint: disable=pointless-statement,protected-access  # Moved: None.
    return wrap_function


_wrap_function = _probe(_wrap_function_module)

CAN_PLACE_LIFTED_VARIABLES = _wrap_function is not None
"""Whether the variables of a graph imported by `wrap_function` can be placed (on ps tasks) as they are lifted."""


@contextlib.contextmanager
def lifted_variables_placed(device_for: Callable[[str], str]):
    """While active, `wrap_function` creates each variable it lifts under `tf.device(device_for(op's device))`.

    `wrap_function` creates the eager variable of each `VarHandleOp` of an imported graph in its module's
    `_lift_single_variable`, on the current device, whatever the op's own device; that function is wrapped
    for the duration.
    """
    lift = _wrap_function._lift_single_variable  # pylint: disable=protected-access

    def placed(old_variable, graph, variable_holder):
        with tf.device(device_for(old_variable.op.device)):
            return lift(old_variable, graph, variable_holder)

    _wrap_function._lift_single_variable = placed  # pylint: disable=protected-access
    try:
        yield
    finally:
        _wrap_function._lift_single_variable = lift  # pylint: disable=protected-access


def strategy_cluster_spec(strategy: Any) -> dict:
    """The cluster of a `ParameterServerStrategy` as a dict of job -> addresses (its `cluster_resolver` is None)."""
    return strategy._cluster_resolver.cluster_spec().as_dict()  # pylint: disable=protected-access


# Graphs, checkpoints, summaries, coordinators.

_unfinalize = _probe(lambda: tf.Graph._unsafe_unfinalize)  # pylint: disable=protected-access

CAN_UNFINALIZE = _unfinalize is not None
"""Whether a finalized graph can be opened again (v1 did after a session closed); else it is not finalized."""


def unfinalize(graph: tf.Graph) -> None:
    _unfinalize(graph)


def coordinator_threads(coord: tf.train.Coordinator) -> list:
    """The threads registered with `coord` (to name stragglers); none known without the private attribute."""
    return list(getattr(coord, '_registered_threads', ())) if PRIVATE_TF else []


def summary_writer_resource(writer: Any) -> Any:
    """The resource of a `tf.summary` file writer, or None when it cannot be reached.

    With it, the writer's events file is closed when no session uses it and reopened on the same resource
    (which traced steps hold); without it, the file stays open until the process ends.
    """
    return getattr(writer, '_resource', None) if PRIVATE_TF else None


def saver_max_to_keep(saver: Any) -> int:
    """A v1 `Saver`'s `max_to_keep` (its `SaverDef` says it too, once the saver is built)."""
    if PRIVATE_TF and hasattr(saver, '_max_to_keep'):
        return saver._max_to_keep  # pylint: disable=protected-access
    return saver.saver_def.max_to_keep


def saver_keep_checkpoint_every_n_hours(saver: Any) -> float:
    """A v1 `Saver`'s `keep_checkpoint_every_n_hours` (its `SaverDef` says it too, once the saver is built)."""
    if PRIVATE_TF and hasattr(saver, '_keep_checkpoint_every_n_hours'):
        return saver._keep_checkpoint_every_n_hours  # pylint: disable=protected-access
    return saver.saver_def.keep_checkpoint_every_n_hours


def saver_var_list(saver: Any) -> Any:
    """The `var_list` a v1 `Saver` was built with (None: every global variable), which it keeps no public copy of.

    Without the private attribute: None, so a `Saver(var_list=...)` of a wrapped graph saves every global variable.
    """
    return getattr(saver, '_var_list', None) if PRIVATE_TF else None


def variable_initializer(variable: Any) -> Any:
    """The initializer op of a variable of an imported v1 graph."""
    if PRIVATE_TF and hasattr(variable, '_initializer_op'):
        return variable._initializer_op  # pylint: disable=protected-access
    return variable.initializer


def _meta_graph():
    from tensorflow.python.framework import meta_graph  # pylint: disable=import-outside-toplevel

    return meta_graph


_meta_graph_lib = _probe(_meta_graph)


def export_meta_graph(graph: tf.Graph, graph_def: Any) -> Any:
    """The `MetaGraphDef` of `graph` (with `graph_def` as its graph, so that no shapes are added to it)."""
    if _meta_graph_lib is not None:
        return _meta_graph_lib.export_scoped_meta_graph(graph=graph, graph_def=graph_def)[0]
    return tf.compat.v1.train.export_meta_graph(graph=graph, graph_def=graph_def)


def import_meta_graph(meta_graph: Any) -> None:
    """Imports `meta_graph` (its ops and collections) into the default graph."""
    if _meta_graph_lib is not None:
        _meta_graph_lib.import_scoped_meta_graph(meta_graph)
    else:
        tf.compat.v1.train.import_meta_graph(meta_graph)
