"""Legacy graph code run eagerly: `wrap_graph(build_fn)`, and the program's own graphs a session adopts.

Stage 1 of a migration keeps the v1 graph code as it is. `wrap_graph` builds it once in a plain
`tf.Graph`; its variables become eager variables (as `tf.compat.v1.wrap_function` lifts the variables of a graph it
imports). The session runs the graph v1-style: all graph fetches and feeds of one `run()`, the caller's and every
hook's, go into one call of a function pruned to exactly those fetches and feeds, built once per distinct
fetch/feed set and cached. The functions are made from the plain graph's own ops, the eager variables passed in
place of their handles; without TensorFlow's private function APIs, or on a parameter-server cluster, the graph
is imported into a `wrap_function` once and its `prune`s are the functions.

What the user holds are the plain graph's tensors, ops and variables (`g.outputs` is what `build_fn`
returned). Tensors of a *function* graph are unhashable in TF2, which would break `feed_dict={x: batch}`;
a plain graph's are hashable, and the runner maps them to the wrapped function by name.

The checkpoint pieces (`NameBasedCheckpoint`, `restore_from_v1`) live in `compat_mts.legacy.checkpoints`, and
`convert_checkpoint` in `compat_mts.legacy.convert`; `compat_mts.legacy` re-exports the three modules' names.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import itertools
import os
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.deploy import distribute
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.deploy import parameter_server
from compat_mts.legacy import saveables as saveables_lib
from compat_mts.legacy.checkpoints import NameBasedCheckpoint, _Entry

__all__ = [
    'wrap_graph',
    'adopt_graph',
    'graph_being_built',
    'WrappedGraph',
    'wrapped_graph_of_global_step',
    'forget_graph',
]

_HANDLE_OPS = frozenset({'VarHandleOp'})  # Variables: lifted into the eager context by wrap_function.
_NOT_RESOURCE_CREATORS = _HANDLE_OPS | {'Placeholder'}
_C_TYPE_NAMES = {tf.float32: 'float', tf.float64: 'double'}  # How v1's error messages name these dtypes.
_LEGACY_KERAS_VALUES = ('true', 'True', '1')  # What TensorFlow takes as TF_USE_LEGACY_KERAS switched on.
_KERAS_SETUP = (
    'before TensorFlow is first imported: in the environment '
    "(`TF_USE_LEGACY_KERAS=1 python train.py`) or with `os.environ['TF_USE_LEGACY_KERAS'] = '1'` at the "
    'very top of the script'
)
_KERAS_GUIDE = 'migration_guide/legacy.md, "v1 layers, losses and metrics (Keras 3)"'
_graph_ids = itertools.count()
_subgraph_ids = itertools.count()  # Names the functions `_subgraph` registers with the eager context.


def wrap_graph(build_fn: Callable[[], Any]) -> 'WrappedGraph':
    """Builds v1 graph code once and makes its tensors and ops runnable by compat_mts sessions, eagerly.

    `build_fn()` runs once with a fresh plain `tf.Graph` as the default graph, so v1 graph code works
    as written: placeholders, `tf.compat.v1.get_variable` and variable scopes,
    `tf.compat.v1.train.*Optimizer.minimize(loss, global_step=...)`, `tf.compat.v1.summary.*`,
    `tf.compat.v1.data` iterators. Then:

    - its variables become eager variables (`variables`), initialized as v1's `global_variables_initializer`
      and `local_variables_initializer` (and table initializers) would;
    - the graph's global step (`tf.compat.v1.train.get_or_create_global_step()` or
      `compat_mts.get_or_create_global_step()` inside `build_fn`) becomes the session's global step;
    - a session's default checkpoint holds every global variable under its v1 name (what v1's default
      `Saver` wrote), and its default summary op is `tf.compat.v1.summary.merge_all()` of the graph;
    - a variable a `tf.distribute.MirroredStrategy` made in `build_fn` keeps its copy on each replica, all
      initialized alike; the checkpoint saves the first under the v1 name and restores every copy;
    - the plain graph is finalized, as v1's `MonitoredSession` finalized it: ops must be created in
      `build_fn` (or in `WrappedGraph.as_default`, which opens it again). Without TensorFlow's private APIs
      (`COMPAT_MTS_NO_PRIVATE_TF=1`), which alone open a finalized graph, it is left open instead, and ops made
      in it later are imported when first fetched.

    Differences from v1 (migration_guide/legacy.md lists them all): iterators and tables are created
    once per `wrap_graph` call and shared by every pruned function; a stateful random op keeps one random
    stream per distinct fetch/feed set rather than one per graph; reference variables and queue runners
    are not supported.

    Example:

    ```python
    def build():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name='x')
        ...
        return x, loss, train_op
    x, loss, train_op = compat_mts.wrap_graph(build).outputs
    ```

    Args:
      build_fn: a function without arguments that builds the graph; what it returns is `outputs`.

    Returns:
      The `WrappedGraph`, registered with the fetch model.

    Raises:
      TypeError: `build_fn` is not callable, or the graph holds reference (non-resource) variables.
      ValueError: the graph uses queue runners.
      AttributeError, ImportError: from `build_fn`; for the two failures that stage-1 graph code meets on
        TensorFlow 2 (`tf.compat.v1.layers` under Keras 3, `.value` of a TF2 shape dimension) the error
        says what to change, and the original is its `__cause__`.
    """
    if not callable(build_fn):
        raise TypeError(f'`build_fn` must be a function that builds the graph, got {type(build_fn).__name__}.')
    graph = tf.Graph()
    with tf_internals.keras_names_of_a_new_graph(), graph.as_default():
        try:
            outputs = build_fn()
        except (AttributeError, ImportError) as error:
            explained = _explain_build_error(error)
            if explained is None:
                raise
            raise explained from error
        summary_op = _merged_summaries(graph)
    with global_step_lib.outside_graph_mode():
        return _register(WrappedGraph(graph, outputs, summary_op))


def _explain_build_error(error: BaseException) -> Exception | None:
    """The error to raise instead of `error`, raised by v1 graph code in `build_fn`, or None to keep `error`.

    v1 graph code meets two failures on TensorFlow 2 that its traceback does not explain:

    - `tf.compat.v1.layers` and `tf.compat.v1.nn.rnn_cell` are Keras 2 code, which Keras 3 (`tf.keras`
      since TensorFlow 2.16) no longer has: `` `dense` is not available with Keras 3.``
      They come back from tf-keras, with `TF_USE_LEGACY_KERAS=1` set before TensorFlow chooses its Keras.
      TensorFlow makes that choice once per module, when the module is first used, so a variable set after
      that changes nothing; with the variable set and tf-keras missing, TensorFlow says only "Keras cannot
      be imported".
    - `x.get_shape()[1].value`: without `disable_v2_behavior()` a dimension of a TF2 shape is an `int`.
    """
    message = str(error)
    if isinstance(error, AttributeError) and message == "'int' object has no attribute 'value'":
        return AttributeError(
            f"{message}: v1 graph code reads a shape dimension's `.value` (`x.get_shape()[1].value`), and "
            'TensorFlow 2 shapes hold plain ints (v1 shapes went with `disable_v2_behavior()`, which stage 1 '
            'removes). Add `tf.compat.v1.disable_v2_tensorshape()` at the top of the script, before the graph '
            'is built, or write `tf.compat.v1.dimension_value(x.shape[i])`, which works with both kinds of shape.'
        )
    legacy_keras_set = os.environ.get('TF_USE_LEGACY_KERAS') in _LEGACY_KERAS_VALUES
    tf_keras_missing = importlib.util.find_spec('tf_keras') is None
    install = "install tf-keras with `pip install 'compat-mts[legacy]'`"
    if isinstance(error, AttributeError) and 'is not available with Keras 3' in message:
        if legacy_keras_set:
            return AttributeError(
                f'{message} TF_USE_LEGACY_KERAS is set, but it was set after TensorFlow had chosen Keras 3 for '
                'this module (TensorFlow was imported, and the module used, before it was set). Restart the '
                f'program with TF_USE_LEGACY_KERAS=1 set {_KERAS_SETUP}'
                + (f', and {install}' if tf_keras_missing else '')
                + f'. See {_KERAS_GUIDE}.'
            )
        return AttributeError(
            f'{message} The graph code uses `tf.compat.v1.layers` (or `tf.compat.v1.nn.rnn_cell`), Keras 2 code '
            'that Keras 3, the `tf.keras` of TensorFlow 2.16 and later, does not have. It runs on tf-keras '
            f'(Keras 2): {install}'
            + ('' if tf_keras_missing else ' (it is installed here)')
            + f' and set TF_USE_LEGACY_KERAS=1 {_KERAS_SETUP}. See {_KERAS_GUIDE}.'
        )
    if isinstance(error, ImportError) and legacy_keras_set and tf_keras_missing:
        return ImportError(
            f'{message} TF_USE_LEGACY_KERAS is set, so TensorFlow looks for tf-keras, which is not '
            f'installed: {install}. See {_KERAS_GUIDE}.'
        )
    return None


def graph_being_built() -> tf.Graph | None:
    """The program's own v1 graph when the caller is inside its `with tf.Graph().as_default():`, else None."""
    if not global_step_lib.in_graph_mode():
        return None
    return tf.compat.v1.get_default_graph()


