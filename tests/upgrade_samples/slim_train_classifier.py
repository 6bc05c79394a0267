"""A train_image_classifier-shaped program (tensorflow/models research/slim), as TensorFlow 1.x wrote it, tiny:
a small slim network on synthetic 8x8 images, `slim.losses`-style loss, `slim.learning.create_train_op` and
`slim.learning.train(train_op, logdir, number_of_steps=..., log_every_n_steps=1)`; the batches come from a
`tf.data` one-shot iterator, as the newer slim programs read them. No summary service (save_summaries_secs=0):
v1's ran the summary op on a thread of its own, which took a batch at a moment of its own.

python slim_train_classifier.py LOGDIR: trains 6 steps; the loss of each step is logged by the loop.
"""

import sys

import numpy as np
import tensorflow as tf
import tf_slim as slim


def images_and_labels():
    rng = np.random.RandomState(0)
    images = rng.uniform(size=(48, 8, 8, 1)).astype(np.float32)
    labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(8).repeat()
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


def network(images):
    with slim.arg_scope([slim.conv2d, slim.fully_connected], weights_initializer=tf.glorot_uniform_initializer(seed=3)):
        net = slim.conv2d(images, 4, [3, 3], scope='conv1')
        net = slim.max_pool2d(net, [2, 2], scope='pool1')
        net = slim.flatten(net)
        return slim.fully_connected(net, 2, activation_fn=None, scope='logits')


def main(logdir):
    tf.logging.set_verbosity(tf.logging.INFO)
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        images, labels = images_and_labels()
        logits = network(images)
        tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        total_loss = tf.losses.get_total_loss()
        tf.summary.scalar('total_loss', total_loss)
        optimizer = tf.train.GradientDescentOptimizer(0.5)
        train_op = slim.learning.create_train_op(total_loss, optimizer, global_step=global_step)
        slim.learning.train(train_op, logdir, number_of_steps=6, log_every_n_steps=1, save_summaries_secs=0)


if __name__ == '__main__':
    main(sys.argv[1])
