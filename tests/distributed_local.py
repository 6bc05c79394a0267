"""A fresh single process for the tests that need TensorFlow's runtime not started yet, or a remote server.

Usage: distributed_local.py local CHECKPOINT_DIR | distributed_local.py remote MASTER

Prints one JSON object per line (`{"event": ..., ...}`). `local`:

- `config`: a MonitoredTrainingSession created before any TensorFlow operation applies its ConfigProto
  (threads, soft placement, `device_count={'CPU': 2}` as two logical CPU devices) and names what it ignores;
- `late`: a second ConfigProto comes after the runtime started, and the warning says so;
- `mirrored`: a session in the scope of a MirroredStrategy over those two CPU devices trains, checkpoints,
  summarizes and fetches per-replica values; `resumed`: a second one resumes from its checkpoint.

`remote` (a process of its own: connecting resets TensorFlow's runtime, and with it what `local` created):

- `connect_too_late`, `remote`, `remote_training`: `master=MASTER` (a `tf.distribute.Server` the test
  started) refuses a program whose variables predate the connection, runs steps on the server, and trains a
  model built there.
"""

from __future__ import annotations

import json
import logging
import sys

import numpy as np
import tensorflow as tf

import compat_mts as mts
from compat_mts.deploy import distribute


def emit(event: str, **values) -> None:
    print(json.dumps({'event': event, **values}), flush=True)


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def take(self) -> list[str]:
        messages, self.messages = self.messages, []
        return messages


def check_config(warnings: Warnings) -> None:
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=2,
        inter_op_parallelism_threads=1,
        allow_soft_placement=True,
        device_count={'CPU': 2},
        operation_timeout_in_ms=5000,
    )
    config.gpu_options.allow_growth = True
    config.gpu_options.per_process_gpu_memory_fraction = 0.5
    with mts.MonitoredTrainingSession(config=config):
        pass
    emit(
        'config',
        intra=tf.config.threading.get_intra_op_parallelism_threads(),
        inter=tf.config.threading.get_inter_op_parallelism_threads(),
        cpus=len(tf.config.list_logical_devices('CPU')),
        soft=tf.config.get_soft_device_placement(),
        warnings=warnings.take(),
    )
    with mts.MonitoredTrainingSession(config=tf.compat.v1.ConfigProto(intra_op_parallelism_threads=3)):
        pass
    emit('late', intra=tf.config.threading.get_intra_op_parallelism_threads(), warnings=warnings.take())


def mirrored(directory: str) -> None:
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    with strategy.scope():
        global_step = mts.get_or_create_global_step()
        w = tf.Variable(tf.zeros([3, 1]), name='w')
        scaffold = mts.Scaffold(saver=tf.train.Checkpoint(w=w))

        def update():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - 1.0))
            gradient = tf.distribute.get_replica_context().all_reduce('mean', tape.gradient(loss, w))
            w.assign_sub(0.1 * gradient)
            global_step.assign_add(1)
            tf.summary.scalar('loss', loss)
            return loss

        @tf.function
        def step():
            per_replica = strategy.run(update)
            return {'loss': strategy.reduce('mean', per_replica, axis=None), 'per_replica_loss': per_replica}

        with mts.MonitoredTrainingSession(
            checkpoint_dir=directory,
            scaffold=scaffold,
            save_checkpoint_steps=2,
            save_summaries_steps=1,
            hooks=[mts.StopAtStepHook(last_step=4)],
        ) as session:
            while not session.should_stop():
                results = session.run({'outputs': step, 'w': w, 'step': 'global_step'})
        emit(
            'mirrored',
            step=int(global_step.numpy()),
            loss=float(results['outputs']['loss']),
            per_replica=[float(value) for value in results['outputs']['per_replica_loss']],
            fetched_w=results['w'].ravel().tolist(),
            fetched_step=int(results['step']),
            w=w.numpy().ravel().tolist(),
            variable=type(w).__name__,
        )
        w.assign(tf.zeros([3, 1]))
        global_step.assign(0)
        with mts.MonitoredTrainingSession(
            checkpoint_dir=directory, scaffold=scaffold, hooks=[mts.StopAtStepHook(num_steps=1)]
        ):
            emit('resumed', step=int(global_step.numpy()), w=w.numpy().ravel().tolist())


def remote(master: str) -> None:
    mts.reset_global_step()
    mts.get_or_create_global_step()  # A variable created before connecting.
    try:
        mts.MonitoredTrainingSession(master=master)
    except ValueError as error:
        emit('connect_too_late', message=str(error))
    mts.reset_global_step()

    devices = []
    doubled = tf.function(lambda: tf.ones([2]) * 2)

    def probe():
        output = doubled()
        devices.append(output.device)
        return output

    with mts.MonitoredTrainingSession(master=master) as session:
        session.run(probe)
    emit('remote', devices=devices)

    with tf.device(distribute.REMOTE_DEVICE):  # The model, built after connecting, lives on the server.
        global_step = mts.get_or_create_global_step()
        w = tf.Variable(1.0, name='w')

    @tf.function
    def step():
        w.assign_add(1.0)
        global_step.assign_add(1)
        return {'w': w.read_value()}

    with mts.MonitoredTrainingSession(master=master, hooks=[mts.StopAtStepHook(last_step=3)]) as session:
        while not session.should_stop():
            results = session.run(step)
    emit('remote_training', step=int(global_step.numpy()), w=float(results['w']), w_device=w.device)


def main(mode: str, argument: str) -> None:
    if mode == 'remote':
        remote(argument)
        return
    warnings = Warnings()
    logging.getLogger('tensorflow').addHandler(warnings)
    check_config(warnings)
    mirrored(argument)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