def adopt_graph(graph: tf.Graph) -> 'WrappedGraph':
    """`wrap_graph` for a graph the program built itself: a session created inside its `as_default()` block.

    v1 programs build their graph inside `with tf.Graph().as_default():` and create the session there. The
    session runs that graph as `wrap_graph` runs one: a fresh import per session, whose variables are
    initialized or restored as a new v1 `tf.Session`'s were, replacing what an earlier session of the same
    graph ran. The graph's summaries are merged once, into its `SUMMARY_OP` collection, as v1's `Scaffold`
    did. The graph is finalized while the session is open (as v1 finalized it); the caller unfinalizes it.
    Without TensorFlow's private APIs it is never finalized (see `wrap_graph`).
    """
    summary_op = _merged_summaries(graph, collection=tf.compat.v1.GraphKeys.SUMMARY_OP)
    for earlier in [wrapped for wrapped in _wrapped_graphs() if wrapped.graph is graph]:
        forget_graph(earlier)
    with global_step_lib.outside_graph_mode():
        return _register(WrappedGraph(graph, None, summary_op))


def _merged_summaries(graph: tf.Graph, collection: str | None = None) -> tf.Tensor | None:
    """`merge_all()` of `graph`'s summaries, or None without any; kept in `collection` and reused if given."""
    if collection is not None and graph.get_collection(collection):
        return graph.get_collection(collection)[0]
    if not graph.get_collection(tf.compat.v1.GraphKeys.SUMMARIES) or graph.finalized:
        return None
    with graph.as_default():
        summary_op = tf.compat.v1.summary.merge_all()
    if collection is not None:
        graph.add_to_collection(collection, summary_op)
    return summary_op


def _register(wrapped: 'WrappedGraph') -> 'WrappedGraph':
    fetches_lib.register_graph_runner(wrapped)
    if wrapped.global_step is not None:
        global_step_lib.set_global_step(wrapped.global_step)
    return wrapped


def forget_graph(wrapped: 'WrappedGraph') -> None:
    """Drops `wrapped` from the fetch model and from the wrapped graphs, so that it can be freed.

    For a program that builds one graph per phase and is done with it (`compat_mts.estimator` builds one
    per `train`, `evaluate` and `predict` call). The functions it registered with the eager context are
    released at once (not when the garbage collector frees it, or at the process's exit); it runs no more.
    Restoring the global step registration is the caller's.
    """
    fetches_lib.unregister_graph_runner(wrapped)
    wrapped._release()


def wrapped_graph_of_global_step() -> 'WrappedGraph | None':
    """The wrapped graph whose global step is the registered one: the graph of the current program.

    What `compat_mts.Scaffold` takes its defaults (checkpoint, summary op) from, through the `GraphRunner`
    seam (`compat_mts.core.fetch.graph_runner_of_global_step`). Tied to the global step, so that
    `compat_mts.reset_global_step()` also ends a wrap_graph program's defaults.
    """
    runner = fetches_lib.graph_runner_of_global_step()
    return runner if isinstance(runner, WrappedGraph) else None


def _wrapped_graphs() -> list['WrappedGraph']:
    """The registered wrapped graphs, most recent last (the fetch model's registry holds them)."""
    return [runner for runner in fetches_lib.graph_runners() if isinstance(runner, WrappedGraph)]


class _Feed:
    """A placeholder (or other tensor) fed in a plan: the key the caller used, and what v1 checked."""

    __slots__ = ('key', 'name', 'numpy_dtype', 'dtype', 'shape')

    def __init__(self, key: Any, tensor: tf.Tensor):
        self.key = key
        self.name = tensor.name
        self.numpy_dtype = tensor.dtype.as_numpy_dtype
        self.dtype = tensor.dtype
        self.shape = tuple(tensor.shape.as_list()) if tensor.shape.rank is not None else None

    def value(self, value: Any) -> tf.Tensor:
        """`value` as the tensor to feed, converted and checked as v1's `Session.run` did."""
        if type(value) is np.ndarray and value.dtype == self.numpy_dtype:
            array = value  # The common case, checked cheaply.
        elif isinstance(value, tf_internals.EAGER_TENSOR) and value.dtype == self.dtype:
            array = value
        elif isinstance(value, (tf.Tensor, tf.Variable)):
            raise TypeError(
                'The value of a feed cannot be a tf.Tensor object. Acceptable feed values include Python '
                'scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, the tensor object '
                f'was {value} which was passed to the argument `feed_dict` with key {self.name}.'
            )
        else:
            if isinstance(value, int) and not _holds_int(self.numpy_dtype, value):
                raise TypeError(
                    f'Type of feed value {value} with type {type(value)} is not compatible with Tensor type '
                    f'{self.numpy_dtype}. Try explicitly setting the type of the feed tensor to a larger type '
                    '(e.g. int64).'
                )
            array = np.asarray(value, dtype=self.numpy_dtype)
        shape = self.shape
        if shape is not None:
            given = tuple(array.shape)
            if len(given) != len(shape) or any(
                size is not None and size != length for size, length in zip(shape, given)
            ):
                raise ValueError(
                    f'Cannot feed value of shape {given} for Tensor {self.name}, which has shape '
                    f'{tf.TensorShape(shape)}'
                )
        if array is value and not isinstance(value, np.ndarray):
            return value
        # The eager tensor constructor, without tf.convert_to_tensor's dispatch: this runs on every step.
        return tf_internals.eager_tensor(array, self.dtype)


