"""The stage-1 twin of `mnist_layers_v1.py`: that program after migration_guide/legacy.md's stage-1 edits, and no others.

The edits: `tf.disable_v2_behavior()` removed (eager execution stays on); `tf.train.MonitoredTrainingSession`,
`StopAtStepHook` and `LoggingTensorHook` become `mts.*`; the graph, built at the top level of `main` in v1, goes
under `with tf.Graph().as_default():` with the session loop. The graph code, `tf.layers` included, is as written.
The one line added is the guide's set-up for v1 layers under Keras 3: `TF_USE_LEGACY_KERAS=1` before TensorFlow is
imported (`compat-mts[legacy]` installs tf-keras). `python tests/v1_programs/mnist_layers_compat.py CHECKPOINT_DIR
LAST_STEP`.
"""

import json
import os
import sys

os.environ['TF_USE_LEGACY_KERAS'] = '1'  # Before TensorFlow is imported: tf.layers are tf-keras's (Keras 2).

import numpy as np
import tensorflow.compat.v1 as tf

import compat_mts as mts

layers = tf.layers
tf.logging.set_verbosity(tf.logging.INFO)

IMAGE_SIZE = 28
NUM_CLASSES = 10


def synthetic_mnist(size=512):
    """Ten fixed 28x28 patterns plus noise, flattened to 784 values in [0, 1]; the labels are the patterns."""
    rng = np.random.RandomState(0)
    patterns = rng.uniform(size=(NUM_CLASSES, IMAGE_SIZE * IMAGE_SIZE))
    labels = rng.randint(0, NUM_CLASSES, size=size)
    images = np.clip(patterns[labels] + 0.3 * rng.normal(size=(size, IMAGE_SIZE * IMAGE_SIZE)), 0.0, 1.0)
    return images.astype(np.float32), labels.astype(np.float32)


def conv_model(feature, target, training):
    """2-layer convolution model."""
    target = tf.one_hot(tf.cast(target, tf.int32), NUM_CLASSES, 1, 0)
    feature = tf.reshape(feature, [-1, IMAGE_SIZE, IMAGE_SIZE, 1])

    with tf.variable_scope('conv_layer1'):
        h_conv1 = layers.conv2d(feature, 8, kernel_size=[5, 5], activation=tf.nn.relu, padding='SAME',
                                kernel_initializer=tf.glorot_uniform_initializer(seed=1))
        h_pool1 = layers.max_pooling2d(h_conv1, pool_size=[2, 2], strides=[2, 2], padding='SAME')

    with tf.variable_scope('conv_layer2'):
        h_conv2 = layers.conv2d(h_pool1, 16, kernel_size=[5, 5], activation=tf.nn.relu, padding='SAME',
                                kernel_initializer=tf.glorot_uniform_initializer(seed=2))
        h_pool2 = layers.max_pooling2d(h_conv2, pool_size=[2, 2], strides=[2, 2], padding='SAME')
        h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 16])

    h_fc1 = layers.dense(h_pool2_flat, 64, activation=tf.nn.relu,
                         kernel_initializer=tf.glorot_uniform_initializer(seed=3))
    logits = layers.dense(h_fc1, NUM_CLASSES, activation=None,
                          kernel_initializer=tf.glorot_uniform_initializer(seed=4))
    loss = tf.losses.softmax_cross_entropy(target, logits)
    return tf.argmax(logits, 1), loss


def train_input_generator(x_train, y_train, batch_size=64):
    assert len(x_train) == len(y_train)
    while True:
        p = np.random.permutation(len(x_train))
        x_train, y_train = x_train[p], y_train[p]
        index = 0
        while index <= len(x_train) - batch_size:
            yield x_train[index:index + batch_size], y_train[index:index + batch_size]
            index += batch_size


def main(checkpoint_dir, last_step):
    np.random.seed(0)
    x_train, y_train = synthetic_mnist()

    with tf.Graph().as_default():
        with tf.name_scope('input'):
            image = tf.placeholder(tf.float32, [None, 784], name='image')
            label = tf.placeholder(tf.float32, [None], name='label')
        predict, loss = conv_model(image, label, training=True)
        _, accuracy_update = tf.metrics.accuracy(label, predict)

        opt = tf.train.AdamOptimizer(0.001)
        global_step = tf.train.get_or_create_global_step()
        train_op = opt.minimize(loss, global_step=global_step)

        hooks = [
            mts.StopAtStepHook(last_step=last_step),
            mts.LoggingTensorHook(tensors={'step': global_step, 'loss': loss}, every_n_iter=10),
        ]
        training_batch_generator = train_input_generator(x_train, y_train, batch_size=32)
        losses, accuracies = [], []
        with mts.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks,
                                          save_checkpoint_steps=20) as mon_sess:
            while not mon_sess.should_stop():
                image_, label_ = next(training_batch_generator)
                _, loss_value, accuracy_value = mon_sess.run([train_op, loss, accuracy_update],
                                                             feed_dict={image: image_, label: label_})
                losses.append(float(loss_value))
                accuracies.append(float(accuracy_value))
        print(json.dumps({'losses': losses, 'accuracies': accuracies}))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
