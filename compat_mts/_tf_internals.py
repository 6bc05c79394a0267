"""The private TensorFlow APIs compat_mts uses, in one place, each with a public fallback.

A private API is faster or does what no public one does; TensorFlow may move it in any release. Each one is
probed here once, at import: when it is there, compat_mts uses it; when it is not, the public fallback beside
it, which costs speed (or, where said, a nicety), never an ImportError. `COMPAT_MTS_NO_PRIVATE_TF=1` in the
environment (before compat_mts is imported) turns every private path off, so that the fallbacks are tested:
tests/test_tf_internals.py runs the core tests so.

Every private TensorFlow or Keras API compat_mts uses is here, but for one: TensorFlow's `tf_upgrade_v2` modules
(`tensorflow.tools.compatibility`), which `compat_mts._tf_tools` loads without starting TensorFlow (importing this
module would start it). No other module imports a `tensorflow.python` or `keras.src` module
(tests/test_tf_internals.py checks the imports) or reads a private attribute of a TensorFlow object. What is
here, by who needs it:

- the session's core (`fetches`, `global_step`, `monitored_session`, `scaffold`, `summary`): eager mode, plain
  variables and tensors read and made without Python layers, the direct concrete-function call, a step traced
  again without its summaries (fallback: the step's own trace, its recording condition evaluated), the profiler,
  a v1 `Saver`'s arguments, unfinalizing a graph; all with public fallbacks that cost speed or a nicety;
- checkpoints (`compat_mts.checkpoint_dir.checkpoints`): which values of a checkpoint a restore left for later, to
  check their checksums at restore; public fallback: read every value once more; a `tf.train.CheckpointManager`'s
  list and `keep_checkpoint_every_n_hours` count, set as v1's `Saver` kept them; fallback: the manager's own;
- the legacy package (`compat_mts.legacy`): a partitioned variable's slice, a checkpoint attribute that is no
  dependency, the relative state file of `convert_checkpoint`; public fallbacks that do the same; a function
  called once (a graph's initializers) without Grappler's optimization (fallback: optimized); Keras 3's
  layer-name counts, swapped per `wrap_graph` graph (probed when first needed, as importing Keras is slow;
  the fallback resets Keras's global state);
- the estimator (`compat_mts.estimator`): `fn_args`, the global step's cached read, a v1 scaffold's `init_fn`,
  TensorFlow's silencing of its deprecation warnings (public fallback: a filter on its logger),
  and the arguments v1's built-in hooks keep privately (their names listed in `compat_mts.estimator._hooks`,
  read by `private_attributes`). Without those a v1 built-in hook in a `model_fn` is
  left as it is, and the session refuses it naming its compat_mts twin (the program passes the twin itself);
- `compat_mts.estimator.kmeans`: TensorFlow's k-means graph (`clustering_ops.KMeans`, no public API; without
  it `KMeans` raises a `RuntimeError` naming scikit-learn's);
- Keras callbacks (`compat_mts.keras`): whether a callback overrides a method; public fallback;
- clusters: `compat_mts.deploy.distribute`'s coordination service (no public API: a multi-worker session raises a
  `RuntimeError` saying so) and whether the runtime started; `compat_mts.deploy.parameter_server`'s placement of
  lifted variables (no public API: `parameter_server_strategy` raises a `RuntimeError` saying so).
- the SavedModel export (`compat_mts.estimator.export._saved_model`): the fingerprint of a `saved_model.pb` whose
  signatures were rewritten; public fallback: the stale `fingerprint.pb` is removed (a SavedModel loads
  without one, as TF 2.15's Estimator exports had none);
- `ProfilerHook`'s reading of a capture: `tensorflow.tsl`'s `xplane_pb2`, a proto module of a file format (as
  those below), kept on under the switch; a TensorFlow without it gets a `RuntimeError` saying so.

Not private, so not here: the protobuf message modules under `tensorflow.core` (`saved_model_pb2` in
`compat_mts.estimator`). They are generated from the `.proto` files that define TensorFlow's file formats
(SavedModel, checkpoints, events), which TensorFlow keeps readable across releases; their module paths have
not moved since TensorFlow 1.0, TensorBoard and TF Serving import them so, and TensorFlow's own public protos
(`tf.compat.v1.ConfigProto`, `GraphDef`, `MetaGraphDef`) are those modules' classes. A moved proto module
would be a format change, for which no fallback could exist; the switch leaves them alone.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import importlib
import inspect
import os
import sys
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from google.protobuf import text_format

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
    from tensorflow.python.eager import context

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
    from tensorflow.python.ops import resource_variable_ops

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
    from tensorflow.python.ops import gen_resource_variable_ops

    return gen_resource_variable_ops.read_variable_op


_read_op = _probe(_read_variable_op)
_tensor_numpy = _probe(lambda: EAGER_TENSOR._numpy)


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
    from tensorflow.python.framework import ops

    constructor = ops.EagerTensor
    device_name = _private_context.context
    return lambda array, dtype: constructor(array, device_name().device_name, dtype.as_datatype_enum)


_eager_tensor = _probe(_eager_tensor_constructor)


def eager_tensor(array: np.ndarray, dtype: tf.DType) -> Any:
    """`array` as an eager tensor of `dtype` (already checked to fit), without `tf.constant`'s conversions."""
    if _eager_tensor is not None:
        return _eager_tensor(array, dtype)
    return tf.constant(array, dtype=dtype)


