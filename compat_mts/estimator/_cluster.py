"""The tasks of a distributed Estimator job (no `train_distribute`): v1's between-graph training on TF2's engine.

v1's job had a chief, workers and ps tasks, each running `train_and_evaluate` (or `Estimator.train`) with its
own `TF_CONFIG`: every trainer task ran its own training session against variables on the ps tasks, and the
ps tasks `join()`ed their servers forever. TensorFlow 2 runs that job as parameter-server training
(`tf.distribute.ParameterServerStrategy` with a `ClusterCoordinator`), and compat_mts's sessions already run v1
graphs on it (`compat_mts.deploy.parameter_server`). So each task does this:

- **chief** (or the legacy **master**): `compat_mts.parameter_server_strategy` on the training cluster, once
  per process, then `Estimator.train` as in one process: the Estimator's graph keeps its variables on the ps
  tasks and its steps run on the workers, each step scheduled on a free worker; the chief alone writes
  checkpoints and summaries, and `max_steps` counts every worker's steps, as v1's global step did.
- **worker** and **ps**: start their `tf.distribute.Server` and serve until training has ended: the model
  directory holds a checkpoint at `max_steps` and the chief's process has ended (or, with no `max_steps`, the
  chief has been gone for `CHIEF_GONE_SECS`). Then they return, so the process exits 0: v1's ps never
  returned, and a job manager that waits for the job to finish had to kill it. v1's worker slept
  `(index + 1) * 5` s before training; a worker here only serves, so it does not wait.
- **evaluator**: not part of the training cluster (TensorFlow's parameter-server training hangs when it is,
  tensorflow/tensorflow#46169): it evaluates checkpoints in its own process (`training.py`).

Faults: a lost worker is the coordinator's (its steps go to the other workers). A lost ps task loses the
variables: the chief raises `compat_mts.ParameterServerError`, and every other task, which watches the ps
tasks (`ClusterWatch`), raises `LostTaskError` naming the task once it has been unreachable for
`LOST_TASK_SECS`, so that the whole job ends with a failure instead of hanging; run it again and the chief
resumes from the last checkpoint.
"""

from __future__ import annotations

import math
import socket
import time

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.deploy import parameter_server
from compat_mts.core import program as program_lib
from compat_mts.estimator import _distributed

TRAINER_TASKS = ('chief', 'master', 'worker')
LOST_TASK_SECS = 10.0  # A ps task unreachable this long is lost (a restart of its machine takes longer).
CHIEF_GONE_SECS = 60.0  # With no max_steps: the chief gone this long has ended training.
POLL_SECS = 1.0
# Bound at import: a program's tests may patch `time.sleep` with a fake clock.
sleep = time.sleep


class LostTaskError(RuntimeError):
    """A task of the training cluster stopped answering: the job cannot go on (run it again to resume)."""


# The chief's strategy of each training cluster, made once per process (it connects the process to the cluster).
_strategies: dict[str, tf.distribute.ParameterServerStrategy] = program_lib.PROGRAM.table(
    'estimator._cluster.strategies',
    {},
    'the parameter-server strategy of each training cluster this chief joined',
    kind='process',
)


def training_cluster(config) -> tf.train.ClusterSpec | None:
    """The parameter-server cluster that `config`'s task trains in, or None when it trains alone.

    `TF_CONFIG`'s cluster without the evaluator (not part of training) and with a legacy `master` job
    renamed `chief` (TensorFlow 2's coordinator task); None without a cluster, without ps tasks, or with a
    `train_distribute` other than v1's `ParameterServerStrategy` (that strategy distributes the training).
    """
    if config.train_distribute is not None and not _distributed.is_parameter_server(config.train_distribute):
        return None
    jobs = dict(config.cluster_spec.as_dict())
    jobs.pop('evaluator', None)
    if not jobs.get('ps'):
        return None
    if 'master' in jobs:
        jobs['chief'] = jobs.pop('master')
    return tf.train.ClusterSpec(jobs)


def task_of(config) -> tuple[str, int]:
    """`config`'s task in the training cluster: the legacy `master` is the chief there."""
    task_type = 'chief' if config.task_type == 'master' else config.task_type
    return task_type, int(config.task_id)


MAX_STEPS_PER_RUN = 10


def steps_per_run(config) -> int:
    """The steps each of the chief's runs schedules on a worker: the largest K <= `MAX_STEPS_PER_RUN` that
    divides every step period of `config` (checkpoints, summaries, the step-rate log), 1 when none.

    Scheduling a step costs the chief milliseconds (TensorFlow's closure, the hooks, the global step's read
    from its ps task), so one step per run would cap the job near a few hundred steps a second whatever the
    number of workers. K steps per run keep every checkpoint, summary and log line at the steps v1 wrote them;
    the hooks see the global step move by K per run, as v1's chief saw it move by the other workers' steps.
    """
    periods = [
        int(period)
        for period in (config.save_checkpoints_steps, config.save_summary_steps, config.log_step_count_steps)
        if period
    ]
    divisor = math.gcd(*periods) if periods else MAX_STEPS_PER_RUN
    return max(k for k in range(1, MAX_STEPS_PER_RUN + 1) if divisor % k == 0)


