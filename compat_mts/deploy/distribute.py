"""v1's cluster arguments (`master`, `is_chief`, `config`, `max_wait_secs`) and multi-worker training on tf.distribute.

v1 ran one `MonitoredTrainingSession` per task of a cluster. TF2 runs one program per worker under
`tf.distribute.MultiWorkerMirroredStrategy` (configured by `TF_CONFIG`), whose collectives exchange the
gradients. compat_mts never exchanges parameters itself; it adds what v1's session did for a cluster:

- **Who is chief.** `Cluster.is_chief` is the strategy's (`strategy.extended.should_checkpoint`); it decides
  `is_chief` when the caller leaves the default. The chief alone runs the default and chief-only hooks and
  writes summaries and the visible checkpoints. Saving reads SyncOnRead variables through collectives, so
  every worker saves: the others into a temporary directory each, removed as soon as it is written.
- **Session creation.** Variable creation under the strategy is a collective broadcast, so every worker
  creates the checkpoint's save counter first. Then the chief restores (or initializes) and announces the
  checkpoint it restored through the coordination service; the other workers wait for that announcement for
  up to `max_wait_secs` (v1's `DeadlineExceededError` after it) and restore the same checkpoint, or run the
  same initialization.
- **Stopping together.** Every run ends with one small all-reduce of the workers' stop requests (hooks,
  `request_stop`, a listener, SIGTERM), so all of them stop after the same run instead of one waiting for
  the others in the next step's collective. A worker whose step or hook fails reports the error to the
  cluster, and the others fail at once with `ClusterError`. After a failure or a lost peer every collective
  of the process fails, so there is no v1-style recovery: the session raises `ClusterError`, and the
  workers are restarted together and resume from the latest checkpoint.
- **Parameter-server clusters** (v1's ps/worker programs) run on `tf.distribute.ParameterServerStrategy`,
  driven by a chief task: `compat_mts.deploy.parameter_server`. Until a program has its chief, a server of this
  process in a cluster of several tasks, or a graph placed on `/job:ps`, raises a `ValueError` that lists
  the edits (`PS_CLUSTERS_NOT_SUPPORTED`).
- **`master`**: `''` runs in-process. `grpc://host:port` connects the eager context to that TensorFlow server
  (`tf.config.experimental_connect_to_host`) and runs the session's steps on it, which is what a v1 session
  target meant. Connecting resets TensorFlow's runtime, so it must happen before the program creates
  variables. Under a strategy `master` is ignored: the strategy decides where steps run.
- **`config`** (a `tf.compat.v1.ConfigProto`): the fields with a TF2 equivalent are applied through
  `tf.config`; the rest are named in one warning, and so are those that came after the runtime started.
"""

from __future__ import annotations

import re
import shutil
import socket
import tempfile
import time

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _frozen_imports
from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import global_step as global_step_lib
from compat_mts.deploy import parameter_server
from compat_mts.core import program as program_lib
from compat_mts.core import validation

__all__ = ['ClusterError']  # The rest is the sessions' (the module's page is its docstring and this error).

_TARGET = re.compile(r'^grpc://([^\s:/]+):(\d{1,5})$')
REMOTE_DEVICE = '/job:worker/replica:0/task:0'
"""Where the steps of a session with a `grpc://` master run: the task of the server it connected to."""

_WAIT_LOG_SECS = 30  # How often a waiting non-chief says so, as v1's SessionManager did.


class ClusterError(RuntimeError):
    """A worker of the multi-worker cluster failed or was lost, so this worker cannot continue either.

    TensorFlow aborts every collective operation of a process once a peer has failed, and they stay aborted,
    so a `MultiWorkerMirroredStrategy` program cannot recover in-process as v1's `MonitoredSession` did from
    `UnavailableError`. Restart all workers: they resume from the latest checkpoint.
    """


def check_master(master) -> None:
    """Raises a TypeError/ValueError when `master` is not '' or a `grpc://host:port` target."""
    if not isinstance(master, str):
        raise TypeError(f"`master` must be a string ('' or 'grpc://host:port'), got {type(master).__name__}.")
    if master and not _TARGET.match(master):
        raise ValueError(
            f"`master` must be '' (in-process) or a TensorFlow server target 'grpc://host:port', got {master!r}."
        )


