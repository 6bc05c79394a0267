"""Horovod's v1 graph API (`horovod.tensorflow`) on the collectives of a `tf.distribute.MultiWorkerMirroredStrategy`.

A Horovod program builds a v1 graph on every process and averages its gradients across the processes with
all-reduce ops in that graph (`hvd.DistributedOptimizer`), after the variables were copied from rank 0
(`hvd.BroadcastGlobalVariablesHook(0)`). Horovod's own ops are built for the TensorFlow it was compiled against
and do not run on TensorFlow 2's eager session; TensorFlow's collective ops do the same exchange, between the
workers that `TF_CONFIG` names, once a `MultiWorkerMirroredStrategy` has started the process's server. So at
stage 1 a Horovod graph program keeps its code and swaps one import (`compat-mts upgrade` makes the edit):

    import horovod.tensorflow as hvd   ->   from compat_mts.legacy import horovod as hvd

`init()` creates the strategy (one per process), `rank()` and `size()` are its task index and number of workers,
`DistributedOptimizer` adds a mean all-reduce of each gradient to the graph and `BroadcastGlobalVariablesHook`
copies rank 0's variables to every worker when the session starts. One process per worker, each started with
`TF_CONFIG` (in place of `horovodrun`); without `TF_CONFIG` the program is one worker, `size()` 1. Stage 2 moves
the step into `strategy.run` (migration_guide/horovod.md), where the strategy all-reduces by itself.

Each collective op has a key that must be the same on every worker: the graph code runs in the same order on
each (as Horovod's op names require too), so the n-th op built has the same key everywhere.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

import tensorflow as tf

from compat_mts.deploy import distribute
from compat_mts.core import program as program_lib
from compat_mts.session.session_run_hook import SessionRunHook

__all__ = [
    'Average',
    'Sum',
    'Min',
    'Max',
    'Product',
    'Adasum',
    'init',
    'rank',
    'size',
    'local_rank',
    'local_size',
    'allreduce',
    'broadcast',
    'broadcast_variables',
    'broadcast_global_variables',
    'DistributedOptimizer',
    'BroadcastGlobalVariablesHook',
]

Average = 'Average'
"""Horovod's `hvd.Average`, `DistributedOptimizer`'s default `op`: the mean of the workers' gradients."""
Sum = 'Sum'
"""Horovod's `hvd.Sum`: the sum of the workers' gradients."""
Min = 'Min'
"""Horovod's `hvd.Min` (`allreduce` only): the smallest of the workers' values, element by element."""
Max = 'Max'
"""Horovod's `hvd.Max` (`allreduce` only): the largest of the workers' values, element by element."""
Product = 'Product'
"""Horovod's `hvd.Product` (`allreduce` only): the product of the workers' values, element by element."""
Adasum = 'Adasum'
"""Horovod's `hvd.Adasum`: refused, with what to use instead (no collective of TensorFlow's computes it)."""
_OPS = (Average, Sum)
# Each reduction as TensorFlow's collective computes it: (how the workers' values merge, what is done after).
_COLLECTIVE_OPS = {
    Average: ('Add', 'Div'),
    Sum: ('Add', 'Id'),
    Min: ('Min', 'Id'),
    Max: ('Max', 'Id'),
    Product: ('Mul', 'Id'),
}
_ADASUM = (
    "hvd.Adasum has no counterpart in TensorFlow's collectives: use hvd.Average (what "
    'MultiWorkerMirroredStrategy computes) and, if the step size must grow with the workers, scale the learning rate'
)
# Far from the keys the strategy gives its own collectives (from 1 up), so that the two never meet.
_GROUP_KEY = 1 << 20
_instance_keys = itertools.count(1 << 20)
_state: dict[str, Any] = {}
program_lib.PROGRAM.table(
    'legacy.horovod.state', _state, "the MultiWorkerMirroredStrategy of Horovod's init() in this process", 'process'
)


def init() -> tf.distribute.MultiWorkerMirroredStrategy:
    """Horovod's `hvd.init()`: the process's `MultiWorkerMirroredStrategy`, created on the first call.

    Created before the graph is built: it starts the process's server and readies its collectives, with the
    workers `TF_CONFIG` names (none: this process alone).

    Returns:
      The strategy.
    """
    if 'strategy' not in _state:
        _state['strategy'] = tf.distribute.MultiWorkerMirroredStrategy()
        distribute.all_reduce_in_the_graph()
    return _state['strategy']


