"""Hooks whose `begin()` adds ops to the Estimator's graph and fetches them in `before_run`, as TF <= 2.15 allowed.

One hook merges the graph's summaries (`tf.compat.v1.summary.merge_all()`, as tensorflow/estimator's own
tests do), another adds a `tf.identity` of the global step (with a control dependency on the predictions) and a
sum of the predictions, a third creates variables (a global counter it increments, which the checkpoint saves and
the next call restores, and a local one). A custom `model_fn` (one weight, SGD) trains 3 steps, evaluates and predicts with
them. `estimator` is `tf.estimator` under TF 2.15 (run as a script: prints `RESULTS:` and the JSON), or
`compat_mts.estimator`.
"""

import json
import sys
import tempfile

import numpy as np
import tensorflow as tf


class MergedSummaryHook(tf.compat.v1.train.SessionRunHook):
    """Fetches `merge_all()` of the graph, made in `begin()`, and keeps the scalar values of each run."""

    def __init__(self):
        self.values = []

    def begin(self):
        self._summary_op = tf.compat.v1.summary.merge_all()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._summary_op)

    def after_run(self, run_context, run_values):
        summary = tf.compat.v1.Summary()
        summary.ParseFromString(run_values.results)
        self.values.append({value.tag: round(float(value.simple_value), 5) for value in summary.value})


class AddedOpsHook(tf.compat.v1.train.SessionRunHook):
    """Fetches a `tf.identity` of the global step and a sum of the predictions, both made in `begin()`.

    While training, the step's read races with the step's update (in TF 2.15 too), so it is left out then.
    """

    def __init__(self, with_step=True):
        self.values = []
        self._with_step = with_step

    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        self.finalized_in_begin = graph.finalized
        predictions = graph.get_tensor_by_name('predictions:0')  # Read before the step's update: deterministic.
        with tf.control_dependencies([predictions.op]):
            self._step = tf.identity(tf.compat.v1.train.get_global_step(), name='hook_step')
        tf.reduce_sum(predictions * 2.0, name='hook_total')

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs({'step': self._step, 'total': 'hook_total:0'})

    def after_run(self, run_context, run_values):
        self.values.append({'total': round(float(run_values.results['total']), 5)})
        if self._with_step:
            self.values[-1]['step'] = int(run_values.results['step'])


class CountingHook(tf.compat.v1.train.SessionRunHook):
    """Creates a global counter (from 10) and a local value in `begin()`; increments the counter in each run."""

    def __init__(self):
        self.values = []

    def begin(self):
        counter = tf.compat.v1.get_variable('hook_runs', initializer=tf.constant(10, tf.int64), trainable=False)
        local = tf.compat.v1.get_variable(
            'hook_local', initializer=1.5, trainable=False, collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES]
        )
        self._fetches = [tf.compat.v1.assign_add(counter, 1), local]

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        self.values.append([int(run_values.results[0]), float(run_values.results[1])])


def model_fn(features, labels, mode):
    weight = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.constant_initializer(0.5))
    predictions = tf.matmul(features['x'], weight, name='predictions')
    if mode == _estimator.ModeKeys.PREDICT:
        return _estimator.EstimatorSpec(mode, predictions={'y': predictions})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    tf.compat.v1.summary.scalar('mean_prediction', tf.reduce_mean(predictions))  # Not racing the update.
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return _estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
    x = np.array([[1.0, 2.0], [3.0, 1.0], [0.5, 0.5], [2.0, 2.0]], np.float32)
    y = np.array([[1.0], [2.0], [0.0], [1.5]], np.float32)
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(2)


_estimator = None


def make_estimator(estimator, model_dir):
    """The Estimator of `model_fn`, of the `estimator` module given."""
    global _estimator
    _estimator = estimator
    return estimator.Estimator(model_fn, model_dir=model_dir, config=estimator.RunConfig(log_step_count_steps=None))


def main(estimator, model_dir):
    """Runs the three modes with both hooks; returns what each hook saw, mode by mode."""
    model = make_estimator(estimator, model_dir)
    results = {}
    merged, added, counting = MergedSummaryHook(), AddedOpsHook(with_step=False), CountingHook()
    model.train(input_fn, steps=3, hooks=[merged, added, counting])
    results['train'] = {'merged': merged.values, 'added': added.values, 'finalized': added.finalized_in_begin}
    results['train']['counted'] = counting.values
    results['checkpoint'] = {name: shape for name, shape in tf.train.list_variables(model_dir)}
    results['checkpoint']['hook_runs'] = int(tf.train.load_variable(model_dir, 'hook_runs'))
    merged, added, counting = MergedSummaryHook(), AddedOpsHook(), CountingHook()
    model.evaluate(input_fn, steps=2, hooks=[merged, added, counting])
    results['evaluate'] = {'merged': merged.values, 'added': added.values, 'finalized': added.finalized_in_begin}
    results['evaluate']['counted'] = counting.values
    added, counting = AddedOpsHook(), CountingHook()
    predictions = list(
        model.predict(lambda: input_fn().take(1).map(lambda features, labels: features), hooks=[added, counting])
    )
    results['predict'] = {
        'added': added.values,
        'counted': counting.values,
        'finalized': added.finalized_in_begin,
        'predictions': [round(float(p['y'][0]), 5) for p in predictions],
    }
    return results


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print('RESULTS:' + json.dumps(main(tf.estimator, sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())))
