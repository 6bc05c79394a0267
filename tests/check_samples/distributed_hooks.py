"""Between-graph replicated training, TF 1.x: tf.train.Server, a custom hook and a ConfigProto.

A sample v1 program for tests/test_check.py; it is read by `compat-mts check`, never run.
"""
import argparse

import tensorflow as tf


class LossThresholdHook(tf.train.SessionRunHook):
    """Stops training once the loss tensor of the graph falls below `threshold`."""

    def __init__(self, threshold):
        self._threshold = threshold

    def begin(self):
        self._loss = tf.get_default_graph().get_tensor_by_name('loss:0')
        self._global_step = tf.train.get_global_step()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs({'loss': self._loss, 'step': self._global_step})

    def after_run(self, run_context, run_values):
        if run_values.results['loss'] < self._threshold:
            tf.logging.info('loss below %s at step %d', self._threshold, run_values.results['step'])
            run_context.request_stop()


def main(args):
    cluster = tf.train.ClusterSpec({'ps': args.ps_hosts.split(','), 'worker': args.worker_hosts.split(',')})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == 'ps':
        server.join()
        return

    worker_device = '/job:worker/task:%d' % args.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        inputs = tf.random.normal([64, 10])
        weights = tf.get_variable('weights', [10, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - 1.0), name='loss')
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(0.01).minimize(loss, global_step=global_step)

    config = tf.ConfigProto(allow_soft_placement=True, device_filters=['/job:ps', worker_device])
    hooks = [
        tf.train.StopAtStepHook(last_step=10000),
        tf.train.LoggingTensorHook({'loss': loss, 'step': global_step}, every_n_iter=100),
        LossThresholdHook(threshold=0.01),
    ]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=(args.task_index == 0),
                                           checkpoint_dir=args.checkpoint_dir, hooks=hooks,
                                           config=config) as sess:
        while not sess.should_stop():
            sess.run(train_op)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--ps_hosts', default='localhost:2222')
    parser.add_argument('--worker_hosts', default='localhost:2223')
    parser.add_argument('--job_name', default='worker')
    parser.add_argument('--task_index', type=int, default=0)
    parser.add_argument('--checkpoint_dir', default='/tmp/distributed')
    main(parser.parse_args())
