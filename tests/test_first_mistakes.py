"""The mistakes of a new user's first hour (issue 33): each error names the mistake and the fix.

Real sessions, real files: a Keras callback given as a hook, a model given as the scaffold or run as the step, a
step that never moves the global step under `StopAtStepHook`, a run after the `with` block, both arguments of a
saving pair, a checkpoint of another model in an Estimator's `model_dir`, a `checkpoint_dir` that cannot be made.
"""

from __future__ import annotations

import contextlib
import os
import re

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.hooks import stop
from tests import mounts
from tests.models import Regression


def _model() -> tf.keras.Model:
    return tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])


def test_a_keras_callback_in_hooks_points_at_callback_hook():
    fix = re.escape('hooks=[compat_mts.keras.CallbackHook([callback, ...], model=model)]')
    with pytest.raises(TypeError, match=f'^`hooks` holds EarlyStopping, a Keras callback; .*{fix}'):
        mts.MonitoredTrainingSession(hooks=[tf.keras.callbacks.EarlyStopping()])
    with pytest.raises(TypeError, match='^`chief_only_hooks` holds TerminateOnNaN, a Keras callback'):
        mts.MonitoredTrainingSession(chief_only_hooks=[tf.keras.callbacks.TerminateOnNaN()])


def test_a_model_as_the_scaffold_shows_the_scaffold_that_checkpoints_it(tmp_path):
    model = _model()
    fix = re.escape('scaffold=compat_mts.Scaffold(saver=tf.train.Checkpoint(model=model))')
    with pytest.raises(TypeError, match=f'got Sequential, the model. .*{fix}'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=model)
    with pytest.raises(TypeError, match=re.escape('scaffold=compat_mts.Scaffold(saver=checkpoint)')):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=tf.train.Checkpoint(model=model))
    with pytest.raises(TypeError, match=re.escape('saver=tf.train.Checkpoint(model=model)')):
        mts.Scaffold(saver=model)
    assert os.listdir(tmp_path) == []  # Refused before anything was written.


def test_running_a_keras_model_says_it_is_not_a_step_and_what_is():
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match=r'a Keras model \(Sequential\), and a Keras model is not a step') as error:
            session.run(_model())
        assert 'session.run(train_step)' in str(error.value) and 'HooksCallback' in str(error.value)
        with pytest.raises(TypeError, match='missing'):  # Any other callable's error is its own.
            session.run(lambda required: required)


def test_a_step_that_never_moves_the_global_step_stops_with_the_tf2_fix_after_a_bounded_number_of_runs():
    mts.get_or_create_global_step()

    @tf.function
    def train_step():
        return {'loss': tf.constant(1.0)}

    runs = 0
    with pytest.raises(RuntimeError) as error:
        with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=5)]) as session:
            while not session.should_stop():
                session.run(train_step)
                runs += 1
    message = str(error.value)
    assert runs == stop.MAX_RUNS_WITHOUT_A_STEP - 1  # The last run raised.
    assert f'still 0 after {stop.MAX_RUNS_WITHOUT_A_STEP} runs of `train_step`' in message
    assert 'global step 5' in message and 'global_step.assign_add(1)' in message
    assert 'compat_mts.set_global_step(optimizer.iterations' in message


def test_a_step_that_moves_the_global_step_later_is_not_stopped():
    model = Regression()
    runs = 0

    def warm_up_then_train():
        return {'warming': tf.constant(True)} if runs < stop.MAX_RUNS_WITHOUT_A_STEP // 2 else model.step()

    with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=stop.MAX_RUNS_WITHOUT_A_STEP)]) as session:
        while not session.should_stop():
            session.run(warm_up_then_train)
            runs += 1
    assert int(model.global_step.numpy()) == stop.MAX_RUNS_WITHOUT_A_STEP


