"""A trainer shaped like the tensorflow/models CIFAR-10 tutorial (`cifar10_train.py` + `cifar10.py`), on synthetic data.

What makes it the tutorial's: the graph is built inside `with tf.Graph().as_default():` in `train()`, the
global step comes first, weight decay goes through the `losses` collection, the learning rate decays in
steps, gradients are applied by hand with histogram summaries, an `ExponentialMovingAverage` of the
variables runs after each step, and `_LoggerHook` is a `SessionRunHook` of the program's own that fetches the
loss. The loop is `while not mon_sess.should_stop(): mon_sess.run(train_op)`.

`python tests/v1_programs/cifar10_train.py v1 TRAIN_DIR MAX_STEPS...` runs it as the tutorial ran: v1 graph mode
and `tf.compat.v1.train`. With `compat` instead of `v1` it is the program after the guide's stage-1 edit, the
one line that picks `compat_mts` for `tf.compat.v1.train`'s session and hooks (`train_lib` below); the graph
code and the `tf.Graph().as_default()` block are as written. Prints the logger hook's lines
(`step N, loss = X`) and, last, one JSON line with the losses it logged. Each MAX_STEPS is one more call of
`train()`, as a restarted job would make it: the later ones resume from TRAIN_DIR.
"""

import json
import sys
import time

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
    """Synthetic images whose class is the brightest of ten fixed patterns, batched by tf.data."""
    rng = np.random.default_rng(0)
    patterns = rng.normal(size=(NUM_CLASSES, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, size=512)
    images = patterns[labels] + 0.3 * rng.normal(size=(512, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int32))).repeat().batch(BATCH_SIZE, drop_remainder=True)
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


def _variable_with_weight_decay(name, shape, stddev, wd, seed):
    var = tf.compat.v1.get_variable(
        name, shape, initializer=tf.compat.v1.truncated_normal_initializer(stddev=stddev, seed=seed))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
        tf.compat.v1.add_to_collection('losses', weight_decay)
    return var


def _activation_summary(x):
    tf.compat.v1.summary.histogram(x.op.name + '/activations', x)
    tf.compat.v1.summary.scalar(x.op.name + '/sparsity', tf.nn.zero_fraction(x))


def inference(images):
    with tf.compat.v1.variable_scope('conv1') as scope:
        kernel = _variable_with_weight_decay('weights', [3, 3, 3, 8], stddev=5e-2, wd=None, seed=1)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
        biases = tf.compat.v1.get_variable('biases', [8], initializer=tf.compat.v1.constant_initializer(0.0))
        conv1 = tf.nn.relu(tf.nn.bias_add(conv, biases), name=scope.name)
        _activation_summary(conv1)
    pool1 = tf.nn.max_pool2d(conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
    with tf.compat.v1.variable_scope('local3') as scope:
        reshape = tf.reshape(pool1, [BATCH_SIZE, -1])
        dim = reshape.get_shape()[1]
        weights = _variable_with_weight_decay('weights', shape=[dim, 32], stddev=0.04, wd=0.004, seed=2)
        biases = tf.compat.v1.get_variable('biases', [32], initializer=tf.compat.v1.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    with tf.compat.v1.variable_scope('softmax_linear') as scope:
        weights = _variable_with_weight_decay('weights', [32, NUM_CLASSES], stddev=1 / 32.0, wd=None, seed=3)
        biases = tf.compat.v1.get_variable('biases', [NUM_CLASSES],
                                           initializer=tf.compat.v1.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
        _activation_summary(softmax_linear)
    return softmax_linear


def loss_of(logits, labels):
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int64), logits=logits, name='cross_entropy_per_example')
    tf.compat.v1.add_to_collection('losses', tf.reduce_mean(cross_entropy, name='cross_entropy'))
    return tf.add_n(tf.compat.v1.get_collection('losses'), name='total_loss')


def train_step(total_loss, global_step):
    lr = tf.compat.v1.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, DECAY_STEPS,
                                              LEARNING_RATE_DECAY_FACTOR, staircase=True)
    tf.compat.v1.summary.scalar('learning_rate', lr)
    loss_averages = tf.compat.v1.train.ExponentialMovingAverage(0.9, name='avg')
    loss_averages_op = loss_averages.apply([total_loss])
    tf.compat.v1.summary.scalar(total_loss.op.name + ' (raw)', total_loss)
    with tf.control_dependencies([loss_averages_op]):
        grads = tf.compat.v1.train.GradientDescentOptimizer(lr).compute_gradients(total_loss)
    apply_gradient_op = tf.compat.v1.train.GradientDescentOptimizer(lr).apply_gradients(
        grads, global_step=global_step)
    for grad, var in grads:
        if grad is not None:
            tf.compat.v1.summary.histogram(var.op.name + '/gradients', grad)
    variable_averages = tf.compat.v1.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.compat.v1.trainable_variables())
    return variables_averages_op


def train(train_lib, train_dir, max_steps):
    logged = []
    with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.device('/cpu:0'):
            images, labels = distorted_inputs()
        logits = inference(images)
        loss = loss_of(logits, labels)
        train_op = train_step(loss, global_step)

        class _LoggerHook(tf.compat.v1.train.SessionRunHook):
            """Logs loss and runtime."""

            def begin(self):
                self._step = -1
                self._start_time = time.time()

            def before_run(self, run_context):
                self._step += 1
                return tf.compat.v1.train.SessionRunArgs(loss)  # Asks for loss value.

            def after_run(self, run_context, run_values):
                if self._step % LOG_FREQUENCY == 0:
                    loss_value = run_values.results
                    logged.append(float(loss_value))
                    print('step %d, loss = %.6f' % (self._step, loss_value), flush=True)

        with train_lib.MonitoredTrainingSession(
                checkpoint_dir=train_dir,
                hooks=[train_lib.StopAtStepHook(last_step=max_steps),
                       train_lib.NanTensorHook(loss),
                       _LoggerHook()],
                save_checkpoint_steps=10,
                save_summaries_steps=5,
                config=tf.compat.v1.ConfigProto(log_device_placement=False)) as mon_sess:
            while not mon_sess.should_stop():
                mon_sess.run(train_op)
    return logged


def main(mode, train_dir, all_max_steps):
    if mode == 'v1':
        tf.compat.v1.disable_eager_execution()
        train_lib = tf.compat.v1.train
    else:
        import compat_mts as train_lib
    logged = [train(train_lib, train_dir, max_steps) for max_steps in all_max_steps]
    print(json.dumps({'logged': logged}))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], [int(steps) for steps in sys.argv[3:]])