def _holds_int(numpy_dtype: Any, value: int) -> bool:
    """Whether a feed of `numpy_dtype` holds the Python int `value` as it is: v1's test (a string does not)."""
    if numpy_dtype is object:
        return False
    try:
        return numpy_dtype(value) == value
    except OverflowError:  # NumPy 2; NumPy 1 wrapped the value around, which then differed.
        return False


class _Plan:
    """How to run one fetch/feed set: the pruned function, its feeds, and where each fetch's value comes from."""

    __slots__ = (
        'function',
        'name',
        'captures',
        'output_count',
        'feeds',
        'outputs',
        'reads',
        'anchors',
        'tensors_only',
        'trains',
        'worker_input',
        'after_read',
    )

    def __init__(self, function, feeds: list, outputs: list, reads: list, anchors: tuple):
        self.function = function  # None when no fetch needs the graph (only variables or nothing).
        self.after_read = None  # (variable, the `_Subgraph` reading it, then calling `function`) once made.
        self.tensors_only = None  # On a parameter-server cluster: the function of the tensor fetches alone.
        self.trains = True  # On a parameter-server cluster: whether the function moves the global step.
        self.worker_input = False  # On a parameter-server cluster: its first arguments come from the workers' input.
        if isinstance(function, _Subgraph):
            self.name, self.captures, self.output_count = function.name, function.captures, function.output_count
        elif function is not None:
            self.name = function.function_def.signature.name.encode()
            self.captures = list(function.captured_inputs)
            self.output_count = len(function.outputs)
        self.feeds = feeds  # `_Feed`s, in the order of the function's arguments.
        self.outputs = outputs  # (position of the fetch, index into the function's outputs) each.
        self.reads = reads  # (position of the fetch, eager variable) each: read before the call.
        # The fetch and feed objects of the plan's key. Keeping them alive keeps their ids unique, so
        # the key can be made of ids: hashing graph tensors costs a Python call each, on every step.
        self.anchors = anchors


class _Subgraph:
    """A function of a wrapped graph's fetches, made from its ops where they are (`WrappedGraph._subgraph`)."""

    __slots__ = ('name', 'captures', 'output_dtypes')

    def __init__(self, name: str, captures: list, output_dtypes: list):
        self.name = name.encode()  # As the eager context calls it.
        self.captures = captures  # The eager tensors passed after the feeds: the captures its ops read.
        self.output_dtypes = output_dtypes

    @property
    def output_count(self) -> int:
        return len(self.output_dtypes)


class _Registrations:
    """What a wrapped graph registered with the eager context: released together, when the graph is forgotten.

    `tf.compat.v1.wrap_function` (and each `prune` of it) registers every function of its graph's library (the
    branches of the graph's `tf.cond`s) once more and never releases them; the functions `_subgraph` made are
    registered once each. Released on `forget_graph`, or when the graph is freed, not at the process's exit.
    """

    def __init__(self):
        self.library: collections.Counter = collections.Counter()  # Function name -> registrations made.
        self.subgraphs: list[str] = []

    def release(self) -> None:
        names = self.subgraphs + list(self.library.elements())
        self.subgraphs, self.library = [], collections.Counter()
        for name in names:
            tf_internals.release_function(name)


