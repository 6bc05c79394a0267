"""MonitoredTrainingSession: arguments, USE_DEFAULT, default hooks, files, chief and non-chief."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts import _tf_internals as tf_internals
from tests.models import Regression
from tests.support import checkpoint_steps, events_files, has_graph_event, read_events, state_file_steps, value_kinds


def hook_types(session):
    return [type(hook).__name__ for hook in session._hooks]


def train(session, step):
    while not session.should_stop():
        session.run(step)


def test_no_directories_means_no_hooks_and_no_files(tmp_path):
    os.chdir(tmp_path)
    Regression()
    with mts.MonitoredTrainingSession() as session:
        assert hook_types(session) == []
    assert os.listdir(tmp_path) == []


def test_default_hooks_in_v1_order(tmp_path):
    model = Regression()
    first, last = mts.SessionRunHook(), mts.SessionRunHook()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), chief_only_hooks=[first], hooks=[last], scaffold=model.scaffold()
    ) as session:
        assert session._hooks[0] is first and session._hooks[-1] is last
        assert hook_types(session)[1:4] == ['StepCounterHook', 'SummarySaverHook', 'CheckpointSaverHook']


def test_summary_dir_alone_gives_summaries_and_no_checkpoints(tmp_path):
    model = Regression()
    with mts.MonitoredTrainingSession(summary_dir=str(tmp_path)) as session:
        assert hook_types(session) == ['StepCounterHook', 'SummarySaverHook']
        session.run(model.step)
    names = os.listdir(tmp_path)
    assert len(names) == 1 and names[0].startswith('events.out.tfevents.')


def test_zero_turns_default_hooks_off(tmp_path):
    Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), save_checkpoint_secs=0, save_summaries_steps=0
    ) as session:
        assert hook_types(session) == ['StepCounterHook']


@pytest.mark.parametrize(
    'kwargs, checkpoint_timer, summary_timer',
    [
        ({}, (None, 600), (100, None)),
        ({'save_checkpoint_steps': 5}, (5, None), (100, None)),
        ({'save_summaries_secs': 30}, (None, 600), (None, 30)),
        ({'save_summaries_steps': 7, 'save_checkpoint_secs': 60}, (None, 60), (7, None)),
    ],
)
def test_use_default_resolves_each_pair_independently(tmp_path, kwargs, checkpoint_timer, summary_timer):
    Regression()
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), **kwargs) as session:
        hooks = {type(hook).__name__: hook for hook in session._hooks}
    timers = {
        name: (hook._timer._every_steps, hook._timer._every_secs)
        for name, hook in hooks.items()
        if name != 'StepCounterHook'
    }
    assert timers == {'CheckpointSaverHook': checkpoint_timer, 'SummarySaverHook': summary_timer}


def test_both_of_a_pair_raise_v1_error(tmp_path):
    Regression()
    with pytest.raises(ValueError, match='Can not provide both every_secs and every_steps.'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_secs=10, save_checkpoint_steps=10)


def test_checkpoint_dir_without_global_step_raises_v1_error(tmp_path):
    with pytest.raises(RuntimeError, match='Global step should be created to use StepCounterHook.'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))


def test_files_of_a_default_chief_after_three_runs(tmp_path):
    """Spec §1 [E]: checkpoint, events, graph.pbtxt, model.ckpt-0 and model.ckpt-3 (no .meta eagerly)."""
    model = Regression()
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=model.scaffold()) as session:
        for _ in range(3):
            session.run(model.step)
    names = sorted(os.listdir(tmp_path))
    assert 'checkpoint' in names and 'graph.pbtxt' in names
    assert any(name.startswith('events.out.tfevents.') for name in names)
    assert checkpoint_steps(str(tmp_path)) == [0, 3]
    assert state_file_steps(str(tmp_path)) == [0, 3]
    assert not [name for name in names if name.endswith('.meta')]
    graph_def = tf.compat.v1.GraphDef()
    from google.protobuf import text_format

    text_format.Parse((tmp_path / 'graph.pbtxt').read_text(), graph_def)
    assert any(node.op == 'AssignAddVariableOp' for node in graph_def.node) or graph_def.library.function


def test_save_graph_def_false_writes_no_graph(tmp_path):
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), scaffold=model.scaffold(), save_graph_def=False
    ) as session:
        session.run(model.step)
    assert 'graph.pbtxt' not in os.listdir(tmp_path)


def test_checkpoints_keep_the_last_five_on_the_step_timer(tmp_path):
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        scaffold=model.scaffold(),
        save_checkpoint_steps=2,
        save_summaries_steps=0,
        hooks=[mts.StopAtStepHook(last_step=13)],
    ) as session:
        train(session, model.step)
    assert checkpoint_steps(str(tmp_path)) == [6, 8, 10, 12, 13]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-13')


def test_summaries_and_steps_per_second_land_on_v1_steps(tmp_path, tf_logs):
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        scaffold=model.scaffold(),
        save_summaries_steps=2,
        log_step_count_steps=2,
        hooks=[mts.StopAtStepHook(last_step=7)],
    ) as session:
        train(session, model.step)
    events = read_events(str(tmp_path))
    assert [step for step, _ in events['loss']] == [1, 3, 5, 7]
    assert [step for step, _ in events['global_step/sec']] == [3, 5, 7]
    assert set(value_kinds(str(tmp_path))['global_step/sec']) == {'simple_value'}
    rate_lines = [m for m in tf_logs.messages() if m.startswith('global_step/sec: ')]
    assert len(rate_lines) == 3
    assert model.step.experimental_get_tracing_count() == 1


def test_summary_values_are_the_losses_of_those_steps(tmp_path):
    model = Regression()
    losses = []
    with mts.MonitoredTrainingSession(
        summary_dir=str(tmp_path), save_summaries_steps=3, log_step_count_steps=0
    ) as session:
        for _ in range(7):
            losses.append(float(session.run(model.step)['loss']))
    recorded = dict(read_events(str(tmp_path))['loss'])
    assert sorted(recorded) == [1, 4, 7]
    for step, value in recorded.items():
        assert value == pytest.approx(losses[step - 1])


def test_resume_continues_from_the_latest_checkpoint(tmp_path):
    model = Regression()
    directory = str(tmp_path)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold(), hooks=[mts.StopAtStepHook(num_steps=5)]
    ) as session:
        train(session, model.step)
    weights = model.w.numpy()
    mts.reset_global_step()
    resumed = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=resumed.scaffold(), hooks=[mts.StopAtStepHook(num_steps=5)]
    ) as session:
        assert session.run(resumed.global_step) == 5
        np.testing.assert_array_equal(session.run(resumed.w), weights)
        train(session, resumed.step)
    assert int(resumed.global_step.numpy()) == 10
    assert checkpoint_steps(directory) == [0, 5, 10]


def test_init_fn_runs_only_without_a_checkpoint(tmp_path):
    model = Regression()
    calls = []

    def init_fn(scaffold, session):
        calls.append(scaffold)
        model.w.assign(tf.ones([3, 1]))

    scaffold = model.scaffold(init_fn=init_fn)
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold) as session:
        assert session.run(model.w).sum() == 3.0
    assert calls == [scaffold]
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=model.scaffold(init_fn=init_fn)):
        pass
    assert len(calls) == 1


def test_non_chief_runs_its_own_hooks_only_and_writes_nothing(tmp_path):
    model = Regression()
    with mts.MonitoredTrainingSession(
        is_chief=False, summary_dir=str(tmp_path / 'summaries'), chief_only_hooks=[mts.SessionRunHook()]
    ) as session:
        assert hook_types(session) == []
        session.run(model.step)
    assert not (tmp_path / 'summaries').exists()


def test_non_chief_waits_for_and_restores_the_chiefs_checkpoint(tmp_path):
    model = Regression()
    directory = str(tmp_path)
    with pytest.raises(tf.errors.DeadlineExceededError, match='Session was not ready after waiting 0 secs.'):
        mts.MonitoredTrainingSession(
            is_chief=False, checkpoint_dir=directory, max_wait_secs=0, scaffold=model.scaffold()
        )
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold(), hooks=[mts.StopAtStepHook(last_step=4)]
    ) as session:
        train(session, model.step)
    files_before = sorted(os.listdir(directory))
    mts.reset_global_step()
    worker = Regression()
    with mts.MonitoredTrainingSession(
        is_chief=False, checkpoint_dir=directory, max_wait_secs=5, scaffold=worker.scaffold()
    ) as session:
        assert session.run(worker.global_step) == 4
        session.run(worker.step)
    assert sorted(os.listdir(directory)) == files_before


def test_unwritable_checkpoint_dir_names_the_path(tmp_path):
    Regression()
    blocker = tmp_path / 'a_file'
    blocker.write_text('not a directory')
    bad = str(blocker / 'checkpoints')
    with pytest.raises(ValueError, match='checkpoint_dir.*a_file/checkpoints.* has a file where a parent directory'):
        mts.MonitoredTrainingSession(checkpoint_dir=bad)


def test_checkpoint_dir_is_validated_once_and_its_one_directory_is_what_the_hook_and_creator_use(tmp_path):
    from compat_mts.checkpoint_dir.directory import CheckpointDirectory

    model = Regression()
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'run'), scaffold=model.scaffold()) as session:
        (hook,) = [hook for hook in session._hooks if isinstance(hook, mts.CheckpointSaverHook)]
        assert isinstance(hook._directory, CheckpointDirectory)
        assert hook._directory is session._creator._directory
        assert hook.checkpoint_dir == str(tmp_path / 'run')
    with pytest.raises(ValueError) as error:
        mts.MonitoredTrainingSession(checkpoint_dir='run\0')
    assert str(error.value).startswith('`checkpoint_dir` must be None or a path')
    assert str(error.value).count('checkpoint_dir') == 1
    with pytest.raises(ValueError) as error:
        mts.estimator.Estimator(lambda features, labels, mode: None, model_dir='model\0')
    assert str(error.value).startswith('`model_dir` must be a directory path')
    assert 'checkpoint_dir' not in str(error.value) and str(error.value).count('model_dir') == 1


@pytest.mark.parametrize(
    'kwargs, error, message',
    [
        ({'master': 3}, TypeError, '`master` must be a string'),
        ({'master': 'localhost:2222'}, ValueError, "`master` must be ''"),
        ({'is_chief': 'yes'}, TypeError, '`is_chief` must be a bool'),
        ({'checkpoint_dir': 5}, TypeError, r"`checkpoint_dir` must be None or a path \(str or os.PathLike; '' is None"),
        ({'summary_dir': 5.0}, TypeError, '`summary_dir` must be None or a path'),
        ({'scaffold': object()}, TypeError, '`scaffold` must be a compat_mts.Scaffold'),
        ({'scaffold': 'v1'}, TypeError, 'tf.compat.v1.train.Scaffold'),
        ({'hooks': [1]}, TypeError, '`hooks` must hold SessionRunHook instances'),
        (
            {'hooks': ['StopAtStepHook']},
            TypeError,
            r'`hooks` holds the class StopAtStepHook itself.*StopAtStepHook\(\.\.\.\)',
        ),
        ({'chief_only_hooks': ['StopAtStepHook']}, TypeError, '`chief_only_hooks` holds the class StopAtStepHook'),
        ({'chief_only_hooks': 'hook'}, TypeError, '`chief_only_hooks` must hold SessionRunHook instances'),
        ({'save_checkpoint_secs': '600'}, TypeError, '`save_checkpoint_secs` must be None, USE_DEFAULT'),
        ({'save_checkpoint_secs': math.nan}, ValueError, '`save_checkpoint_secs` must be .*got nan: NaN'),
        ({'save_summaries_secs': math.nan}, ValueError, '`save_summaries_secs` must be .*got nan: NaN'),
        ({'log_step_count_steps': math.inf}, TypeError, '`log_step_count_steps` must be None, USE_DEFAULT'),
        ({'save_checkpoint_steps': 2.5}, TypeError, '`save_checkpoint_steps` must be None, USE_DEFAULT'),
        ({'save_summaries_steps': True}, TypeError, '`save_summaries_steps` must be None, USE_DEFAULT'),
        ({'save_summaries_secs': []}, TypeError, '`save_summaries_secs` must be None, USE_DEFAULT'),
        ({'config': {'threads': 2}}, TypeError, '`config` must be None or a tf.compat.v1.ConfigProto'),
        ({'stop_grace_period_secs': -1}, ValueError, '`stop_grace_period_secs` must be a non-negative'),
        ({'stop_grace_period_secs': math.nan}, ValueError, '`stop_grace_period_secs` must be .*got nan: NaN'),
        ({'stop_grace_period_secs': None}, TypeError, '`stop_grace_period_secs` must be a non-negative'),
        ({'log_step_count_steps': '100'}, TypeError, '`log_step_count_steps` must be None, USE_DEFAULT'),
        (
            {'max_wait_secs': '7200'},
            TypeError,
            r'`max_wait_secs` must be None or a non-negative number of seconds '
            r'\(None and inf wait forever',
        ),
        ({'max_wait_secs': math.nan}, ValueError, '`max_wait_secs` must be .*got nan: NaN'),
        ({'max_wait_secs': -math.inf}, ValueError, '`max_wait_secs` must be None or a non-negative'),
        ({'save_graph_def': 'no'}, TypeError, '`save_graph_def` must be a bool'),
    ],
)
def test_bad_arguments_are_named_before_anything_is_written(tmp_path, kwargs, error, message):
    Regression()
    if kwargs.get('scaffold') == 'v1':
        with tf.Graph().as_default():
            kwargs = {'scaffold': tf.compat.v1.train.Scaffold()}
    for argument in ('hooks', 'chief_only_hooks'):
        if kwargs.get(argument) == ['StopAtStepHook']:
            kwargs[argument] = [mts.StopAtStepHook]
    directory = tmp_path / 'never_created'
    kwargs.setdefault('checkpoint_dir', str(directory))
    with pytest.raises(error, match=message):
        mts.MonitoredTrainingSession(**kwargs)
    assert not directory.exists()


def test_a_v1_saver_of_a_graph_no_session_runs_names_the_checkpoint_replacement(tmp_path):
    with tf.Graph().as_default():
        tf.compat.v1.Variable(1.0)
        saver = tf.compat.v1.train.Saver()
    mts.get_or_create_global_step()
    replacement = 'tf.compat.v1.train.Saver but no graph of the program is being run.*tf.train.Checkpoint'
    with pytest.raises(TypeError, match=replacement):
        mts.MonitoredTrainingSession(scaffold=mts.Scaffold(saver=saver))
    with pytest.raises(TypeError, match=replacement):
        mts.MonitoredSession(hooks=[mts.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=saver)])


def _graph_node_names(path):
    from google.protobuf import text_format

    graph_def = tf.compat.v1.GraphDef()
    text_format.Parse(path.read_text(), graph_def)
    names = {node.name for node in graph_def.node}
    for function in graph_def.library.function:
        names.update(node.name for node in function.node_def)
    return names


def test_a_session_writes_the_graph_of_its_own_step_even_if_its_first_run_has_none(tmp_path):
    global_step = mts.get_or_create_global_step()

    def step_named(name):
        @tf.function
        def step():
            global_step.assign_add(1)
            return {'marker': tf.identity(tf.constant(1.0), name=name)}

        return step

    first, second = step_named('only_in_the_first_step'), step_named('only_in_the_second_step')
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'first')) as session:
        session.run(first)
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'second'), save_summaries_steps=1) as session:
        session.run(global_step)  # No step in this run: there is no graph to write yet.
        assert 'graph.pbtxt' not in os.listdir(tmp_path / 'second')
        session.run(second)
        session.run(second)
    assert 'only_in_the_first_step' in _graph_node_names(tmp_path / 'first' / 'graph.pbtxt')
    names = _graph_node_names(tmp_path / 'second' / 'graph.pbtxt')
    assert 'only_in_the_second_step' in names and 'only_in_the_first_step' not in names
    assert has_graph_event(str(tmp_path / 'second'))


def test_each_events_file_holds_one_graph_as_tensorboard_expects(tmp_path, caplog):
    """The step counter, summary and checkpoint hooks share the writer; the graph goes into its file once."""
    from tensorboard.backend.event_processing import event_accumulator

    model = Regression()
    for _ in range(2):  # A second session opens a new events file, which gets the graph too.
        with mts.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            save_summaries_steps=1,
            log_step_count_steps=1,
            hooks=[mts.StopAtStepHook(num_steps=3)],
        ) as session:
            while not session.should_stop():
                session.run(model.step)
    files = events_files(str(tmp_path))
    # Without TensorFlow's private writer resource (COMPAT_MTS_NO_PRIVATE_TF=1) the first file stays open.
    assert len(files) == (2 if tf_internals.PRIVATE_TF else 1), files
    for path in files:
        graphs = [event for event in tf.compat.v1.train.summary_iterator(path) if event.HasField('graph_def')]
        assert len(graphs) == 1, path
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger='tensorboard'):
            accumulator = event_accumulator.EventAccumulator(path)
            accumulator.Reload()
        assert accumulator.Tags()['graph'], path
        assert not [record for record in caplog.records if 'more than one graph' in record.getMessage()], path


def test_a_hooks_own_function_run_on_the_raw_session_is_not_the_step_graph(tmp_path):
    global_step = mts.get_or_create_global_step()

    @tf.function
    def hook_function():
        return tf.identity(tf.constant(2.0), name='only_in_the_hook_function')

    @tf.function
    def step():
        global_step.assign_add(1)
        return {'marker': tf.identity(tf.constant(1.0), name='only_in_the_step')}

    class RunsItsOwnFunction(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            run_context.session.run(hook_function)

    # The hook's after_run comes before that of CheckpointSaverHook, which writes the graph.
    hooks = [RunsItsOwnFunction(), mts.CheckpointSaverHook(str(tmp_path), save_steps=100)]
    with mts.MonitoredSession(hooks=hooks) as session:
        session.run(step)
        session.run(step)
    names = _graph_node_names(tmp_path / 'graph.pbtxt')
    assert 'only_in_the_step' in names and 'only_in_the_hook_function' not in names
