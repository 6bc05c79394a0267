"""Horovod's MNIST trainer (`examples/tensorflow/tensorflow_mnist.py`), as written for TensorFlow 1.x, on synthetic
data: the input for `compat-mts upgrade`.

As in Horovod's example: `import tensorflow as tf` with 1.x names and `import horovod.tensorflow as hvd`,
`hvd.init()`, a two-layer convolutional `conv_model` of `tf.layers`, placeholders fed from a NumPy batch generator,
the learning rate scaled by `hvd.size()`, `hvd.DistributedOptimizer` around an `AdamOptimizer`,
`hvd.BroadcastGlobalVariablesHook(0)`, `StopAtStepHook(last_step=... // hvd.size())`, the GPU pinned to
`hvd.local_rank()` in a `ConfigProto`, checkpoints on rank 0 only, and the graph built at the top level of `main`.
Smaller (fewer filters and units), on ten noisy patterns instead of MNIST's download, each rank's batches shuffled
by a seed of its own, the initializers seeded by rank (so each process starts elsewhere until the broadcast, and
rank 0 starts as `tests/v1_programs/horovod_mnist_single_v1.py`, its one-process twin), and without the dropout
layer.

`python horovod_mnist.py CHECKPOINT_DIR LAST_STEP` (under `horovodrun`) prints one JSON line last: the rank, the
size, and per step the sum of the weights before it and its loss.
"""

import json
import sys

import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd

layers = tf.layers

tf.logging.set_verbosity(tf.logging.INFO)


def synthetic_mnist(size=512):
    """Ten fixed 28x28 patterns plus noise, flattened to 784 values in [0, 1]; the labels are the patterns."""
    rng = np.random.RandomState(0)
    patterns = rng.uniform(size=(10, 784))
    labels = rng.randint(0, 10, size=size)
    images = np.clip(patterns[labels] + 0.3 * rng.normal(size=(size, 784)), 0.0, 1.0)
    return images.astype(np.float32), labels.astype(np.float32)


def conv_model(feature, target, mode, seed):
    """2-layer convolution model."""
    target = tf.one_hot(tf.cast(target, tf.int32), 10, 1, 0)
    feature = tf.reshape(feature, [-1, 28, 28, 1])

    with tf.variable_scope('conv_layer1'):
        h_conv1 = layers.conv2d(feature, 8, kernel_size=[5, 5],
                                activation=tf.nn.relu, padding="SAME",
                                kernel_initializer=tf.glorot_uniform_initializer(seed=seed + 1))
        h_pool1 = tf.nn.max_pool(
            h_conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')

    with tf.variable_scope('conv_layer2'):
        h_conv2 = layers.conv2d(h_pool1, 16, kernel_size=[5, 5],
                                activation=tf.nn.relu, padding="SAME",
                                kernel_initializer=tf.glorot_uniform_initializer(seed=seed + 2))
        h_pool2 = tf.nn.max_pool(
            h_conv2, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')
        h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 16])

    h_fc1 = layers.dense(h_pool2_flat, 64, activation=tf.nn.relu,
                         kernel_initializer=tf.glorot_uniform_initializer(seed=seed + 3))
    logits = layers.dense(h_fc1, 10, activation=None,
                          kernel_initializer=tf.glorot_uniform_initializer(seed=seed + 4))
    loss = tf.losses.softmax_cross_entropy(target, logits)

    return tf.argmax(logits, 1), loss


def train_input_generator(x_train, y_train, batch_size=64):
    assert len(x_train) == len(y_train)
    while True:
        p = np.random.permutation(len(x_train))
        x_train, y_train = x_train[p], y_train[p]
        index = 0
        while index <= len(x_train) - batch_size:
            yield x_train[index:index + batch_size], \
                  y_train[index:index + batch_size],
            index += batch_size


def main(checkpoint_dir, last_step):
    # Horovod: initialize Horovod.
    hvd.init()
    np.random.seed(hvd.rank())

    x_train, y_train = synthetic_mnist()

    # Build model...
    with tf.name_scope('input'):
        image = tf.placeholder(tf.float32, [None, 784], name='image')
        label = tf.placeholder(tf.float32, [None], name='label')
    predict, loss = conv_model(image, label, tf.estimator.ModeKeys.TRAIN, seed=10 * hvd.rank())

    # Horovod: adjust learning rate based on number of workers.
    opt = tf.train.AdamOptimizer(0.001 * hvd.size())

    # Horovod: add Horovod Distributed Optimizer.
    opt = hvd.DistributedOptimizer(opt)

    global_step = tf.train.get_or_create_global_step()
    train_op = opt.minimize(loss, global_step=global_step)
    weight_sum = tf.add_n([tf.reduce_sum(variable) for variable in tf.trainable_variables()])

    hooks = [
        # Horovod: BroadcastGlobalVariablesHook broadcasts initial variable states
        # from rank 0 to all other processes.
        hvd.BroadcastGlobalVariablesHook(0),

        # Horovod: adjust number of steps based on number of workers.
        tf.train.StopAtStepHook(last_step=last_step // hvd.size()),

        tf.train.LoggingTensorHook(tensors={'step': global_step, 'loss': loss},
                                   every_n_iter=10),
    ]

    # Horovod: pin GPU to be used to process local rank (one GPU per process)
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = str(hvd.local_rank())

    # Horovod: save checkpoints only on worker 0 to prevent other workers from
    # corrupting them.
    checkpoint_dir = checkpoint_dir if hvd.rank() == 0 else None
    training_batch_generator = train_input_generator(x_train,
                                                     y_train, batch_size=32)
    losses, weight_sums = [], []
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir,
                                           hooks=hooks,
                                           config=config) as mon_sess:
        while not mon_sess.should_stop():
            # Run a training step synchronously.
            image_, label_ = next(training_batch_generator)
            feed = {image: image_, label: label_}
            weight_sums.append(float(mon_sess.run(weight_sum, feed_dict=feed)))
            _, loss_value = mon_sess.run([train_op, loss], feed_dict=feed)
            losses.append(float(loss_value))
    print(json.dumps({'rank': hvd.rank(), 'size': hvd.size(), 'losses': losses, 'weight_sums': weight_sums}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
