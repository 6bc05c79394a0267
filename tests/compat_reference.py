"""Runs the differential scenarios eagerly through compat_mts and prints what happened as one JSON line.

The twin of `tests/v1_reference.py`: the same scenarios (`differential_scenarios.py`), the same recording hook
(a `tf.compat.v1.train.SessionRunHook` subclass, unchanged), but `compat_mts` in place of
`tf.compat.v1.train` and a `tf.function` train step in place of the graph. Between scenarios the registered
global step is forgotten (`compat_mts.reset_global_step()`).

Usage, from the repository root: `PYTHONPATH=. python tests/compat_reference.py [scenario ...]` (all scenarios when
none is named). Prints `{scenario: result}` on the last line of stdout; see `support.run_scenarios` for
the fields.
"""

import contextlib
import sys

import numpy as np
import tensorflow as tf

import compat_mts as mts
from tests import differential_scenarios
from tests import support


class EagerModel:
    """The linear regression as a TF2 user writes it for compat_mts: variables and a `tf.function` step.

    The fields are described in `differential_scenarios`. The step does v1's `minimize(loss, global_step)` by
    hand (`w -= 0.1 * dloss/dw`, then `global_step += 1`), records `tf.summary.scalar('loss', loss)` and
    returns `{'loss': loss}`, so hooks fetch the loss by the name `'loss'`.

    Args:
      loss_scales: when given, each step multiplies the loss by the next of these values, taken from a
        `tf.data` iterator (so the step after the last one raises `OutOfRangeError`).
    """

    loss = 'loss'

    def __init__(self, loss_scales=None):
        self.global_step = mts.get_or_create_global_step()
        self.global_step_after = self.global_step
        features, targets = differential_scenarios.regression_data()
        weights = tf.Variable(np.zeros([3, 1], np.float32), name='w')
        scales = None
        if loss_scales is not None:
            scales = iter(tf.data.Dataset.from_tensor_slices(np.array(loss_scales, np.float32)))
        global_step = self.global_step

        @tf.function
        def train_step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - targets))
                if scales is not None:
                    loss = loss * next(scales)
            update = weights.assign_sub(differential_scenarios.LEARNING_RATE * tape.gradient(loss, weights))
            # As v1's minimize(global_step=...): the step counts only once the update ran. (tf.function orders
            # stateful ops per resource only, so without this a failing input would still count the step.)
            with tf.control_dependencies([update]):
                global_step.assign_add(1)
            tf.summary.scalar('loss', loss)
            return {'loss': loss}

        self.train_step = train_step
        self.scaffold = mts.Scaffold(saver=tf.train.Checkpoint(w=weights))

    def run_step(self, sess):
        return float(sess.run(self.train_step)['loss'])

    def run_step_and_loss(self, sess):
        return float(sess.run([self.train_step, 'loss'])[1])


class EagerSide:
    """The compat_mts side: `compat_mts` as the training API, the global step forgotten around each scenario."""

    train = mts
    build_model = EagerModel

    @staticmethod
    @contextlib.contextmanager
    def new_program():
        """No registered global step: what a new run of the training program would start from."""
        mts.reset_global_step()
        try:
            yield
        finally:
            mts.reset_global_step()

    prepare = new_program


if __name__ == '__main__':
    support.run_scenarios(differential_scenarios.SCENARIOS, sys.argv[1:], EagerSide)
