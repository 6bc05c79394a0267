"""The trainer half of the tensorflow/models CIFAR-10 tutorial (`tutorials/image/cifar10/cifar10_train.py`), as
written for TensorFlow 1.x: it imports the model from `cifar10.py` beside it, as the tutorial does.

As in the tutorial: the graph built inside `with tf.Graph().as_default():` in `train()`, `_LoggerHook`, the
program's own `SessionRunHook`, and a `tf.train.MonitoredTrainingSession` with `StopAtStepHook`, `NanTensorHook`
and a `tf.ConfigProto`.

`python cifar10_train.py TRAIN_DIR MAX_STEPS` (TensorFlow 1.x, or `tf.compat.v1` in graph mode).
"""

import sys
import time

import tensorflow as tf

import cifar10


def train(train_dir, max_steps):
    """Train CIFAR-10 for a number of steps."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        with tf.device('/cpu:0'):
            images, labels = cifar10.distorted_inputs()
        logits = cifar10.inference(images)
        total_loss = cifar10.loss(logits, labels)
        train_op = cifar10.train(total_loss, global_step)

        class _LoggerHook(tf.train.SessionRunHook):
            """Logs loss and runtime."""

            def begin(self):
                self._step = -1
                self._start_time = time.time()

            def before_run(self, run_context):
                self._step += 1
                return tf.train.SessionRunArgs(total_loss)  # Asks for loss value.

            def after_run(self, run_context, run_values):
                if self._step % cifar10.LOG_FREQUENCY == 0:
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
