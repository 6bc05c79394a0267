"""StopAtStepHook, CheckpointSaverHook (+ listeners), StepCounterHook, SummarySaverHook."""

from __future__ import annotations

import os

import pytest
import tensorflow as tf

import compat_mts as mts
from tests.models import Regression
from tests.support import checkpoint_steps, read_events, run_python


def run_until_stop(hooks, step, limit=100, **session_kwargs):
    runs = 0
    with mts.MonitoredSession(hooks=hooks, **session_kwargs) as session:
        while not session.should_stop() and runs < limit:
            session.run(step)
            runs += 1
    return runs


# StopAtStepHook


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({}, 'One of num_steps or last_step must be specified.'),
        ({'num_steps': 1, 'last_step': 2}, 'Only one of num_steps or last_step can be specified.'),
    ],
)
def test_stop_at_step_hook_v1_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mts.StopAtStepHook(**kwargs)


def test_stop_at_step_hook_rejects_non_integers():
    with pytest.raises(TypeError, match='`last_step` must be None or an integer'):
        mts.StopAtStepHook(last_step='10')
    with pytest.raises(TypeError, match='`num_steps` must be None or an integer'):
        mts.StopAtStepHook(num_steps=2.5)


def test_stop_at_step_hook_needs_a_global_step():
    with pytest.raises(RuntimeError, match='Global step should be created to use StopAtStepHook.'):
        mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=3)])


def test_stop_at_step_hook_stops_at_last_step():
    model = Regression()
    assert run_until_stop([mts.StopAtStepHook(last_step=4)], model.step) == 4
    assert int(model.global_step.numpy()) == 4


def test_num_steps_counts_from_session_creation_not_begin():
    model = Regression()
    hook = mts.StopAtStepHook(num_steps=3)
    hook.begin()
    model.global_step.assign(10)
    assert run_until_stop([hook], model.step) == 3
    assert int(model.global_step.numpy()) == 13


def test_stop_is_requested_only_when_the_step_really_got_there():
    model = Regression()
    calls = []

    def idle_step():
        calls.append(1)
        return None

    hook = mts.StopAtStepHook(last_step=1)
    with mts.MonitoredSession(hooks=[hook]) as session:
        session.run(idle_step)
        assert not session.should_stop()
        session.run(model.step)
        assert session.should_stop()


# CheckpointSaverHook and listeners


class Listener(mts.CheckpointSaverListener):
    def __init__(self, calls, stop_after=None):
        self.calls = calls
        self.stop_after = stop_after

    def begin(self):
        self.calls.append('begin')

    def before_save(self, session, global_step_value):
        self.calls.append(('before_save', global_step_value))

    def after_save(self, session, global_step_value):
        self.calls.append(('after_save', global_step_value))
        return self.stop_after is not None and global_step_value >= self.stop_after

    def end(self, session, global_step_value):
        self.calls.append(('end', global_step_value))


def test_checkpoint_hook_saves_at_creation_on_its_timer_and_at_end(tmp_path, tf_logs):
    model = Regression()
    calls = []
    hook = mts.CheckpointSaverHook(str(tmp_path), save_steps=3, scaffold=model.scaffold(), listeners=[Listener(calls)])
    run_until_stop(
        [hook, mts.StopAtStepHook(last_step=7)],
        model.step,
        session_creator=mts.ChiefSessionCreator(scaffold=model.scaffold()),
    )
    assert checkpoint_steps(str(tmp_path)) == [0, 3, 6, 7]
    assert calls == ['begin'] + [c for step in (0, 3, 6, 7) for c in (('before_save', step), ('after_save', step))] + [
        ('end', 7)
    ]
    messages = tf_logs.messages()
    assert 'Create CheckpointSaverHook.' in messages
    save_lines = [m for m in messages if m.startswith('Saving checkpoints for ')]
    assert save_lines[1] == f'Saving checkpoints for 3 into {os.path.join(str(tmp_path), "model.ckpt")}.'
    index = messages.index(save_lines[1])
    assert messages[index - 1] == 'Calling checkpoint listeners before saving checkpoint 3...'
    assert messages[index + 1 + [m.startswith('Calling') for m in messages[index + 1 :]].index(True)] == (
        'Calling checkpoint listeners after saving checkpoint 3...'
    )