def lifted_variable(graph_variable: Any) -> tf.Variable:
    """An eager, uninitialized variable to hold `graph_variable` (a resource variable of a v1 graph).

    What `tf.compat.v1.wrap_function` makes of the variables it imports (an `UninitializedVariable` of the
    graph variable's shape, dtype and name), for one imported later; the caller captures its handle in the
    wrapped function and runs the variable's initializer there. Without private APIs a `tf.Variable` of zeros
    stands for it (a fully defined shape only: `tf.zeros` needs one).
    """
    with tf.init_scope():
        name, shape, dtype = graph_variable.op.name, graph_variable.shape, graph_variable.dtype.base_dtype
        if len(PLAIN_VARIABLE_TYPES) > 1:
            return PLAIN_VARIABLE_TYPES[1](
                shape=shape,
                dtype=dtype,
                name=name,
                trainable=graph_variable.trainable,
                extra_handle_data=graph_variable.handle,
            )
        return tf.Variable(tf.zeros(shape, dtype), trainable=graph_variable.trainable, name=name)


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


_execute = _probe(lambda: __import__('tensorflow.python.eager.execute', fromlist=['x']).execute)
_unoptimized_attrs: dict[bytes, tuple] = {}  # The context's function-call config -> the attributes without Grappler.


def call_function_once(name: str, args: list, captures: list, output_count: int) -> list:
    """`call_function` of a function called once (a graph's initializers): Grappler does not optimize its graph.

    A function's graph is optimized on its first call, which for a function run once costs more than its run
    (30 ms of a BERT-shaped graph's initializers, against their run of under 10). Its ops and kernels are the
    same, so are the values. The call's other options (soft placement) are the context's. The fallback is
    `call_function`: optimized.
    """
    if _execute is None or _call_function is None:
        return call_function(None, name, args, captures, output_count)
    context = _private_context.context()
    options = context.function_call_options
    config = options.config_proto_serialized
    attrs = _unoptimized_attrs.get(config)
    if attrs is None:
        proto = tf.compat.v1.ConfigProto.FromString(config or b'')
        proto.graph_options.rewrite_options.disable_meta_optimizer = True
        attrs = ('executor_type', options.executor_type or '', 'config_proto', proto.SerializeToString())
        _unoptimized_attrs[config] = attrs
    return _execute(name.decode('utf-8'), num_outputs=output_count, inputs=args + captures, attrs=attrs, ctx=context)


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
        atomic = concrete._inference_function
        flat_outputs = atomic.function_type.flat_outputs
        if any(callable(capture) for capture in concrete._captured_inputs) or any(
            output.dtype._handle_data for output in flat_outputs
        ):
            return
        function_type = concrete.function_type
        if function_type is None or function_type.parameters or atomic._call_options.control_captures:
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
            or not _tape_set_is_empty()
            or _traceme_enabled()
            or (self._concrete._inference_function is not atomic)
        ):
            if trace_enabled():
                with Trace(self._name, tf_function_call='concrete'):
                    return self._concrete()
            return self._concrete()
        try:
            outputs = self._call_atomic()
        except Exception:  # Interpolated as `AtomicFunction` interpolates, only when it raised (a `with` costs).
            with _interpolate_errors(atomic):
                raise
        return self._pack(outputs)

    def _call_atomic(self) -> list:
        """The step itself: its atomic function, called by name with the captured inputs."""
        return self._call_function(self._function_name, self._inputs, self._count)


# The C calls behind `record.could_possibly_record()` and `trace_enabled()`, for `ConcreteCall`'s every call.
_tape_set_is_empty = getattr(getattr(_record, 'pywrap_tfe', None), 'TFE_Py_TapeSetIsEmpty', None) or (
    lambda: not _record.could_possibly_record()
)


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


def _tracing():
    from tensorflow.core.function.polymorphism import function_cache
    from tensorflow.python.eager.polymorphic_function import tracing_compilation

    tracing_compilation.TracingOptions.function_cache  # Probed: the field `trace_anew` replaces.
    return tracing_compilation.trace_function, function_cache.FunctionCache


_trace_function_and_cache = _probe(_tracing)