class WrappedGraph(fetches_lib.GraphRunner):
    """A v1 graph built by `wrap_graph`, run eagerly through functions pruned to each fetch/feed set.

    Attributes:
      graph: the plain (finalized) `tf.Graph` that `build_fn` built.
      outputs: exactly what `build_fn` returned.
      variables: the eager variables that hold the graph's global then local variables.
      global_step: the eager variable of the graph's global step, or None.
      checkpoint: a `NameBasedCheckpoint` of every global variable under its v1 name.
      summary_op: `merge_all()` of the graph's summaries (a tensor of `graph`), or None.
      function: the `tf.compat.v1.wrap_function` the graph is imported into (only ever called pruned).
    """

    def __init__(self, graph: tf.Graph, outputs: Any, summary_op: tf.Tensor | None):
        self.graph = graph
        self.outputs = outputs
        self.summary_op = summary_op
        self._id = next(_graph_ids)
        self._saveables = saveables_lib.prepare(graph)
        global_variables = _without_replicas(graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES))
        local_variables = _without_replicas(graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES))
        # A variable of a tf.distribute strategy (MirroredStrategy in v1's Estimator) is one variable per
        # replica: the first replica's stands for it in the collections; the others are imported as local
        # variables and initialized with it, and the checkpoint saves the first and restores all.
        replica_copies = _replica_copies(global_variables + local_variables)
        for replica_copy in replica_copies:
            graph.add_to_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES, replica_copy)
        in_session = deployment_lib.of_session()  # An adopted graph: the session's scheduler.
        self._parameter_servers = parameter_server.current() if in_session is None else in_session.scheduler
        _check_supported(graph, global_variables + local_variables, self._parameter_servers)
        self._registrations = _Registrations()
        self._released = False
        # The functions are made from the plain graph's own ops (`_subgraph`) where they can be; else from the
        # graph imported into a `wrap_function` (`_import`), whose ops `prune` copies.
        self._in_place = tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS and self._parameter_servers is None
        self._function = None
        if self._in_place:
            self._captures: list = []  # (eager tensor, the plain graph's tensor it stands for) each.
            self._source = graph
            self._registrations.library.update(self._register_library(graph.as_graph_def().library.function))
            eager, initializers = self._lift_variables(
                graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
                + graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
            )
        else:
            self._function, library = self._import(graph, self._parameter_servers)
            self._source = self._function.graph
            eager = {
                global_step_lib.op_name(v.name): v
                for v in (
                    self._source.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
                    + self._source.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
                )
            }
            initializers = [tf_internals.variable_initializer(variable) for variable in eager.values()]
        if tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS:  # Else what wrap_function registered stays registered.
            if not self._in_place:
                self._registrations.library.update(library)
            finalizer = weakref.finalize(self, self._registrations.release)
            finalizer.atexit = False  # At the exit the eager context goes with everything in it.
        self._eager_by_name = eager
        self.variables = [
            eager[global_step_lib.op_name(v.name)] for v in global_variables + local_variables + replica_copies
        ]
        self._lift_resources()
        self._initialize(initializers)
        plain_step = tf.compat.v1.train.get_global_step(graph)
        self.global_step = eager[global_step_lib.op_name(plain_step.name)] if plain_step is not None else None
        self._plain_variable_ids = {id(variable) for variable in global_variables + local_variables + replica_copies}
        self.checkpoint = self._default_checkpoint(global_variables)
        self._targets: dict[Any, tuple[Any, tuple[str, Any] | None]] = {}
        self._foreign_names: set[str] = set()
        self._plans: dict[tuple, _Plan] = {}
        self._worker_input: tuple[list[str], Any] | None = None  # (placeholder names, the per-worker iterator).
        self._functions: dict[tuple, Any] = {}
        self._graph_def: tuple[int, Any] = (-1, None)  # (the graph's version, its GraphDef): `graph_def`.
        # The plain graph as far as the functions have it: its version and how many ops it had then.
        self._imported: tuple[int, int] = (graph.version, len(graph.get_operations()))
        if tf_internals.CAN_UNFINALIZE:  # Else it could not be opened for `as_default` again: left open.
            graph.finalize()

    def __repr__(self) -> str:
        return (
            f'<WrappedGraph {self._id}: {len(self.graph.get_operations())} ops, '
            f'{len(self.variables)} variables, {len(self._functions)} pruned functions>'
        )

    def _release(self) -> None:
        """Releases what the graph registered with the eager context; it runs no more (`forget_graph`)."""
        self._released = True
        self._plans.clear()
        self._functions.clear()
        self._resource_function = None
        self._registrations.release()

    @property
    def pruned_functions(self) -> int:
        """How many distinct fetch/feed sets have been pruned into functions (each once, then reused)."""
        return len(self._functions)

    @contextlib.contextmanager
    def as_default(self) -> Iterator[tf.Graph]:
        """The plain graph as the default graph, open for new ops; the ops made in the block become runnable.

        What v1's `MonitoredSession` gave its hooks' `begin()`: the graph the program built, not yet finalized,
        so that a hook could add ops (`tf.compat.v1.summary.merge_all()`, a `tf.identity` of a tensor) and fetch
        them in its `before_run`. On leaving the block the new ops are imported into the wrapped function too,
        and the graph is finalized again (without TensorFlow's private APIs it was never finalized: see
        `wrap_graph`).

        A variable made in the block (a counter of a hook, as v1 allowed) is initialized on leaving it, and a global
        one is saved in `checkpoint` from then on.

        Raises:
          TypeError: the block created a reference (non-resource) variable.
        """
        graph = self.graph
        finalized = graph.finalized and tf_internals.CAN_UNFINALIZE
        if finalized:
            tf_internals.unfinalize(graph)
        try:
            with graph.as_default():
                yield graph
        finally:
            if finalized:
                graph.finalize()
            self._graph_def = (-1, None)  # The block may have set shapes, which add no op.
        self._import_new_ops()

    def _import_new_ops(self) -> None:
        """Makes the ops added to the plain graph since the last import runnable (`_import_added`).

        Those of an `as_default` block; and, where the graph cannot be finalized (`tf_internals.CAN_UNFINALIZE`),
        those the program made outside one, imported when a fetch is first planned, where v1 refused to make them.
        """
        version, known = self._imported
        if self.graph.version == version:
            return
        operations = self.graph.get_operations()
        self._imported = (self.graph.version, len(operations))
        added = operations[known:]
        if added:
            self._import_added(added)

    def _import_added(self, added: list) -> None:
        """Makes the plain graph's ops `added` after the wrapping runnable (imported by name into the wrapped
        function's graph, where the functions are made from that graph).

        Variables among them (made in a hook's `begin()`, as v1 allowed) are lifted as `wrap_function` lifted the
        graph's own: each global or local one becomes an eager variable captured in place of its handle and is
        initialized by its initializer, and a global one is saved in the default checkpoint, as v1's `Saver`,
        built after the hooks' `begin()`, saved it.
        """
        names = {op.name for op in added}
        added_variables = [
            variable
            for key in (tf.compat.v1.GraphKeys.GLOBAL_VARIABLES, tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
            for variable in self.graph.get_collection(key)
            if variable.op.name in names
        ]
        _check_supported(self.graph, added_variables, self._parameter_servers)
        graph_def = self.graph.as_graph_def()
        if self._function is not None:
            self._import_fragment(graph_def, names)
        if tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS:  # The new ops' functions (a `tf.cond`'s branches).
            library = self._registrations.library
            library.update(
                self._register_library(
                    function for function in graph_def.library.function if function.signature.name not in library
                )
            )
        self._lift_added(added_variables)
        self._foreign_names.clear()  # Names of the new ops are this graph's now.

    def _import_fragment(self, graph_def, names: set[str]) -> None:
        """Imports the nodes `names` of the plain graph's `graph_def` into the wrapped function's graph."""
        fragment = type(graph_def)()
        fragment.versions.CopyFrom(graph_def.versions)
        fragment.library.CopyFrom(graph_def.library)
        fragment.node.extend(node for node in graph_def.node if node.name in names)
        imported = self.function.graph
        input_map = {}
        for node in fragment.node:
            for source in node.input:
                op_name = source.lstrip('^').split(':')[0]
                if op_name in names:
                    continue
                if source.startswith('^'):  # The importer takes a control input as a tensor of its op.
                    outputs = imported.get_operation_by_name(op_name).outputs
                    if outputs:
                        input_map[source] = outputs[0]
                else:
                    input_map[source] = imported.get_tensor_by_name(source if ':' in source else source + ':0')
        with imported.as_default():
            tf.graph_util.import_graph_def(fragment, input_map=input_map, name='')

    def _lift_added(self, added_variables: list) -> None:
        """Lifts the handles of `added_variables` (of the plain graph) into eager variables, initialized."""
        global_ids = {id(v) for v in self.graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)}
        lifted, initializers = self._lift_variables(added_variables)
        self._eager_by_name.update(lifted)
        self.variables.extend(lifted.values())
        self._plain_variable_ids.update(id(variable) for variable in added_variables)
        if initializers:
            self._run_once(initializers)
        added_globals = [(None, variable) for variable in added_variables if id(variable) in global_ids]
        if added_globals:
            self.checkpoint.add(*self._checkpoint_entries(added_globals))

    def _lift_variables(self, variables: list) -> tuple[dict, list]:
        """Eager variables for the plain graph's `variables`, each captured in place of its handle, as
        `wrap_function` lifts the variables of a graph it imports (a `tf.distribute` variable's first replica's).

        Returns:
          The eager variables by v1 name, and their initializers (ops of the functions' source graph).
        """
        lifted, initializers, seen = {}, [], set()
        for variable in variables:
            if isinstance(variable, tf.distribute.DistributedValues):
                variable = variable.values[0]
            if id(variable.handle) in seen:
                continue
            seen.add(id(variable.handle))
            eager = tf_internals.lifted_variable(variable)
            self._capture(eager.handle, variable.handle)
            lifted[global_step_lib.op_name(variable.name)] = eager
            initializers.append(self._source.get_operation_by_name(tf_internals.variable_initializer(variable).name))
        return lifted, initializers

    def _capture(self, value, tensor: tf.Tensor) -> None:
        """Passes `value` (an eager tensor) to every function in place of the plain graph's `tensor`."""
        if self._in_place:
            self._captures.append((value, tensor))
        if self._function is not None:
            imported = self._function.graph
            imported.add_capture(value, imported.get_tensor_by_name(tensor.name))

    def _captured(self) -> list:
        """The (eager tensor, tensor of the functions' source graph it is passed for) pairs."""
        return self._captures if self._in_place else self._source.captures

    @staticmethod
    def _register_library(definitions) -> list[str]:
        """Registers the `FunctionDef`s `definitions` (of the plain graph's library) with the eager context; their
        names."""
        definitions = list(definitions)
        tf_internals.register_function_definitions(definitions)
        return [definition.signature.name for definition in definitions]

    @property
    def function(self):
        """The `tf.compat.v1.wrap_function` the graph is imported into, its captures the graph's eager variables
        and resources; made on first use when the functions are made from the plain graph's ops."""
        if self._function is None:
            graph_def = self.graph.as_graph_def()
            self._function = tf.compat.v1.wrap_function(
                lambda: tf.graph_util.import_graph_def(graph_def, name=''), signature=[]
            )
            self._registrations.library.update(function.signature.name for function in graph_def.library.function)
            imported = self._function.graph
            for value, tensor in self._captures:
                imported.add_capture(value, imported.get_tensor_by_name(tensor.name))
        return self._function

    # Building.

    @staticmethod
    def _import(graph: tf.Graph, parameter_servers: 'parameter_server.Scheduler | None') -> tuple[Any, list[str]]:
        """The graph in a `wrap_function`, and the functions of its library (which `wrap_function` registered).

        On a parameter-server cluster, the variables are placed on the ps tasks.
        """
        graph_def = graph.as_graph_def()
        if parameter_servers is not None:
            parameter_servers.strip_worker_placement(graph_def)
        with graph.as_default():
            # `graph_def` is passed in so that no shapes are added to its functions: they must stay equal
            # to the ones already registered with the eager context.
            # The saveables are Python objects, which a meta graph does not carry; `saveables` saves them.
            collections = [key for key in graph.get_all_collection_keys() if key != saveables_lib.COLLECTION]
            meta_graph = tf_internals.export_meta_graph(graph, graph_def, collections)

        def import_graph():
            tf_internals.import_meta_graph(meta_graph)

        library = [function.signature.name for function in graph_def.library.function]
        if parameter_servers is not None:
            wrap = lambda: tf.compat.v1.wrap_function(import_graph, signature=[])  # noqa: E731
            return parameter_servers.placing_variables(wrap), library
        return tf.compat.v1.wrap_function(import_graph, signature=[]), library

    def _lift_resources(self) -> None:
        """Creates the graph's iterators and tables once, eagerly, and captures them in every pruned function.

        In a `tf.compat.v1.Session` one kernel per op creates each resource for the whole graph; each
        pruned function would get its own kernels, hence its own iterator. Like the variables, the
        resources are made once and passed to every function as captured handles: those of the ops with no input
        or constant inputs only (a dense hash table's empty and deleted keys).
        """
        handles = [
            tensor
            for op in self._source.get_operations()
            if op.type not in _NOT_RESOURCE_CREATORS
            and any(output.dtype == tf.resource for output in op.outputs)  # Before the inputs, which cost more.
            and all(source.op.type == 'Const' for source in op.inputs)
            for tensor in op.outputs
            if tensor.dtype == tf.resource
        ]
        if not handles:
            self._resource_function = None
            return
        # Keep the function (registered until the graph is released): its kernels own the resources.
        self._resource_function = self._function_of(handles, [], [])
        for value, handle in zip(self._call(self._resource_function, []), handles):
            self._capture(value, handle)

    def _initialize(self, initializers: list) -> None:
        """Runs the variables' `initializers` and the graph's table initializers (ops of the source graph)."""
        initializers = initializers + self._source.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
        if initializers:
            self._run_once(initializers)

    def _default_checkpoint(self, global_variables: list) -> NameBasedCheckpoint:
        """The global variables and the specs of the graph's SAVEABLE_OBJECTS, as v1's default `Saver`."""
        saved = saveables_lib.entries(self._saveables, self.run)
        return self._checkpoint_of([(None, variable) for variable in global_variables], dict(saved))

    def graph_def(self):
        """The plain graph's GraphDef (with shapes): what v1 wrote of its default graph.

        A copy of one made once per version of the graph: the hooks of one session each write it (`graph.pbtxt`,
        the events of the checkpoints and of the summaries), and making it costs a Python call per op.
        """
        version, graph_def = self._graph_def
        if version != self.graph.version:
            graph_def = self.graph.as_graph_def(add_shapes=True)
            self._graph_def = (self.graph.version, graph_def)
        copy = type(graph_def)()
        copy.CopyFrom(graph_def)
        return copy

    def checkpoint_of_saver(self, saver: tf.compat.v1.train.Saver) -> NameBasedCheckpoint:
        """What a v1 `Saver` built in this graph saves: its `var_list` under its v1 names.

        A `Saver()` without `var_list` saves every global variable, as `checkpoint` does. As in v1, the global
        step is saved only when the `var_list` holds it (under the name given there).

        Raises:
          TypeError: `var_list` holds something that is not a variable of this graph.
        """
        named = self._saver_named(saver)
        if named is None:
            return self.checkpoint
        for name, variable in named:
            if id(variable) not in self._plain_variable_ids:
                raise TypeError(
                    f'The var_list of the tf.compat.v1.train.Saver given as saver holds {variable!r} '
                    f'({name or "in a list"}), which is not a variable of the graph the session runs.'
                )
        if any(variable is self.global_step for _, variable in named):
            return self._checkpoint_of(named)
        variables, partitions = self._checkpoint_entries(named)
        return _SaverCheckpoint(variables, partitions=partitions)

    def left_out_by_saver(self, saver: tf.compat.v1.train.Saver) -> list[str]:
        """The v1 names of the graph's global variables that a `Saver` built in it does not save (none for a
        `Saver()` without `var_list`): what v1 left uninitialized when it restored through that `Saver`."""
        named = self._saver_named(saver)
        if named is None:
            return []
        saved = {id(variable) for _, variable in named}
        variables = _without_replicas(self.graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES))
        return [global_step_lib.op_name(variable.name) for variable in variables if id(variable) not in saved]

    def _saver_named(self, saver: tf.compat.v1.train.Saver) -> list | None:
        """`_saver_named(saver)`, a replica's copy of a `tf.distribute` variable (which Keras 3 layers list in the
        collections beside it) standing for that variable, once: a `Saver` of the collection's variables saves
        and restores every replica's copy, under the variable's name."""
        named = _saver_named(saver)
        if named is None:
            return None
        owners = _replica_owners(
            self.graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
            + self.graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
        )
        pairs, seen = [], set()
        for name, variable in named:
            variable = owners.get(id(variable), variable)
            if id(variable) not in seen:
                seen.add(id(variable))
                pairs.append((name, variable))
        return pairs

    def _checkpoint_of(self, named: list, saved: dict | None = None) -> NameBasedCheckpoint:
        """A `NameBasedCheckpoint` of (v1 name or None for the variable's own, graph variable) pairs, and of
        `saved` (name -> entry of a saveable)."""
        variables, partitions = self._checkpoint_entries(named)
        whole = {**(saved or {}), **variables}
        checkpoint = NameBasedCheckpoint(whole, partitions=partitions)
        if self.global_step is not None:
            checkpoint.global_step = self.global_step
        return checkpoint

    def _checkpoint_entries(self, named: list) -> tuple[dict, list]:
        """The whole variables (v1 name -> eager variable) and the partitions' `_Entry`s of `named` pairs."""
        whole, partitions = {}, []
        for name, variable in named:
            eager = self._eager_by_name[global_step_lib.op_name(variable.name)]
            slice_info = tf_internals.save_slice_info(variable)
            if slice_info is not None:
                partitions.append(_Entry(slice_info.full_name, slice_info.spec, eager))
            else:
                copies = [self._eager_by_name[global_step_lib.op_name(c.name)] for c in _replica_copies([variable])]
                whole[name or global_step_lib.op_name(variable.name)] = _Replicated(eager, copies) if copies else eager
        return whole, partitions

    def feed_from_workers(self, placeholders: Sequence[tf.Tensor], dataset_fn: Callable[[], tf.data.Dataset]) -> None:
        """Feeds `placeholders` on each worker of a parameter-server cluster from its own `dataset_fn()` dataset.

        What v1's between-graph workers did, each reading its own input pipeline: the chief's runs that need the
        placeholders take, on the worker they are scheduled on, the next element of that worker's iterator
        (`ClusterCoordinator.create_per_worker_dataset`), one per step, its components (`expand_composites`) in
        the order of `placeholders`.

        Raises:
          ValueError: this graph does not run on a parameter-server cluster.
        """
        if self._parameter_servers is None:
            raise ValueError('feed_from_workers: this graph does not run on the chief of a parameter-server cluster.')
        iterator = self._parameter_servers.per_worker_iterator(dataset_fn)
        self._worker_input = ([placeholder.name for placeholder in placeholders], iterator)
        self._plans.clear()

    # The fetch model's runner interface.

    def scheduled_global_step(self) -> int | None:
        return None if self._parameter_servers is None else self._parameter_servers.scheduled_step()

    def has_variable(self, name: str) -> bool:
        """Whether the graph has a global or local variable of v1 name `name` (`dense/kernel`)."""
        return name in self._eager_by_name

    def variable(self, name: str):
        """The eager variable that holds the graph's variable of v1 name `name` (`dense/kernel`).

        Raises:
          KeyError: the graph has no variable of that name.
        """
        return self._eager_by_name[name]

    def owns(self, fetch: Any) -> bool:
        return getattr(fetch, 'graph', None) is self.graph

    def owns_name(self, name: str) -> bool:
        self._import_new_ops()  # An op made since a name was not found may have that name (the open graph).
        if name in self._foreign_names:
            return False
        try:
            self._target(name)
        except (KeyError, ValueError, TypeError):
            self._foreign_names.add(name)  # Cache, since the fetch model asks on every run.
            return False
        return True

    def run(self, fetches: Sequence[Any], feeds: dict) -> list:
        """Runs `fetches` (tensors, ops, variables or names of this graph) with `feeds` in one call.

        `feeds` may hold feeds of other wrapped graphs; they are left to their graph.

        Raises:
          TypeError, ValueError: v1's messages for a feed that is not a tensor of the graph, a
            `tf.Tensor` as a feed value, a Python int its placeholder's dtype does not hold, or a value whose shape
            does not fit.
        """
        return self._run(self._plan_of(fetches, feeds), len(fetches), feeds)

    def run_after_read(self, fetches: Sequence[Any], feeds: dict, variable: tf.Variable) -> tuple[int, list]:
        """`run(fetches, feeds)`, and the value `variable` (the global step, an eager variable) had before it.

        In the one call of the fetches' function where it can be: a function that reads `variable` then calls
        that one, the call after the read (`_read_then`). A read op of its own between two steps costs two to
        four times its own duration eagerly. Where the fetches are fed, the variable is not a plain one (a
        `tf.distribute` variable), the graph runs on a parameter-server cluster, or its functions are not made in
        place (`_subgraph`), the variable is read first, eagerly. A fetch of `variable` itself (a hook's
        `{'step': global_step}`, read before the call as v1 read it) is that read's value, not a read of its own.
        """
        plan = self._plan_of(fetches, feeds)
        function = plan.function
        if not isinstance(function, _Subgraph) or plan.feeds or type(variable) not in tf_internals.PLAIN_VARIABLE_TYPES:
            return int(global_step_lib.read_value(variable)), self._run(plan, len(fetches), feeds)
        reader = plan.after_read
        if reader is None or reader[0] is not variable:
            reader = plan.after_read = (variable, self._read_then(function, variable))
        results = [None] * len(fetches)
        read_in_the_call = []  # Fetches of `variable` itself (a hook's `{'step': global_step}`): its value read.
        for position, read in plan.reads:
            if read is variable:
                read_in_the_call.append(position)
            else:
                results[position] = global_step_lib.read_value(read)
        function = reader[1]
        outputs = tf_internals.call_function(None, function.name, [], function.captures, function.output_count)
        for position, index in plan.outputs:
            results[position] = tf_internals.tensor_numpy(outputs[index + 1])
        value = tf_internals.tensor_numpy(outputs[0])
        for position in read_in_the_call:
            results[position] = value
        return int(value), results

    def _plan_of(self, fetches: Sequence[Any], feeds: dict) -> '_Plan':
        key = (*map(_identity, fetches), None, *map(_identity, feeds))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(fetches, feeds)
            self._plans[key] = plan
        return plan

    def _run(self, plan: '_Plan', count: int, feeds: dict) -> list:
        results = [None] * count
        for position, variable in plan.reads:
            results[position] = global_step_lib.read_value(variable)
        if plan.function is not None and self._parameter_servers is not None:
            args = [feed.value(feeds[feed.key]) for feed in plan.feeds]
            outputs = self._parameter_servers.run(
                plan.function,
                args,
                self.global_step,
                bool(plan.outputs),
                plan.tensors_only,
                plan.trains,
                worker_input=self._worker_input[1] if plan.worker_input else None,
            )
            for position, index in plan.outputs:
                results[position] = outputs[index]
        elif plan.function is not None:
            args = [feed.value(feeds[feed.key]) for feed in plan.feeds]
            # A graph run records no gradient: the function is called by name, without the tape.
            outputs = tf_internals.call_function(plan.function, plan.name, args, plan.captures, plan.output_count)
            for position, index in plan.outputs:
                results[position] = tf_internals.tensor_numpy(outputs[index])
        return results

    # Planning a fetch/feed set.

    def _target(self, fetch: Any) -> tuple[str, Any] | None:
        """What running `fetch` means, or None when it does nothing.

        ('tensor', name) and ('op', name) are fetched from the pruned function; ('variable', eager
        variable) is read before the call, which is when v1 read a variable fetched next to the ops
        that update it (the read has no inputs, so its kernel ran first).
        """
        key = _identity(fetch)
        known = self._targets.get(key)
        if known is not None:
            return known[1]
        if id(fetch) in self._plain_variable_ids:
            target = ('variable', self._eager_by_name[global_step_lib.op_name(fetch.name)])
        else:  # Also what an `assign` returns: a variable whose read runs after the assignment.
            element = self.graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
            if isinstance(element, tf.Operation):
                target = None if element.type in _HANDLE_OPS else ('op', element.name)
            elif element.op.type in _HANDLE_OPS:  # v1 returned a variable's value for `name:0`.
                target = ('variable', self._eager_by_name[element.op.name])
            else:
                target = ('tensor', element.name)
        self._targets[key] = (fetch, target)  # The fetch is kept, so that its id stays its own.
        return target

    def _plan(self, fetches: Sequence[Any], feeds: dict) -> _Plan:
        self._import_new_ops()
        targets = [self._target(fetch) for fetch in fetches]
        reads = [
            (position, target[1])
            for position, target in enumerate(targets)
            if target is not None and target[0] == 'variable'
        ]
        tensors = list(dict.fromkeys(target[1] for target in targets if target and target[0] == 'tensor'))
        operations = list(dict.fromkeys(target[1] for target in targets if target and target[0] == 'op'))
        feed_specs = sorted((feed for feed in map(self._feed, feeds) if feed is not None), key=lambda feed: feed.name)
        anchors = (tuple(fetches), tuple(feeds))
        if not tensors and not operations:
            return _Plan(None, feed_specs, [], reads, anchors)
        worker_feeds = self._worker_feeds(tensors + operations, {feed.name for feed in feed_specs})
        function = self._pruned(tensors, operations, worker_feeds + feed_specs)
        index_of = {name: index for index, name in enumerate(tensors)}
        outputs = [
            (position, index_of[target[1]])
            for position, target in enumerate(targets)
            if target is not None and target[0] == 'tensor'
        ]
        plan = _Plan(function, feed_specs, outputs, reads, anchors)
        plan.worker_input = bool(worker_feeds)
        if self._parameter_servers is not None:
            plan.trains = self._trains(function)
            if tensors and operations:
                # What a run after the last step fetches: the tensors, without the ops that would train on.
                plan.tensors_only = lambda: self._pruned(tensors, [], worker_feeds + feed_specs)
        return plan

    def _worker_feeds(self, names: list[str], fed: set[str]) -> list[_Feed]:
        """The placeholders of `feed_from_workers` (all of them, in order) when `names` need one, else none."""
        if self._worker_input is None:
            return []
        placeholders = self._worker_input[0]
        bound = set(placeholders) - fed
        seen, pending = set(), [self.graph.as_graph_element(name) for name in names]
        while pending:
            element = pending.pop()
            if element in seen:
                continue
            seen.add(element)
            if not isinstance(element, tf.Operation) and element.name in bound:
                return [_Feed(None, self.graph.get_tensor_by_name(name)) for name in placeholders]
            op = element if isinstance(element, tf.Operation) else element.op
            pending.extend(op.inputs)
            pending.extend(op.control_inputs)
        return []

    def _trains(self, function) -> bool:
        """Whether the pruned `function` is a training step: it writes the global step (any variable, in a graph
        without one).

        The scheduler of a parameter-server cluster counts the steps of such runs only: a run of the loss, a
        summary or an eval op between two train runs (`sess.run(loss)`) moves no global step in v1 either.
        """
        variables = [self.global_step] if self.global_step is not None else self.variables
        handles = {id(variable.handle) for variable in variables}
        pending = [internal for external, internal in function.graph.captures if id(external) in handles]
        while pending:
            for consumer in pending.pop().consumers():
                if consumer.type == 'Identity':
                    pending.extend(consumer.outputs)
                elif consumer.type not in _VARIABLE_READS:
                    return True
        return False

    def _pruned(self, tensors: list[str], operations: list[str], feed_specs: list[_Feed]):
        """The wrapped function pruned to these fetches (names) and feeds."""
        name_key = (tuple(tensors), tuple(operations), tuple(feed.name for feed in feed_specs))
        function = self._functions.get(name_key)
        if function is None:  # Cache, since pruning copies the graph and builds a function.
            if self._released:
                raise ValueError(f'{self!r} was forgotten (`forget_graph`): its graph runs no more.')
            self._check_fed(tensors + operations, {feed.name for feed in feed_specs})
            imported = self._source
            function = self._function_of(
                [imported.get_tensor_by_name(name) for name in tensors],
                [imported.get_operation_by_name(name) for name in operations],
                [imported.get_tensor_by_name(feed.name) for feed in feed_specs],
            )
            self._functions[name_key] = function
            logging.vlog(
                1,
                'wrap_graph: pruned function %d for fetches %s and feeds %s.',
                len(self._functions),
                tensors + operations,
                [feed.name for feed in feed_specs],
            )
        return function

    def _function_of(self, tensors: list, operations: list, feeds: list):
        """The function of the wrapped graph computing `tensors` and running `operations`, given `feeds`.

        A `_Subgraph` where it can be made (`_subgraph`), else the wrapped function pruned to them.
        """
        function = self._subgraph(tensors, operations, feeds)
        if function is not None:
            return function
        if self._in_place:  # The same names in the imported graph.
            imported = self.function.graph
            feeds = [imported.get_tensor_by_name(tensor.name) for tensor in feeds]
            tensors = [imported.get_tensor_by_name(tensor.name) for tensor in tensors]
            operations = [imported.get_operation_by_name(op.name) for op in operations]
        pruned = self.function.prune(feeds=feeds, fetches=tensors + operations)
        if tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS:  # `prune` registered its graph's library once more.
            self._registrations.library.update(
                function.signature.name for function in pruned.graph.as_graph_def().library.function
            )
        return pruned

    def _subgraph(self, tensors: list, operations: list, feeds: list) -> _Subgraph | None:
        """The function of `tensors` and `operations` (of the source graph) given `feeds`, made where its ops are.

        Its body is what `prune` would copy: the ops the fetches need through their inputs and control inputs,
        back to the feeds and the captured tensors (variables, lifted resources), which become its arguments
        (the captures the body reads only). None when `prune` must make it: the private APIs are off, the graph
        runs on a parameter-server cluster (which schedules concrete functions), or the fetches need an op for
        an output other than the one fed, or fetch a fed or captured tensor.
        """
        if not tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS or self._parameter_servers is not None:
            return None
        imported = self._source
        captures = self._captured()
        captured = {(internal.op, internal.value_index): external for external, internal in captures}
        sources = {(tensor.op, tensor.value_index) for tensor in feeds} | set(captured)
        source_ops = {op for op, _ in sources}
        body, used = set(), set()
        pending = [tensor.op for tensor in tensors] + list(operations)
        if any(op in source_ops for op in pending):
            return None
        while pending:
            op = pending.pop()
            if op in body:
                continue
            if op.type == 'Placeholder':  # Not fed: `prune` raises.
                return None
            body.add(op)
            for tensor in op.inputs:
                producer = tensor.op
                if producer not in source_ops:
                    pending.append(producer)
                    continue
                source = (producer, tensor.value_index)
                if source not in sources:
                    return None
                used.add(source)
            for producer in op.control_inputs:
                if producer in source_ops:
                    return None
                pending.append(producer)
        inputs = [internal for _, internal in captures if (internal.op, internal.value_index) in used]
        name = f'compat_mts_wrapped_graph_{self._id}_subgraph_{next(_subgraph_ids)}'
        tf_internals.subgraph_function(
            imported,
            name,
            [op for op in imported.get_operations() if op in body],
            list(feeds) + inputs,
            tensors,
            operations,
        )
        self._registrations.subgraphs.append(name)
        return _Subgraph(
            name, [captured[(tensor.op, tensor.value_index)] for tensor in inputs], [tensor.dtype for tensor in tensors]
        )

    def _read_then(self, function: _Subgraph, variable: tf.Variable) -> _Subgraph:
        """The function that reads `variable`, then calls `function` (which takes no feeds): the value read, then
        `function`'s outputs.

        The call has the read as its control input, so that every op of `function` runs after it, also where
        TensorFlow inlines the call.
        """
        graph = tf.Graph()
        with graph.as_default():
            captures = [tf.compat.v1.placeholder(capture.dtype) for capture in function.captures]
            handle = tf.compat.v1.placeholder(tf.resource)
            value = tf.raw_ops.ReadVariableOp(resource=handle, dtype=variable.dtype)
            with tf.control_dependencies([value]):
                outputs = tf.raw_ops.StatefulPartitionedCall(
                    args=captures, Tout=function.output_dtypes, f=function.name.decode()
                )
        call = outputs[0].op if function.output_dtypes else outputs
        name = f'compat_mts_wrapped_graph_{self._id}_subgraph_{next(_subgraph_ids)}'
        tf_internals.subgraph_function(
            graph,
            name,
            [value.op, call],
            [*captures, handle],
            [value, *(outputs if function.output_dtypes else [])],
            [call],
        )
        self._registrations.subgraphs.append(name)
        return _Subgraph(name, [*function.captures, variable.handle], [variable.dtype, *function.output_dtypes])

    @staticmethod
    def _call(function, args: list) -> list:
        """Calls a function of `_function_of` on `args` (eager tensors); its outputs."""
        if isinstance(function, _Subgraph):
            return tf_internals.call_function(None, function.name, args, function.captures, function.output_count)
        return function(*args)

    def _run_once(self, operations: list) -> None:
        """Runs `operations` (ops of the source graph: initializers) in a function called once, which
        Grappler does not optimize (`call_function_once`)."""
        function = self._function_of([], operations, [])
        if isinstance(function, _Subgraph):
            tf_internals.call_function_once(function.name, [], function.captures, 0)
        else:
            function()

    def _check_fed(self, names: list[str], fed: set[str]) -> None:
        """Raises v1's error when `names` need a placeholder that `fed` does not feed."""
        seen, pending = set(), [self.graph.as_graph_element(name) for name in names]
        while pending:
            element = pending.pop()
            op = element if isinstance(element, tf.Operation) else element.op
            if element in seen or (not isinstance(element, tf.Operation) and element.name in fed):
                continue
            seen.add(element)
            if op.type == 'Placeholder':
                shape = op.outputs[0].shape
                shape = (
                    '<unknown>'
                    if shape.rank is None
                    else '[{}]'.format(','.join('?' if size is None else str(size) for size in shape.as_list()))
                )
                raise tf.errors.InvalidArgumentError(
                    None,
                    op,
                    f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                    f'{_C_TYPE_NAMES.get(op.outputs[0].dtype, op.outputs[0].dtype.name)} and shape {shape}',
                )
            pending.extend(op.inputs)
            pending.extend(op.control_inputs)

    def _feed(self, key: Any) -> _Feed | None:
        if isinstance(key, str):
            try:
                tensor = self.graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
            except (KeyError, ValueError, TypeError) as error:
                if any(other.owns_name(key) for other in _wrapped_graphs() if other is not self):
                    return None
                raise TypeError(f'Cannot interpret feed_dict key as Tensor: {error.args[0]}') from None
        elif self.owns(key):
            tensor = key
        elif any(other.owns(key) for other in _wrapped_graphs() if other is not self):
            return None
        else:
            raise TypeError(
                f'Cannot interpret feed_dict key as Tensor: {key!r} is not an element of this wrap_graph graph.'
            )
        if not isinstance(tensor, tf.Tensor):
            raise TypeError(f'Cannot interpret feed_dict key as Tensor: {key!r} is not a tensor.')
        if not self.graph.is_feedable(tensor):
            raise ValueError(f'Tensor {tensor.name} may not be fed.')
        return _Feed(key, tensor)


