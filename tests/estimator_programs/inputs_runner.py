"""`numpy_input_fn` and `pandas_input_fn` scenarios, run under TF 2.15 (`tf.compat.v1.estimator`) or compat_mts.

`tests/test_estimator_inputs.py` runs `results(...)` in a TF 2.15 child process (`python inputs_runner.py
<model_dir>`, the results printed as one JSON line after `RESULTS:`) and in its own process with
`compat_mts.estimator`: the same arrays, the same calls. Each batch stream is drained by the side's
`MonitoredTrainingSession` in a v1 graph (`with tf.Graph().as_default():`) until the `OutOfRangeError`; the
Estimator scenarios train, evaluate and predict a zero-initialized linear model on `numpy_input_fn`s.
"""

import json
import os
import sys

import numpy as np

from tests.estimator_programs.results import error_of, plain


def _columns(count=10):
    return {'a': np.arange(count, dtype=np.float32), 'b': np.arange(100, 100 + count)}


def _drain(tf, session_class, input_fn, limit=None):
    """The batches `input_fn()` yields, how the stream ended, and the static shapes and dtypes of its tensors."""
    with tf.Graph().as_default():
        tensors = input_fn()
        batches, ended = [], 'stopped'
        with session_class() as session:
            while not session.should_stop() and (limit is None or len(batches) < limit):
                try:
                    batches.append(session.run(tensors))
                except tf.errors.OutOfRangeError:
                    ended = 'OutOfRangeError'
                    break
        shapes = tf.nest.map_structure(lambda tensor: tensor.shape.as_list(), tensors)
        dtypes = tf.nest.map_structure(lambda tensor: tensor.dtype.name, tensors)
    return {'batches': plain(batches), 'ended': ended, 'shapes': plain(shapes), 'dtypes': plain(dtypes)}


def _numpy_scenarios(tf, inputs, session_class):
    x, y = _columns(), np.arange(20, 30)
    drain = lambda fn, **kw: _drain(tf, session_class, fn, **kw)  # noqa: E731
    return {
        'dict_in_order': drain(inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=2, shuffle=False)),
        'array_no_target': drain(
            inputs.numpy_input_fn(np.arange(12.0).reshape(6, 2), batch_size=4, num_epochs=1, shuffle=False)
        ),
        'dict_target': drain(
            inputs.numpy_input_fn({'a': x['a']}, {'t': y, 'u': y * 2}, batch_size=3, num_epochs=1, shuffle=False)
        ),
        'forever': drain(inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=None, shuffle=False), limit=4),
        'shuffled': drain(inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=3, shuffle=True, queue_capacity=8)),
        'two_threads': drain(inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=1, shuffle=False, num_threads=2)),
        'errors': [
            error_of(lambda: inputs.numpy_input_fn(x, y)),
            error_of(lambda: inputs.numpy_input_fn(x, y, shuffle=1)),
            error_of(lambda: inputs.numpy_input_fn({}, shuffle=False)()),
            error_of(lambda: inputs.numpy_input_fn([1, 2], shuffle=False)()),
            error_of(lambda: inputs.numpy_input_fn(np.array([]), shuffle=False)()),
            error_of(lambda: inputs.numpy_input_fn(x, np.arange(3), shuffle=False)()),
            error_of(lambda: inputs.numpy_input_fn(x, {'a': y}, shuffle=False)()),
            error_of(lambda: inputs.numpy_input_fn(x, {}, shuffle=False)()),
        ],
    }


def _pandas_scenarios(tf, inputs, session_class):
    import pandas as pd

    frame = pd.DataFrame(_columns(), index=np.arange(10) + 5)
    target = pd.Series(np.arange(20, 30), index=frame.index)
    drain = lambda fn: _drain(tf, session_class, fn)  # noqa: E731
    return {
        'series_in_order': drain(inputs.pandas_input_fn(frame, target, batch_size=4, num_epochs=2, shuffle=False)),
        'frame_target': drain(
            inputs.pandas_input_fn(
                frame[['a']], pd.DataFrame({'b': target, 't': target * 2}), batch_size=3, shuffle=False
            )
        ),
        'no_target_default_capacity': drain(
            inputs.pandas_input_fn(frame, batch_size=4, shuffle=True, queue_capacity=None, num_epochs=2)
        ),
        'errors': [
            error_of(lambda: inputs.pandas_input_fn(frame, target)),
            error_of(lambda: inputs.pandas_input_fn(frame, target, shuffle=False, target_column=3)),
            error_of(lambda: inputs.pandas_input_fn(frame, target, shuffle=False, target_column='a')),
            error_of(lambda: inputs.pandas_input_fn(frame, pd.Series(np.arange(10)), shuffle=False)),
        ],
    }


def _estimator_scenarios(tf, estimator, inputs, model_dir):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
        b = tf.compat.v1.get_variable('b', [1], initializer=tf.compat.v1.zeros_initializer())
        x = tf.stack([features['a'], features['c']], axis=1)
        prediction = (tf.matmul(x, w) + b)[:, 0]
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.EstimatorSpec(mode, predictions={'y': prediction})
        loss = tf.reduce_mean(tf.square(prediction - labels))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        metrics = {'mae': tf.compat.v1.metrics.mean_absolute_error(labels, prediction)}
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    rng = np.random.default_rng(0)
    features = {'a': rng.normal(size=40).astype(np.float32), 'c': rng.normal(size=40).astype(np.float32)}
    labels = (features['a'] - 2 * features['c'] + 0.5).astype(np.float32)
    model = estimator.Estimator(model_fn, model_dir=model_dir, config=estimator.RunConfig(tf_random_seed=3))
    model.train(inputs.numpy_input_fn(features, labels, batch_size=16, num_epochs=2, shuffle=False))
    trained_in_order = [
        model.get_variable_value('global_step'),
        model.get_variable_value('w'),
        model.get_variable_value('b'),
    ]
    metrics = model.evaluate(inputs.numpy_input_fn(features, labels, batch_size=16, shuffle=False))
    predictions = list(
        model.predict(inputs.numpy_input_fn({'a': features['a'][:5], 'c': features['c'][:5]}, shuffle=False))
    )
    model.train(inputs.numpy_input_fn(features, labels, batch_size=16, num_epochs=2, shuffle=True))
    return {
        'trained_in_order': plain(trained_in_order),
        'evaluate': plain(metrics),
        'predict': plain(predictions),
        'steps_after_shuffled_epochs': plain(model.get_variable_value('global_step')),
    }


def results(tf, estimator, inputs, session_class, model_dir):
    """Every scenario's result (see the module docstring), as plain JSON values."""
    found = {'numpy': _numpy_scenarios(tf, inputs, session_class)}
    try:
        import pandas  # noqa: F401
    except ImportError:
        found['pandas'] = None
    else:
        found['pandas'] = _pandas_scenarios(tf, inputs, session_class)
    found['estimator'] = _estimator_scenarios(tf, estimator, inputs, model_dir)
    return found


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    found = results(
        tf,
        tf.compat.v1.estimator,
        tf.compat.v1.estimator.inputs,
        tf.compat.v1.train.MonitoredTrainingSession,
        sys.argv[1],
    )
    print('RESULTS:' + json.dumps(found))
