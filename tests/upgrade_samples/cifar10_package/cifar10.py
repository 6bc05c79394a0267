"""The model half of the tensorflow/models CIFAR-10 tutorial (`tutorials/image/cifar10/cifar10.py`), as written
for TensorFlow 1.x, on synthetic data: `cifar10_train.py` beside it imports it, as in the tutorial, so the
program is two files and `compat-mts upgrade` upgrades the directory.

As in the tutorial: the input (`distorted_inputs`, here a `tf.data` pipeline of synthetic images), `inference`,
`loss` (weight decay through the `losses` collection) and `train` (a learning rate decayed in steps, gradients
applied by hand with histogram summaries, an `ExponentialMovingAverage` of the variables), with 1.x names.
"""

import numpy as np
import tensorflow as tf

BATCH_SIZE = 16
IMAGE_SIZE = 8
NUM_CLASSES = 10
LOG_FREQUENCY = 5
INITIAL_LEARNING_RATE = 0.1
DECAY_STEPS = 20
LEARNING_RATE_DECAY_FACTOR = 0.5
MOVING_AVERAGE_DECAY = 0.99


def distorted_inputs():
    """Synthetic images whose class is one of ten fixed patterns, batched by tf.data."""
    rng = np.random.RandomState(0)
    patterns = rng.normal(size=(NUM_CLASSES, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    labels = rng.randint(0, NUM_CLASSES, size=512)
    images = patterns[labels] + 0.3 * rng.normal(size=(512, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int32)))
    dataset = dataset.repeat().batch(BATCH_SIZE, drop_remainder=True)
    return dataset.make_one_shot_iterator().get_next()


def _variable_with_weight_decay(name, shape, stddev, wd, seed):
    var = tf.get_variable(name, shape, initializer=tf.truncated_normal_initializer(stddev=stddev, seed=seed))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
        tf.add_to_collection('losses', weight_decay)
    return var


def _activation_summary(x):
    tf.summary.histogram(x.op.name + '/activations', x)
    tf.summary.scalar(x.op.name + '/sparsity', tf.nn.zero_fraction(x))


def inference(images):
    with tf.variable_scope('conv1') as scope:
        kernel = _variable_with_weight_decay('weights', [3, 3, 3, 8], stddev=5e-2, wd=None, seed=1)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
        biases = tf.get_variable('biases', [8], initializer=tf.constant_initializer(0.0))
        conv1 = tf.nn.relu(tf.nn.bias_add(conv, biases), name=scope.name)
        _activation_summary(conv1)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
    with tf.variable_scope('local3') as scope:
        reshape = tf.reshape(pool1, [BATCH_SIZE, -1])
        dim = reshape.get_shape()[1].value
        weights = _variable_with_weight_decay('weights', shape=[dim, 32], stddev=0.04, wd=0.004, seed=2)
        biases = tf.get_variable('biases', [32], initializer=tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    with tf.variable_scope('softmax_linear') as scope:
        weights = _variable_with_weight_decay('weights', [32, NUM_CLASSES], stddev=1 / 32.0, wd=None, seed=3)
        biases = tf.get_variable('biases', [NUM_CLASSES], initializer=tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
        _activation_summary(softmax_linear)
    return softmax_linear


def loss(logits, labels):
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int64), logits=logits, name='cross_entropy_per_example'
    )
    tf.add_to_collection('losses', tf.reduce_mean(cross_entropy, name='cross_entropy'))
    return tf.add_n(tf.get_collection('losses'), name='total_loss')


def train(total_loss, global_step):
    """The train op of one step: the decayed learning rate, the gradients applied, the moving averages."""
    lr = tf.train.exponential_decay(
        INITIAL_LEARNING_RATE, global_step, DECAY_STEPS, LEARNING_RATE_DECAY_FACTOR, staircase=True
    )
    tf.summary.scalar('learning_rate', lr)
    loss_averages = tf.train.ExponentialMovingAverage(0.9, name='avg')
    loss_averages_op = loss_averages.apply([total_loss])
    tf.summary.scalar(total_loss.op.name + ' (raw)', total_loss)
    with tf.control_dependencies([loss_averages_op]):
        opt = tf.train.GradientDescentOptimizer(lr)
        grads = opt.compute_gradients(total_loss)
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
    for grad, var in grads:
        if grad is not None:
            tf.summary.histogram(var.op.name + '/gradients', grad)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
    return variables_averages_op