def test_end_does_not_save_a_step_that_was_just_saved(tmp_path):
    model = Regression()
    hook = mts.CheckpointSaverHook(str(tmp_path), save_steps=2, scaffold=model.scaffold())
    run_until_stop([hook, mts.StopAtStepHook(last_step=4)], model.step)
    assert checkpoint_steps(str(tmp_path)) == [0, 2, 4]


def test_a_listener_asking_to_stop_stops_training(tmp_path, tf_logs):
    model = Regression()
    calls = []
    hook = mts.CheckpointSaverHook(
        str(tmp_path), save_steps=2, scaffold=model.scaffold(), listeners=[Listener(calls, stop_after=4), Listener([])]
    )
    run_until_stop([hook], model.step)
    assert int(model.global_step.numpy()) == 4
    assert any(
        m.startswith('A CheckpointSaverListener requested that training be stopped.') for m in tf_logs.messages()
    )


def test_checkpoint_hook_with_a_checkpoint_as_saver(tmp_path):
    model = Regression()
    hook = mts.CheckpointSaverHook(
        str(tmp_path), save_steps=1, saver=tf.train.Checkpoint(w=model.w), checkpoint_basename='weights'
    )
    run_until_stop([hook, mts.StopAtStepHook(last_step=1)], model.step)
    reader = tf.train.load_checkpoint(str(tmp_path / 'weights-1'))
    assert int(reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE')) == 1
    assert reader.has_tensor('w/.ATTRIBUTES/VARIABLE_VALUE')


def test_checkpoint_hook_v1_errors(tmp_path):
    with pytest.raises(ValueError, match='You cannot provide both saver and scaffold.'):
        mts.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=tf.train.Checkpoint(), scaffold=mts.Scaffold())
    with pytest.raises(ValueError, match='Either every_secs or every_steps should be provided.'):
        mts.CheckpointSaverHook(str(tmp_path))
    with pytest.raises(ValueError, match='Can not provide both every_secs and every_steps.'):
        mts.CheckpointSaverHook(str(tmp_path), save_secs=1, save_steps=1)
    with pytest.raises(TypeError, match='`listeners` must hold CheckpointSaverListener'):
        mts.CheckpointSaverHook(str(tmp_path), save_steps=1, listeners=[object()])
    with pytest.raises(TypeError, match='`checkpoint_dir` must be a directory path'):
        mts.CheckpointSaverHook(None, save_steps=1)
    with pytest.raises(RuntimeError, match='Global step should be created to use CheckpointSaverHook.'):
        mts.MonitoredSession(hooks=[mts.CheckpointSaverHook(str(tmp_path), save_steps=1)])


# StepCounterHook


def test_step_counter_v1_errors_including_the_default_trap():
    with pytest.raises(ValueError, match='exactly one of every_n_steps and every_n_secs should be provided.'):
        mts.StepCounterHook(every_n_secs=5)
    mts.StepCounterHook(every_n_steps=None, every_n_secs=5)


def test_step_counter_first_trigger_only_starts_the_clock(tmp_path, tf_logs):
    model = Regression()
    hook = mts.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    run_until_stop([hook, mts.StopAtStepHook(last_step=7)], model.step)
    assert [step for step, _ in read_events(str(tmp_path))['global_step/sec']] == [3, 5, 7]
    assert len([m for m in tf_logs.messages() if m.startswith('global_step/sec: ')]) == 3


_NOT_INCREASED = """
import tensorflow as tf
import compat_mts as mts
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
mts.get_or_create_global_step()
with mts.MonitoredSession(hooks=[mts.StepCounterHook(every_n_steps=10)]) as session:
    for _ in range(8):
        session.run(lambda: None)
"""


@pytest.mark.slow
def test_step_counter_warns_at_most_five_times_when_the_global_step_does_not_move():
    # A fresh process: log_first_n counts per call site for the whole process, as v1's logging did.
    result = run_python(_NOT_INCREASED)
    assert result.returncode == 0, result.stderr[-2000:]
    warnings = [line for line in result.stderr.splitlines() if 'has not been increased' in line]
    assert len(warnings) == 5
    assert 'Current value (could be stable): 0 vs previous value: 0' in warnings[0]
    assert warnings[0].endswith(
        'Optimizer.apply_gradients or Optimizer.minimize. A TF2 optimizer takes no global_step: increment it in the '
        'step, global_step.assign_add(1) (global_step = compat_mts.get_or_create_global_step()), or make the '
        "optimizer's counter the global step: compat_mts.set_global_step(optimizer.iterations, name='global_step')."
    )


