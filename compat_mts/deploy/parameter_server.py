"""Parameter-server clusters: v1's ps/worker programs on `tf.distribute.ParameterServerStrategy`.

v1's between-graph replication ran a session on every worker; the ps tasks held the variables
(`tf.compat.v1.train.replica_device_setter` put them there) and each worker's `train_op` read and updated
them. TensorFlow 2's parameter-server training keeps the ps tasks and the workers, but one more task, the
*chief* (the coordinator), runs the training loop: it builds the model, and `ClusterCoordinator.schedule`
sends each step to a free worker. compat_mts maps a v1 program onto that, on TensorFlow's own engine:

- **The tasks.** The ps and worker tasks start a `tf.distribute.Server` and `join()` it, as v1's ps tasks
  did. The chief calls `parameter_server_strategy(cluster)` (the cluster as v1 gave it to `tf.train.Server`,
  plus a `chief` job, or `TF_CONFIG`), then builds its graph and runs its `MonitoredTrainingSession` loop as
  v1's chief worker did. Only the chief runs a session, so only it writes checkpoints and summaries.
- **Variables on the ps tasks.** The chief's v1 graph (`wrap_graph`, or the program's own
  `with tf.Graph().as_default():`) is imported with each variable on the ps task that its
  `replica_device_setter` chose (`/job:ps/task:N`), or round-robin over the ps tasks when the graph has no
  device setter. The other ops lose their `/job:worker` (or `/job:chief`) placement, so they run on the
  worker the step is scheduled on; ops colocated with a variable keep its ps task, as in v1.
- **Steps on the workers, K at a time.** A `session.run` of graph fetches schedules one function on a
  worker that runs the fetches' pruned function `steps_per_run` times (a `tf.while_loop`) and returns the
  last run's values. The hooks are told that each run advances the global step by K, as with
  `compat_mts.repeat_steps`. A run that fetches only ops (`sess.run(train_op)`) does not wait: it returns
  once the step is scheduled, and at most `2 * workers` scheduled runs are pending at a time. A run that
  fetches a tensor (the caller's `loss`, or a hook's on the steps where it triggers) waits for that run's
  `RemoteValue`. A run that trains nothing (its function writes no global step: `sess.run(loss)` between
  train runs, a summary, an eval op) runs once, as in v1, and is no step. The global step that the default
  hooks read every run is one read from its ps task, which never waits for the workers.
- **Stopping.** The chief counts the steps of the train runs it schedules from the global step at the
  session's start, so the runs stop exactly at a `StopAtStepHook`'s `last_step`: the last one runs only
  the steps left, and those the loop schedules after it (while the hooks' reads of the global step catch up
  with the workers) run none; a hook that fetches tensors then gets them computed without the train op. Closing the
  session waits for every scheduled run before the hooks' `end()` (the final checkpoint holds every step).
- **Failures.** A worker that is lost is `ClusterCoordinator`'s: its pending runs are scheduled again on the
  other workers, and training goes on. A lost ps task loses the variables it held: the session raises
  `ParameterServerError` (never recovered in-process), and so does any scheduled run that does not finish
  within `step_timeout_secs`, so a cluster that stopped answering ends the run instead of hanging it.
  Restart the ps tasks and the chief; the chief resumes from the latest checkpoint. A ps task that stops
  answering without closing its connections (a frozen machine) would block the hooks' direct reads of the
  global step forever, so a watchdog ends the chief's process with `LOST_CLUSTER_EXIT_CODE` (75) and a
  message when a session's creation, one of its runs or its end (the hooks' `end()`, the last checkpoint)
  has not returned 5 s after `step_timeout_secs`.

Where this differs from a run in one process (ARCHITECTURE.md, "One process per task"), and why: a run
returns before its steps have run (that is what keeps the workers busy), so the global step that hooks read
(`STALE_GLOBAL_STEP`) is the ps task's value at the time of the read, which may lag behind the steps
scheduled, as v1's hooks on an asynchronous cluster saw a step that other workers moved. Checkpoints are
named by that read too.

TensorFlow internals used (no public API does this), through `compat_mts._tf_internals`: `wrap_function`'s
`_lift_single_variable`, wrapped while a graph is imported, and the strategy's `_cluster_resolver`. Where
they are missing (or `COMPAT_MTS_NO_PRIVATE_TF=1`), `parameter_server_strategy` refuses with a RuntimeError.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import math
import os
import sys
import threading
import time
from typing import Any, Callable, Sequence

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _frozen_imports
from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import program as program_lib
from compat_mts.session import session_run_hook
from compat_mts.core import validation

__all__ = ['parameter_server_strategy', 'ParameterServerError', 'current', 'check_graph_fetches']

_DEFAULT_STEP_TIMEOUT_SECS = 600.0
_PLACED_JOBS = frozenset({'worker', 'chief'})  # Placements that TF2 gives to the scheduled worker instead.
_NO_STOP = 2**63 - 1
# Bound at import: the watchdog's thread keeps real time where a program's tests patch `time.sleep` with a fake
# clock (which would make its loop spin and move the fake clock under the test).
_sleep = time.sleep
LOST_CLUSTER_EXIT_CODE = 75  # EX_TEMPFAIL: restart and retry.
WATCHDOG_GRACE_SECS = 5.0  # After step_timeout_secs, so that a bounded wait raises first where it can.
_JOIN = 'the runs scheduled on the workers to finish'


class ParameterServerError(RuntimeError):
    """A parameter server of the cluster was lost, or the cluster stopped running the chief's steps.

    The variables live on the ps tasks, so a lost ps task loses them, and TensorFlow's
    `ClusterCoordinator` cannot continue either. Restart the ps tasks and the chief (the workers may stay):
    the chief restores the latest checkpoint of `checkpoint_dir`.
    """


def parameter_server_strategy(
    cluster: Any = None, *, steps_per_run: int = 1, step_timeout_secs: float = _DEFAULT_STEP_TIMEOUT_SECS
) -> tf.distribute.ParameterServerStrategy:
    """The chief's `tf.distribute.ParameterServerStrategy`, and the `ClusterCoordinator` its sessions schedule on.

    Call it once, in the chief's process, before building the graph: it connects this process to the
    cluster (which resets TensorFlow's runtime). From then on the graphs of this process (`wrap_graph`,
    or a session created inside `with tf.Graph().as_default():`) keep their variables on the ps tasks,
    and their sessions run their steps on the workers (see the module docstring).

    Args:
      cluster: a `tf.train.ClusterSpec` or its dict (`{'chief': [...], 'ps': [...], 'worker': [...]}`),
        the one v1 gave `tf.train.Server` with a `chief` job added: the task that runs this loop. None
        reads `TF_CONFIG`, whose task must be `chief`.
      steps_per_run: K, the steps each `session.run` of graph fetches runs on a worker, a positive integer
        (at most 2**31 - 1).
      step_timeout_secs: how long a scheduled run may take before the cluster is taken as lost
        (`ParameterServerError`), a positive, finite number.

    Returns:
      TensorFlow's strategy. Its `scope()` is for TF2 variables (`tf.Variable`, Keras layers), which it
      places on the ps tasks; v1 graph code needs no scope.

    Raises:
      TypeError, ValueError: an argument of the wrong type or value, or a cluster without `ps`, `worker`
        or exactly one `chief` task; `TF_CONFIG` naming another task than the chief; a `tf.train.Server`
        already running in this process (v1's chief worker started one: drop it).
      RuntimeError: this TensorFlow lacks the internal that places an imported graph's variables on the ps
        tasks (see the module docstring), or `COMPAT_MTS_NO_PRIVATE_TF=1` turned it off.
    """
    validation.check_steps_per_run(steps_per_run)
    timeout_accepted = 'a positive, finite number of seconds'
    validation.check_seconds(
        step_timeout_secs, 'step_timeout_secs', optional=False, infinity='', accepted=timeout_accepted
    )
    if not 0 < step_timeout_secs < math.inf:  # A wait without end is what the timeout is there to prevent.
        raise ValueError(f'`step_timeout_secs` must be {timeout_accepted}, got {step_timeout_secs}.')
    spec = _cluster_spec(cluster)
    if not tf_internals.CAN_PLACE_LIFTED_VARIABLES:
        raise RuntimeError(
            'parameter_server_strategy needs a TensorFlow internal that places the variables of an imported v1 '
            'graph on the ps tasks (wrap_function._lift_single_variable), and this TensorFlow has none'
            + (' (COMPAT_MTS_NO_PRIVATE_TF is set)' if not tf_internals.PRIVATE_TF else '')
            + ': without it every variable would sit on the worker. Use the TensorFlow version compat_mts is '
            'tested on (2.21).'
        )
    _check_no_server_of_its_own()
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        spec, task_type='chief', task_id=0, rpc_layer='grpc'
    )
    # TensorFlow logs the connection through absl, whose first line configures the root logger of a program that
    # configured none, and every `tensorflow` line would print twice from then on.
    with checkpoints.root_logger_left_alone():
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        _schedulers[strategy] = Scheduler(strategy, int(steps_per_run), float(step_timeout_secs))
    _strategies.append(strategy)
    logging.info(
        "Parameter-server training: %d ps task(s), %d worker(s); the steps of this chief's sessions "
        'run on the workers, %d per run.',
        len(spec.as_dict()['ps']),
        len(spec.as_dict()['worker']),
        steps_per_run,
    )
    return strategy


def _cluster_spec(cluster: Any) -> tf.train.ClusterSpec:
    if cluster is None:
        config = validation.read_tf_config()
        task = config.get('task', {})
        if task.get('type') not in (None, 'chief') or task.get('index', 0) != 0:
            raise ValueError(
                f"parameter_server_strategy() runs in the chief's process; TF_CONFIG names the task {task}. "
                'The ps and worker tasks start a tf.distribute.Server and join() it (see '
                'migration_guide/distributed.md).'
            )
        cluster = config.get('cluster')
        if not cluster:
            raise ValueError(
                'parameter_server_strategy() needs `cluster` (a tf.train.ClusterSpec or its dict) '
                'or TF_CONFIG with a cluster.'
            )
    if isinstance(cluster, dict):
        cluster = tf.train.ClusterSpec(cluster)
    if not isinstance(cluster, tf.train.ClusterSpec):
        raise TypeError(
            f'`cluster` must be a tf.train.ClusterSpec, its dict or None (TF_CONFIG), got {type(cluster).__name__}.'
        )
    jobs = cluster.as_dict()
    counts = {job: len(jobs.get(job, [])) for job in ('chief', 'ps', 'worker')}
    if counts['chief'] != 1 or not counts['ps'] or not counts['worker']:
        raise ValueError(
            f'The cluster of a parameter-server program needs one chief task, ps tasks and worker tasks; '
            f'it has {counts}. Add the chief (the process that runs the session loop) to the cluster v1 gave '
            "tf.train.Server: {'chief': ['host:port'], 'ps': [...], 'worker': [...]}."
        )
    return cluster


def _check_no_server_of_its_own() -> None:
    """Raises a ValueError when this process runs a `tf.distribute.Server` (v1's chief worker started one).

    The strategy starts the chief's server itself, on the chief's address; v1's `tf.train.Server` of the same
    task would hold that port. TensorFlow keeps no registry of a process's servers, so they are looked up
    among the process's objects, once.
    """
    servers = [candidate for candidate in _frozen_imports.live_objects() if isinstance(candidate, tf.distribute.Server)]
    if servers:
        raise ValueError(
            f'This process already runs a tf.distribute.Server ({servers[0].target}): on the chief of a '
            "parameter-server cluster, parameter_server_strategy() starts the chief's server itself. Start a "
            'server only in the ps and worker tasks (and join() it there), and drop master=server.target.'
        )


_schedulers: dict = program_lib.PROGRAM.table(
    'parameter_server.schedulers', {}, 'the scheduler of each ParameterServerStrategy', kind='process'
)
_strategies: list = program_lib.PROGRAM.table(
    'parameter_server.strategies', [], "the parameter_server_strategy()s made, the latest the process's", kind='process'
)


_LOCAL_GRAPHS = contextvars.ContextVar('compat_mts_parameter_server_local_graphs', default=False)


@contextlib.contextmanager
def local_graphs():
    """Within it, `current()` is None: the graphs and sessions made run in this process, not on the cluster.

    For what v1 ran in a local session on a chief (an Estimator's evaluation and export, whose
    `evaluation_master` was ''), in a process that joined a parameter-server cluster.
    """
    token = _LOCAL_GRAPHS.set(True)
    try:
        yield
    finally:
        _LOCAL_GRAPHS.reset(token)


def current() -> 'Scheduler | None':
    """The `Scheduler` whose graphs and sessions run on a parameter-server cluster, or None.

    The strategy in scope if it is a `ParameterServerStrategy` (one made without
    `parameter_server_strategy` gets a scheduler with one step per run), else the process's latest
    `parameter_server_strategy`: v1 graph code runs in a graph of its own, where no strategy scope is seen.
    None inside `local_graphs()`.
    """
    if _LOCAL_GRAPHS.get():
        return None
    with tf.init_scope():
        strategy = tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):
        if strategy not in _schedulers:
            _schedulers[strategy] = Scheduler(strategy, 1, _DEFAULT_STEP_TIMEOUT_SECS)
        return _schedulers[strategy]
    return _schedulers[_strategies[-1]] if _strategies else None


def check_graph_fetches(fetches: Any) -> None:
    """Raises a TypeError saying what to do when the caller's `fetches` hold a callable (a `tf.function` step).

    On the chief the session schedules v1 graph fetches on the workers; a callable would run in the chief's
    own process, every step a round trip to the ps tasks, with the workers idle.
    """
    if isinstance(fetches, (list, tuple)):
        for fetch in fetches:
            check_graph_fetches(fetch)
    elif isinstance(fetches, dict):
        for fetch in fetches.values():
            check_graph_fetches(fetch)
    elif callable(fetches) and not isinstance(fetches, (tf.Tensor, tf.Variable, tf.Operation)):
        raise TypeError(
            f'On the chief of a parameter-server cluster, a session runs v1 graph fetches on the workers; '
            f'{fetches!r} is a callable, which would run on the chief itself. Fetch the train op and tensors '
            "of the graph code (wrap_graph, or the program's `with tf.Graph().as_default():`), or drive a "
            "tf.function step with strategy's tf.distribute.coordinator.ClusterCoordinator yourself."
        )


class VariablePlacement:
    """Which ps task holds each variable of a chief's graph: the one its op names, else the next round-robin."""

    def __init__(self, ps_tasks: int):
        self.devices = [f'/job:ps/replica:0/task:{index}/device:CPU:0' for index in range(ps_tasks)]
        self._next = 0

    def device_for(self, device: str) -> str:
        """The full ps device for a variable op placed on `device` (`/job:ps/task:N` from a device setter, or any)."""
        spec = tf.DeviceSpec.from_string(device or '')
        if spec.job == 'ps' and spec.task is not None and spec.task < len(self.devices):
            return self.devices[spec.task]
        chosen = self.devices[self._next % len(self.devices)]
        self._next += 1
        return chosen


class Scheduler:
    """Runs a wrapped graph's pruned functions on the workers of a `ParameterServerStrategy`, K steps each.

    One per strategy. It owns the `ClusterCoordinator`, the scheduled functions (one per pruned function,
    traced once) and the runs still pending on the workers.
    """

    def __init__(self, strategy: tf.distribute.ParameterServerStrategy, steps_per_run: int, timeout_secs: float):
        self.strategy = strategy
        self.steps_per_run = steps_per_run
        self.timeout_secs = timeout_secs
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        spec = tf_internals.strategy_cluster_spec(strategy)
        self.placement = VariablePlacement(len(spec['ps']))
        self.workers = len(spec['worker'])
        self._pending: collections.deque = collections.deque()
        # (id(pruned function), whether it fetches) -> (the pruned function, its scheduled K-step function).
        self._scheduled: dict[tuple[int, bool], tuple[Any, Callable]] = {}
        self._stop_hooks: list = []
        self._next_step: int | None = None  # The global step after the runs scheduled so far.
        self._busy_since: float | None = None  # When the guarded call in progress started.
        self._watchdog: threading.Thread | None = None
        self._abandoned_at: float | None = None  # When a bounded wait gave up on the cluster.
        self.runs = 0  # Runs scheduled so far,
        self.fetched_runs = 0  # and those whose values the chief waited for.

    # Placement.

    def placing_variables(self, build: Callable[[], Any]) -> Any:
        """Runs `build` (a `tf.compat.v1.wrap_function` call) with every lifted variable on a ps task.

        `wrap_function` creates the eager variable of each `VarHandleOp` of the imported graph in its
        module's `_lift_single_variable`, on the current device, whatever the op's own device. That
        function is wrapped for the duration of the call so that each variable is created on the ps task
        of its op (`/job:ps/task:N`, what `replica_device_setter` chose), or the next ps task round-robin.
        """
        with tf_internals.lifted_variables_placed(self.placement.device_for):
            return build()

    @staticmethod
    def strip_worker_placement(graph_def) -> None:
        """Drops the `/job:worker` and `/job:chief` parts of the graph's placements (in place).

        A scheduled function runs on the worker the coordinator picks; an op pinned to `/job:worker` (or
        to one worker's task, v1's `worker_device`) would run on the first worker instead. Device types
        (`/device:GPU:0`) and ps placements stay.
        """
        for node in graph_def.node:
            if not node.device:
                continue
            spec = tf.DeviceSpec.from_string(node.device)
            if spec.job in _PLACED_JOBS:
                node.device = tf.DeviceSpec(device_type=spec.device_type, device_index=spec.device_index).to_string()

    # Sessions.

    def start_session(self, hooks: Sequence, global_step: tf.Variable | None) -> None:
        """A session of this chief starts (restored or initialized): its `StopAtStepHook`s bound the runs.

        The steps are counted here, as they are scheduled, from the global step at the start: the workers'
        reads of the global step race with each other, the chief's count does not.
        """
        self._settle_earlier_runs()
        self._stop_hooks = session_run_hook.last_step_hooks(hooks)
        self._next_step = None if global_step is None else int(global_step.numpy())

    def _settle_earlier_runs(self) -> None:
        """Waits for the runs an earlier session left (one that ended with an error does not wait for them).

        `ClusterCoordinator` keeps the error of a failed run until a later `schedule` or `join` raises it,
        and runs still pending when a session failed may fail after it: those errors belong to that session,
        which already raised one, so they are logged here instead of failing this session's first run.
        """
        self._pending.clear()
        for _ in range(2 * self.workers + 2):  # join() raises at the first error; each error is raised once.
            try:
                self._bounded(self.coordinator.join, _JOIN)
                return
            except tf.errors.OpError as error:
                logging.warning(
                    'A run scheduled by an earlier session failed after that session ended: %s: %s',
                    type(error).__name__,
                    _first_line(error),
                )

    def scheduled_step(self) -> int | None:
        """The global step once the runs scheduled so far have run (None before a session started): what the
        hooks are told is the step before a run, since the ps task's own value lags behind what is scheduled."""
        return self._next_step

    def finish(self) -> None:
        """Waits (bounded) for every scheduled run: before the hooks' `end()`, so that the last save has them."""
        self._pending.clear()
        self._bounded(self.coordinator.join, _JOIN)

    def guard(self, run: Callable[[], Any]) -> Any:
        """`run()` (a session run, or `finish`), watched; a lost ps task's `UnavailableError` as `ParameterServerError`.

        Some of a run cannot be moved off the caller's thread to bound its wait: the hooks read the global
        step and save checkpoints from the ps tasks directly, and TensorFlow waits forever for a ps task that
        stopped answering without closing its connections. So a watchdog ends the process (see `_watch`)
        when a guarded call has not returned `WATCHDOG_GRACE_SECS` after `step_timeout_secs`.
        """
        self._start_watchdog()
        self._busy_since = time.monotonic()
        try:
            return run()
        except tf.errors.UnavailableError as error:
            raise self._lost(error) from error
        finally:
            self._busy_since = None

    def _start_watchdog(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Thread(
                target=self._watch, name='compat_mts-parameter-server-watchdog', daemon=True
            )
            self._watchdog.start()

    def _watch(self) -> None:
        """Exits the process with `LOST_CLUSTER_EXIT_CODE` when a guarded call is stuck.

        No exception can reach the caller's thread while it is blocked inside TensorFlow, and the chief
        cannot go on without its ps tasks anyway: it says why on stderr and in the log, and exits at once.
        After a bounded wait gave up (`ParameterServerError`), the process gets as long again to end by
        itself, since TensorFlow's shutdown may wait for the stuck task too. The last good checkpoint stays
        as it was.
        """
        limit = self.timeout_secs + WATCHDOG_GRACE_SECS
        while True:
            _sleep(min(1.0, limit / 10))
            since = self._busy_since if self._abandoned_at is None else self._abandoned_at
            if since is not None and time.monotonic() - since > limit:
                message = (
                    f'compat_mts: a session call of this parameter-server chief has not returned in {limit:g} '
                    'secs (step_timeout_secs and a grace period): a ps task stopped answering, and '
                    'TensorFlow would wait for it forever. The variables live on the ps tasks, so training '
                    'cannot continue: the chief exits with code '
                    f'{LOST_CLUSTER_EXIT_CODE}. Restart the ps tasks and the chief, which resumes from the '
                    'latest checkpoint.'
                )
                logging.error('%s', message)
                sys.stderr.write(message + '\n')
                sys.stderr.flush()
                os._exit(LOST_CLUSTER_EXIT_CODE)  # No clean exit from a hung call.

    # Running.

    def run(
        self,
        function,
        args: list,
        global_step: tf.Variable | None,
        fetch: bool,
        tensors_only: Callable[[], Any] | None = None,
        trains: bool = True,
        worker_input: Any = None,
    ) -> list | None:
        """Schedules `function` (a pruned function of a wrapped graph) on a worker: K times, once if it does not train.

        `tensors_only()`, if given, is the pruned function of the tensor fetches alone: what a run that
        fetches runs once the steps have reached the stop hooks' `last_step`. A function that does not
        `train` (it moves no global step: `sess.run(loss)` between train runs, a summary, an eval op) runs
        once, as in v1, and its steps are not counted: the stop follows the train runs alone.

        `worker_input`, if given, is a per-worker iterator (`per_worker_iterator`): each step takes its next
        element on the worker, and its components are the function's first arguments, before `args`.

        Returns the values of its outputs in the last of those steps, as NumPy, when `fetch`; else None
        without waiting for the worker (at most `2 * workers` runs are pending).
        """
        count = self.steps_per_run if trains else 1
        if trains and self._next_step is not None and global_step is not None:
            count = min(count, max(self._stop_at() - self._next_step, 0))
            self._next_step += count
            if count == 0 and fetch and tensors_only is not None:
                function, count = tensors_only(), 1  # Past the last step: the values, no training.
        scheduled = self._scheduled_function(function, fetch, worker_input is not None)
        count = max(count, 1) if fetch else count
        inputs = () if worker_input is None else (worker_input,)
        try:  # A failure of an earlier run is raised here (or by a later wait), as TensorFlow reports it.
            value = self.coordinator.schedule(scheduled, args=(tf.constant(count), *inputs, *args))
        except tf.errors.UnavailableError as error:
            raise self._lost(error) from error
        self.runs += 1
        if fetch:
            self.fetched_runs += 1
            return list(self._bounded(value.fetch, 'a run scheduled on a worker'))
        self._pending.append(value)
        while len(self._pending) > 2 * self.workers:
            self._bounded(self._pending.popleft().fetch, 'a run scheduled on a worker')
        return None

    def _stop_at(self) -> int:
        last_steps = [hook.last_step for hook in self._stop_hooks if hook.last_step is not None]
        return min(last_steps) if last_steps else _NO_STOP

    def per_worker_iterator(self, dataset_fn: Callable[[], tf.data.Dataset]) -> Any:
        """An iterator of `dataset_fn()` made on each worker (`ClusterCoordinator.create_per_worker_dataset`)."""
        return iter(self.coordinator.create_per_worker_dataset(dataset_fn))

    def _scheduled_function(self, function, fetch: bool, with_input: bool = False) -> Callable:
        key = (id(function), fetch, with_input)
        known = self._scheduled.get(key)
        if known is not None:
            return known[1]
        output_count = len(function.outputs)
        last = 1 if fetch else 0  # A run that fetches runs its last step apart, for its outputs.

        def step(inputs, args):
            if not with_input:
                return function(*args)
            element = tf.nest.flatten(next(inputs[0]), expand_composites=True)
            return function(*element, *args)

        def run_steps(count, *args):
            inputs, args = (args[:1], args[1:]) if with_input else ((), args)

            def body(index):
                step(inputs, args)
                return index + 1

            tf.while_loop(lambda index: index < count - last, body, [tf.constant(0)])
            if fetch:
                return list(tf.nest.flatten(step(inputs, args))[:output_count])
            return None

        scheduled = tf.function(run_steps)
        self._scheduled[key] = (function, scheduled)  # The function is kept, so that its id stays its own.
        return scheduled

    def _bounded(self, wait: Callable[[], Any], what: str) -> Any:
        """`wait()`, or `ParameterServerError` after `timeout_secs`: TensorFlow waits forever for a silent task."""
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def waiting():
            try:
                outcome['value'] = wait()
            except BaseException as error:  # Re-raised in the caller's thread.
                outcome['error'] = error
            finally:
                done.set()

        threading.Thread(target=waiting, name='compat_mts-parameter-server-wait', daemon=True).start()
        if not done.wait(self.timeout_secs):
            # The cluster is stuck, and exiting the process may wait for it too: the watchdog ends the process
            # if it has not ended `step_timeout_secs` (and the grace period) from now.
            self._abandoned_at = time.monotonic()
            raise ParameterServerError(
                f'Waited {self.timeout_secs:g} secs (step_timeout_secs) for {what}: the cluster stopped running '
                "the chief's steps (a ps task or every worker is lost or stuck). The variables live on the ps "
                'tasks, so training cannot continue: restart the ps tasks and the chief, which resumes from the '
                'latest checkpoint.'
            )
        if 'error' in outcome:
            error = outcome['error']
            if isinstance(error, tf.errors.CancelledError) and what != _JOIN:
                # The coordinator cancels the pending runs when one fails; join() raises that failure.
                self._bounded(self.coordinator.join, _JOIN)
            if isinstance(error, tf.errors.UnavailableError):
                raise self._lost(error) from error
            raise error
        return outcome['value']

    def _lost(self, error: BaseException) -> ParameterServerError:
        message = error.message if isinstance(error, tf.errors.OpError) else str(error)
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        cause = next((line for line in lines if 'ps' in line or 'connect' in line), lines[0] if lines else '')
        return ParameterServerError(
            'A parameter server of the cluster was lost, or the chief cannot reach it: the variables it held are '
            'gone with it, so training cannot continue (workers that are lost are replaced by the others, a ps '
            'task is not). Restart the ps tasks and the chief, which resumes from the latest checkpoint. '
            f'Cause: {type(error).__name__}: {cause}'
        )


def _first_line(error: tf.errors.OpError) -> str:
    lines = [line.strip() for line in error.message.splitlines() if line.strip()]
    return lines[0] if lines else ''
