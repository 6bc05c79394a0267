"""Tasks of Estimators trained with `RunConfig(train_distribute=MultiWorkerMirroredStrategy)`, or the same
trainings in one process, under TF 2.15's `tf.estimator` or `compat_mts.estimator`.

Usage: `multi_worker.py compat|tf215 mwms|mwms_v1|none '<json list of specs>'`, with `TF_CONFIG` naming this
task of the cluster (none: the single-process run). The strategy (`mwms`: `tf.distribute.MultiWorkerMirroredStrategy`,
`mwms_v1`: `tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy`, `none`: no strategy) is made once,
and each spec's Estimator trains under it in turn. A spec: `program` (`custom`: a `model_fn` of constant initial
weights and a v1 optimizer; `dnn_classifier`, `dnn_regressor`: the premade Estimators with `Adagrad`),
`model_dir`, `max_steps`, `batch` (the `input_fn`'s batch: per worker under a strategy), `entry` (`train`:
`Estimator.train`; `train_and_evaluate`; `train_with_listener`: `train` with a saving listener, whose error is
the result), `evaluate_steps` (then `Estimator.evaluate(steps=...)` with
`eval_distribute`, or 0).

The `input_fn` takes v1's `input_context` and shards the data by it, so two workers with batches of 4 train on
the batches of 8 that one process reads. The task prints one JSON line, a result per spec: its trained variables
(read by a hook's `end()`, from this worker's own session), the loss of the last step (the `loss` summary in
`model_dir`, the chief's), the evaluation's metrics and the `RunConfig`'s cluster properties.
"""

import json
import os
import sys

import numpy as np


def _data(regression):
    x = np.random.RandomState(0).uniform(-1.0, 1.0, size=(32, 2)).astype(np.float32)
    if regression:
        return x, (x[:, :1] - 0.5 * x[:, 1:]).astype(np.float32)
    return x, (x[:, :1] + 0.5 * x[:, 1:] > 0.1).astype(np.int64)


def _input_fn(tf, batch, regression, repeat):
    def input_fn(input_context=None):
        x, y = _data(regression)
        dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
        if input_context is not None:
            dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        dataset = dataset.batch(batch)
        return dataset.repeat() if repeat else dataset

    return input_fn


def _model_fn(tf, estimator):
    def model_fn(features, labels, mode):
        hidden = tf.compat.v1.get_variable(
            'hidden/kernel', [2, 3], initializer=tf.compat.v1.constant_initializer([[0.3, -0.2, 0.1], [0.4, 0.2, -0.1]])
        )
        out = tf.compat.v1.get_variable(
            'logits/kernel', [3, 1], initializer=tf.compat.v1.constant_initializer([[0.5], [-0.3], [0.2]])
        )
        logits = tf.matmul(tf.nn.relu(tf.matmul(features['x'], hidden)), out)
        labels = tf.cast(labels, tf.float32)
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
        if mode == estimator.ModeKeys.EVAL:
            predicted = tf.cast(logits > 0, tf.float32)
            return estimator.EstimatorSpec(
                mode, loss=loss, eval_metric_ops={'accuracy': tf.compat.v1.metrics.accuracy(labels, predicted)}
            )
        optimizer = tf.compat.v1.train.MomentumOptimizer(0.5, 0.9)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


def _estimator(tf, estimator, spec, config):
    columns = [tf.feature_column.numeric_column('x', shape=[2])]
    if spec['program'] == 'custom':
        return estimator.Estimator(_model_fn(tf, estimator), config=config)
    if spec['program'] == 'dnn_classifier':
        return estimator.DNNClassifier(hidden_units=[3], feature_columns=columns, optimizer='Adagrad', config=config)
    return estimator.DNNRegressor(hidden_units=[3], feature_columns=columns, optimizer='Adagrad', config=config)


def _variables_hook(tf, found):
    class VariablesAtEnd(tf.compat.v1.train.SessionRunHook):
        """Reads this worker's trainable variables when its training session ends."""

        def begin(self):
            self._variables = {v.op.name: v for v in tf.compat.v1.trainable_variables()}

        def end(self, session):
            found.update({name: value.tolist() for name, value in session.run(self._variables).items()})

    return VariablesAtEnd()


def _listener(tf):
    class Listener(tf.compat.v1.train.CheckpointSaverListener):
        """A saving listener that does nothing."""

    return Listener()


def _last_loss(tf, model_dir):
    """The `loss` summary of the last step in `model_dir`'s events files (the chief's), or None."""
    from tests.estimator_programs.distribute_runner import _losses

    losses = _losses(tf, model_dir)
    return losses[-1] if losses else None


def run(tf, estimator, strategy, spec):
    config = estimator.RunConfig(
        model_dir=spec['model_dir'],
        train_distribute=strategy,
        eval_distribute=strategy if spec.get('evaluate_steps') else None,
        save_checkpoints_steps=2,
        save_summary_steps=1,
        tf_random_seed=7,
        log_step_count_steps=1000,
    )
    model = _estimator(tf, estimator, spec, config)
    regression = spec['program'] == 'dnn_regressor'
    train_input_fn = _input_fn(tf, spec['batch'], regression, repeat=True)
    variables = {}
    hooks = [_variables_hook(tf, variables)]
    if spec['entry'] == 'train_with_listener':  # Refused before anything is built, on every task alike.
        try:
            model.train(train_input_fn, max_steps=spec['max_steps'], saving_listeners=[_listener(tf)])
        except ValueError as error:
            return {'error': str(error)}
    if spec['entry'] == 'train_and_evaluate':
        train_spec = estimator.TrainSpec(train_input_fn, max_steps=spec['max_steps'], hooks=hooks)
        eval_spec = estimator.EvalSpec(_input_fn(tf, spec['batch'], regression, repeat=False), steps=2)
        estimator.train_and_evaluate(model, train_spec, eval_spec)
    else:
        model.train(train_input_fn, max_steps=spec['max_steps'], hooks=hooks)
    result = {
        'task': [config.task_type, config.task_id],
        'is_chief': config.is_chief,
        'num_worker_replicas': config.num_worker_replicas,
        'global_id_in_cluster': config.global_id_in_cluster,
        'cluster_spec': config.cluster_spec.as_dict(),
        'variables': variables,
        'last_loss': _last_loss(tf, spec['model_dir']),
    }
    if spec.get('evaluate_steps'):
        eval_input_fn = _input_fn(tf, spec['batch'], regression, repeat=False)
        metrics = model.evaluate(eval_input_fn, steps=spec['evaluate_steps'])
        result['metrics'] = {key: float(value) for key, value in metrics.items()}
    return result


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    side, strategy_name, specs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    import tensorflow as tf

    if side == 'tf215':
        estimator = tf.estimator
    else:
        import compat_mts.estimator as estimator
    strategies = {
        'mwms': tf.distribute.MultiWorkerMirroredStrategy,
        'mwms_v1': tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy,
    }
    strategy = strategies[strategy_name]() if strategy_name in strategies else None  # One per process.
    print(json.dumps([run(tf, estimator, strategy, spec) for spec in specs]))