def _cluster() -> tuple[list[str], int]:
    """(the workers' addresses, chief first; this worker's index among them)."""
    strategy = _state.get('strategy')
    if strategy is None:
        raise ValueError('hvd.init() must be called first: it starts the MultiWorkerMirroredStrategy')
    return distribute.workers_and_index(strategy)


def rank() -> int:
    """Horovod's `hvd.rank()`: this worker's index, 0 for the chief (the first worker without a `chief` job).

    Raises:
      ValueError: `init()` was not called.
    """
    return _cluster()[1]


def size() -> int:
    """Horovod's `hvd.size()`: how many workers train together (1 without `TF_CONFIG`).

    Raises:
      ValueError: `init()` was not called.
    """
    return len(_cluster()[0])


def _host(address: str) -> str:
    host = address.rsplit(':', 1)[0]
    return 'localhost' if host in ('localhost', '127.0.0.1', socket.gethostname()) else host


def local_rank() -> int:
    """Horovod's `hvd.local_rank()`: this worker's index among the workers on its host (a GPU to pin).

    Raises:
      ValueError: `init()` was not called.
    """
    workers, index = _cluster()
    return [_host(worker) for worker in workers[:index]].count(_host(workers[index]))


def local_size() -> int:
    """Horovod's `hvd.local_size()`: how many workers run on this worker's host.

    Raises:
      ValueError: `init()` was not called.
    """
    workers, index = _cluster()
    return [_host(worker) for worker in workers].count(_host(workers[index]))


def _all_reduce(value: tf.Tensor, op: str) -> tf.Tensor:
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)  # Horovod's sparse_as_dense: one dense all-reduce.
    merge, final = _COLLECTIVE_OPS[op]
    return tf.raw_ops.CollectiveReduceV2(
        input=value,
        group_size=tf.constant(size()),
        group_key=tf.constant(_GROUP_KEY),
        instance_key=tf.constant(next(_instance_keys)),
        ordering_token=[],
        merge_op=merge,
        final_op=final,
    )


def _check_defaults(function: str, **options: Any) -> None:
    """Horovod's options that have no counterpart here, refused unless left at their defaults (None, '' or False)."""
    for option, value in options.items():
        if value not in (None, '', False):
            raise ValueError(
                f'{function}({option}={value!r}) is not supported on MultiWorkerMirroredStrategy collectives: '
                'leave it out'
            )


def allreduce(
    tensor: Any,
    average: bool | None = None,
    device_dense: str = '',
    device_sparse: str = '',
    compression: Any = None,
    op: str | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    name: str | None = None,
    process_set: Any = None,
    ignore_name_scope: bool = False,
) -> tf.Tensor:
    """Horovod's `hvd.allreduce`: `tensor` reduced across the workers, the same result on every worker.

    In a v1 graph it adds a collective op, which runs when a session runs it (on every worker, as with Horovod);
    eagerly it runs at once. A `tf.IndexedSlices` is reduced as a dense tensor (Horovod gathers its slices).

    Args:
      tensor: the worker's value.
      average: Horovod's older argument: True is `op=Average`, False `op=Sum`.
      device_dense, device_sparse: ignored (each worker reduces on its own device).
      compression: Horovod's; only its default (none) is taken.
      op: `Average` (the default), `Sum`, `Min`, `Max` or `Product`.
      prescale_factor: multiplies each worker's value before the reduction.
      postscale_factor: multiplies the result.
      name: the name scope of the ops.
      process_set, ignore_name_scope: Horovod's; only their defaults are taken.

    Returns:
      The reduced tensor.

    Raises:
      ValueError: both `average` and `op` are given, `op` is not one of those above (`Adasum` among them), or
        `compression` or `process_set` is given; `init()` was not called.
    """
    if average is not None and op is not None:
        raise ValueError('allreduce takes `average` or `op`, not both (average is the older form of op)')
    if op is None:
        op = Sum if average is False else Average
    if op == Adasum:
        raise ValueError(f'allreduce(op=hvd.Adasum): {_ADASUM}')
    if op not in _COLLECTIVE_OPS:
        raise ValueError(f'op must be one of {", ".join(_COLLECTIVE_OPS)} (hvd.Average, ...), got {op!r}')
    _check_defaults('allreduce', compression=compression, process_set=process_set)
    workers = size()
    with tf.name_scope(name or 'HorovodAllreduce'):
        value = tensor if isinstance(tensor, tf.IndexedSlices) else tf.convert_to_tensor(tensor)
        if prescale_factor != 1.0:
            value = value * tf.cast(prescale_factor, value.dtype)
        reduced = _all_reduce(value, op) if workers > 1 else tf.convert_to_tensor(value)
        if postscale_factor != 1.0:
            reduced = reduced * tf.cast(postscale_factor, reduced.dtype)
        return tf.identity(reduced)


