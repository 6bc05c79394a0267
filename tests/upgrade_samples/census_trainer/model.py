"""The model module of a cloudml-samples `census/tensorflowcore/trainer`-shaped program, as written for TensorFlow
1.x, on synthetic data: `task.py` beside it imports it, so the program is two files and `compat-mts upgrade`
upgrades the directory.

As in that sample: the input (`input_fn`, here a `tf.data` pipeline of synthetic rows with a one-shot iterator),
the model (`inference`: hidden layers of `tf.get_variable` weights), and `model_fn`'s train op (an
`AdamOptimizer` minimizing the sigmoid cross-entropy, with `tf.summary` scalars), with 1.x names.
"""

import numpy as np
import tensorflow as tf

FEATURES = 6
HIDDEN_UNITS = (16, 8)


def input_fn(batch_size=32, rows=400):
    """Synthetic census rows: six numeric columns and an income label that depends on three of them."""
    rng = np.random.RandomState(3)
    features = rng.normal(size=(rows, FEATURES)).astype(np.float32)
    labels = (features[:, 0] + 0.5 * features[:, 2] - features[:, 4] > 0).astype(np.float32)[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(batch_size)
    return dataset.make_one_shot_iterator().get_next()


def inference(features):
    """Two hidden layers and a logit, each `relu(x @ W + b)` of variables made with `tf.get_variable`."""
    net, width = features, FEATURES
    for index, units in enumerate(HIDDEN_UNITS):
        with tf.variable_scope('hidden_%d' % index):
            weights = tf.get_variable(
                'weights', [width, units], initializer=tf.glorot_uniform_initializer(seed=index + 1))
            biases = tf.get_variable('biases', [units], initializer=tf.zeros_initializer())
            net = tf.nn.relu(tf.matmul(net, weights) + biases)
            width = units
    with tf.variable_scope('logits'):
        weights = tf.get_variable('weights', [width, 1], initializer=tf.glorot_uniform_initializer(seed=9))
        return tf.matmul(net, weights)


def model_fn(features, labels, learning_rate):
    """The loss and the train op of one step."""
    logits = inference(features)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels), tf.float32))
    tf.summary.scalar('loss', loss)
    tf.summary.scalar('accuracy', accuracy)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return loss, train_op
