"""A v1 program fed by `tf.compat.v1.data`, with summaries: a one-shot iterator, a small MLP, Momentum.

`tf.compat.v1.summary.scalar`/`histogram` are merged and written by the default `SummarySaverHook` every
`save_summaries_steps`; the loop runs `train_op` alone until `StopAtStepHook` stops it. Runs as is in TF1
graph mode, from the repository root:
`PYTHONPATH=. python tests/v1_programs/input_pipeline_v1.py --checkpoint_dir DIR --last_step N`. Its stage-1
twin is `input_pipeline_compat.py`.
"""

import argparse
import json

import tensorflow as tf

tf.compat.v1.disable_eager_execution()

from tests.v1_programs import data  # noqa: E402


def main(checkpoint_dir, last_step, save_summaries_steps=5):
    tf.compat.v1.set_random_seed(3)
    features, targets = data.regression_dataset()
    dataset = tf.compat.v1.data.Dataset.from_tensor_slices((features, targets))
    dataset = dataset.shuffle(64, seed=11).repeat().batch(32)
    batch_features, batch_targets = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    with tf.compat.v1.variable_scope('hidden'):
        hidden_kernel = tf.compat.v1.get_variable('kernel', [data.FEATURES, 8])
        hidden_bias = tf.compat.v1.get_variable('bias', [8], initializer=tf.compat.v1.zeros_initializer())
    with tf.compat.v1.variable_scope('output'):
        output_kernel = tf.compat.v1.get_variable('kernel', [8, 1])
    hidden = tf.nn.relu(tf.matmul(batch_features, hidden_kernel) + hidden_bias)
    loss = tf.reduce_mean(tf.square(tf.matmul(hidden, output_kernel) - batch_targets), name='loss')
    tf.compat.v1.summary.scalar('train_loss', loss)
    tf.compat.v1.summary.histogram('hidden_kernel', hidden_kernel)
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.MomentumOptimizer(0.05, momentum=0.9).minimize(loss, global_step=global_step)

    losses = []
    with tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=checkpoint_dir, hooks=[tf.compat.v1.train.StopAtStepHook(last_step=last_step)],
            save_summaries_steps=save_summaries_steps, save_checkpoint_steps=25, log_step_count_steps=10) as sess:
        while not sess.should_stop():
            _, loss_value = sess.run([train_op, loss])
            losses.append(float(loss_value))
    return {'losses': losses}


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint_dir', required=True)
    parser.add_argument('--last_step', type=int, default=60)
    args = parser.parse_args()
    print(json.dumps(main(args.checkpoint_dir, args.last_step)))