@pytest.mark.parametrize('kind', ['MonitoredSession', 'SingularMonitoredSession', 'MonitoredTrainingSession'])
def test_a_run_after_the_with_block_says_the_session_is_closed_and_runs_nothing(tmp_path, kind):
    model = Regression()
    arguments = {'checkpoint_dir': str(tmp_path)} if kind == 'MonitoredTrainingSession' else {}
    with getattr(mts, kind)(**arguments) as session:
        session.run(model.step)
    with pytest.raises(RuntimeError, match=r'^Attempted to use a closed Session\. .*`with` block'):
        session.run(model.step)
    with pytest.raises(RuntimeError, match=r'^Attempted to use a closed Session\.'):
        session.run_step_fn(lambda step_context: step_context.session.run(model.step))
    assert int(model.global_step.numpy()) == 1


@pytest.mark.parametrize('pair', ['checkpoint', 'summaries'])
def test_both_arguments_of_a_saving_pair_are_named_as_the_user_wrote_them(tmp_path, pair):
    steps, secs = f'save_{pair}_steps', f'save_{pair}_secs'
    with pytest.raises(
        ValueError,
        match=rf'^Can not provide both every_secs and every_steps\. MonitoredTrainingSession got {secs}=60 and '
        rf'{steps}=10: give one',
    ):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'run'), **{steps: 10, secs: 60})
    assert not (tmp_path / 'run').exists()  # Refused before the directory was made.


def test_a_checkpoint_of_another_model_in_an_estimators_model_dir_names_model_dir(tmp_path):
    def model_fn_of(width):
        def model_fn(features, labels, mode):
            weights = tf.compat.v1.get_variable('weights', [width], initializer=tf.compat.v1.zeros_initializer())
            loss = tf.reduce_sum(weights) + tf.reduce_sum(features['x']) * 0.0
            train_op = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
            return mts.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

        return model_fn

    def input_fn():
        return tf.data.Dataset.from_tensors(({'x': [[1.0]]}, [[1.0]])).repeat()

    model_dir = str(tmp_path)
    mts.estimator.Estimator(model_fn_of(1), model_dir=model_dir).train(input_fn, steps=1)
    with pytest.raises(mts.CheckpointMismatchError) as error:
        mts.estimator.Estimator(model_fn_of(2), model_dir=model_dir).train(input_fn, steps=1)
    message = str(error.value)
    assert "does not fit the program's variables" in message
    assert "Give the Estimator an empty model_dir or the program's own." in message
    assert 'checkpoint_dir' not in message


@contextlib.contextmanager
def _uncreatable(tmp_path, kind: str):
    """Gives a `checkpoint_dir` of `kind` that cannot be created, as root as well as not."""
    if kind == 'virtual_file_system':  # mkdir in /proc fails for everyone, with "No such file or directory".
        yield f'/proc/compat-mts-{os.getpid()}/run'
    elif os.geteuid() != 0:
        read_only = tmp_path / 'read_only'
        read_only.mkdir(mode=0o555)
        yield str(read_only / 'run')
    else:  # Root writes in a directory whatever its mode; a read-only mount refuses even root.
        (tmp_path / 'source').mkdir()
        with mounts.read_only_view(str(tmp_path / 'source'), str(tmp_path / 'read_only')) as read_only:
            yield os.path.join(read_only, 'run')


_WHY = {
    'virtual_file_system': r"'/proc' does not allow new directories \(a virtual file system, such as /proc\)",
    'read_only_directory': r"this user may not write in '.*read_only'|'.*read_only' is on a read-only file system",
}


@pytest.mark.parametrize(
    'kind',
    ['virtual_file_system', pytest.param('read_only_directory', marks=pytest.mark.slow)],  # slow: it mounts.
)
def test_a_checkpoint_dir_that_cannot_be_created_says_what_and_why(tmp_path, kind):
    with _uncreatable(tmp_path, kind) as directory:
        with pytest.raises(PermissionError) as error:
            mts.MonitoredTrainingSession(checkpoint_dir=directory)
    message = str(error.value)
    assert message.startswith(f'`checkpoint_dir` {directory!r} cannot be created')
    assert re.search(_WHY[kind], message), message
