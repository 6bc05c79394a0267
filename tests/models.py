"""The small deterministic programs the tests train: a linear regression with a v1-style step."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import compat_mts as mts

FEATURES = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
TARGETS = np.array([[1.0], [2.0], [3.0], [4.0]], dtype=np.float32)


class Regression:
    """`w` fit by plain gradient descent; `step` increments the global step and writes a `loss` summary."""

    def __init__(self, learning_rate: float = 0.1):
        self.global_step = mts.get_or_create_global_step()
        self.w = tf.Variable(np.zeros([3, 1], np.float32), name='w')
        self.learning_rate = learning_rate
        self.checkpoint = tf.train.Checkpoint(w=self.w)
        self.step = tf.function(self._step)

    def _step(self):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(FEATURES, self.w) - TARGETS))
        self.w.assign_sub(self.learning_rate * tape.gradient(loss, self.w))
        self.global_step.assign_add(1)
        tf.summary.scalar('loss', loss)
        return {'loss': loss}

    def scaffold(self, **kwargs) -> mts.Scaffold:
        return mts.Scaffold(saver=self.checkpoint, **kwargs)


class Recorder(mts.SessionRunHook):
    """Records every hook call in a shared list, as (name, method) pairs."""

    def __init__(self, name: str, calls: list, fetches=None, stop_at_before_run: int | None = None):
        self.name = name
        self.calls = calls
        self.fetches = fetches
        self.results = []
        self.sessions = []
        self.stop_at_before_run = stop_at_before_run
        self.before_runs = 0

    def begin(self):
        self.calls.append((self.name, 'begin'))

    def after_create_session(self, session, coord):
        self.sessions.append((session, coord))
        self.calls.append((self.name, 'after_create_session'))

    def before_run(self, run_context):
        self.calls.append((self.name, 'before_run'))
        self.before_runs += 1
        if self.stop_at_before_run == self.before_runs:
            run_context.request_stop()
        return mts.SessionRunArgs(self.fetches) if self.fetches is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, 'after_run'))
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append((self.name, 'end'))
        self.sessions.append((session, None))