def trace_anew(function: Any, context: Any) -> Any:
    """A new concrete function of the `tf.function` `function` called without arguments, traced inside `context`.

    Traced as `function`'s own traces after its first call are (its options, no variable created), but apart from
    its cache, which keeps the trace it has: `tf.summary.record_if(False)` as `context` makes the step without
    its summary ops (a `tf.function`'s cache does not tell summary recording states apart). None when `function`
    has not been called yet or the private API is not there (the caller keeps the trace it has).
    """
    options = getattr(function, '_no_variable_creation_config', None)
    if options is None or _trace_function_and_cache is None:
        return None
    trace_function, new_cache = _trace_function_and_cache
    with context:
        return trace_function((), {}, dataclasses.replace(options, function_cache=new_cache()))


def _fn_args():
    from tensorflow.python.util import function_utils

    return function_utils.fn_args


_private_fn_args = _probe(_fn_args)


def fn_args(fn: Callable) -> tuple:
    """The names of `fn`'s arguments, as v1's `function_utils.fn_args` gives them (the estimator and
    `run_step_fn` decide by them what to pass): those a `functools.partial` binds left out, a bound method's
    first one too, a callable object's `__call__`'s."""
    if _private_fn_args is not None:
        return tuple(_private_fn_args(fn))
    return _public_fn_args(fn)


def _public_fn_args(fn: Callable) -> tuple:
    """`function_utils.fn_args` in public Python (without TensorFlow's decorator unwrapping)."""
    if isinstance(fn, functools.partial):
        args = _public_fn_args(fn.func)
        return tuple(arg for arg in args[len(fn.args) :] if arg not in (fn.keywords or {}))
    if hasattr(fn, '__call__') and inspect.ismethod(fn.__call__):
        fn = fn.__call__
    args = inspect.getfullargspec(fn).args
    if inspect.ismethod(fn) and fn.__self__ is not None and args:
        args.pop(0)
    return tuple(args)


_save_context = _probe(lambda: __import__('tensorflow.python.saved_model.save_context', fromlist=['x']))


def in_save_context() -> bool:
    """Whether a SavedModel is being saved. Unknown without the private API: then True, which only turns off
    the direct step call (`compat_mts.core.fetch`)."""
    return _save_context.in_save_context() if _save_context is not None else True


_ops = _probe(lambda: __import__('tensorflow.python.framework.ops', fromlist=['x']))


def has_strategy() -> bool:
    """`tf.distribute.has_strategy()`, answered from the default graph's empty strategy stack when no scope is open
    (the usual run: the public call costs several Python calls per run)."""
    if _ops is not None:
        stack = getattr(_ops.get_default_graph(), '_distribution_strategy_stack', None)
        if stack is not None and not stack:
            return False
    return tf.distribute.has_strategy()


def _execution_switches():
    from tensorflow.python.eager.polymorphic_function import eager_function_run

    eager_function_run.RUN_FUNCTIONS_EAGERLY  # Probed: what `tf.config.functions_run_eagerly()` returns.
    _save_context._save_context._in_save_context  # What `in_save_context()` returns, in this thread.
    _ops._default_graph_stack.stack  # Empty unless a graph (a `tf.function`'s while traced) is the default.
    return eager_function_run, _save_context._save_context, _ops._default_graph_stack


_switches = _probe(_execution_switches) if _save_context is not None and _ops is not None else None


def plain_eager_execution() -> bool:
    """Whether a `tf.function` called now runs its traced graph in plain eager execution: not
    `tf.config.functions_run_eagerly()`, no SavedModel being saved, no `tf.distribute` strategy in scope.

    The three checks of every direct step call (`compat_mts.core.fetch`) in one: the values behind the public calls
    (a module global, a thread-local flag, this thread's default graph's strategy stack) read directly, each public
    call costing several Python calls per run. Entered between two runs, each of the three makes this False on the
    next. Without the private APIs: the public calls (a save is then assumed, see `in_save_context`).
    """
    if _switches is None:
        return not (tf.config.functions_run_eagerly() or in_save_context() or has_strategy())
    functions, saving, graphs = _switches
    if functions.RUN_FUNCTIONS_EAGERLY or saving._in_save_context:
        return False
    graph = graphs._global_default_graph
    local = getattr(graph, '_thread_local', None)
    if graphs.stack or local is None:  # A graph made default, or none made yet in this thread: the full check.
        return not has_strategy()
    return not getattr(local, '_distribution_strategy_stack', None)


# The profiler.

_trace = _probe(lambda: __import__('tensorflow.python.profiler.trace', fromlist=['x']))
Trace = _trace.Trace if _trace is not None else tf.profiler.experimental.Trace


def trace_enabled() -> bool:
    """Whether the profiler is tracing; without the private API, assumed so (a `Trace` that records nothing)."""
    return _trace.enabled() if _trace is not None else True


_traceme_enabled = _trace.enabled if _trace is not None else trace_enabled


def _xplane():
    """The profiler's capture format (`XSpace`): a proto module, as those of `tensorflow.core` (see above)."""
    try:
        return importlib.import_module('tensorflow.tsl.profiler.protobuf.xplane_pb2')
    except ImportError:
        return None


