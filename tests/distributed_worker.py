"""One worker of the multi-worker tests: a v1-style MonitoredTrainingSession program under MultiWorkerMirroredStrategy.

Usage: distributed_worker.py SCENARIO CHECKPOINT_DIR   (TF_CONFIG names the cluster and this worker)

Every worker of a cluster runs the same scenario, as every task of a v1 cluster ran the same program. The
worker prints one JSON object per line (`{"event": ..., ...}`) for the test to read:

- `first`: a fresh start. The chief's `init_fn` waits until the other worker's first session, with
  `max_wait_secs=0.5`, has raised v1's DeadlineExceededError (a file says so); its second, with 60 s,
  succeeds. Then: a chief-only
  hook stops the chief alone at step 5 (the others must stop there too); a distributed dataset runs out (the
  same step everywhere); a time-based checkpoint timer (every worker saves when the chief's clock says so);
  last, worker 1's hook fails, and the others must fail at once with ClusterError.
- `resume`: restores the latest checkpoint, trains 4 more steps, then trains until this process is killed or
  gets SIGTERM (the test does that; on SIGTERM every worker saves and exits with code 42).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

import compat_mts as mts
from compat_mts.deploy import distribute

LEARNING_RATE = 0.05


def emit(event: str, **values) -> None:
    print(json.dumps({'event': event, 'time': time.time(), **values}), flush=True)


class Model:
    """A linear regression whose workers hold different data; the strategy averages their gradients."""

    def __init__(self, strategy: tf.distribute.Strategy, task_id: int):
        self.strategy = strategy
        self.global_step = mts.get_or_create_global_step()
        self.w = tf.Variable(tf.zeros([3, 1]), name='w')
        self.checkpoint = tf.train.Checkpoint(w=self.w)
        rng = np.random.default_rng(task_id)
        self.features = tf.constant(rng.normal(size=(8, 3)).astype(np.float32))
        self.targets = tf.reduce_sum(self.features, axis=1, keepdims=True)
        self.step = tf.function(self._step)

    def _update(self, features, targets):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(features, self.w) - targets))
        gradient = tf.distribute.get_replica_context().all_reduce('mean', tape.gradient(loss, self.w))
        self.w.assign_sub(LEARNING_RATE * gradient)
        self.global_step.assign_add(1)
        tf.summary.scalar('loss', loss)
        return loss

    def _step(self):
        loss = self.strategy.run(self._update, args=(self.features, self.targets))
        return {'loss': self.strategy.reduce('mean', loss, axis=None)}

    def dataset_step(self, examples: int):
        """A step that reads a distributed dataset of `examples` examples, two per step over the cluster."""
        data = tf.data.Dataset.from_tensor_slices((self.features[:examples], self.targets[:examples])).batch(2)
        iterator = iter(self.strategy.experimental_distribute_dataset(data))

        @tf.function
        def step():
            features, targets = next(iterator)
            return {
                'loss': self.strategy.reduce(
                    'mean', self.strategy.run(self._update, args=(features, targets)), axis=None
                )
            }

        return step

    def state(self) -> dict:
        return {
            'step': int(self.global_step.numpy()),
            'w': self.w.numpy().ravel().tolist(),
            'save_counter': int(self.checkpoint.save_counter.numpy()),
        }


class StopAt(mts.SessionRunHook):
    """Requests a stop once the global step reaches `step` (given to the chief alone, as a chief-only hook)."""

    def __init__(self, step: int):
        self._step = step

    def after_run(self, run_context, run_values):
        if int(mts.get_global_step().numpy()) >= self._step:
            run_context.request_stop()


class FailAt(mts.SessionRunHook):
    """Raises ValueError on worker `task_id` once the global step reaches `step`."""

    def __init__(self, step: int, task_id: int):
        self._step = step
        self._fails = task_id == 1

    def after_run(self, run_context, run_values):
        if self._fails and int(mts.get_global_step().numpy()) >= self._step:
            emit('failing')
            raise ValueError('worker 1 hook failed on purpose')


def train(session, step) -> None:
    while not session.should_stop():
        session.run(step)


def first(strategy, model, cluster, directory: str) -> None:
    gave_up = directory.rstrip(os.sep) + '.non_chief_gave_up'  # Beside the checkpoint directory, not in it.

    def init_once_the_non_chief_gave_up(scaffold, session):
        # However late the other worker gets here, its first session gives up waiting before the chief is ready.
        deadline = time.monotonic() + 120
        while cluster.is_chief and not os.path.exists(gave_up) and time.monotonic() < deadline:
            time.sleep(0.05)

    scaffold = mts.Scaffold(saver=model.checkpoint, init_fn=init_once_the_non_chief_gave_up)
    kwargs = dict(
        is_chief=(cluster.task_id == 0),  # v1's form; the other sessions leave it to the cluster.
        checkpoint_dir=directory,
        scaffold=scaffold,
        save_checkpoint_steps=3,
        save_summaries_steps=2,
        log_step_count_steps=2,
        hooks=[mts.StopAtStepHook(last_step=8)],
        chief_only_hooks=[StopAt(5)],
    )
    if not cluster.is_chief:
        try:
            mts.MonitoredTrainingSession(max_wait_secs=0.5, **kwargs)
        except tf.errors.DeadlineExceededError as error:
            emit('deadline', message=error.message)
        with open(gave_up, 'w'):
            pass
    with mts.MonitoredTrainingSession(max_wait_secs=60, **kwargs) as session:
        emit('created', restored=session._tf_sess().restored_path)
        train(session, model.step)
    emit('asymmetric_stop', **model.state())

    dataset_step = model.dataset_step(examples=6)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=mts.Scaffold(saver=model.checkpoint),
        save_checkpoint_steps=100,
        save_summaries_steps=0,
        hooks=[mts.StopAtStepHook(last_step=1000)],
    ) as session:
        train(session, dataset_step)
    emit('end_of_data', **model.state())

    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=mts.Scaffold(saver=model.checkpoint),
        save_checkpoint_secs=0.25,
        save_summaries_steps=0,
        hooks=[mts.StopAtStepHook(num_steps=12)],
    ) as session:
        while not session.should_stop():
            session.run(model.step)
            time.sleep(0.05)
    emit('time_based_saves', **model.state())

    try:
        with mts.MonitoredTrainingSession(
            checkpoint_dir=directory,
            scaffold=mts.Scaffold(saver=model.checkpoint),
            save_checkpoint_steps=100,
            save_summaries_steps=0,
            hooks=[FailAt(model.state()['step'] + 3, cluster.task_id)],
        ) as session:
            train(session, model.step)
    except (ValueError, distribute.ClusterError) as error:
        emit('failed', error=type(error).__name__, message=str(error), **model.state())


def resume(strategy, model, cluster, directory: str) -> None:
    scaffold = mts.Scaffold(saver=model.checkpoint)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=scaffold,
        save_checkpoint_steps=2,
        save_summaries_steps=0,
        hooks=[mts.StopAtStepHook(num_steps=4)],
    ) as session:
        emit('restored', **model.state())
        train(session, model.step)
    emit('trained', **model.state())
    try:
        with mts.MonitoredTrainingSession(
            checkpoint_dir=directory, scaffold=scaffold, save_checkpoint_steps=5, save_summaries_steps=0
        ) as session:
            while not session.should_stop():
                session.run(model.step)
                emit('step', step=int(model.global_step.numpy()))
                time.sleep(0.05)
    except distribute.ClusterError as error:
        emit('failed', error=type(error).__name__, message=str(error), **model.state())
    except SystemExit:
        emit('preempted', **model.state())
        raise


def main(scenario: str, directory: str) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        cluster = distribute.current_cluster()
        model = Model(strategy, cluster.task_id)
        emit('started', chief=cluster.is_chief, task=cluster.task_id)
        {'first': first, 'resume': resume}[scenario](strategy, model, cluster, directory)
    emit('done', **model.state())


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
