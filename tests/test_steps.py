"""K steps per `session.run` (`compat_mts.repeat_steps`), with every hook still correct.

The hooks learn that a run advances the global step by K (as v1's Estimator told them through
`_set_steps_per_run`): timers count global steps, checkpoints and summaries land on K-step boundaries,
and the last run before a `StopAtStepHook.last_step` runs only the steps that remain.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks.logging import LoggingTensorHook
from compat_mts.hooks.nan import NanLossDuringTrainingError, NanTensorHook
from compat_mts.hooks.profiler import ProfilerHook
from compat_mts.session.steps import RepeatedStep, repeat_steps
from tests.support import checkpoint_steps, read_events


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(time, 'time', lambda: now[0])
    return now


class Tick(mts.SessionRunHook):
    """Advances the fake clock by one second per run."""

    def __init__(self, clock):
        self.clock = clock

    def after_run(self, run_context, run_values):
        self.clock[0] += 1.0


def regression():
    """One gradient-descent step of a linear regression; logs a `loss` summary; returns loss and step."""
    global_step = mts.get_or_create_global_step()
    weights = tf.Variable(np.zeros([3, 1], np.float32), name='weights')
    features = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0)
    targets = tf.constant([[1.0], [2.0], [3.0], [4.0]])

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(features @ weights - targets))
        weights.assign_sub(0.1 * tape.gradient(loss, weights))
        global_step.assign_add(1)
        tf.summary.scalar('loss', loss)
        return {'loss': loss, 'step': global_step.read_value()}

    return global_step, step


def train(fetch, hooks=(), limit=100, **session_kwargs):
    """Runs `fetch` until the session stops (at most `limit` runs); returns what each run returned."""
    returned = []
    with mts.MonitoredTrainingSession(hooks=list(hooks), **session_kwargs) as session:
        while not session.should_stop() and len(returned) < limit:
            returned.append(session.run(fetch))
    return returned


# The K-step callable


@pytest.mark.parametrize(
    'args, error, message',
    [
        ((5, 10), TypeError, '`step_fn` must be a callable that runs one training step, got int.'),
        ((lambda: None, 2.0), TypeError, '`steps_per_run` must be a positive integer, got 2.0'),
        ((lambda: None, True), TypeError, '`steps_per_run` must be a positive integer'),
        ((lambda: None, 0), ValueError, '^steps_per_run should be greater than 0$'),
        ((lambda: None, 2**31), ValueError, r'`steps_per_run` must be a positive integer of at most 2\*\*31 - 1'),
    ],
)
def test_repeat_steps_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        repeat_steps(*args)


def test_a_call_runs_k_steps_and_returns_the_last_steps_outputs():
    global_step, step = regression()
    repeated = repeat_steps(step, 10)
    assert isinstance(repeated, RepeatedStep) and repeated.steps_per_run == 10 and repeated.step_fn is step
    outputs = repeated()
    assert int(global_step.numpy()) == 10
    assert int(outputs['step']) == 10
    one_step_loss = step()['loss']  # The 11th step's loss is below the 10th's.
    assert float(outputs['loss']) > float(one_step_loss)


@pytest.mark.parametrize(
    'make_outputs, check',
    [
        (lambda step: None, lambda out: out is None),
        (lambda step: (step, [step * 2]), lambda out: int(out[0]) == 3 and int(out[1][0]) == 6),
        (lambda step: {'a': {'b': step}}, lambda out: int(out['a']['b']) == 3),
    ],
    ids=['none', 'nested_tuple', 'nested_dict'],
)
def test_the_outputs_keep_the_structure_of_step_fn(make_outputs, check):
    global_step = mts.get_or_create_global_step()

    def step():
        global_step.assign_add(1)
        return make_outputs(global_step.read_value())

    assert check(repeat_steps(step, 3)())


def test_keyword_arguments_go_to_every_step():
    global_step = mts.get_or_create_global_step()
    total = tf.Variable(0.0)

    def step(scale):
        total.assign_add(scale)
        global_step.assign_add(1)

    with mts.MonitoredSession() as session:
        session.run(repeat_steps(step, 4), feed_dict={'scale': np.float32(2.5)})
    assert float(total.numpy()) == 10.0


def test_a_feed_key_a_repeated_step_does_not_take_names_the_arguments_of_its_step_fn():
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step(x):
        global_step.assign_add(1)
        return {'loss': tf.reduce_mean(x)}

    batch = np.ones([4, 3], np.float32)
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError) as error:
            session.run(repeat_steps(train_step, 3), feed_dict={'x:0': batch})
        assert int(global_step.numpy()) == 0  # Refused before anything ran.
        assert session.run(repeat_steps(train_step, 3), feed_dict={'x': batch})['loss'] == 1.0
    assert int(global_step.numpy()) == 3
    message = str(error.value)
    assert message.startswith(
        "`feed_dict` does not fit the step `repeat_steps(train_step, 3)`, whose keyword arguments are 'x': 'x:0' is "
        "not among them; 'x' is required and not given."
    )
    assert 'x_0' not in message and '[[' not in message  # neither tf.function's renamed key nor the array


def test_a_tf_data_iterator_read_in_the_step_gives_each_step_its_batch_and_ends_the_session():
    global_step = mts.get_or_create_global_step()
    batches = iter(tf.data.Dataset.range(1, 251))
    total = tf.Variable(0, dtype=tf.int64)

    def step():
        batch = next(batches)
        total.assign_add(batch)
        global_step.assign_add(batch // batch)  # After the batch is read, as a real update would be.

    returned = train(repeat_steps(step, 100))
    assert len(returned) == 2  # The third run ran out of data after 50 steps: OutOfRangeError ends the session.
    assert int(global_step.numpy()) == 250
    assert int(total.numpy()) == sum(range(1, 251))


def test_one_run_cannot_hold_two_repeated_steps():
    _, step = regression()
    with mts.MonitoredSession() as session:
        with pytest.raises(ValueError, match='A run can hold one `repeat_steps` callable'):
            session.run([repeat_steps(step, 2), {'other': repeat_steps(step, 3)}])


# StopAtStepHook: never overshoot


def test_stop_at_step_250_with_k_100_ends_at_exactly_250():
    global_step, step = regression()
    returned = train(repeat_steps(step, 100), [mts.StopAtStepHook(last_step=250)])
    assert [int(out['step']) for out in returned] == [100, 200, 250]
    assert int(global_step.numpy()) == 250


def test_num_steps_counts_from_the_step_at_session_creation():
    global_step, step = regression()
    global_step.assign(30)
    returned = train(repeat_steps(step, 100), [mts.StopAtStepHook(num_steps=120)])
    assert [int(out['step']) for out in returned] == [130, 150]


def test_a_session_that_starts_past_last_step_runs_one_step_as_a_one_step_run_would():
    global_step, step = regression()
    global_step.assign(300)
    assert [int(out['step']) for out in train(repeat_steps(step, 100), [mts.StopAtStepHook(last_step=250)])] == [301]


def test_run_with_hooks_in_run_step_fn_is_limited_too():
    global_step, step = regression()
    repeated = repeat_steps(step, 100)
    with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=150)]) as session:
        while not session.should_stop():
            session.run_step_fn(lambda step_context: step_context.run_with_hooks(repeated))
    assert int(global_step.numpy()) == 150


# The other hooks on K-step boundaries


def test_step_counter_counts_global_steps(tmp_path, clock, caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    _, step = regression()
    hooks = [
        mts.StopAtStepHook(last_step=500),
        mts.StepCounterHook(every_n_steps=200, output_dir=str(tmp_path)),
        Tick(clock),
    ]
    train(repeat_steps(step, 100), hooks)
    assert read_events(str(tmp_path))['global_step/sec'] == [(300, 100.0), (500, 100.0)]
    assert [r.getMessage() for r in caplog.records if '/sec' in r.getMessage()] == ['global_step/sec: 100'] * 2


def test_checkpoints_land_on_k_step_boundaries(tmp_path):
    _, step = regression()
    train(
        repeat_steps(step, 100),
        [mts.StopAtStepHook(last_step=450)],
        checkpoint_dir=str(tmp_path),
        save_checkpoint_steps=150,
        save_summaries_steps=None,
        log_step_count_steps=None,
    )
    assert checkpoint_steps(str(tmp_path)) == [0, 200, 400, 450]


def test_summaries_record_the_last_step_of_a_triggered_run_at_its_boundary(tmp_path):
    _, step = regression()
    train(
        repeat_steps(step, 100),
        [mts.StopAtStepHook(last_step=250)],
        checkpoint_dir=str(tmp_path),
        save_summaries_steps=100,
        save_checkpoint_secs=None,
        log_step_count_steps=None,
    )
    loss_events = read_events(str(tmp_path))['loss']
    assert [event_step for event_step, _ in loss_events] == [100, 200, 250]


def test_summaries_of_k_one_step_runs_and_one_k_step_run_agree(tmp_path):
    _, step = regression()
    repeated_dir, plain_dir = str(tmp_path / 'repeated'), str(tmp_path / 'plain')
    train(
        repeat_steps(step, 5),
        [mts.StopAtStepHook(last_step=20)],
        summary_dir=repeated_dir,
        save_summaries_steps=5,
        log_step_count_steps=None,
    )
    global_step_lib.reset_global_step()
    _, step = regression()
    train(
        tf.function(step),
        [mts.StopAtStepHook(last_step=20)],
        summary_dir=plain_dir,
        save_summaries_steps=5,
        log_step_count_steps=None,
    )
    repeated, plain = read_events(repeated_dir)['loss'], read_events(plain_dir)['loss']
    assert [event_step for event_step, _ in repeated] == [5, 10, 15, 20]
    assert [event_step for event_step, _ in plain] == [1, 6, 11, 16]
    assert dict(plain)[16] > dict(repeated)[20]  # Both are the loss of the step they are stamped with.


def test_the_graph_of_the_k_step_function_is_written(tmp_path):
    _, step = regression()
    train(repeat_steps(step, 10), [mts.StopAtStepHook(last_step=20)], checkpoint_dir=str(tmp_path))
    assert 'While' in (tmp_path / 'graph.pbtxt').read_text()


def test_logging_tensor_hook_counts_k_local_steps_per_run(caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    _, step = regression()
    hooks = [mts.StopAtStepHook(last_step=500), LoggingTensorHook({'step': 'step'}, every_n_iter=200)]
    train(repeat_steps(step, 100), hooks)
    logged = [
        r.getMessage().split(' (')[0]
        for r in caplog.records
        if r.pathname.endswith(os.path.join('hooks', 'logging.py'))
    ]
    assert logged == ['step = 100', 'step = 300', 'step = 500']


def test_profiler_hook_traces_k_step_runs_named_by_their_boundary(tmp_path):
    _, step = regression()
    hooks = [mts.StopAtStepHook(last_step=400), ProfilerHook(save_steps=200, output_dir=str(tmp_path))]
    train(repeat_steps(step, 100), hooks)
    assert sorted(name for name in os.listdir(tmp_path) if name.startswith('timeline-')) == [
        'timeline-200.json',
        'timeline-400.json',
    ]


def test_nan_tensor_hook_checks_the_loss_of_the_last_step():
    global_step = mts.get_or_create_global_step()
    weight = tf.Variable(1.0)

    def step():
        weight.assign(tf.where(global_step >= 150, float('nan'), weight))
        global_step.assign_add(1)
        return {'loss': weight * 1.0}

    with pytest.raises(NanLossDuringTrainingError):
        train(repeat_steps(step, 100), [NanTensorHook('loss')])
    assert int(global_step.numpy()) == 200


# How the session tells the hooks


class StepsPerRunRecorder(mts.SessionRunHook):
    def __init__(self):
        self.told = []

    def _set_steps_per_run(self, steps_per_run):
        self.told.append(steps_per_run)


def test_hooks_are_told_k_when_it_changes_and_one_again_for_a_one_step_run():
    _, step = regression()
    recorder = StepsPerRunRecorder()
    with mts.MonitoredSession(hooks=[recorder]) as session:
        session.run(tf.function(step))
        assert recorder.told == []
        session.run(repeat_steps(step, 10))
        session.run(repeat_steps(step, 10))
        assert recorder.told == [10]
        session.run(tf.function(step))
        assert recorder.told == [10, 1]