def check_not_between_graph(master: str) -> None:
    """Raises a ValueError saying what to do when `master` is this process's server in a cluster of several tasks.

    That is v1's between-graph replication (ps tasks hold the variables, each worker runs a session of its
    own), which compat_mts runs only with a chief that drives the session (`compat_mts.deploy.parameter_server`);
    on that chief, `master` is ignored. Checked when a session creator is made, before any graph is run.
    """
    if master and parameter_server.current() is None:
        own_server = _own_server(master)
        if own_server is not None:
            _check_single_task(master, own_server)


PS_CLUSTERS_NOT_SUPPORTED = (
    "compat_mts runs a parameter-server cluster with a chief task that drives the session: add a 'chief' job "
    'to the cluster, let the ps and worker tasks only start their server and join() it, and call '
    'compat_mts.parameter_server_strategy(cluster) in the chief before it builds the graph (drop master=). '
    "Or run as one worker with master='' (drop the server and tf.compat.v1.train.replica_device_setter), or "
    'as a multi-worker all-reduce cluster (tf.distribute.MultiWorkerMirroredStrategy with TF_CONFIG). See '
    'migration_guide/distributed.md, "Parameter-server clusters".'
)


def check_config(config) -> None:
    if config is not None and not isinstance(config, tf.compat.v1.ConfigProto):
        raise TypeError(f'`config` must be None or a tf.compat.v1.ConfigProto, got {type(config).__name__}.')


# `master`


def connect(master: str) -> str | None:
    """Connects the eager context to the server `master` names; returns the device to run steps on.

    Returns None for `''` and inside a strategy scope (where `master` is ignored, with a log line). The
    connection is made once per process; a program that connected itself (with
    `tf.config.experimental_connect_to_host`) is not connected again.

    Raises:
      ValueError: the process is not connected yet but the global step already exists. Connecting resets
        TensorFlow's runtime: variables created before it cannot be used by steps that run on the server.
    """
    if not master:
        return None
    if tf.distribute.has_strategy():
        logging.info(
            '`master` %r is ignored inside the scope of %s, which decides where the steps run.',
            master,
            type(tf.distribute.get_strategy()).__name__,
        )
        return None
    if parameter_server.current() is not None:
        logging.info(
            '`master` %r is ignored on the chief of a parameter-server cluster: the steps run on its workers.', master
        )
        return None
    own_server = _own_server(master)
    if own_server is not None:
        _check_single_task(master, own_server)
        logging.info(
            '`master` %s is a tf.distribute.Server of this process, whose cluster is this task alone: the '
            'session runs in-process, as v1 ran it on that server.',
            master,
        )
        return None
    if not _connected_to_remote_task():
        if global_step_lib.get_global_step() is not None:
            raise ValueError(
                f'`master` {master!r} runs the steps on that server, but this program created its variables '
                "(the global step among them) before connecting to it, and connecting resets TensorFlow's "
                'runtime: those variables cannot be used on the server. Connect first, at the start of the '
                f'program: tf.config.experimental_connect_to_host({master[len("grpc://") :]!r}, '
                "job_name='worker'), and create the model under tf.device('" + REMOTE_DEVICE + "')."
            )
        tf.config.experimental_connect_to_host(master[len('grpc://') :], job_name='worker')
        logging.info("Connected to %s; the session's steps run on %s.", master, REMOTE_DEVICE)
    return REMOTE_DEVICE


def _own_server(master: str) -> 'tf.distribute.Server | None':
    """The `tf.distribute.Server` of this process that `master` names (v1's `server.target`), or None.

    v1 programs start a server and give its target to the session of the same process. TensorFlow keeps no
    registry of a process's servers, so the live ones are looked up among the process's objects, once per
    session with a `grpc://` master.
    """
    host, port = _TARGET.match(master).groups()
    if host not in ('localhost', '127.0.0.1', '0.0.0.0', '[::1]', socket.gethostname()):
        return None
    for candidate in _frozen_imports.live_objects():
        if isinstance(candidate, tf.distribute.Server) and _TARGET.match(candidate.target).group(2) == port:
            return candidate
    return None


