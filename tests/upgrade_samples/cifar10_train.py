"""The tensorflow/models CIFAR-10 trainer (`tutorials/image/cifar10/cifar10_train.py` with `cifar10.py`), as written
for TensorFlow 1.x, on synthetic data: the input for `compat-mts upgrade`.

As in the tutorial: `import tensorflow as tf` with 1.x names (`tf.get_variable`, `tf.train.*`, `tf.summary.*`,
`tf.ConfigProto`), the graph built inside `with tf.Graph().as_default():` in `train()`, weight decay through the
`losses` collection, a learning rate decayed in steps, gradients applied by hand with histogram summaries, an
`ExponentialMovingAverage` of the variables, and `_LoggerHook`, the program's own `SessionRunHook`. The input is
a `tf.data` pipeline of synthetic images instead of the tutorial's queue runners, which compat_mts does not run.

`python cifar10_train.py TRAIN_DIR MAX_STEPS` (TensorFlow 1.x, or `tf.compat.v1` in graph mode).
"""

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


def train_step(total_loss, global_step):
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


def train(train_dir, max_steps):
    """Train CIFAR-10 for a number of steps."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        with tf.device('/cpu:0'):
            images, labels = distorted_inputs()
        logits = inference(images)
        total_loss = loss(logits, labels)
        train_op = train_step(total_loss, global_step)

        class _LoggerHook(tf.train.SessionRunHook):
            """Logs loss and runtime."""

            def begin(self):
                self._step = -1
                self._start_time = time.time()

            def before_run(self, run_context):
                self._step += 1
                return tf.train.SessionRunArgs(total_loss)  # Asks for loss value.

            def after_run(self, run_context, run_values):
                if self._step % LOG_FREQUENCY == 0:
                    print('step %d, loss = %.6f' % (self._step, run_values.results), flush=True)

        with tf.train.MonitoredTrainingSession(
            checkpoint_dir=train_dir,
            hooks=[tf.train.StopAtStepHook(last_step=max_steps), tf.train.NanTensorHook(total_loss), _LoggerHook()],
            save_checkpoint_steps=10,
            save_summaries_steps=5,
            config=tf.ConfigProto(log_device_placement=False),
        ) as mon_sess:
            while not mon_sess.should_stop():
                mon_sess.run(train_op)


if __name__ == '__main__':
    train(sys.argv[1], int(sys.argv[2]))