# Not switched off by COMPAT_MTS_NO_PRIVATE_TF: a file format has no public fallback (`read_xspace` refuses).
xplane_pb2 = _xplane()


def read_xspace(capture: bytes) -> Any:
    """Parses a profiler capture (`*.xplane.pb`) into its `XSpace` message.

    Raises:
      RuntimeError: this TensorFlow has no `tensorflow.tsl.profiler.protobuf.xplane_pb2` module to read it with.
    """
    if xplane_pb2 is None:
        raise RuntimeError(
            'ProfilerHook cannot read the capture: this TensorFlow has no '
            'tensorflow.tsl.profiler.protobuf.xplane_pb2 module. Open the capture in TensorBoard instead.'
        )
    return xplane_pb2.XSpace.FromString(capture)


# The functions of a wrapped graph's fetches (compat_mts.legacy.graph). The public `WrappedFunction.prune`
# copies the fetches' subgraph op by op in Python (`lift_to_graph`) into a new function graph, which costs half
# a second for a premade Estimator's training step; TensorFlow's C API makes the same function from the ops
# where they are, as it makes a `tf.function`'s from its graph. `WrappedFunction` also registers every function
# of its graph's library with the eager context and never releases them; here the caller registers and
# releases what its functions need. Without these: `prune`, and the library stays registered.


def _function_c_api():
    from tensorflow.python.client import pywrap_tf_session

    pywrap_tf_session.TF_GraphToFunction_wrapper, pywrap_tf_session.TF_DeleteFunction  # Moved: None.
    _private_context.Context.add_c_function, _private_context.Context.remove_function
    tf.Graph._c_graph, tf.Operation._c_op
    return pywrap_tf_session


_function_api = _probe(_function_c_api) if _call_function is not None else None

CAN_MAKE_SUBGRAPH_FUNCTIONS = _function_api is not None
"""Whether `subgraph_function`, `register_function_definitions` and `release_function` are available."""


def subgraph_function(
    graph: tf.Graph, name: str, operations: list, inputs: list, outputs: list, control_outputs: list
) -> None:
    """Registers with the eager context, as `name`, the function of `operations` (ops of `graph`, its body).

    Its arguments are `inputs` (tensors of ops outside the body), its results `outputs`, and it runs the ops
    `control_outputs` (in the body) too. It is called by name (`call_function`) and released with
    `release_function`; the functions its ops call must be registered (`register_function_definitions`).
    """
    with graph._c_graph.get() as c_graph:
        function = _function_api.TF_GraphToFunction_wrapper(
            c_graph,
            name,
            False,
            [op._c_op for op in operations],
            [tensor._as_tf_output() for tensor in inputs],
            [tensor._as_tf_output() for tensor in outputs],
            [],
            [op._c_op for op in control_outputs],
            [],
            None,
            '',
        )
    try:
        _private_context.context().add_c_function(function)
    finally:
        _function_api.TF_DeleteFunction(function)


def register_function_definitions(definitions: list) -> None:
    """Registers the `FunctionDef`s `definitions` with the eager context (once more each, if already there)."""
    context = _private_context.context()
    for definition in definitions:
        context.add_function_def(definition)


def release_function(name: str) -> None:
    """Releases one registration of the eager context's function `name` (it is removed with its last one).

    Nothing to release when the context no longer has it.
    """
    context = _private_context.context()
    if context.has_function(name):
        context.remove_function(name)


# Parameter-server clusters (compat_mts.deploy.parameter_server). No public API places the variables that
# `tf.compat.v1.wrap_function` lifts out of an imported graph, or gives a ParameterServerStrategy's cluster;
# without these, parameter-server clusters are refused with an error that says so.


def _wrap_function_module():
    from tensorflow.python.eager import wrap_function

    wrap_function._lift_single_variable  # Moved: None.
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
    lift = _wrap_function._lift_single_variable

    def placed(old_variable, graph, variable_holder):
        with tf.device(device_for(old_variable.op.device)):
            return lift(old_variable, graph, variable_holder)

    _wrap_function._lift_single_variable = placed
    try:
        yield
    finally:
        _wrap_function._lift_single_variable = lift


def strategy_cluster_spec(strategy: Any) -> dict:
    """The cluster of a `ParameterServerStrategy` as a dict of job -> addresses (its `cluster_resolver` is None)."""
    return strategy._cluster_resolver.cluster_spec().as_dict()


# Graphs, checkpoints, summaries, coordinators.

_unfinalize = _probe(lambda: tf.Graph._unsafe_unfinalize)

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
        return saver._max_to_keep
    return saver.saver_def.max_to_keep