_VARIABLE_READS = frozenset({'ReadVariableOp', 'VarIsInitializedOp', 'VariableShape'})


def _identity(value: Any) -> Any:
    return value if type(value) is str else id(value)


def _saver_named(saver: tf.compat.v1.train.Saver) -> list | None:
    """The (name or None for the variable's own, variable) pairs of a v1 `Saver`'s `var_list`; None without one."""
    var_list = tf_internals.saver_var_list(saver)
    if var_list is None:
        return None
    return list(var_list.items()) if isinstance(var_list, dict) else [(None, variable) for variable in var_list]


class _SaverCheckpoint(NameBasedCheckpoint):
    """The checkpoint of a v1 `Saver` whose `var_list` lacks the global step: it saves and restores the
    `var_list` alone, as that `Saver` did, whatever `global_step` attribute a scaffold or hook sets."""

    def _all_entries(self) -> list[_Entry]:
        return list(self._v1_entries)


def _replica_copies(variables: list) -> list:
    """The variables of every replica but the first of `variables` that a `tf.distribute` strategy made."""
    copies = []
    for variable in variables:
        if isinstance(variable, tf.distribute.DistributedValues):
            copies.extend(variable.values[1:])
    return copies


def _without_replicas(variables: list) -> list:
    """`variables` less the replicas' own copies of the `tf.distribute` variables among them.

    Keras 3 layers built under a strategy list each replica's copy in the collection beside the strategy's
    variable; `tf.compat.v1.get_variable` lists the strategy's variable alone.
    """
    copies = _replica_owners(variables)
    return [variable for variable in variables if id(variable) not in copies]