def join_as_chief(cluster: tf.train.ClusterSpec, config) -> tf.distribute.ParameterServerStrategy:
    """Connects this chief's process to `cluster`'s ps and worker tasks, once (see the module docstring)."""
    key = repr(sorted(cluster.as_dict().items()))
    if key not in _strategies:
        _strategies[key] = parameter_server.parameter_server_strategy(cluster, steps_per_run=steps_per_run(config))
    return _strategies[key]


def serve_until_trained(config, cluster: tf.train.ClusterSpec, max_steps: int | None) -> None:
    """A worker's or ps task's part: its server, until training has ended (see the module docstring).

    Raises:
      LostTaskError: a ps task of the cluster stopped answering before training ended.
    """
    task_type, task_id = task_of(config)
    logging.info('Start Tensorflow server.')
    server = tf.distribute.Server(
        cluster, job_name=task_type, task_index=task_id, protocol=config.protocol or 'grpc', start=True
    )
    own = cluster.task_address(task_type, task_id)
    logging.info(
        'Serving as %s:%d at %s: the chief schedules the steps; waiting for training to reach max_steps=%s.',
        task_type,
        task_id,
        own,
        max_steps,
    )
    watch = ClusterWatch(cluster, skip=own)
    wait_until_trained(config.model_dir, max_steps, watch, cluster.task_address('chief', 0))
    logging.info('Training has ended; %s:%d stops serving.', task_type, task_id)
    del server


def wait_until_trained(
    model_dir: str, max_steps: int | None, watch: 'ClusterWatch', chief_address: str | None = None
) -> None:
    """Returns when `model_dir` holds a checkpoint at `max_steps` and the chief's process has ended (or, without
    `max_steps`, the chief has been gone for `CHIEF_GONE_SECS`).

    The chief still needs its ps tasks after that checkpoint: the hooks' `end()` read the global step there, and
    a legacy `master` evaluates after its checkpoints first. Its server closes when its process ends.

    Raises:
      LostTaskError: from `watch`, before training ended.
    """
    chief_gone_since = None
    chief_seen = False
    while True:
        if max_steps is not None and trained_to(model_dir, max_steps):
            if chief_address is None or not reachable(chief_address):
                return
        raise_if_lost(watch, model_dir, max_steps)
        if max_steps is None and chief_address is not None:
            if reachable(chief_address):
                chief_seen, chief_gone_since = True, None
            elif chief_seen:
                chief_gone_since = chief_gone_since or time.monotonic()
                if time.monotonic() - chief_gone_since > CHIEF_GONE_SECS:
                    return
        sleep(POLL_SECS)


def raise_if_lost(watch: 'ClusterWatch', model_dir: str, max_steps: int | None) -> None:
    """Raises `LostTaskError` when `watch` finds a ps task lost and training had not ended."""
    lost = watch.lost()
    if lost is not None and not (max_steps is not None and trained_to(model_dir, max_steps)):
        raise LostTaskError(
            f'The ps task {lost} has not answered for {LOST_TASK_SECS:.0f} s, and training had not ended: the '
            'variables it held are lost. Restart the job (its ps tasks and its chief): the chief resumes from the '
            f'latest checkpoint in {model_dir}, and the evaluator goes on with the next one.'
        )


def trained_to(model_dir: str, max_steps: int) -> bool:
    """Whether the global step of the latest checkpoint of `model_dir` is at `max_steps` or past it."""
    latest = checkpoints.latest_checkpoint(model_dir) if model_dir and tf.io.gfile.isdir(model_dir) else None
    if latest is None:
        return False
    try:
        return int(tf.train.load_variable(latest, tf.compat.v1.GraphKeys.GLOBAL_STEP)) >= max_steps
    except (tf.errors.OpError, ValueError):  # Being replaced by the chief's next save: read it next time.
        return False


class ClusterWatch:
    """Watches the ps tasks of a cluster: `lost()` names one unreachable for `LOST_TASK_SECS` since it answered.

    A task that never answered yet is not lost (the job manager may still be starting it). The probe is a TCP
    connection to the task's server port, closed at once.
    """

    def __init__(self, cluster: tf.train.ClusterSpec | dict, skip: str | None = None, jobs: tuple = ('ps',)):
        spec = cluster.as_dict() if isinstance(cluster, tf.train.ClusterSpec) else cluster
        self._tasks = {
            f'/job:{job}/task:{index}': address
            for job in jobs
            for index, address in enumerate(spec.get(job, []))
            if address != skip
        }
        self._answered: dict[str, float] = {}  # task -> when it last answered

    def lost(self) -> str | None:
        """The first watched task that answered once and not for `LOST_TASK_SECS` since, else None."""
        for task, address in self._tasks.items():
            if reachable(address):
                self._answered[task] = time.monotonic()
            elif task in self._answered and time.monotonic() - self._answered[task] > LOST_TASK_SECS:
                return f'{task} ({address})'
        return None


def reachable(address: str) -> bool:
    """Whether a server listens at `host:port` (a TCP connection, closed at once)."""
    host, _, port = address.rpartition(':')
    try:
        with socket.create_connection((host.strip('[]'), int(port)), timeout=2.0):
            return True
    except OSError:
        return False
