"""A ptb_word_lm-shaped program (tensorflow/models tutorials/rnn/ptb), as TensorFlow 1.x wrote it, on a small
synthetic corpus: an LSTM language model in a `with tf.Graph().as_default():` block, a learning rate assigned
through a placeholder, the LSTM state fed back between runs, and `tf.train.Supervisor`'s `managed_session`,
with `sv.saver.save(session, save_path, global_step=sv.global_step)` at the end. ptb's queue-runner reader
(`tf.train.range_input_producer`) is replaced by feeds of the same batches (migration_guide/queue_runners.md).

python ptb_supervisor.py SAVE_PATH: prints one `step N loss X` line per step.
"""

import sys

import numpy as np
import tensorflow as tf

BATCH, STEPS, HIDDEN, VOCAB, EPOCHS, EPOCH_STEPS = 4, 5, 8, 20, 2, 3


def corpus():
    rng = np.random.RandomState(0)
    data = rng.randint(0, VOCAB, size=BATCH * (STEPS * EPOCH_STEPS + 1))
    return data.reshape(BATCH, -1)


class PTBModel(object):
    def __init__(self):
        self.input_data = tf.placeholder(tf.int32, [BATCH, STEPS])
        self.targets = tf.placeholder(tf.int32, [BATCH, STEPS])
        self.initial_c = tf.placeholder(tf.float32, [BATCH, HIDDEN])
        self.initial_h = tf.placeholder(tf.float32, [BATCH, HIDDEN])
        embedding = tf.get_variable('embedding', [VOCAB, HIDDEN])
        inputs = tf.nn.embedding_lookup(embedding, self.input_data)
        w_x = tf.get_variable('w_x', [HIDDEN, 4 * HIDDEN])
        w_h = tf.get_variable('w_h', [HIDDEN, 4 * HIDDEN])
        bias = tf.get_variable('bias', [4 * HIDDEN], initializer=tf.zeros_initializer())
        c, h, outputs = self.initial_c, self.initial_h, []
        for time_step in range(STEPS):
            gates = tf.matmul(inputs[:, time_step, :], w_x) + tf.matmul(h, w_h) + bias
            i, j, f, o = tf.split(gates, 4, axis=1)
            c = c * tf.sigmoid(f + 1.0) + tf.sigmoid(i) * tf.tanh(j)
            h = tf.tanh(c) * tf.sigmoid(o)
            outputs.append(h)
        self.final_c, self.final_h = c, h
        output = tf.reshape(tf.concat(outputs, 1), [-1, HIDDEN])
        softmax_w = tf.get_variable('softmax_w', [HIDDEN, VOCAB])
        logits = tf.matmul(output, softmax_w)
        labels = tf.reshape(self.targets, [-1])
        self.cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        self._lr = tf.Variable(0.0, trainable=False)
        tf.summary.scalar('Learning Rate', self._lr)  # Feed-free: the Supervisor's summary service runs it alone.
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self.cost, tvars), 5.0)
        optimizer = tf.train.GradientDescentOptimizer(self._lr)
        self.train_op = optimizer.apply_gradients(
            zip(grads, tvars), global_step=tf.train.get_or_create_global_step())
        self._new_lr = tf.placeholder(tf.float32, shape=[])
        self._lr_update = tf.assign(self._lr, self._new_lr)

    def assign_lr(self, session, lr_value):
        session.run(self._lr_update, feed_dict={self._new_lr: lr_value})


def run_epoch(session, model, data, step):
    c = np.zeros([BATCH, HIDDEN], np.float32)
    h = np.zeros([BATCH, HIDDEN], np.float32)
    for index in range(EPOCH_STEPS):
        start = index * STEPS
        feed_dict = {
            model.input_data: data[:, start:start + STEPS],
            model.targets: data[:, start + 1:start + STEPS + 1],
            model.initial_c: c,
            model.initial_h: h,
        }
        cost, c, h, _ = session.run([model.cost, model.final_c, model.final_h, model.train_op], feed_dict)
        step += 1
        print('step %d loss %.6f' % (step, cost))
    return step


def main(save_path):
    data = corpus()
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        initializer = tf.random_uniform_initializer(-0.1, 0.1, seed=2)
        with tf.variable_scope('Model', initializer=initializer):
            model = PTBModel()
        sv = tf.train.Supervisor(logdir=save_path)
        with sv.managed_session() as session:
            step = 0
            for epoch in range(EPOCHS):
                model.assign_lr(session, 1.0 * 0.5 ** epoch)
                step = run_epoch(session, model, data, step)
            print('saved', sv.saver.save(session, save_path, global_step=sv.global_step))


if __name__ == '__main__':
    main(sys.argv[1])
