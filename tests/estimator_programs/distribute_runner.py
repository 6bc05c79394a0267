"""Runs Estimator steps with `RunConfig(train_distribute=..., eval_distribute=...)`, on two logical CPUs.

`tests/test_estimator_distribute.py` runs one list of steps under TF 2.15's `tf.estimator` (`python
distribute_runner.py tf215 '<json list>'`) and one under `compat_mts.estimator` (`... compat '<json list>'`), each
in a process of its own: the two logical CPU devices must be made before TensorFlow starts. A step is a dict:
`program` (`custom`: a `model_fn` with a v1 optimizer; `keras`: one of `tf.keras.layers`; `dnn`: the premade
`DNNClassifier`), `op` (`train` with
`steps`, `evaluate` with `steps`, `copy` to `to`, `train_in_scope`: the custom program without a strategy in
its `RunConfig`, trained inside `MirroredStrategy().scope()`), `model_dir`, `strategy` (`mirrored` on /cpu:0 and /cpu:1,
`one` on /cpu:0, or null) and `batch` (the `input_fn`'s batch size). The results are printed as one JSON line
after `RESULTS:`; the losses are read back from the `loss` summaries, written every step.
"""

import json
import os
import shutil
import sys

import numpy as np


def _data():
    x = np.random.RandomState(0).uniform(-1.0, 1.0, size=(32, 2)).astype(np.float32)
    y = (x[:, :1] + 0.5 * x[:, 1:] > 0.1).astype(np.int64)
    return x, y


def _input_fn(tf, batch):
    def input_fn():
        x, y = _data()
        return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(batch).repeat()

    return input_fn


def _model_fn(tf, estimator):
    def model_fn(features, labels, mode):
        x = features['x']
        hidden = tf.compat.v1.get_variable(
            'hidden/kernel', [2, 4], initializer=tf.compat.v1.constant_initializer([[0.3, -0.2, 0.1, 0.4]] * 2)
        )
        bias = tf.compat.v1.get_variable('hidden/bias', [4], initializer=tf.compat.v1.zeros_initializer())
        out = tf.compat.v1.get_variable(
            'logits/kernel', [4, 1], initializer=tf.compat.v1.constant_initializer([[0.5], [-0.3], [0.2], [0.1]])
        )
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, hidden) + bias), out)
        labels = tf.cast(labels, tf.float32)
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
        if mode == estimator.ModeKeys.EVAL:
            predicted = tf.cast(logits > 0, tf.float32)
            return estimator.EstimatorSpec(
                mode,
                loss=loss,
                eval_metric_ops={
                    'accuracy': tf.compat.v1.metrics.accuracy(labels, predicted),
                    'mean_logit': tf.compat.v1.metrics.mean(logits),
                },
            )
        optimizer = tf.compat.v1.train.MomentumOptimizer(0.5, 0.9)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


def _keras_model_fn(tf, estimator):
    """A `model_fn` of `tf.keras.layers` (Keras 3 on TF 2.21, Keras 2 on TF 2.15) and a v1 optimizer."""

    def model_fn(features, labels, mode):
        # Named: the second unnamed Dense is `dense_1_1` here and `dense_1` on TF 2.15, with or without a strategy.
        hidden = tf.keras.layers.Dense(
            3, activation='relu', kernel_initializer=tf.keras.initializers.Constant(0.3), name='hidden'
        )
        logits = tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(-0.2), name='logits')
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(tf.cast(labels, tf.float32), logits(hidden(features['x'])))
        optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


_STRATEGIES = {}


def _strategy(tf, name):
    """One strategy of each kind per process, as a program makes it: on TF 2.21 a second MirroredStrategy's
    collectives take the first one's keys, and fail for a model of other shapes (in eager TF2 as well). Every
    Estimator given the one strategy shares it (`RunConfig` does not copy it)."""
    if name is None:
        return None
    if name not in _STRATEGIES:
        if name == 'mirrored':
            _STRATEGIES[name] = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
        else:
            _STRATEGIES[name] = tf.distribute.OneDeviceStrategy('/cpu:0')
    return _STRATEGIES[name]


def _estimator(tf, estimator, step):
    strategy = _strategy(tf, step.get('strategy'))
    config = estimator.RunConfig(
        model_dir=step['model_dir'],
        tf_random_seed=7,
        save_summary_steps=1,
        save_checkpoints_steps=1000,
        log_step_count_steps=1000,
        train_distribute=strategy,
        eval_distribute=strategy,
    )
    if step['program'] == 'custom':
        return estimator.Estimator(_model_fn(tf, estimator), config=config)
    if step['program'] == 'keras':
        return estimator.Estimator(_keras_model_fn(tf, estimator), config=config)
    return estimator.DNNClassifier(
        feature_columns=[tf.feature_column.numeric_column('x', shape=[2])], hidden_units=[5], config=config
    )


def _losses(tf, model_dir):
    losses = {}
    for name in sorted(os.listdir(model_dir)):
        if name.startswith('events.out.tfevents'):
            for event in tf.compat.v1.train.summary_iterator(os.path.join(model_dir, name)):
                for value in event.summary.value:
                    if value.tag == 'loss':
                        losses[event.step] = (
                            float(tf.make_ndarray(value.tensor)) if value.HasField('tensor') else value.simple_value
                        )
    return [losses[step] for step in sorted(losses)]


def run_steps(tf, estimator, steps):
    results = []
    for step in steps:
        if step['op'] == 'copy':
            shutil.copytree(step['model_dir'], step['to'])
            results.append(None)
            continue
        if step['op'] == 'train_in_scope':  # Estimator.train inside a strategy's scope, without train_distribute.
            replicas = []
            custom_model_fn = _model_fn(tf, estimator)

            def model_fn(features, labels, mode):
                replicas.append(tf.distribute.get_strategy().num_replicas_in_sync)
                return custom_model_fn(features, labels, mode)

            with _strategy(tf, 'mirrored').scope():
                model = estimator.Estimator(model_fn, model_dir=step['model_dir'])
                model.train(_input_fn(tf, step['batch']), steps=step['steps'])
            results.append({'replicas': replicas, 'global_step': int(model.get_variable_value('global_step'))})
            continue
        model = _estimator(tf, estimator, step)
        if step['op'] == 'train':
            model.train(_input_fn(tf, step['batch']), steps=step['steps'])
            results.append(
                {
                    'losses': _losses(tf, step['model_dir']),
                    'variables': {name: list(shape) for name, shape in tf.train.list_variables(step['model_dir'])},
                }
            )
        elif step['op'] == 'evaluate':
            metrics = model.evaluate(_input_fn(tf, step['batch']), steps=step['steps'])
            results.append({key: np.asarray(value).item() for key, value in metrics.items()})
        else:
            raise ValueError(f'unknown op {step["op"]!r}')
    return results


if __name__ == '__main__':
    side, steps = sys.argv[1], json.loads(sys.argv[2])
    import tensorflow as tf

    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    if side == 'compat':
        import compat_mts.estimator as estimator
    else:
        estimator = tf.estimator
    print('RESULTS:' + json.dumps(run_steps(tf, estimator, steps)))
