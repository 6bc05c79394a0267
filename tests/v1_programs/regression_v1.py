"""A plain v1 regression: placeholders fed per step, Adam, StopAtStepHook, NanTensorHook, LoggingTensorHook.

Runs as is in TF1 graph mode, from the repository root:
`PYTHONPATH=. python tests/v1_programs/regression_v1.py --checkpoint_dir DIR --last_step N`.
Its stage-1 twin is `regression_compat.py`. Each step's batch depends on the global step only, so a run resumed
from a checkpoint trains on exactly what a straight run would.
"""

import argparse
import json

import tensorflow as tf

tf.compat.v1.disable_eager_execution()

from tests.v1_programs import data  # noqa: E402


def main(checkpoint_dir, last_step, save_checkpoint_steps=10):
    tf.compat.v1.set_random_seed(42)
    x = tf.compat.v1.placeholder(tf.float32, [None, data.FEATURES], name='x')
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name='y')
    with tf.compat.v1.variable_scope('dense'):
        kernel = tf.compat.v1.get_variable('kernel', [data.FEATURES, 1])
        bias = tf.compat.v1.get_variable('bias', [1], initializer=tf.compat.v1.zeros_initializer())
    predictions = tf.matmul(x, kernel) + bias
    loss = tf.reduce_mean(tf.square(predictions - y), name='loss')
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)

    hooks = [tf.compat.v1.train.StopAtStepHook(last_step=last_step),
             tf.compat.v1.train.NanTensorHook(loss),
             tf.compat.v1.train.LoggingTensorHook({'loss': loss, 'step': global_step}, every_n_iter=10)]
    losses = []
    with tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=checkpoint_dir, hooks=hooks, save_checkpoint_steps=save_checkpoint_steps,
            save_summaries_steps=None, save_summaries_secs=None, log_step_count_steps=None) as sess:
        step = start_step = sess.run_step_fn(lambda step_context: step_context.session.run(global_step))
        while not sess.should_stop():
            features, targets = data.regression_batch(step)
            _, loss_value = sess.run([train_op, loss], feed_dict={x: features, y: targets})
            losses.append(float(loss_value))
            step += 1
    return {'start_step': int(start_step), 'final_step': int(step), 'losses': losses}


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint_dir', required=True)
    parser.add_argument('--last_step', type=int, default=100)
    args = parser.parse_args()
    print(json.dumps(main(args.checkpoint_dir, args.last_step)))
