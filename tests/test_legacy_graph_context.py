"""A session created inside the program's own `with tf.Graph().as_default():` runs that graph, as v1's did.

Nearly every public v1 trainer builds its graph and its session in that block. The reference is the same
program in real v1 graph mode (`tests/v1_programs/cifar10_train.py`, shaped like the tensorflow/models CIFAR-10
tutorial trainer), then the protocol details in this process.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts import _tf_internals as tf_internals
from tests.support import REPO_ROOT, checkpoint_steps, events_files, read_events, run_v1_and_compat, state_file_steps

_TRAINER = os.path.join(REPO_ROOT, 'tests', 'v1_programs', 'cifar10_train.py')


@pytest.fixture(scope='module')
def tutorial_runs(tmp_path_factory):
    """The trainer run twice on one directory (to step 30, then resumed to 40), by v1 and by compat_mts."""
    directories = {mode: str(tmp_path_factory.mktemp(mode)) for mode in ('v1', 'compat')}
    results = run_v1_and_compat(*[(_TRAINER, mode, directory, '30', '40') for mode, directory in directories.items()])
    runs = {}
    for (mode, directory), result in zip(directories.items(), results):
        assert result.returncode == 0, result.stderr[-3000:]
        runs[mode] = {
            'directory': directory,
            'logged': json.loads(result.stdout.splitlines()[-1])['logged'],
            'lines': [line for line in result.stdout.splitlines() if line.startswith('step ')],
        }
    return runs


@pytest.mark.slow
def test_the_tutorial_trainer_logs_the_losses_v1_logs_and_resumes_where_v1_resumes(tutorial_runs):
    v1, compat = tutorial_runs['v1'], tutorial_runs['compat']
    assert [len(leg) for leg in v1['logged']] == [6, 2]  # Steps 0, 5, ..., 25; then the resumed run's 0, 5.
    assert [len(leg) for leg in compat['logged']] == [len(leg) for leg in v1['logged']]
    np.testing.assert_allclose(sum(compat['logged'], []), sum(v1['logged'], []), rtol=1e-5)
    assert checkpoint_steps(compat['directory']) == checkpoint_steps(v1['directory']) == [0, 10, 20, 30, 40]
    assert state_file_steps(compat['directory']) == state_file_steps(v1['directory'])


@pytest.mark.slow
def test_the_tutorial_trainer_checkpoints_v1s_variables_with_v1s_values(tutorial_runs):
    v1 = tf.train.load_checkpoint(os.path.join(tutorial_runs['v1']['directory'], 'model.ckpt-40'))
    compat = tf.train.load_checkpoint(os.path.join(tutorial_runs['compat']['directory'], 'model.ckpt-40'))
    names = sorted(v1.get_variable_to_shape_map())
    assert 'conv1/weights/ExponentialMovingAverage' in names and 'global_step' in names
    assert sorted(compat.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_allclose(compat.get_tensor(name), v1.get_tensor(name), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_the_tutorial_trainer_writes_v1s_summaries_at_v1s_steps(tutorial_runs):
    v1 = read_events(tutorial_runs['v1']['directory'])
    compat = read_events(tutorial_runs['compat']['directory'])
    assert 'learning_rate' in v1 and 'total_loss__raw_' in v1
    assert sorted(compat) == sorted(v1)
    for tag in ('learning_rate', 'total_loss__raw_', 'conv1/conv1/conv1/sparsity'):
        assert [step for step, _ in compat[tag]] == [step for step, _ in v1[tag]], tag
        np.testing.assert_allclose(
            [value for _, value in compat[tag]], [value for _, value in v1[tag]], rtol=1e-4, atol=1e-6, err_msg=tag
        )
    assert events_files(tutorial_runs['compat']['directory'])


def _build_regression():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    weights = tf.compat.v1.get_variable('w', initializer=np.zeros([3, 1], np.float32))
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - 1.0), name='loss')
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return global_step, weights, loss, train_op


class _OpInBeginHook(tf.compat.v1.train.SessionRunHook):
    """Adds an op to the graph in `begin()`, as v1 allowed, and fetches it with the train op."""

    def begin(self):
        self.doubled_loss = tf.multiply(tf.compat.v1.get_default_graph().get_tensor_by_name('loss:0'), 2.0)
        self.values = []

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.doubled_loss)

    def after_run(self, run_context, run_values):
        self.values.append(float(run_values.results))


def _regression_losses(steps: int) -> list[float]:
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    weights, losses = np.zeros([3, 1], np.float32), []
    for _ in range(steps):
        errors = features @ weights - 1.0
        losses.append(float(np.mean(np.square(errors))))
        weights -= 0.1 * 2 * features.T @ errors / errors.size
    return losses


def test_hooks_add_ops_in_begin_and_the_graph_is_finalized_only_while_the_session_is_open():
    with tf.Graph().as_default() as graph:
        global_step, weights, loss, train_op = _build_regression()
        hook = _OpInBeginHook()
        with mts.MonitoredTrainingSession(hooks=[hook, mts.StopAtStepHook(last_step=3)]) as session:
            if tf_internals.CAN_UNFINALIZE:
                assert graph.finalized
                with pytest.raises(RuntimeError, match='Graph is finalized'):
                    tf.identity(loss)
            else:  # A finalized graph could not be opened again: it is left open, and what is made in it runs.
                assert not graph.finalized
                with pytest.raises(KeyError, match='made_in_the_session'):  # Not made yet.
                    session.run_step_fn(lambda step_context: step_context.session.run('made_in_the_session:0'))
                tripled = tf.multiply(loss, 3.0, name='made_in_the_session')
                first = session.run_step_fn(lambda step_context: step_context.session.run('made_in_the_session:0'))
                assert first == pytest.approx(3 * _regression_losses(1)[0], rel=1e-5)  # Found at once, not run yet.
            while not session.should_stop():
                session.run(train_op)
            if not tf_internals.CAN_UNFINALIZE:  # Run by the raw session: no hook, no step.
                fetched = session.run_step_fn(lambda step_context: step_context.session.run(tripled))
                assert fetched == pytest.approx(3 * _regression_losses(4)[3], rel=1e-5)
        assert not graph.finalized  # As v1 left a graph it had finalized itself.
        tf.identity(loss, name='after_the_session')
    np.testing.assert_allclose(hook.values, [2 * loss for loss in _regression_losses(3)], rtol=1e-5)


def test_each_session_of_the_graph_starts_from_a_fresh_init_or_the_checkpoint_as_a_v1_session_did(tmp_path):
    with tf.Graph().as_default():
        global_step, weights, loss, train_op = _build_regression()
        for _ in range(2):
            with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(num_steps=2)]) as session:
                assert session.run(global_step) == 0  # No checkpoint: initialized again.
                while not session.should_stop():
                    session.run(train_op)
        for expected_start in (0, 2):
            with mts.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), hooks=[mts.StopAtStepHook(num_steps=2)]
            ) as session:
                assert session.run(global_step) == expected_start
                while not session.should_stop():
                    session.run(train_op)
    assert checkpoint_steps(str(tmp_path)) == [0, 2, 4]


def test_once_its_session_closes_the_graph_answers_no_names_of_later_eager_sessions(tf_logs):
    # A notebook runs stage 1 (the v1 graph) and then stage 2 (a Keras step returning 'loss') in one process.
    with tf.Graph().as_default():
        _, _, loss, train_op = _build_regression()
        with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(last_step=2)]) as session:
            while not session.should_stop():
                session.run(train_op)
    mts.reset_global_step()
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step():
        global_step.assign_add(1)
        return {'loss': tf.constant(7.0)}

    hooks = [mts.StopAtStepHook(last_step=2), mts.LoggingTensorHook({'loss': 'loss'}, every_n_iter=1)]
    with mts.MonitoredTrainingSession(hooks=hooks) as session:
        while not session.should_stop():
            session.run(train_step)
    logged = [message.split(' (')[0] for message in tf_logs.messages() if message.startswith('loss = ')]
    assert logged == ['loss = 7.0', 'loss = 7.0']  # Not the closed graph's tensor 'loss:0'.


def test_once_its_session_closes_the_graphs_global_step_is_no_later_programs():
    # Without `reset_global_step()` between the two: the closed graph's step is not the eager program's.
    with tf.Graph().as_default():
        _, _, _, train_op = _build_regression()
        with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(last_step=3)]) as session:
            while not session.should_stop():
                session.run(train_op)
        assert mts.get_global_step() is not None  # The graph's own, in its block.
    assert mts.get_global_step() is None  # What was registered before the session: nothing.
    global_step = mts.get_or_create_global_step()
    with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(num_steps=2)]) as session:
        while not session.should_stop():
            session.run(lambda: global_step.assign_add(1))
    assert int(global_step.numpy()) == 2  # Counted from 0, not from the closed graph's 3.


def test_a_session_that_fails_to_start_leaves_the_graph_unfinalized(tmp_path):
    other = tf.Variable(np.ones([2, 2], np.float32))
    tf.train.CheckpointManager(
        mts.legacy.NameBasedCheckpoint({'w': other}), str(tmp_path), max_to_keep=1, checkpoint_name='model.ckpt'
    ).save(checkpoint_number=1)
    with tf.Graph().as_default() as graph:
        _build_regression()
        with pytest.raises(mts.CheckpointMismatchError):
            mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))
        assert not graph.finalized


@pytest.mark.slow
def test_a_full_scaffold_of_graph_ops_and_a_saver_runs_as_in_v1(tmp_path):
    program = os.path.join(REPO_ROOT, 'tests', 'v1_programs', 'full_scaffold_train.py')
    finals = {}
    for mode, result in zip(
        ('v1', 'compat'), run_v1_and_compat(*[(program, mode, str(tmp_path / mode)) for mode in ('v1', 'compat')])
    ):
        assert result.returncode == 0, result.stderr[-3000:]
        finals[mode] = json.loads(result.stdout.splitlines()[-1])
    assert finals['compat']['step'] == finals['v1']['step'] == 8
    np.testing.assert_allclose(finals['compat']['w'], finals['v1']['w'], rtol=1e-5)
    np.testing.assert_allclose(finals['compat']['mean_loss'], finals['v1']['mean_loss'], rtol=1e-5)
    assert checkpoint_steps(str(tmp_path / 'compat')) == checkpoint_steps(str(tmp_path / 'v1')) == [4, 6, 8]
    assert sorted(read_events(str(tmp_path / 'compat'))) == sorted(read_events(str(tmp_path / 'v1')))
