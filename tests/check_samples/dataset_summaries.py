"""A classifier fed by tf.data, with v1 summaries, a SummarySaverHook and a Scaffold with a Saver.

A sample v1 program for tests/test_check.py; it is read by `compat-mts check`, never run.
"""
import numpy as np
import tensorflow as tf
from tensorflow.compat import v1 as tf1

CHECKPOINT_DIR = '/tmp/classifier'


def input_fn(batch_size=32):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(1000, 4)).astype(np.float32)
    labels = (features.sum(axis=1) > 0).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1000).repeat().batch(batch_size)
    iterator = tf1.data.make_one_shot_iterator(dataset)
    return iterator.get_next()


def model_fn(features, labels):
    with tf1.variable_scope('classifier'):
        weights = tf1.get_variable('weights', [4, 2])
        bias = tf1.get_variable('bias', [2], initializer=tf1.zeros_initializer())
    logits = tf.matmul(features, weights) + bias
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=1), labels), tf.float32))
    tf1.summary.scalar('loss', loss)
    tf1.summary.scalar('accuracy', accuracy)
    tf1.summary.histogram('logits', logits)
    global_step = tf1.train.get_or_create_global_step()
    train_op = tf1.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)
    return loss, train_op


def main():
    features, labels = input_fn()
    loss, train_op = model_fn(features, labels)
    summary_op = tf1.summary.merge_all()
    scaffold = tf1.train.Scaffold(saver=tf1.train.Saver(max_to_keep=3), summary_op=summary_op)
    hooks = [
        tf1.train.StopAtStepHook(last_step=2000),
        tf1.train.SummarySaverHook(save_steps=50, output_dir=CHECKPOINT_DIR + '/train', summary_op=summary_op),
    ]
    with tf1.train.MonitoredTrainingSession(checkpoint_dir=CHECKPOINT_DIR, scaffold=scaffold, hooks=hooks,
                                            save_summaries_steps=None, save_checkpoint_steps=500) as sess:
        while not sess.should_stop():
            sess.run(train_op)


if __name__ == '__main__':
    main()