def broadcast(
    tensor: Any, root_rank: int, name: str | None = None, ignore_name_scope: bool = False, process_set: Any = None
) -> tf.Tensor:
    """Horovod's `hvd.broadcast`: `root_rank`'s `tensor` on every worker (same shape and type on each).

    Raises:
      ValueError: `root_rank` is not a worker of the cluster, or `process_set` is given; `init()` was not called.
    """
    _check_defaults('broadcast', process_set=process_set)
    workers = size()
    _check_root_rank(root_rank, workers)
    with tf.name_scope(name or 'HorovodBroadcast'):
        value = tf.convert_to_tensor(tensor)
        if workers == 1:
            return tf.identity(value)
        common = dict(
            group_size=tf.constant(workers),
            group_key=tf.constant(_GROUP_KEY),
            instance_key=tf.constant(next(_instance_keys)),
        )
        if rank() == root_rank:
            return tf.raw_ops.CollectiveBcastSendV2(input=value, **common)
        return tf.raw_ops.CollectiveBcastRecvV2(T=value.dtype, shape=tf.shape(value, out_type=tf.int64), **common)


def _check_root_rank(root_rank: Any, workers: int | None = None) -> None:
    """A worker index; one of the `workers` workers when their number is given."""
    if not isinstance(root_rank, int) or isinstance(root_rank, bool):
        raise ValueError(f'root_rank must be a worker index (an int), got {root_rank!r}')
    if workers is not None and not 0 <= root_rank < workers:
        raise ValueError(f'root_rank is {root_rank}; the cluster has workers 0-{workers - 1}')


def broadcast_variables(variables: Any, root_rank: int, process_set: Any = None, inplace: bool = False) -> Any:
    """Horovod's `hvd.broadcast_variables`: every worker's `variables` take `root_rank`'s values.

    Returns:
      In a v1 graph, the op that assigns them (run it in the session, on every worker at once); eagerly, None
      (they are assigned at once).

    Raises:
      ValueError: as `broadcast`.
    """
    _check_defaults('broadcast_variables', process_set=process_set)
    variables = list(variables)
    _check_root_rank(root_rank, size())
    if size() == 1:
        return None if tf.executing_eagerly() else tf.no_op(name='BroadcastVariables')
    with tf.name_scope('BroadcastVariables'):
        assignments = [
            tf.compat.v1.assign(variable, broadcast(variable.read_value(), root_rank)) for variable in variables
        ]
        return None if tf.executing_eagerly() else tf.group(*assignments)