def _check_single_task(master: str, server: 'tf.distribute.Server') -> None:
    """Raises, saying what to do, when the server's cluster has other tasks: v1's between-graph replication."""
    jobs = {job.name: len(job.tasks) for job in server.server_def.cluster.job}
    if sum(jobs.values()) <= 1:
        return
    layout = ', '.join(f'{name}: {count} task{"s" * (count > 1)}' for name, count in sorted(jobs.items()))
    raise ValueError(
        f'`master` {master!r} is the tf.distribute.Server of this process in a cluster of several tasks ({layout}): '
        "v1's between-graph replication, where ps tasks hold the variables and each worker runs its own session. "
        + PS_CLUSTERS_NOT_SUPPORTED
    )


def _connected_to_remote_task() -> bool:
    prefix = REMOTE_DEVICE + '/'
    return any(device.name.startswith(prefix) for device in tf.config.list_logical_devices())


# `config`


def apply_config(config) -> None:
    """Applies the fields of `config` that TF2 can honour; names the others in one warning.

    Applied: `intra_op_parallelism_threads`, `inter_op_parallelism_threads` (`tf.config.threading`),
    `allow_soft_placement`, `log_device_placement`, `gpu_options.allow_growth` (memory growth),
    `gpu_options.visible_device_list` and `device_count` (visible GPUs; `{'CPU': n}` makes n logical CPU
    devices). Threads, devices and placement logging can only change before TensorFlow's runtime starts
    (its first operation); fields that came too late are named in a second warning.

    `log_device_placement` is `tf.debugging.set_log_device_placement(True)`: TensorFlow prints
    `<op name>: (<op type>): <device>` on stdout for each op of a function (the step, a wrapped graph's
    pruned call) when the function first runs, whatever `TF_CPP_MIN_LOG_LEVEL` (that hides only the INFO
    copies on stderr), as v1 did when a graph first ran. Once the runtime has started, TF 2.21 accepts the
    flag and prints nothing; an eager program has usually created its variables before its session, so
    the warning says to call `tf.debugging.set_log_device_placement(True)` right after importing TensorFlow.
    """
    if config is None:
        return
    too_late: list[str] = []

    def attempt(field: str, apply) -> None:
        try:
            apply()
        except RuntimeError:  # tf.config's "cannot be modified after initialization".
            too_late.append(field)

    if config.intra_op_parallelism_threads:
        attempt(
            'intra_op_parallelism_threads',
            lambda: tf.config.threading.set_intra_op_parallelism_threads(config.intra_op_parallelism_threads),
        )
    if config.inter_op_parallelism_threads:
        attempt(
            'inter_op_parallelism_threads',
            lambda: tf.config.threading.set_inter_op_parallelism_threads(config.inter_op_parallelism_threads),
        )
    if config.allow_soft_placement:
        tf.config.set_soft_device_placement(True)
    if config.log_device_placement and not tf_internals.log_device_placement_on():
        if tf_internals.runtime_started():
            too_late.append('log_device_placement')
        else:
            tf.debugging.set_log_device_placement(True)
    gpus = tf.config.list_physical_devices('GPU')
    if config.gpu_options.allow_growth:
        for gpu in gpus:
            attempt('gpu_options.allow_growth', lambda gpu=gpu: tf.config.experimental.set_memory_growth(gpu, True))
    visible_gpus = gpus
    if config.gpu_options.visible_device_list:
        indices = [int(index) for index in config.gpu_options.visible_device_list.split(',')]
        visible_gpus = [gpus[index] for index in indices if index < len(gpus)]
    if 'GPU' in config.device_count:
        visible_gpus = visible_gpus[: config.device_count['GPU']]
    if visible_gpus != gpus:
        attempt(
            'device_count' if 'GPU' in config.device_count else 'gpu_options.visible_device_list',
            lambda: tf.config.set_visible_devices(visible_gpus, 'GPU'),
        )
    if config.device_count.get('CPU', 1) > 1:
        cpu = tf.config.list_physical_devices('CPU')[0]
        logical = [tf.config.LogicalDeviceConfiguration()] * config.device_count['CPU']
        attempt('device_count', lambda: tf.config.set_logical_device_configuration(cpu, logical))
    ignored = _ignored_fields(config)
    if ignored:
        logging.warning(
            'compat_mts cannot honour these ConfigProto fields eagerly and ignores them: %s.', ', '.join(ignored)
        )
    if too_late:
        logging.warning(
            'These ConfigProto fields came after the TensorFlow runtime started (its first '
            'operation), too late to apply; set them before any TensorFlow operation runs: %s.%s',
            ', '.join(sorted(set(too_late))),
            _PLACEMENT_LOGGING_TOO_LATE if 'log_device_placement' in too_late else '',
        )