def saver_keep_checkpoint_every_n_hours(saver: Any) -> float:
    """A v1 `Saver`'s `keep_checkpoint_every_n_hours` (its `SaverDef` says it too, once the saver is built)."""
    if PRIVATE_TF and hasattr(saver, '_keep_checkpoint_every_n_hours'):
        return saver._keep_checkpoint_every_n_hours
    return saver.saver_def.keep_checkpoint_every_n_hours


def keep_hours_counted_from(manager: Any, start: float) -> None:
    """Makes `manager` count its `keep_checkpoint_every_n_hours` from `start`, as v1's `Saver` did from its creation.

    A `tf.train.CheckpointManager` keeps a checkpoint that rotates out if it was saved N hours after the last one
    it kept, which it reads from the state file (an earlier run's), else takes as a second before it was made.
    v1's `Saver` kept one saved N hours after its own creation (then 2N, ...), so the checkpoints listed by an
    earlier run are deleted when they rotate out. Fallback: the manager's own count (those checkpoints of the
    earlier run that rotate out are kept as preserved ones, the first new one is kept a second sooner).
    """
    if PRIVATE_TF and hasattr(manager, '_last_preserved_timestamp'):
        manager._last_preserved_timestamp = start


def record_saved_now(manager: Any, path: str, timestamp: float) -> None:
    """Lists the checkpoint `path` as `manager`'s newest, saved at `timestamp`, as v1's `Saver` listed the one it
    saved again at a session's start (which compat_mts leaves as it is: `CheckpointSaverHook._save`).

    Its place decides when it rotates out, its time whether it is kept then (`keep_checkpoint_every_n_hours`).
    Fallback: its place and time from the state file (those of the run that saved it).
    """
    listed = getattr(manager, '_maybe_delete', None) if PRIVATE_TF else None
    if not isinstance(listed, collections.OrderedDict):
        return
    for name in list(listed):
        if os.path.normpath(os.path.abspath(name)) == os.path.normpath(os.path.abspath(path)):
            del listed[name]
            listed[name] = timestamp


def saver_var_list(saver: Any) -> Any:
    """The `var_list` a v1 `Saver` was built with (None: every global variable), which it keeps no public copy of.

    Without the private attribute: None, so a `Saver(var_list=...)` of a wrapped graph saves every global variable.
    """
    return getattr(saver, '_var_list', None) if PRIVATE_TF else None


def variable_initializer(variable: Any) -> Any:
    """The initializer op of a variable of an imported v1 graph."""
    if PRIVATE_TF and hasattr(variable, '_initializer_op'):
        return variable._initializer_op
    return variable.initializer


def _meta_graph():
    from tensorflow.python.framework import meta_graph

    return meta_graph


_meta_graph_lib = _probe(_meta_graph)


def export_meta_graph(graph: tf.Graph, graph_def: Any, collection_list: list | None = None) -> Any:
    """The `MetaGraphDef` of `graph` (with `graph_def` as its graph, so that no shapes are added to it), with the
    collections of `collection_list` (None: all)."""
    if _meta_graph_lib is not None:
        return _meta_graph_lib.export_scoped_meta_graph(
            graph=graph, graph_def=graph_def, collection_list=collection_list
        )[0]
    return tf.compat.v1.train.export_meta_graph(graph=graph, graph_def=graph_def, collection_list=collection_list)


def import_meta_graph(meta_graph: Any) -> None:
    """Imports `meta_graph` (its ops and collections) into the default graph."""
    if _meta_graph_lib is not None:
        _meta_graph_lib.import_scoped_meta_graph(meta_graph)
    else:
        tf.compat.v1.train.import_meta_graph(meta_graph)


_no_dependency = _probe(lambda: __import__('tensorflow.python.trackable.data_structures', fromlist=['x']).NoDependency)


def untracked(values: list) -> Any:
    """`values` (objects that are not trackable) to keep on a `tf.train.Checkpoint` as no dependency of it.

    The private `NoDependency` says so; a tuple of untrackable objects is what `AutoTrackable` neither wraps
    nor tracks, the same for a checkpoint that only reads it.
    """
    return _no_dependency(values) if _no_dependency is not None else tuple(values)


def save_slice_info(variable: Any) -> Any:
    """The `tf.Variable.SaveSliceInfo` of a slice of a partitioned variable of a v1 graph, or None (not a slice)."""
    if PRIVATE_TF and hasattr(variable, '_save_slice_info'):
        return variable._save_slice_info
    return _public_save_slice_info(variable)


def _public_save_slice_info(variable: Any) -> Any:
    """The slice info as the variable's `VariableDef` carries it (built in its graph: `to_proto` is graph-only)."""
    with variable.graph.as_default():
        definition = variable.to_proto().save_slice_info_def
    return tf.Variable.SaveSliceInfo(save_slice_info_def=definition) if definition.full_name else None


def _checkpoint_management():
    from tensorflow.python.checkpoint import checkpoint_management

    checkpoint_management.update_checkpoint_state_internal  # Moved: None.
    return checkpoint_management


_checkpoint_state = _probe(_checkpoint_management)


