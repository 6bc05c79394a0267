"""`train`: tf_slim's `learning.train` loop (research/slim's `train_image_classifier.py`) on `compat_mts.Supervisor`.

`tf_slim.learning.train` builds its stop and log tensors in the program's graph and runs a v1 `Supervisor` and
`Session`, which need graph mode. This `train` takes the same arguments and runs the same loop on
`compat_mts.Supervisor` (`compat_mts.supervisor`): the graph of `tf_slim.learning.create_train_op` (or any
train op) is run by the Supervisor's session, which restores the latest checkpoint of `logdir`; each step runs
`[train_op, global_step]`, logs `global step N: loss = X` every `log_every_n_steps`, and stops at
`number_of_steps`; at the end the chief saves `logdir/model.ckpt-<step>`, as tf_slim did.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.supervisor import Supervisor

__all__ = ['train', 'train_step']

_USE_DEFAULT = 0
_UNSUPPORTED = {
    'sync_optimizer': 'SyncReplicasOptimizer has no compat_mts counterpart: MultiWorkerMirroredStrategy synchronizes',
    'trace_every_n_steps': 'eager runs have no FULL_TRACE RunOptions: use compat_mts.ProfilerHook',
    'session_wrapper': 'the session is a compat_mts session, which tf.compat.v1 debug wrappers do not take',
}


def train_step(sess: Any, train_op: Any, global_step: Any, train_step_kwargs: dict) -> tuple[Any, bool]:
    """One step, as `tf_slim.learning.train_step`: runs `[train_op, global_step]`, logs when
    `train_step_kwargs['should_log']` is true, and returns `(total_loss, should_stop)`."""
    start = time.time()
    total_loss, step = sess.run([train_op, global_step])
    elapsed = time.time() - start
    if 'should_log' in train_step_kwargs and sess.run(train_step_kwargs['should_log']):
        logging.info('global step %d: loss = %.4f (%.3f sec/step)', step, total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs['should_stop'])) if 'should_stop' in train_step_kwargs else False
    return total_loss, should_stop


def train(
    train_op: Any,
    logdir: str | None,
    train_step_fn: Callable = train_step,
    train_step_kwargs: Any = _USE_DEFAULT,
    log_every_n_steps: int = 1,
    graph: tf.Graph | None = None,
    master: str = '',
    is_chief: bool = True,
    global_step: Any = None,
    number_of_steps: int | None = None,
    init_op: Any = _USE_DEFAULT,
    init_feed_dict: dict | None = None,
    local_init_op: Any = _USE_DEFAULT,
    init_fn: Callable | None = None,
    ready_op: Any = _USE_DEFAULT,
    summary_op: Any = _USE_DEFAULT,
    save_summaries_secs: float = 600,
    summary_writer: Any = _USE_DEFAULT,
    startup_delay_steps: int = 0,
    saver: Any = None,
    save_interval_secs: float = 600,
    sync_optimizer: Any = None,
    session_config: Any = None,
    session_wrapper: Any = None,
    trace_every_n_steps: int | None = None,
    ignore_live_threads: bool = False,
) -> Any:
    """Runs tf_slim's training loop on a compat_mts session; returns the last step's total loss.

    The arguments are `tf_slim.learning.train`'s, with its defaults: `train_op` and `global_step` (None: the
    graph's, created if missing) of the graph being built (`graph`: None, the default graph of the program's
    `with tf.Graph().as_default():` block); `logdir` for checkpoints, summaries and the restore (None: none);
    `number_of_steps` (None: until the input ends); `log_every_n_steps`; `init_op`, `init_feed_dict`,
    `local_init_op`, `init_fn` (called as `init_fn(session)`), `ready_op`, `summary_op`, `summary_writer`,
    `saver` (None: one over every global variable), `save_summaries_secs`, `save_interval_secs`, `master`,
    `is_chief`, `session_config`, `train_step_fn` and `train_step_kwargs`; `startup_delay_steps` (a non-chief
    waits for that global step); `ignore_live_threads` is accepted and unused (the loop starts no threads).

    Raises:
      ValueError: `number_of_steps` not positive, or `sync_optimizer`, `session_wrapper` or
        `trace_every_n_steps` given (named, with what to use instead).
    """
    for name, value in (
        ('sync_optimizer', sync_optimizer),
        ('session_wrapper', session_wrapper),
        ('trace_every_n_steps', trace_every_n_steps),
    ):
        if value is not None:
            raise ValueError(f'{name}: not supported by compat_mts.slim_learning.train ({_UNSUPPORTED[name]})')
    del ignore_live_threads
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError('`number_of_steps` must be either None or a positive number.')
    graph = graph or tf.compat.v1.get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = tf.compat.v1.train.get_or_create_global_step()
        saver = saver or tf.compat.v1.train.Saver()
        if summary_op == _USE_DEFAULT:
            summary_op = tf.compat.v1.summary.merge_all()
        if train_step_kwargs == _USE_DEFAULT:
            with tf.name_scope('train_step'):
                train_step_kwargs = {
                    'should_stop': tf.greater_equal(global_step, number_of_steps)
                    if number_of_steps
                    else tf.constant(False)
                }
                if log_every_n_steps > 0:
                    train_step_kwargs['should_log'] = tf.equal(tf.math.floormod(global_step, log_every_n_steps), 0)
        supervisor = Supervisor(
            graph=graph,
            is_chief=is_chief,
            logdir=logdir,
            init_op=init_op,
            init_feed_dict=init_feed_dict,
            local_init_op=local_init_op,
            ready_op=ready_op,
            summary_op=summary_op,
            summary_writer=Supervisor.USE_DEFAULT if summary_writer == _USE_DEFAULT else summary_writer,
            global_step=global_step,
            saver=saver,
            save_summaries_secs=save_summaries_secs,
            save_model_secs=save_interval_secs,
            init_fn=init_fn,
        )
    total_loss = None
    with supervisor.managed_session(master, config=session_config, start_standard_services=bool(logdir)) as sess:
        logging.info('Starting Session.')
        if not is_chief and startup_delay_steps > 0:
            while int(sess.run(global_step)) < min(startup_delay_steps, number_of_steps or startup_delay_steps):
                time.sleep(10)
        try:
            while not supervisor.should_stop():
                total_loss, should_stop = train_step_fn(sess, train_op, global_step, train_step_kwargs)
                if should_stop:
                    logging.info('Stopping Training.')
                    supervisor.request_stop()
                    break
        except tf.errors.OutOfRangeError as error:
            logging.info('Caught OutOfRangeError. Stopping Training. %s', error)
        if logdir and is_chief:
            logging.info('Finished training! Saving model to disk.')
            supervisor.saver.save(sess, os.path.join(logdir, 'model.ckpt'), global_step=global_step)
    return total_loss