_PLACEMENT_LOGGING_TOO_LATE = (
    " TensorFlow ignores log_device_placement set after that, so the step's ops are not logged; call "
    'tf.debugging.set_log_device_placement(True) right after importing TensorFlow, and TensorFlow prints '
    "each op's device on stdout when the step first runs, as v1 did when the graph first ran."
)
_APPLIED = frozenset(
    {
        'intra_op_parallelism_threads',
        'inter_op_parallelism_threads',
        'allow_soft_placement',
        'log_device_placement',
        'device_count',
    }
)
_APPLIED_GPU_OPTIONS = frozenset({'allow_growth', 'visible_device_list'})


def _ignored_fields(config) -> list[str]:
    ignored = []
    for field, value in config.ListFields():
        if field.name == 'gpu_options':
            ignored.extend(
                f'gpu_options.{inner.name}' for inner, _ in value.ListFields() if inner.name not in _APPLIED_GPU_OPTIONS
            )
        elif field.name == 'device_count':
            ignored.extend(f"device_count['{kind}']" for kind in value if kind not in ('CPU', 'GPU'))
        elif field.name not in _APPLIED:
            ignored.append(field.name)
    return sorted(ignored)


# Multi-worker clusters

MULTI_WORKER_STRATEGIES = (
    tf.distribute.MultiWorkerMirroredStrategy,
    tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy,
)
"""`MultiWorkerMirroredStrategy` and its v1 spelling (TensorFlow's `CollectiveAllReduceStrategy`)."""


def workers_and_index(strategy: tf.distribute.Strategy) -> tuple[list[str], int]:
    """The addresses of a `MultiWorkerMirroredStrategy`'s workers (the chief first), and this one's index.

    The index is the strategy's own numbering: `chief` 0 when there is one, then the `worker` tasks. A cluster of
    fewer than two workers (no `TF_CONFIG`) is this process alone: `(['localhost'], 0)`.
    """
    resolver = strategy.cluster_resolver
    jobs = resolver.cluster_spec().as_dict() if resolver is not None else {}
    workers = list(jobs.get('chief', [])) + list(jobs.get('worker', []))
    if len(workers) < 2:
        return ['localhost'], 0
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    return workers, task_id + (len(jobs.get('chief', [])) if task_type == 'worker' else 0)


def current_cluster() -> 'Cluster | None':
    """The `Cluster` of the `MultiWorkerMirroredStrategy` whose scope is active, or None.

    None outside a strategy scope, under other strategies, and for a one-worker cluster: those are
    single-process runs, which pay nothing for multi-worker agreement.
    """
    if not tf.distribute.has_strategy():
        _warn_about_a_cluster_without_strategy()
        return None
    strategy = tf.distribute.get_strategy()
    if not isinstance(strategy, MULTI_WORKER_STRATEGIES):
        return None
    cluster = _clusters.get(strategy)
    if cluster is None:
        if len(workers_and_index(strategy)[0]) < 2:
            return None
        cluster = _clusters[strategy] = Cluster(strategy)
    return cluster


def _warn_about_a_cluster_without_strategy() -> None:
    global _warned_outside_scope
    if _warned_outside_scope:
        return
    try:
        jobs = validation.read_tf_config().get('cluster') or {}
    except ValueError:  # Said by the session's creation, which reads it first.
        return
    if 'ps' in jobs:  # A parameter-server cluster: its chief runs without a scope (compat_mts.deploy.parameter_server).
        return
    if len(jobs.get('chief', [])) + len(jobs.get('worker', [])) > 1:
        _warned_outside_scope = True
        logging.warning(
            'TF_CONFIG describes a cluster of several workers, but no MultiWorkerMirroredStrategy '
            'scope is active, so this session runs as a single process. Create the model and the '
            'session inside `with strategy.scope():`.'
        )


