"""Stage 1 of `custom_hook_v1.py`: the same program, hook class included, run eagerly by compat_mts.

The documented stage-1 edits (migration_guide/legacy.md), and nothing else: no `disable_eager_execution()`;
the graph code moved unchanged into `build_graph()` for `mts.wrap_graph`; `tf.compat.v1.train.<X>` → `mts.<X>`
outside it, the hook's `get_global_step()` included. The hook still subclasses
`tf.compat.v1.train.SessionRunHook` and returns `tf.compat.v1.train.SessionRunArgs`: both work unchanged.
"""

import argparse
import json

import tensorflow as tf

import compat_mts as mts
from tests.v1_programs import data


class AccuracyHook(tf.compat.v1.train.SessionRunHook):
    """Records (global step, loss, accuracy) every run; stops after `patience` runs at `threshold` or more."""

    def __init__(self, accuracy, threshold, patience):
        self._accuracy = accuracy
        self._threshold = threshold
        self._patience = patience
        self.history = []

    def begin(self):
        self._global_step = mts.get_global_step()
        self._good_runs = 0

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(
            {'accuracy': self._accuracy, 'loss': 'loss:0', 'step': self._global_step})

    def after_run(self, run_context, run_values):
        results = run_values.results
        self.history.append([int(results['step']), float(results['loss']), float(results['accuracy'])])
        self._good_runs = self._good_runs + 1 if results['accuracy'] >= self._threshold else 0
        if self._good_runs >= self._patience:
            run_context.request_stop()


def build_graph():
    tf.compat.v1.set_random_seed(5)
    features = tf.compat.v1.placeholder(tf.float32, [None, 2], name='features')
    labels = tf.compat.v1.placeholder(tf.int64, [None], name='labels')
    with tf.compat.v1.variable_scope('logits'):
        kernel = tf.compat.v1.get_variable('kernel', [2, 2])
        bias = tf.compat.v1.get_variable('bias', [2], initializer=tf.compat.v1.zeros_initializer())
    logits = tf.matmul(features, kernel) + bias
    tf.reduce_mean(tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits), name='loss')
    loss = tf.compat.v1.get_default_graph().get_tensor_by_name('loss:0')
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32), name='accuracy')
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return features, labels, loss, accuracy, global_step, train_op


def main(checkpoint_dir, last_step, threshold=0.95, patience=3):
    features, labels, loss, accuracy, global_step, train_op = mts.wrap_graph(build_graph).outputs

    accuracy_hook = AccuracyHook(accuracy, threshold, patience)
    eval_features, eval_labels = data.classification_batch(-1, batch_size=200)
    final_hook = mts.FinalOpsHook(
        {'accuracy': accuracy, 'loss': loss},
        final_ops_feed_dict={features: eval_features, labels: eval_labels})
    with mts.MonitoredTrainingSession(
            checkpoint_dir=checkpoint_dir, hooks=[mts.StopAtStepHook(last_step=last_step)],
            chief_only_hooks=[accuracy_hook, final_hook], save_checkpoint_steps=20,
            save_summaries_steps=None, save_summaries_secs=None, log_step_count_steps=None) as sess:
        step = sess.run_step_fn(lambda step_context: step_context.session.run(global_step))
        while not sess.should_stop():
            batch_features, batch_labels = data.classification_batch(step)
            sess.run(train_op, feed_dict={'features:0': batch_features, 'labels:0': batch_labels})
            step += 1
    final = final_hook.final_ops_values
    return {'history': accuracy_hook.history,
            'final': {'accuracy': float(final['accuracy']), 'loss': float(final['loss'])}}


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint_dir', required=True)
    parser.add_argument('--last_step', type=int, default=200)
    args = parser.parse_args()
    print(json.dumps(main(args.checkpoint_dir, args.last_step)))