def write_relative_checkpoint_state(directory: str, paths: list) -> None:
    """Writes `directory`'s `checkpoint` state file listing `paths` (oldest first) relative to `directory`.

    The public `tf.compat.v1.train.update_checkpoint_state` keeps absolute paths absolute; the private one
    takes `save_relative_paths`. The fallback does what it does with public pieces: the same proto, written
    atomically (a temporary file renamed over the old one).
    """
    if _checkpoint_state is not None:
        _checkpoint_state.update_checkpoint_state_internal(
            directory, model_checkpoint_path=paths[-1], all_model_checkpoint_paths=paths, save_relative_paths=True
        )
    else:
        _public_write_relative_checkpoint_state(directory, paths)


def _public_write_relative_checkpoint_state(directory: str, paths: list) -> None:
    relative = [os.path.relpath(path, directory) if os.path.isabs(path) else path for path in paths]
    state = tf.compat.v1.train.generate_checkpoint_state_proto(
        directory, relative[-1], all_model_checkpoint_paths=relative
    )
    target = os.path.join(directory, 'checkpoint')
    temporary = f'{target}.tmp{os.getpid()}'
    with tf.io.gfile.GFile(temporary, 'w') as file:
        file.write(text_format.MessageToString(state))
    tf.io.gfile.rename(temporary, target, overwrite=True)


def checkpoint_keys_not_restored(status: Any) -> list[str] | None:
    """The keys of an object-based checkpoint that a `tf.train.Checkpoint.restore` has not read yet, or None.

    Those are the values of objects the program creates later (a Keras optimizer's slots, created by the
    first step): TensorFlow reads them, and checks their checksums, only then. The restore's coordinator
    knows which nodes of the checkpoint's object graph it matched; there is no public way to ask. None when
    private APIs are off or the status is of another kind: the caller then reads every key.
    """
    if not PRIVATE_TF:
        return None
    coordinator = getattr(status, '_checkpoint', None)
    graph = getattr(coordinator, 'object_graph_proto', None)
    matched = getattr(coordinator, 'matched_proto_ids', None)
    if graph is None or matched is None:
        return None
    return [
        attribute.checkpoint_key
        for node_id, node in enumerate(graph.nodes)
        if node_id not in matched
        for attribute in node.attributes
    ]


# The estimator (compat_mts.estimator): v1 objects a `model_fn` builds, read back.


def _deprecation_silence():
    from tensorflow.python.util import deprecation

    return deprecation.silence


_silence_deprecations = _probe(_deprecation_silence)


class _DropDeprecations:
    """A `logging.Filter` of TensorFlow's logger that drops its deprecation warnings."""

    def filter(self, record) -> bool:
        return 'is deprecated and will be removed' not in record.getMessage()