_warned_outside_scope = False


def all_reduce_in_the_graph() -> None:
    """Says that the program all-reduces in its own graph (`compat_mts.legacy.horovod`): its sessions run outside
    a strategy scope on purpose, and a multi-worker TF_CONFIG is not warned about."""
    global _warned_outside_scope
    _warned_outside_scope = True


def _forget_warning_outside_scope() -> None:
    global _warned_outside_scope
    _warned_outside_scope = False


program_lib.PROGRAM.register(
    'distribute.warned_outside_scope',
    'whether a multi-worker TF_CONFIG without a strategy scope was warned about',
    size=lambda: int(_warned_outside_scope),
    clear=_forget_warning_outside_scope,
)
# Strategy -> Cluster. A process has one multi-worker strategy, kept alive by its program.
_clusters: dict = program_lib.PROGRAM.table(
    'distribute.clusters', {}, 'the multi-worker cluster of each strategy', kind='process'
)


class Cluster:
    """This process's worker in a `MultiWorkerMirroredStrategy` cluster, and what its sessions agree on.

    One per strategy (`current_cluster()`), so that the agreement's collective is traced once and every
    worker allocates the same collective keys in the same order.
    """

    def __init__(self, strategy: tf.distribute.Strategy):
        if not tf_internals.HAS_COORDINATION_SERVICE:
            raise RuntimeError(
                "A session in a cluster of several workers needs TensorFlow's coordination service (the eager "
                "context's set_config_key_value, get_config_key_value and report_error_to_cluster), and this "
                'TensorFlow has none'
                + (' (COMPAT_MTS_NO_PRIVATE_TF is set)' if not tf_internals.PRIVATE_TF else '')
                + ': without it the workers can neither restore the checkpoint the chief restored nor fail '
                'together. Use the TensorFlow version compat_mts is tested on (2.21).'
            )
        self.strategy = strategy
        resolver = strategy.cluster_resolver
        self.task_type = resolver.task_type
        self.task_id = resolver.task_id
        self.is_chief = bool(strategy.extended.should_checkpoint)
        self.name = f'{self.task_type}:{self.task_id}'
        self._sessions = 0  # Sessions created so far: numbers the coordination-service key of the next one.
        self._sum = tf.function(self._sum_over_workers)
        self._flags = {
            (stop, preempted): tf.constant([stop, preempted], tf.int32) for stop in (0, 1) for preempted in (0, 1)
        }

    def _sum_over_workers(self, values: tf.Tensor) -> tf.Tensor:
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, self.strategy.run(lambda: values), axis=None)

    def _all_reduce(self, first: bool, second: bool) -> tuple[bool, bool]:
        try:
            total = self._sum(self._flags[int(first), int(second)]).numpy()
        except tf.errors.OpError as error:
            raise self.lost(error) from error
        return bool(total[0]), bool(total[1])

    # What every run agrees on.

    def agree(self, stop: bool, preempted: bool) -> tuple[bool, bool]:
        """Whether any worker stops after this run, and whether any was preempted (SIGTERM).

        Raises:
          ClusterError: a peer failed or was lost.
        """
        return self._all_reduce(stop, preempted)

    def chief_decides(self, decision: bool) -> bool:
        """The chief's `decision`, on every worker (a time-based trigger differs from clock to clock)."""
        return self._all_reduce(decision and self.is_chief, False)[0]

    def failed(self, error: BaseException) -> 'ClusterError | None':
        """Handles `error`, raised by this worker's step or hooks.

        Returns the `ClusterError` to raise instead when `error` came from the cluster (a peer failed or was
        lost). Otherwise reports `error` to the other workers, whose collectives then fail at once instead of
        waiting for this one, and returns None: raise `error` itself.
        """
        if _from_cluster(error):
            return self.lost(error)
        code = error.error_code if isinstance(error, tf.errors.OpError) else tf.errors.INTERNAL
        message = f'compat_mts: {self.name} failed with {type(error).__name__}: {_first_line(error)}'
        try:
            tf_internals.report_error_to_cluster(code, message)
        except (tf.errors.OpError, ValueError) as report_error:
            logging.warning('Could not report the failure of %s to the other workers: %s', self.name, report_error)
        return None

    def lost(self, error: BaseException) -> ClusterError:
        """The error this worker raises when the cluster failed under it."""
        return ClusterError(
            f'{self.name} cannot continue: another worker of the cluster failed or was lost, and TensorFlow '
            'has aborted every collective operation of this process. Restart all workers; they resume from '
            f'the latest checkpoint. Cause: {_first_line(error)}'
        )

    # Session creation.

    def prepare(self, checkpoint: tf.train.Checkpoint) -> None:
        """Creates `checkpoint`'s save counter on every worker, at the same point (it is a collective)."""
        with self.strategy.scope():
            checkpoint.save_counter

    def announce_ready(self, restored_path: str | None) -> None:
        """The chief: tells the other workers that the session is initialized, and from which checkpoint."""
        tf_internals.set_cluster_value(self._ready_key(), restored_path or '')
        self._sessions += 1

    def wait_for_chief(self, max_wait_secs: float) -> str | None:
        """A non-chief: waits for the chief's announcement; returns the checkpoint it restored, or None.

        Raises:
          tf.errors.DeadlineExceededError: v1's "Session was not ready after waiting N secs." when the chief
            has not announced within `max_wait_secs`.
        """
        key = self._ready_key()
        deadline = time.monotonic() + max_wait_secs
        while True:
            wait_secs = max(0.001, min(deadline - time.monotonic(), _WAIT_LOG_SECS))
            try:
                path = tf_internals.get_cluster_value(key, int(wait_secs * 1000) or 1)
                break
            except tf.errors.DeadlineExceededError:
                if time.monotonic() >= deadline:
                    raise tf.errors.DeadlineExceededError(
                        None, None, 'Session was not ready after waiting %d secs.' % max_wait_secs
                    ) from None
                logging.info('%s is waiting for the chief to initialize or restore the model.', self.name)
        self._sessions += 1
        return path or None

    def _ready_key(self) -> str:
        return f'compat_mts/session_{self._sessions}/chief_ready'

    # Checkpoints.

    def save_copy(self, checkpoint: tf.train.Checkpoint, step: int, checkpoint_name: str) -> None:
        """A non-chief's part in a save: writes `checkpoint` into a temporary directory, then removes it.

        The save runs the same operations as the chief's (SyncOnRead variables are read with collectives,
        the save counter advances), so workers stay in step; nothing lands in the chief's directory.
        """
        directory = tempfile.mkdtemp(prefix=f'compat_mts-{self.task_type}{self.task_id}-')
        try:
            manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1, checkpoint_name=checkpoint_name)
            checkpoints.save_numbered(manager, step)
        finally:
            shutil.rmtree(directory)


