"""A v1 between-graph ps/worker MNIST trainer, as written for TensorFlow 1.x, on synthetic data: the input for
`compat-mts upgrade`.

The shape of TensorFlow 1.x's "Distributed TensorFlow" how-to and of migration_guide/distributed.md's v1
program: the cluster (`{"ps": [...], "worker": [...]}` in the CLUSTER environment variable), a `tf.train.Server`
per task, the ps tasks `join()` it, the workers build the graph under `tf.device(tf.train.replica_device_setter(
cluster=cluster))` at the top level of `main` and train with `MonitoredTrainingSession(master=server.target,
is_chief=(task_index == 0))`. The batch is a fixed tensor, so every step's loss depends on the weights only.

`CLUSTER='{"ps": ["localhost:P0"], "worker": ["localhost:P1"]}' python mnist_ps.py JOB TASK CHECKPOINT_DIR
LAST_STEP` starts one task; a worker prints one JSON line last: the loss of each step it ran.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf


def synthetic_batch(size=64):
    rng = np.random.RandomState(0)
    patterns = rng.uniform(size=(10, 784)).astype(np.float32)
    labels = rng.randint(0, 10, size=size)
    images = np.clip(patterns[labels] + 0.3 * rng.normal(size=(size, 784)), 0.0, 1.0).astype(np.float32)
    return images, labels.astype(np.int32)


def main(job_name, task_index, checkpoint_dir, last_step):
    cluster = tf.train.ClusterSpec(json.loads(os.environ['CLUSTER']))
    server = tf.train.Server(cluster, job_name=job_name, task_index=task_index)
    if job_name == 'ps':
        server.join()

    images, labels = synthetic_batch()
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        weights = tf.get_variable('softmax/weights', [784, 10], initializer=tf.zeros_initializer())
        biases = tf.get_variable('softmax/biases', [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.constant(images), weights) + biases
        loss = tf.losses.sparse_softmax_cross_entropy(labels=tf.constant(labels), logits=logits)
        train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=global_step)

    losses = []
    hooks = [tf.train.StopAtStepHook(last_step=last_step)]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=(task_index == 0),
                                           checkpoint_dir=checkpoint_dir, save_checkpoint_steps=10,
                                           hooks=hooks) as sess:
        while not sess.should_stop():
            _, loss_value = sess.run([train_op, loss])
            losses.append(float(loss_value))
    print(json.dumps({'losses': losses}))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