def _replica_owners(variables: list) -> dict[int, Any]:
    """id of each replica's copy of the `tf.distribute` variables among `variables` -> that variable."""
    return {
        id(copy): variable
        for variable in variables
        if isinstance(variable, tf.distribute.DistributedValues)
        for copy in variable.values
    }


class _Replicated:
    """One checkpoint entry for the copies of a variable on each replica: saved from the first, restored to all."""

    def __init__(self, first, copies: list):
        self.first = first
        self.copies = copies
        self.name = first.name
        self.dtype = first.dtype
        self.shape = first.shape

    def assign(self, value):
        for variable in [self.first] + self.copies:
            variable.assign(value)


tf.register_tensor_conversion_function(
    _Replicated, lambda value, dtype=None, name=None, as_ref=False: tf.convert_to_tensor(value.first, dtype, name)
)


def _check_supported(graph: tf.Graph, variables: list, parameter_servers) -> None:
    jobs = sorted(
        {tf.DeviceSpec.from_string(op.device).job for op in graph.get_operations() if op.device}
        - {None, 'localhost', 'worker', 'chief'}
        - ({'ps'} if parameter_servers is not None else set())
    )
    if jobs:
        raise ValueError(
            f'The graph places ops on the job(s) {jobs} (tf.compat.v1.train.replica_device_setter, or tf.device): '
            + (
                f"v1's parameter-server placement, and this process is not the chief of a parameter-server "
                f'cluster. {distribute.PS_CLUSTERS_NOT_SUPPORTED}'
                if jobs == ['ps']
                else 'a parameter-server cluster has the jobs chief, ps and worker only.'
            )
        )
    references = [v.name for v in variables if not tf_internals.is_resource_variable(v)]
    if references:
        raise TypeError(
            f'wrap_graph supports resource variables only; the graph holds reference variables {references}. '
            'Remove tf.compat.v1.disable_resource_variables() / use_resource=False from the graph code.'
        )
    queue_runners = graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
    if queue_runners:
        raise ValueError(
            'wrap_graph cannot run queue runners (tf.compat.v1.train.*_input_producer, *batch); feed the '
            'graph from a tf.compat.v1.data iterator instead.'
        )