def broadcast_global_variables(root_rank: int) -> tf.Operation:
    """Horovod's `hvd.broadcast_global_variables`: the op that gives every worker `root_rank`'s global variables.

    Raises:
      RuntimeError: eager execution is on (as Horovod: there are no global variables; use `broadcast_variables`).
      ValueError: as `broadcast`.
    """
    if tf.executing_eagerly():
        raise RuntimeError(
            'hvd.broadcast_global_variables() does not support eager execution: use '
            "hvd.broadcast_variables(<the model's and optimizer's variables>, root_rank) instead"
        )
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class DistributedOptimizer(tf.compat.v1.train.Optimizer):
    """Horovod's `hvd.DistributedOptimizer`: a v1 optimizer whose gradients are all-reduced across the workers.

    `compute_gradients` (which `minimize` calls) adds one collective all-reduce per gradient to the graph, so
    every worker applies the same averaged gradients, as Horovod's does.

    Args:
      optimizer: the v1 optimizer (`tf.compat.v1.train.AdamOptimizer(...)`).
      name: the optimizer's name (default: `Distributed` + the optimizer's).
      use_locking: as v1's optimizers.
      op: `Average` (the default) or `Sum`.
      gradient_predivide_factor: as Horovod's: each gradient is divided by it before the sum and multiplied by it
        after, which for `Average` gives the same mean.
      **horovod_options: Horovod's other arguments (`compression`, `backward_passes_per_step`, ...): refused
        unless given their default values.

    Raises:
      TypeError: `optimizer` is not a v1 optimizer.
      ValueError: `op` is not `Average` or `Sum`, or an option this optimizer does not have is given.
    """

    _DEFAULTS = {
        'device_dense': '',
        'device_sparse': '',
        'compression': None,
        'sparse_as_dense': False,
        'backward_passes_per_step': 1,
        'average_aggregated_gradients': False,
        'num_groups': 0,
        'groups': None,
        'process_set': None,
        'scale_local_gradients': True,
    }

    def __init__(
        self,
        optimizer: tf.compat.v1.train.Optimizer,
        name: str | None = None,
        use_locking: bool = False,
        op: str = Average,
        gradient_predivide_factor: float = 1.0,
        **horovod_options: Any,
    ):
        if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
            raise TypeError(
                f'DistributedOptimizer takes a v1 optimizer (tf.compat.v1.train.*Optimizer), got '
                f'{type(optimizer).__name__}'
            )
        if op == Adasum:
            raise ValueError(f'DistributedOptimizer(op=hvd.Adasum): {_ADASUM}')
        if op not in _OPS:
            raise ValueError(f'op must be one of {", ".join(_OPS)} (hvd.Average, hvd.Sum), got {op!r}')
        for option, value in horovod_options.items():
            if option not in self._DEFAULTS:
                raise TypeError(f'DistributedOptimizer got an unexpected argument {option!r}')
            if value is not self._DEFAULTS[option] and value != self._DEFAULTS[option]:
                raise ValueError(
                    f'DistributedOptimizer({option}={value!r}) is not supported on MultiWorkerMirroredStrategy '
                    f'collectives: leave it at {self._DEFAULTS[option]!r}'
                )
        super().__init__(use_locking=use_locking, name=name or f'Distributed{type(optimizer).__name__}')
        self._optimizer = optimizer
        self._op = op
        self._predivide = float(gradient_predivide_factor)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        """The wrapped optimizer's gradients, each all-reduced across the workers (see the class)."""
        gradients = self._optimizer.compute_gradients(*args, **kwargs)
        if size() == 1 and self._predivide == 1.0:
            return gradients
        with tf.name_scope(self._name + '_Allreduce'):
            reduced = []
            for gradient, variable in gradients:
                if gradient is not None:
                    if self._predivide != 1.0:
                        gradient = _all_reduce(gradient / self._predivide, self._op) * self._predivide
                    else:
                        gradient = _all_reduce(gradient, self._op)
                reduced.append((gradient, variable))
        return reduced

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> list:
        return self._optimizer.variables(*args, **kwargs)


class BroadcastGlobalVariablesHook(SessionRunHook):
    """Horovod's `hvd.BroadcastGlobalVariablesHook(root_rank)`: every worker starts from `root_rank`'s variables.

    `begin()` adds, per global variable of the graph, a collective broadcast from `root_rank` and an assignment of
    what arrives; the session runs them once it is created, on every worker at once.

    Args:
      root_rank: the worker whose values the others take (0, the chief, in Horovod's examples).
      device: Horovod's device argument: ignored, the collectives run on each worker's own device.

    Raises:
      ValueError: `root_rank` is not an int.
    """

    def __init__(self, root_rank: int, device: str = ''):
        _check_root_rank(root_rank)  # Its range once the cluster is known, in `begin()`.
        self._root_rank = root_rank
        self._broadcast = None

    def begin(self) -> None:
        if size() == 1:
            return
        self._broadcast = broadcast_global_variables(self._root_rank)

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._broadcast is not None:
            session.run(self._broadcast)
