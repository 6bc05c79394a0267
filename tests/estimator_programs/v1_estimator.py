"""What TF <= 2.15's `tf.estimator.Estimator` did with a `model_fn`, done by hand in real v1 graph mode.

TF 2.21 has no `tf.estimator`, so the v1 side of `tests/test_estimator_v1.py` does what v1's Estimator did,
written out from its documented behaviour: for `train`, a fresh graph (random seed, global step, its read,
the `input_fn`'s dataset through an initializable iterator, the `model_fn`, a `loss` summary, a sharded
`Saver` with relative paths) run by `tf.compat.v1.train.MonitoredTrainingSession` with the Estimator's hooks
(stop at `max_steps`, `NanTensorHook`, `LoggingTensorHook` of loss and step, the spec's training hooks, a
`CheckpointSaverHook` every `save_checkpoints_steps`), and for `evaluate`, a fresh graph whose metric update
ops run per batch in a `MonitoredSession` until the data ends, the values read by a `FinalOpsHook`, the
results written to `model_dir/eval` with a v1 `FileWriter`. `EstimatorSpec` and `ModeKeys` stand in for
`tf.estimator`'s.

`PYTHONPATH=. python tests/estimator_programs/v1_estimator.py` serves: eager execution is off from the start;
each stdin line is a JSON list of calls, answered with one JSON line of their results.
"""

import collections
import json
import os
import sys

import tensorflow as tf

if __name__ == '__main__':
    tf.compat.v1.disable_eager_execution()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tensorflow.python.training import training_util  # noqa: E402

from tests.estimator_programs import classifier  # noqa: E402


class ModeKeys:
    TRAIN = 'train'
    EVAL = 'eval'
    PREDICT = 'infer'


_FIELDS = ['mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops', 'training_hooks']
EstimatorSpec = collections.namedtuple('EstimatorSpec', _FIELDS, defaults=[None, None, None, None, ()])

CONFIG = classifier.RUN_CONFIG


class _InitializeIterator(tf.compat.v1.train.SessionRunHook):
    def __init__(self, iterator):
        self._initializer = iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def _build(mode, input_fn):
    """v1's graph for `mode`: seed, global step (and, for training, its read), inputs, then the model_fn."""
    tf.compat.v1.set_random_seed(CONFIG['tf_random_seed'])
    global_step = tf.compat.v1.train.create_global_step()
    if mode == ModeKeys.TRAIN:
        training_util._get_or_create_global_step_read()
    with tf.device('/cpu:0'):
        dataset = input_fn()
    iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
    features, labels = iterator.get_next()
    spec = classifier.make_model_fn(sys.modules[__name__])(features, labels, mode, dict(classifier.PARAMS))
    return global_step, _InitializeIterator(iterator), spec


def evaluate(model_dir, checkpoint_path):
    with tf.Graph().as_default():
        global_step, initialize, spec = _build(ModeKeys.EVAL, classifier.eval_input_fn)
        metrics = dict(spec.eval_metric_ops)
        metrics['loss'] = tf.compat.v1.metrics.mean(spec.loss)
        update_op = tf.group(*[metrics[name][1] for name in sorted(metrics)])
        values = {name: value for name, (value, _) in metrics.items()}
        values['global_step'] = global_step
        final_ops = tf.compat.v1.train.FinalOpsHook(values)
        creator = tf.compat.v1.train.ChiefSessionCreator(checkpoint_filename_with_path=checkpoint_path)
        with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=[initialize, final_ops]) as session:
            while not session.should_stop():
                session.run(update_op)
        results = final_ops.final_ops_values
        summary = tf.compat.v1.Summary()
        for name, value in results.items():
            if name != 'global_step':
                summary.value.add(tag=name, simple_value=float(value))
        writer = tf.compat.v1.summary.FileWriterCache.get(os.path.join(model_dir, 'eval'))
        writer.add_summary(summary, int(results['global_step']))
        path_summary = tf.compat.v1.Summary()
        path_summary.value.add(tag='checkpoint_path', tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string))
        writer.add_summary(path_summary, int(results['global_step']))
        writer.flush()
    return {name: float(value) for name, value in results.items()}


class _EvaluateAfterSave(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates after every checkpoint save but the session's first, and after the last step (throttle 0)."""

    def __init__(self, model_dir, evaluations):
        self._model_dir = model_dir
        self._evaluations = evaluations
        self._first = True
        self._last_evaluated = None

    def after_save(self, session, global_step_value):
        if self._first:
            self._first = False
            return
        self._evaluate(global_step_value)

    def end(self, session, global_step_value):
        if global_step_value != self._last_evaluated:
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value):
        self._last_evaluated = global_step_value
        self._evaluations.append(evaluate(self._model_dir, tf.train.latest_checkpoint(self._model_dir)))


def train(model_dir, max_steps, evaluate_after_save):
    """`Estimator.train(max_steps=...)`, with `train_and_evaluate`'s listener when `evaluate_after_save`."""
    classifier.LOSSES.clear()
    evaluations = []
    with tf.Graph().as_default():
        global_step, initialize, spec = _build(ModeKeys.TRAIN, classifier.train_input_fn)
        tf.compat.v1.summary.scalar('loss', spec.loss)
        tf.compat.v1.add_to_collection(
            tf.compat.v1.GraphKeys.SAVERS,
            tf.compat.v1.train.Saver(sharded=True, max_to_keep=5, defer_build=True, save_relative_paths=True),
        )
        hooks = [
            initialize,
            tf.compat.v1.train.StopAtStepHook(last_step=max_steps),
            tf.compat.v1.train.NanTensorHook(spec.loss),
            tf.compat.v1.train.LoggingTensorHook(
                {'loss': spec.loss, 'step': global_step}, every_n_iter=CONFIG['log_step_count_steps']
            ),
        ]
        hooks += list(spec.training_hooks)
        listeners = [_EvaluateAfterSave(model_dir, evaluations)] if evaluate_after_save else []
        scaffold = tf.compat.v1.train.Scaffold()
        saver_hook = tf.compat.v1.train.CheckpointSaverHook(
            model_dir, save_steps=CONFIG['save_checkpoints_steps'], scaffold=scaffold, listeners=listeners
        )
        with tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=model_dir,
            scaffold=scaffold,
            hooks=hooks,
            chief_only_hooks=[saver_hook],
            save_checkpoint_secs=0,
            save_summaries_steps=CONFIG['save_summary_steps'],
            log_step_count_steps=CONFIG['log_step_count_steps'],
        ) as session:
            while not session.should_stop():
                session.run([spec.train_op, spec.loss])
    tf.compat.v1.summary.FileWriterCache.clear()
    return {'losses': [loss for _, loss in classifier.LOSSES], 'evaluations': evaluations}


def serve():
    for line in sys.stdin:
        if line.strip():
            print(json.dumps([train(**call) for call in json.loads(line)]), flush=True)


if __name__ == '__main__':
    serve()
