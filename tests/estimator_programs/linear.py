"""A small linear-regression `model_fn` and its inputs, for the behaviour tests of `compat_mts.estimator`."""

import numpy as np
import tensorflow as tf

import compat_mts.estimator as estimator

TRUE_W = np.array([[1.0], [-2.0]], np.float32)


def data(count=64, seed=0):
    features = np.random.default_rng(seed).normal(size=(count, 2)).astype(np.float32)
    return features, (features @ TRUE_W)[:, 0] + 0.5


def input_fn(repeat=True, batch=16, count=64):
    def make():
        features, labels = data(count)
        dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, labels))
        return (dataset.repeat() if repeat else dataset).batch(batch)

    return make


def predict_input_fn(count=6, batch=4):
    def make():
        return tf.data.Dataset.from_tensor_slices({'x': data(count, seed=1)[0]}).batch(batch)

    return make


def model_fn(features, labels, mode, params):
    """`y = x @ w + b`, mean squared error, gradient descent; `params` may add hooks and a scaffold."""
    w = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable('b', [1], initializer=tf.compat.v1.zeros_initializer())
    prediction = (tf.matmul(features['x'], w) + b)[:, 0]
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions={'y': prediction, 'twice': 2 * prediction})
    loss = tf.reduce_mean(tf.square(prediction - labels))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params.get('learning_rate', 0.1))
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    make_hooks = params.get('hooks', lambda loss: {})
    return estimator.EstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        scaffold=params.get('scaffold', lambda: None)(),
        eval_metric_ops={'mae': tf.compat.v1.metrics.mean_absolute_error(labels, prediction)},
        **make_hooks(loss),
    )
