"""The task module of a cloudml-samples `census/tensorflowcore/trainer`-shaped program, as written for TensorFlow
1.x: it imports the input and the model from `model.py` beside it, and trains them in a
`tf.train.MonitoredTrainingSession` with a `StopAtStepHook` and a `LoggingTensorHook`, checkpoints and summaries
in the job directory.

`python task.py JOB_DIR TRAIN_STEPS` (TensorFlow 1.x, or `tf.compat.v1` in graph mode).
"""

import sys

import tensorflow as tf

import model


def run(job_dir, train_steps):
    with tf.Graph().as_default():
        features, labels = model.input_fn()
        loss, train_op = model.model_fn(features, labels, learning_rate=0.01)
        hooks = [
            tf.train.StopAtStepHook(last_step=train_steps),
            tf.train.LoggingTensorHook({'loss': loss}, every_n_iter=10),
        ]
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=job_dir, hooks=hooks, save_checkpoint_steps=10,
                save_summaries_steps=5) as session:
            while not session.should_stop():
                session.run(train_op)


if __name__ == '__main__':
    run(sys.argv[1], int(sys.argv[2]))