@contextlib.contextmanager
def deprecations_silenced():
    """A block in which TensorFlow and Keras print no deprecation warning (the premade Estimators' own v1 calls).

    Private: TensorFlow's `deprecation.silence()`, which also leaves each warning to be printed when the program
    itself makes the call. Public fallback: a filter on TensorFlow's logger, after which a program's own later
    call to a function first called here is not warned about. Python's deprecation `warnings` (Keras's v1
    layers) are ignored in the block either way.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='.*is deprecated', category=UserWarning)
        warnings.filterwarnings('ignore', category=DeprecationWarning)
        if _silence_deprecations is not None:
            with _silence_deprecations():
                yield
            return
        logger, dropping = tf.get_logger(), _DropDeprecations()
        logger.addFilter(dropping)
        try:
            yield
        finally:
            logger.removeFilter(dropping)


_NO_DEFAULT = object()


def private_attributes(obj: Any, *names: str, default: Any = _NO_DEFAULT) -> tuple | None:
    """The private attributes `names` of a TensorFlow object that keeps no public copy of them, or None when
    private APIs are off or one is missing (unless `default` is given, which a missing one then is)."""
    if not PRIVATE_TF:
        return None
    if default is not _NO_DEFAULT:
        return tuple(getattr(obj, name, default) for name in names)
    try:
        return tuple(getattr(obj, name) for name in names)
    except AttributeError:
        return None


def v1_scaffold_init_fn(scaffold: tf.compat.v1.train.Scaffold) -> Callable | None:
    """The `init_fn(scaffold, session)` a v1 `Scaffold` was given, or None.

    The v1 scaffold keeps it privately; its public `init_fn` is `lambda session: init_fn(v1_scaffold, session)`.
    Without the private attribute that is called, so `init_fn` gets the v1 scaffold instead of compat_mts's.
    """
    if PRIVATE_TF and hasattr(scaffold, '_user_init_fn'):
        return scaffold._user_init_fn
    public = scaffold.init_fn
    return None if public is None else (lambda _scaffold, session: public(session))


def _global_step_read_function():
    from tensorflow.python.training import training_util

    return training_util._get_or_create_global_step_read


_global_step_read = _probe(_global_step_read_function)
GLOBAL_STEP_READ_KEY = _GLOBAL_STEP_READ_KEY = 'global_step_read_op_cache'


def get_or_create_global_step_read() -> Any:
    """The default graph's cached read of its global step, created as v1's Estimator created it (None: no step).

    The fallback builds the same ops under the same names with public APIs.
    """
    if _global_step_read is not None:
        return _global_step_read()
    return _public_global_step_read()


def _public_global_step_read() -> Any:
    graph = tf.compat.v1.get_default_graph()
    cached = graph.get_collection(_GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = tf.compat.v1.train.get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + '/'):
        if isinstance(step, tf.Variable):
            value = tf.compat.v1.cond(
                tf.compat.v1.is_variable_initialized(step), step.read_value, lambda: step.initial_value
            )
        else:
            value = step
        read = value + 0
        graph.add_to_collection(_GLOBAL_STEP_READ_KEY, read)
    return read


# Keras 3 layer names in a v1 graph (compat_mts.legacy.wrap_graph).


@contextlib.contextmanager
def keras_names_of_a_new_graph() -> Any:
    """Keras 3 layers made in the block are named as in a new graph (`dense`, `dense_1`, ...), as v1's Keras did.

    v1's Keras counted layer names per graph, so the graph of each Estimator mode named a `Dense` layer
    `dense`, and evaluation restored the checkpoint training wrote. Keras 3 counts per process. The counts
    are swapped for fresh ones in the block and put back after it (`keras.src`'s global state). Without
    that private API the public fallback, `keras.backend.clear_session(free_memory=False)`, starts the block
    with fresh counts but also resets Keras's other global state, and the counts are not put back.
    """
    if 'keras' not in sys.modules:  # Keras not imported yet: its counts are fresh.
        yield
        return
    state = _probe(_keras_global_state)
    if state is None:
        tf.keras.backend.clear_session(free_memory=False)
        yield
        return
    saved = state.get_global_attribute('object_name_uids')
    state.set_global_attribute('object_name_uids', collections.defaultdict(int))
    try:
        yield
    finally:
        state.set_global_attribute('object_name_uids', saved)


def _keras_global_state():
    from keras.src.backend.common import global_state

    return global_state


# Keras callbacks (compat_mts.keras).


def overrides_callback_method(callback: Any, method: str) -> bool:
    """Whether the Keras `callback` implements `method` rather than inheriting the no-op of `Callback`.

    Keras marks its no-op defaults (`_is_default`, both Keras flavours); the fallback compares the method with
    `tf.keras.callbacks.Callback`'s, which misses only a subclass of another library's that marks its own.
    """
    if PRIVATE_TF:
        return not getattr(getattr(callback, method), '_is_default', False)
    return _public_overrides_callback_method(callback, method)


def _public_overrides_callback_method(callback: Any, method: str) -> bool:
    bound = getattr(callback, method)
    return getattr(bound, '__func__', bound) is not getattr(tf.keras.callbacks.Callback, method, None)


# Multi-worker clusters (compat_mts.deploy.distribute). The coordination service (a key-value store of the
# cluster, error propagation) has no public API; without it a multi-worker session is refused.


def _coordination_context():
    context_class = _private_context.Context
    for name in ('report_error_to_cluster', 'set_config_key_value', 'get_config_key_value'):
        getattr(context_class, name)
    return _private_context.context


_coordination_service = _probe(_coordination_context)

HAS_COORDINATION_SERVICE = _coordination_service is not None
"""Whether the workers of a `MultiWorkerMirroredStrategy` can announce checkpoints and failures to each other."""


def report_error_to_cluster(code: int, message: str) -> None:
    _coordination_service().report_error_to_cluster(code, message)


def set_cluster_value(key: str, value: str) -> None:
    _coordination_service().set_config_key_value(key, value)


def get_cluster_value(key: str, timeout_ms: int) -> str:
    """The value of `key`, waiting up to `timeout_ms` for it (`tf.errors.DeadlineExceededError` after)."""
    return _coordination_service().get_config_key_value(key, timeout_ms)


def log_device_placement_on() -> bool:
    """Whether TensorFlow logs the device of each op; unknown without the private context: False."""
    return _private_context.context().log_device_placement if _private_context is not None else False


def runtime_started() -> bool:
    """Whether TensorFlow's runtime has started (its first op ran); unknown without the private attribute: False.

    Only `log_device_placement` asks (`compat_mts.deploy.distribute.apply_config`): then it is set even after the
    start, where TensorFlow ignores it, and the warning that says so is not given.
    """
    if _private_context is None:
        return False
    return bool(getattr(_private_context.context(), '_initialized', False))


# An Estimator's tf.distribute strategy (compat_mts.estimator._distributed).


def estimator_loss_scaling(strategy: Any) -> Any:
    """The strategy's scope in which v1 optimizers divide the loss by the replicas, as v1's Estimator entered it.

    Without it (private APIs off, or a strategy that lacks it) v1 optimizers sum the replicas' gradients: the
    refusal is `compat_mts.estimator`'s, which checks `available` first.
    """
    enable = getattr(strategy, '_scale_loss_for_estimator_enabled', None) if PRIVATE_TF else None
    return enable() if enable is not None else None


def distribute_values_from_function(strategy: Any, value_fn: Any) -> Any:
    """`strategy.experimental_distribute_values_from_function(value_fn)`, for the v1 strategies too.

    The `tf.compat.v1.distribute` strategies lack the public method; their `extended` has it, privately.

    Raises:
      NotImplementedError: a v1 strategy while the private APIs are off (COMPAT_MTS_NO_PRIVATE_TF).
    """
    public = getattr(strategy, 'experimental_distribute_values_from_function', None)
    if public is not None:
        return public(value_fn)
    private = getattr(strategy.extended, '_experimental_distribute_values_from_function', None) if PRIVATE_TF else None
    if private is None:
        raise NotImplementedError(
            f'{type(strategy).__name__} (a tf.compat.v1.distribute strategy) cannot give each replica its batch '
            'without private TensorFlow APIs (COMPAT_MTS_NO_PRIVATE_TF is set): use its tf.distribute spelling.'
        )
    return private(value_fn)


def loss_scaled_by_optimizer(graph: tf.Graph) -> bool:
    """Whether a v1 optimizer divided the loss by the replicas in `graph` (what v1's Estimator reported by)."""
    return bool(getattr(graph, '_is_loss_scaled_by_optimizer', False))


def _fingerprinting():
    from tensorflow.python.saved_model.pywrap_saved_model import fingerprinting

    fingerprinting.CreateFingerprintDef  # Moved: None.
    return fingerprinting


_saved_model_fingerprinting = _probe(_fingerprinting)


def rewrite_saved_model_fingerprint(export_dir: str) -> None:
    """Makes `export_dir/fingerprint.pb` the fingerprint of the `saved_model.pb` (or `.pbtxt`) there now.

    `tf.saved_model.save` writes the fingerprint (hashes of the graph, the signatures and the object graph, read
    by `tf.saved_model.experimental.read_fingerprint`); after the signatures are rewritten it is stale, and only
    TensorFlow's private pywrap computes one. Without it the stale file is removed: a SavedModel loads without.
    """
    path = os.path.join(export_dir, 'fingerprint.pb')
    if _saved_model_fingerprinting is None:
        if tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
        return
    with tf.io.gfile.GFile(path, 'wb') as file:
        file.write(_saved_model_fingerprinting.CreateFingerprintDef(export_dir))


def _clustering_ops_module():
    from tensorflow.python.ops import clustering_ops

    clustering_ops.KMeans.training_graph  # Moved: None.
    return clustering_ops


_clustering_ops = _probe(_clustering_ops_module)


def clustering_ops() -> Any:
    """TensorFlow's `clustering_ops` (v1's k-means graph on the `KmeansPlusPlusInitialization` and
    `NearestNeighbors` kernels, what TF 2.15's `KMeans` Estimator built); no public API has it.

    Raises:
      RuntimeError: this TensorFlow has no `clustering_ops.KMeans` (or private APIs are off), naming the successor.
    """
    if _clustering_ops is None:
        raise RuntimeError(
            'compat_mts.estimator.experimental.KMeans needs tensorflow.python.ops.clustering_ops.KMeans, which this '
            'TensorFlow does not have (or COMPAT_MTS_NO_PRIVATE_TF is set); use sklearn.cluster.KMeans '
            '(pip install scikit-learn) instead.'
        )
    return _clustering_ops


# The feature columns' tensors, one column at a time (compat_mts.estimator.linear_sdca).

_feature_transformation_cache = _probe(lambda: tf.__internal__.feature_column.FeatureTransformationCache)


def feature_transformation_cache(features: dict) -> Any:
    """v2's `FeatureTransformationCache` of `features`: what a column's `get_sparse_tensors` and
    `get_dense_tensor` read (TF 2.15's `LinearSDCA` read each column's ids and values with it); no public API has
    a column's own tensors.

    Raises:
      RuntimeError: this TensorFlow has no `tf.__internal__.feature_column.FeatureTransformationCache` (or private
        APIs are off), naming the successor.
    """
    if _feature_transformation_cache is None:
        raise RuntimeError(
            'LinearSDCA needs tf.__internal__.feature_column.FeatureTransformationCache to read each feature '
            "column's ids and values, which this TensorFlow does not have (or COMPAT_MTS_NO_PRIVATE_TF is set); use "
            "optimizer='Ftrl' (the default), or a linear model trained with tf.raw_ops.SdcaOptimizerV2 of your own."
        )
    return _feature_transformation_cache(features)
