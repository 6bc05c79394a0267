"""One task of a v1 ps/worker program on a parameter-server cluster, as migration_guide/distributed.md writes it.

Usage: parameter_server_task.py JOB INDEX CHECKPOINT_DIR, with the cluster (chief, ps, worker jobs) as JSON in
`PS_CLUSTER`; the chief also gets it in `TF_CONFIG`, where `parameter_server_strategy()` reads it. The ps and
worker tasks start their server and join it; the chief trains the v1 graph of `build_graph` (a
`replica_device_setter` placement, a v1 optimizer whose learning rate is fed on every run) with
`MonitoredTrainingSession`, and prints one JSON object per line (`{"event": ..., ...}`):

1. `first`: a fresh session trains to global step `FIRST_STEPS`, with a `LoggingTensorHook` and a hook that
   fetches the loss on every fourth run only; it prints where the variables live, what the hooks got, and
   how many runs waited for a worker.
2. `mixed`: a session on a graph of its own (no checkpoints) whose loop fetches the loss, the global step or
   the summaries between its train runs, as v1 loops that print the loss every few runs did; it stops at
   `MIXED_LAST_STEP`, or is cut after `MIXED_MAX_RUNS` runs (when the fetch-only runs are counted as steps).
3. `resumed`: a second session (a new graph, as a restarted chief builds it) restores that checkpoint and
   writes the graph's summaries every 20 steps. At
   global step `KILL_WORKER_AT` it kills worker 1 (`PS_KILL_WORKER` is its pid) and trains on with worker 0;
   `after_worker_loss` reports the step reached. At `KILL_PS_AT` it kills the ps task (`PS_KILL_PS`), and
   `ps_lost` reports the error and how long it took to come. Then the process exits as usual.

`frozen` (JOB) is a chief on a cluster of its own: a session whose step fails on a worker (`step_failed`),
then one that stops its ps task (`frozen_chief`).

`frozen_at_start` (JOB) is a chief on a cluster of its own that stops its ps task after building its graph and
before creating its session, whose variables the ps task would hold (`frozen_before_the_session`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts import legacy
from compat_mts.deploy import parameter_server

STEPS_PER_RUN = 5
FIRST_STEPS = 40
MIXED_LAST_STEP = 30
MIXED_MAX_RUNS = 300  # Far more than the runs to MIXED_LAST_STEP; a loop that never stops is cut here.
KILL_WORKER_AT = 60
AFTER_WORKER_LOSS = 100
KILL_PS_AT = 110
LOSS_EVERY_N_RUNS = 4
LEARNING_RATE = 0.05
FREEZE_PS_AT = 20
FAILING_RUNS = 6
FROZEN_STEP_TIMEOUT_SECS = 15  # The first run traces and registers its functions within it, on a loaded machine too.


def emit(event: str, **values) -> None:
    print(json.dumps({'event': event, **values}), flush=True)


def build_graph(cluster, check_numerics: bool = False):
    """v1 graph code as written for a ps cluster: variables on /job:ps by the device setter."""
    with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(cluster=cluster)):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        features = tf.random.stateless_normal([16, 4], seed=[1, 2])
        labels = tf.reduce_sum(features, axis=1, keepdims=True)
        weights = tf.compat.v1.get_variable('weights', [4, 1], initializer=tf.compat.v1.zeros_initializer())
        bias = tf.compat.v1.get_variable('bias', [1], initializer=tf.compat.v1.zeros_initializer())
        predictions = tf.matmul(features, weights) + bias
        if check_numerics:  # On the forward path that the gradients read, so that the train op runs it.
            predictions = tf.debugging.check_numerics(predictions, 'the predictions are not finite')
        loss = tf.reduce_mean(tf.square(predictions - labels), name='loss')
        tf.compat.v1.summary.scalar('training_loss', loss)
        learning_rate = tf.compat.v1.placeholder(tf.float32, [], name='learning_rate')  # Fed on every run.
        train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return global_step, loss, train_op


class EveryNthRunLoss(mts.SessionRunHook):
    """Fetches the loss on every n-th run only, as a v1 hook that triggers now and then."""

    def __init__(self, loss, every_n_runs: int):
        self._loss = loss
        self._every_n_runs = every_n_runs
        self._runs = 0
        self.values: list[float] = []

    def before_run(self, run_context):
        self._runs += 1
        if self._runs % self._every_n_runs == 0:
            return mts.SessionRunArgs(self._loss)
        return None

    def after_run(self, run_context, run_values):
        if run_values.results is not None:
            self.values.append(float(run_values.results))


class Actions(mts.SessionRunHook):
    """Runs `actions[step]()` once the global step (read from its ps task, as the stop hook reads it) passes `step`."""

    def __init__(self, actions: dict):
        self._actions = dict(actions)

    def before_run(self, run_context):
        return mts.SessionRunArgs(mts.STALE_GLOBAL_STEP)

    def after_run(self, run_context, run_values):
        for step in sorted(self._actions):
            if run_values.results >= step:
                self._actions.pop(step)()


def wrapped_graph() -> legacy.WrappedGraph:
    """What the session runs: the program's graph, imported with its variables on the ps task."""
    with global_step_lib.outside_graph_mode():  # Outside the program's graph, whose own global step is the graph's.
        return legacy.wrapped_graph_of_global_step()


