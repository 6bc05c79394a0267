"""A v1 trainer with a full `Scaffold` of graph ops: init, local init, ready, summary ops and a `Saver(max_to_keep=3)`.

Built inside `with tf.Graph().as_default():`, fed through placeholders, with a `tf.compat.v1.metrics.mean` update
op run next to the train op. `python tests/v1_programs/full_scaffold_train.py {v1,compat} TRAIN_DIR` runs it in
v1 graph mode with `tf.compat.v1.train`, or on compat_mts after the stage-1 edit (`train` below). Prints the
final values of `FinalOpsHook` as one JSON line.
"""

import json
import sys

import numpy as np
import tensorflow as tf


def main(mode, train_dir):
    if mode == 'v1':
        tf.compat.v1.disable_eager_execution()
        train = tf.compat.v1.train
    else:
        import compat_mts as train
    with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name='x')
        y = tf.compat.v1.placeholder(tf.float32, [None, 1], name='y')
        w = tf.compat.v1.get_variable('w', [3, 1], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        tf.compat.v1.summary.scalar('loss', loss)
        train_op = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss, global_step=global_step)
        mean_loss, mean_loss_update = tf.compat.v1.metrics.mean(loss)
        scaffold = train.Scaffold(
            init_op=tf.compat.v1.global_variables_initializer(),
            local_init_op=tf.compat.v1.local_variables_initializer(),
            ready_op=tf.compat.v1.report_uninitialized_variables(),
            summary_op=tf.compat.v1.summary.merge_all(),
            saver=tf.compat.v1.train.Saver(max_to_keep=3, sharded=True))
        rng = np.random.default_rng(0)
        features = rng.normal(size=(64, 3)).astype(np.float32)
        targets = features.sum(1, keepdims=True)
        final = train.FinalOpsHook({'w': w, 'mean_loss': mean_loss, 'step': global_step})
        with train.MonitoredTrainingSession(checkpoint_dir=train_dir, scaffold=scaffold, save_checkpoint_steps=2,
                                            save_summaries_steps=2,
                                            hooks=[train.StopAtStepHook(last_step=8), final]) as session:
            while not session.should_stop():
                session.run([train_op, mean_loss_update], feed_dict={x: features, y: targets})
    print(json.dumps({name: np.asarray(value).tolist() for name, value in final.final_ops_values.items()}))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
