"""Linear regression in the TF1 style: placeholders, feed_dict and a MonitoredTrainingSession.

A sample v1 program for tests/test_check.py; it is read by `compat-mts check`, never run.
"""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

TRUE_W = np.array([[1.0], [-2.0], [0.5]], np.float32)


def build_model(learning_rate):
    x = tf.placeholder(tf.float32, [None, 3], name='x')
    y = tf.placeholder(tf.float32, [None, 1], name='y')
    w = tf.get_variable('w', [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable('b', [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name='loss')
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    train_op = optimizer.minimize(loss, global_step=global_step)
    return x, y, loss, train_op


def main():
    x, y, loss, train_op = build_model(learning_rate=0.1)
    rng = np.random.default_rng(0)
    hooks = [tf.train.StopAtStepHook(last_step=1000)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir='/tmp/regression', hooks=hooks) as sess:
        while not sess.should_stop():
            batch = rng.normal(size=(32, 3)).astype(np.float32)
            _, loss_value = sess.run([train_op, loss], feed_dict={x: batch, y: batch @ TRUE_W})
    print('final loss', loss_value)


if __name__ == '__main__':
    main()