def trained_step() -> int:
    """The global step on its ps task."""
    with global_step_lib.outside_graph_mode():
        return int(wrapped_graph().global_step.numpy())


def chief(cluster, checkpoint_dir: str) -> None:
    # The cluster from TF_CONFIG (whose task is this chief), as a TF2 job starts it.
    strategy = mts.parameter_server_strategy(steps_per_run=STEPS_PER_RUN, step_timeout_secs=60)
    scheduler = parameter_server.current()
    emit('started', strategy=type(strategy).__name__)

    with tf.Graph().as_default():
        _, loss, train_op = build_graph(cluster)
        every_nth = EveryNthRunLoss(loss, LOSS_EVERY_N_RUNS)
        logged = mts.LoggingTensorHook({'loss': loss}, every_n_iter=10)
        runs = 0
        fetched_before = scheduler.fetched_runs
        with mts.MonitoredTrainingSession(
            is_chief=True,
            checkpoint_dir=checkpoint_dir,
            save_checkpoint_steps=20,
            hooks=[mts.StopAtStepHook(last_step=FIRST_STEPS), every_nth, logged],
            log_step_count_steps=None,
            save_summaries_steps=None,
        ) as sess:
            variables = wrapped_graph().variables
            while not sess.should_stop():
                sess.run(train_op, feed_dict={'learning_rate:0': LEARNING_RATE})
                runs += 1
            step = trained_step()
        emit(
            'first',
            runs=runs,
            step=step,
            devices={variable.name: variable.device for variable in variables},
            losses=every_nth.values,
            fetched_runs=scheduler.fetched_runs - fetched_before,
            checkpoint=tf.train.latest_checkpoint(checkpoint_dir),
        )

    mixed_loop(cluster, scheduler)

    def kill(name: str, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        emit('killed', task=name, at=time.time())

    with tf.Graph().as_default():
        step_variable, loss, train_op = build_graph(cluster)
        steps = {}

        class Restored(mts.SessionRunHook):
            def after_create_session(self, session, coord):
                steps['restored'] = int(session.run(step_variable))

        actions = Actions(
            {
                KILL_WORKER_AT: lambda: kill('worker:1', int(os.environ['PS_KILL_WORKER'])),
                AFTER_WORKER_LOSS: lambda: emit(
                    'after_worker_loss', step=trained_step(), checkpoint=tf.train.latest_checkpoint(checkpoint_dir)
                ),
                KILL_PS_AT: lambda: kill('ps:0', int(os.environ['PS_KILL_PS'])),
            }
        )
        try:
            with mts.MonitoredTrainingSession(
                checkpoint_dir=checkpoint_dir,
                save_checkpoint_steps=20,
                hooks=[Restored(), actions],
                log_step_count_steps=None,
                save_summaries_steps=20,
            ) as sess:
                emit('resumed', step=steps['restored'])
                while not sess.should_stop():
                    sess.run(train_op, feed_dict={'learning_rate:0': LEARNING_RATE})
        except mts.ParameterServerError as error:
            emit('ps_lost', error=str(error), at=time.time(), checkpoint=tf.train.latest_checkpoint(checkpoint_dir))
        else:
            emit('no_error')


def mixed_loop(cluster, scheduler) -> None:
    """A loop that alternates train runs with runs that only fetch: the loss, the global step, the summaries."""
    with tf.Graph().as_default():
        global_step, loss, train_op = build_graph(cluster)
        summaries = tf.compat.v1.summary.merge_all()
        fetch_only = [loss, global_step, loss, summaries]
        losses, runs, fetched_before = [], 0, scheduler.fetched_runs
        with mts.MonitoredTrainingSession(
            is_chief=True,
            hooks=[mts.StopAtStepHook(last_step=MIXED_LAST_STEP)],
            log_step_count_steps=None,
            save_summaries_steps=None,
        ) as sess:
            while not sess.should_stop() and runs < MIXED_MAX_RUNS:
                if runs % 2 == 0:
                    sess.run(train_op, feed_dict={'learning_rate:0': LEARNING_RATE})
                else:
                    fetch = fetch_only[runs // 2 % len(fetch_only)]
                    value = sess.run(fetch)
                    if fetch is loss:
                        losses.append(float(value))
                runs += 1
            stopped = sess.should_stop()
            step = trained_step()
    emit(
        'mixed',
        runs=runs,
        stopped=stopped,
        step=step,
        losses=losses,
        fetched_runs=scheduler.fetched_runs - fetched_before,
    )


def frozen_chief(cluster, checkpoint_dir: str) -> None:
    """A session whose learning rate is NaN, so that the loss check fails on a worker; then one that trains until
    the global step passes `FREEZE_PS_AT` and stops the ps task (SIGSTOP, `PS_FREEZE_PS` is its pid): a task that
    no longer answers but keeps its connections open. The watchdog must end this process."""
    mts.parameter_server_strategy(steps_per_run=STEPS_PER_RUN, step_timeout_secs=FROZEN_STEP_TIMEOUT_SECS)
    with tf.Graph().as_default():  # First a step that fails on a worker: its own error reaches the chief.
        _, _, train_op = build_graph(cluster, check_numerics=True)
        try:
            with mts.MonitoredTrainingSession(log_step_count_steps=None, save_summaries_steps=None) as sess:
                for _ in range(FAILING_RUNS):
                    sess.run(train_op, feed_dict={'learning_rate:0': float('nan')})
        except Exception as error:  # What it is, is the test's to check.
            emit('step_failed', error=type(error).__name__, message=str(error)[:300])
        else:
            emit('no_step_error')
    with tf.Graph().as_default():
        _, _, train_op = build_graph(cluster)

        def freeze():
            os.kill(int(os.environ['PS_FREEZE_PS']), signal.SIGSTOP)
            emit('frozen', at=time.time())

        with mts.MonitoredTrainingSession(
            checkpoint_dir=checkpoint_dir,
            hooks=[Actions({FREEZE_PS_AT: freeze})],
            log_step_count_steps=None,
            save_summaries_steps=None,
        ) as sess:
            while not sess.should_stop():
                sess.run(train_op, feed_dict={'learning_rate:0': LEARNING_RATE})
    emit('no_exit')


def frozen_before_the_session(cluster, checkpoint_dir: str) -> None:
    """Stops the ps task (SIGSTOP) once the graph is built; creating the session initializes the variables on
    it and would wait forever. The watchdog must end this process."""
    mts.parameter_server_strategy(steps_per_run=STEPS_PER_RUN, step_timeout_secs=FROZEN_STEP_TIMEOUT_SECS)
    with tf.Graph().as_default():
        _, _, train_op = build_graph(cluster)
        os.kill(int(os.environ['PS_FREEZE_PS']), signal.SIGSTOP)
        emit('frozen', at=time.time())
        with mts.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, log_step_count_steps=None) as sess:
            emit('session_created')
            sess.run(train_op, feed_dict={'learning_rate:0': LEARNING_RATE})
    emit('no_exit')


def main(job: str, index: int, checkpoint_dir: str) -> None:
    cluster = tf.train.ClusterSpec(json.loads(os.environ['PS_CLUSTER']))
    if job == 'frozen':
        frozen_chief(cluster, checkpoint_dir)
    elif job == 'frozen_at_start':
        frozen_before_the_session(cluster, checkpoint_dir)
    elif job != 'chief':  # v1's `if job_name == 'ps': server.join()`, for the workers too.
        server = tf.distribute.Server(cluster, job_name=job, task_index=index, protocol='grpc')
        emit('serving', job=job, index=index)
        server.join()
    chief(cluster, checkpoint_dir)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