def _from_cluster(error: BaseException) -> bool:
    """Whether `error` says that the cluster failed: a peer's reported error, or a lost peer."""
    if not isinstance(error, tf.errors.OpError):
        return False
    if isinstance(error, (tf.errors.UnavailableError, tf.errors.DeadlineExceededError)):
        return True
    return 'Collective ops is aborted' in error.message or 'Error reported from /job:' in error.message


def _first_line(error: BaseException) -> str:
    text = error.message if isinstance(error, tf.errors.OpError) else str(error)
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:
        if 'Collective ops is aborted by' in line or 'Error reported from' in line:
            return line.strip()
    return lines[0].strip() if lines else type(error).__name__


def resolve_is_chief(is_chief: bool, cluster: Cluster) -> bool:
    """`is_chief` under a cluster: the cluster's chief is the chief.

    `is_chief=True` is v1's default, so on another worker it is taken as "not given". `is_chief=False` on the
    cluster's chief cannot be honoured (the chief's checkpoints are the cluster's) and is logged.
    """
    if not is_chief and cluster.is_chief:
        logging.warning(
            '`is_chief=False` is ignored on %s, the chief of the %s cluster: its checkpoints and '
            "summaries are the cluster's.",
            cluster.name,
            type(cluster.strategy).__name__,
        )
    return cluster.is_chief
