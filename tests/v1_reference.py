"""Runs the differential scenarios in real TF1 graph mode and prints what happened as one JSON line.

The reference side of `tests/test_differential_v1.py`: `tf.compat.v1.disable_eager_execution()`, the real
`tf.compat.v1.train.MonitoredTrainingSession`, `MonitoredSession` and hooks, each scenario in a fresh
`tf.Graph`. The scenarios themselves are in `differential_scenarios.py`; `compat_reference.py` runs the same
ones through compat_mts.

Usage, from the repository root: `PYTHONPATH=. python tests/v1_reference.py [scenario ...]` (all scenarios when
none is named). Prints `{scenario: result}` on the last line of stdout; see `support.run_scenarios` for
the fields.
"""

import contextlib
import sys
import typing

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

# Imported after disable_eager_execution(), as in a v1 program.
from tests import differential_scenarios  # noqa: E402
from tests import support  # noqa: E402


class GraphModel(typing.NamedTuple):
    """The linear regression built as a v1 graph; the fields are described in `differential_scenarios`."""

    global_step: typing.Any
    loss: typing.Any
    global_step_after: typing.Any
    train_op: typing.Any
    scaffold: typing.Any = None

    def run_step(self, sess):
        return float(sess.run([self.train_op, self.loss])[1])

    def run_step_and_loss(self, sess):
        return self.run_step(sess)


def build_model(loss_scales=None):
    """Builds the regression in the default graph: `GradientDescentOptimizer(0.1).minimize(loss, global_step)`.

    Args:
      loss_scales: when given, each run multiplies the loss by the next of these values, taken from a one-shot
        `tf.data` iterator (so the run after the last one raises `OutOfRangeError`).
    """
    global_step = tf.compat.v1.train.get_or_create_global_step()
    features, targets = differential_scenarios.regression_data()
    weights = tf.compat.v1.get_variable('w', initializer=np.zeros([3, 1], np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - targets))
    if loss_scales is not None:
        scales = tf.data.Dataset.from_tensor_slices(np.array(loss_scales, np.float32))
        loss = loss * tf.compat.v1.data.make_one_shot_iterator(scales).get_next()
    tf.compat.v1.summary.scalar('loss', loss)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(differential_scenarios.LEARNING_RATE).minimize(
        loss, global_step=global_step
    )
    with tf.control_dependencies([train_op]):
        global_step_after = global_step.read_value()
    return GraphModel(global_step=global_step, loss=loss, global_step_after=global_step_after, train_op=train_op)


class GraphSide:
    """The v1 side: `tf.compat.v1.train`, and each scenario in a fresh graph, its summary writers closed after."""

    train = tf.compat.v1.train
    build_model = staticmethod(build_model)

    @staticmethod
    def new_program():
        """A fresh graph: what a new run of the training program would start from."""
        return tf.Graph().as_default()

    @staticmethod
    @contextlib.contextmanager
    def prepare():
        with GraphSide.new_program():
            try:
                yield
            finally:
                # v1 flushes a summary writer in SummarySaverHook.end() only, and closes it at exit; a session
                # without that hook (or one whose end() was skipped) leaves its events buffered. Close the
                # writers, as the end of the v1 program would, so that what v1 wrote is what gets compared.
                tf.compat.v1.summary.FileWriterCache.clear()


if __name__ == '__main__':
    support.run_scenarios(differential_scenarios.SCENARIOS, sys.argv[1:], GraphSide)
