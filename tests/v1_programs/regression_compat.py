"""Stage 1 of `regression_v1.py`: the same program run eagerly by compat_mts.

The documented stage-1 edits (migration_guide/legacy.md), and nothing else:
1. no `tf.compat.v1.disable_eager_execution()`;
2. the graph-building code moves, unchanged, into `build_graph()`, handed to `mts.wrap_graph`;
3. `tf.compat.v1.train.<X>` becomes `mts.<X>`.
"""

import argparse
import json

import tensorflow as tf

import compat_mts as mts
from tests.v1_programs import data


def build_graph():
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
    return x, y, loss, global_step, train_op


def main(checkpoint_dir, last_step, save_checkpoint_steps=10):
    x, y, loss, global_step, train_op = mts.wrap_graph(build_graph).outputs

    hooks = [mts.StopAtStepHook(last_step=last_step),
             mts.NanTensorHook(loss),
             mts.LoggingTensorHook({'loss': loss, 'step': global_step}, every_n_iter=10)]
    losses = []
    with mts.MonitoredTrainingSession(
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