# SummarySaverHook


def test_summary_hook_v1_errors():
    with pytest.raises(ValueError, match='Exactly one of scaffold or summary_op must be provided.'):
        mts.SummarySaverHook(save_steps=1)
    with pytest.raises(ValueError, match='Exactly one of scaffold or summary_op must be provided.'):
        mts.SummarySaverHook(scaffold=mts.Scaffold(), summary_op=lambda: None)
    with pytest.raises(ValueError, match='Either every_secs or every_steps should be provided.'):
        mts.SummarySaverHook(scaffold=mts.Scaffold())


def test_summary_hook_with_a_summary_op_callable(tmp_path):
    model = Regression()

    def summary_op():
        tf.summary.scalar('w_norm', tf.norm(model.w))

    hook = mts.SummarySaverHook(save_steps=2, output_dir=str(tmp_path), summary_op=summary_op)
    run_until_stop([hook, mts.StopAtStepHook(last_step=5)], model.step)
    events = read_events(str(tmp_path))
    assert [step for step, _ in events['w_norm']] == [1, 3, 5]
    assert [step for step, _ in events['loss']] == [1, 3, 5]


def test_summary_hook_with_serialized_summaries(tmp_path):
    model = Regression()
    serialized = tf.compat.v1.Summary(
        value=[tf.compat.v1.Summary.Value(tag='legacy', simple_value=2.5)]
    ).SerializeToString()
    hook = mts.SummarySaverHook(save_steps=3, output_dir=str(tmp_path), summary_op=lambda: tf.constant(serialized))
    run_until_stop([hook, mts.StopAtStepHook(last_step=4)], model.step)
    assert read_events(str(tmp_path))['legacy'] == [(1, 2.5), (4, 2.5)]


def test_summary_hook_without_a_writer_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = Regression()
    hook = mts.SummarySaverHook(save_steps=100, scaffold=mts.Scaffold())
    run_until_stop([hook, mts.StopAtStepHook(last_step=3)], model.step)
    assert os.listdir(tmp_path) == []


def test_a_step_based_checkpoint_timer_reads_the_global_step_only_on_runs_that_may_save(tmp_path, monkeypatch):
    from compat_mts.core import global_step as global_step_lib

    reads = []
    read_value = global_step_lib.read_value

    def counted(variable):
        reads.append(variable)
        return read_value(variable)

    monkeypatch.setattr(global_step_lib, 'read_value', counted)
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        save_checkpoint_steps=50,
        save_summaries_steps=0,
        log_step_count_steps=0,
        scaffold=model.scaffold(),
    ) as session:
        for _ in range(200):
            session.run(model.step)
    assert checkpoint_steps(str(tmp_path)) == [0, 50, 100, 150, 200]
    assert len([variable for variable in reads if variable is model.global_step]) < 12  # Not one per run.


def test_one_list_of_summary_hooks_serves_session_after_session(tmp_path):
    # v1 programs build their hooks once and open a session per epoch: each session takes the hooks' writers
    # again (the last one's close released them; the second close failed with "Resource ... does not exist").
    directory = str(tmp_path)
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step():
        global_step.assign_add(1)
        tf.summary.scalar('loss', 1.0)
        return {'loss': tf.constant(1.0)}

    hooks = [
        mts.SummarySaverHook(save_steps=1, output_dir=directory, scaffold=mts.Scaffold()),
        mts.StepCounterHook(every_n_steps=1, output_dir=directory),
    ]
    for _ in range(2):
        with mts.MonitoredSession(hooks=hooks) as session:
            for _ in range(3):
                session.run(step)
    events = read_events(directory)
    assert [recorded for recorded, _ in events['loss']] == [1, 2, 3, 4, 5, 6]
    # v1's timer is made in the constructor and kept across sessions: the second session's first run records too.
    assert [recorded for recorded, _ in events['global_step/sec']] == [2, 3, 4, 5, 6]
