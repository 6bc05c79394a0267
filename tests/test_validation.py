"""Bad input at v1 parity: what v1 accepts works as in v1, everything else is named before anything is written.

`validation_v1_scenarios.py` plays the inputs v1 accepts (`''` directories, `max_wait_secs=None`) on the real
`tf.compat.v1.train` in graph mode in a subprocess; here the same scenarios run eagerly through compat_mts,
and the results must be equal. The tables below pin the TypeError/ValueError of each public constructor:
the argument, the value and what is accepted.
"""

from __future__ import annotations

import contextlib
import math
import os

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from tests import support
from tests import validation_v1_scenarios as scenarios


class EagerSide:
    """The compat_mts side: `compat_mts` in place of `tf.compat.v1.train`, a `tf.function` step."""

    train = mts

    @staticmethod
    def prepare():
        global_step_lib.reset_global_step()
        return contextlib.nullcontext()

    @staticmethod
    def program():
        global_step = mts.get_or_create_global_step()
        return tf.function(lambda: global_step.assign_add(1))

    @staticmethod
    def run(session, step):
        return int(session.run(step))


@pytest.fixture(scope='module')
def v1_results():
    process = support.run_python(os.path.join(support.TESTS_DIR, 'validation_v1_scenarios.py'), timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    return support.last_json_line(process.stdout)


@pytest.fixture(scope='module')
def eager_results():
    return scenarios.run_all(EagerSide)


@pytest.mark.slow
@pytest.mark.parametrize('name', list(scenarios.SCENARIOS))
def test_inputs_v1_accepts_behave_as_in_v1(name, v1_results, eager_results):
    assert eager_results[name] == v1_results[name]


def test_an_empty_checkpoint_dir_of_the_saver_hook_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    step = EagerSide.program()
    with mts.MonitoredSession(hooks=[mts.CheckpointSaverHook('', save_steps=1)]) as session:
        session.run(step)
    assert support.checkpoint_steps(str(tmp_path)) == [0, 1]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-1')


def test_max_wait_secs_none_is_accepted_by_the_worker_session_creator():
    creator = mts.WorkerSessionCreator(max_wait_secs=None)
    assert creator._max_wait_secs == math.inf


class _Listener(mts.CheckpointSaverListener):
    pass


# (constructor, kwargs, error, message pattern). Each message names the argument and the value.
_BAD = [
    # Sessions and creators.
    (
        mts.SingularMonitoredSession,
        {'checkpoint_dir': 1},
        TypeError,
        r"`checkpoint_dir` must be None or a path \(str or os.PathLike; '' is None, as in v1\), got 1 \(int\)",
    ),
    (
        mts.SingularMonitoredSession,
        {'checkpoint_filename_with_path': 2.0},
        TypeError,
        r'`checkpoint_filename_with_path` must be None or a path.*got 2.0 \(float\)',
    ),
    (
        mts.SingularMonitoredSession,
        {'stop_grace_period_secs': math.nan},
        ValueError,
        r'`stop_grace_period_secs` must be a non-negative number of seconds \(inf waits until the threads end\), '
        r'got nan: NaN',
    ),
    (
        mts.SingularMonitoredSession,
        {'hooks': [mts.StopAtStepHook]},
        TypeError,
        r'`hooks` holds the class StopAtStepHook itself, not an instance of it. '
        r'Instantiate it: StopAtStepHook\(\.\.\.\)',
    ),
    (mts.ChiefSessionCreator, {'checkpoint_dir': 1}, TypeError, '`checkpoint_dir` must be None or a path.*got 1'),
    (
        mts.ChiefSessionCreator,
        {'checkpoint_filename_with_path': 1},
        TypeError,
        '`checkpoint_filename_with_path` must be None or a path.*got 1',
    ),
    (
        mts.ChiefSessionCreator,
        {'checkpoint_dir': 'a', 'checkpoint_filename_with_path': 'b'},
        ValueError,
        '^Can not provide both checkpoint_dir and checkpoint_filename_with_path.$',
    ),
    (mts.ChiefSessionCreator, {'scaffold': mts.Scaffold}, TypeError, '`scaffold` is the class Scaffold itself'),
    (mts.WorkerSessionCreator, {'max_wait_secs': math.nan}, ValueError, '`max_wait_secs` must be .*got nan: NaN'),
    (
        mts.WorkerSessionCreator,
        {'max_wait_secs': '60'},
        TypeError,
        r'`max_wait_secs` must be None or a non-negative number of seconds \(None and inf wait forever, as in v1\), '
        r"got '60' \(str\)",
    ),
    (mts.WorkerSessionCreator, {'max_wait_secs': -1}, ValueError, '`max_wait_secs` must be None or a non-negative'),
    (mts.WorkerSessionCreator, {'checkpoint_dir': 3}, TypeError, '`checkpoint_dir` must be None or a path.*got 3'),
    (mts.WorkerSessionCreator, {'scaffold': 'scaffold'}, TypeError, '`scaffold` must be a compat_mts.Scaffold'),
    (
        mts.MonitoredSession,
        {'stop_grace_period_secs': math.nan},
        ValueError,
        '`stop_grace_period_secs` must be .*got nan: NaN',
    ),
    (
        mts.MonitoredSession,
        {'stop_grace_period_secs': '120'},
        TypeError,
        r"`stop_grace_period_secs` must be a non-negative number of seconds.*got '120' \(str\)",
    ),
    (mts.MonitoredSession, {'stop_grace_period_secs': -0.5}, ValueError, '`stop_grace_period_secs` .*got -0.5'),
    (
        mts.MonitoredSession,
        {'session_creator': mts.ChiefSessionCreator},
        TypeError,
        r'`session_creator` is the class ChiefSessionCreator itself.*ChiefSessionCreator\(\.\.\.\)',
    ),
    (mts.MonitoredSession, {'session_creator': object()}, TypeError, '`session_creator` must be a session creator'),
    (mts.MonitoredSession, {'hooks': [mts.NanTensorHook]}, TypeError, '`hooks` holds the class NanTensorHook itself'),
    (
        mts.MonitoredSession,
        {'hooks': [tf.compat.v1.train.StopAtStepHook]},
        TypeError,
        r'`hooks` holds the class tf.compat.v1.train.StopAtStepHook.*compat_mts.StopAtStepHook\(\.\.\.\)',
    ),
    (mts.MonitoredSession, {'hooks': mts.StopAtStepHook}, TypeError, '`hooks` is the class StopAtStepHook itself'),
    # The timer.
    (
        mts.SecondOrStepTimer,
        {'every_steps': '10'},
        TypeError,
        r"`every_steps` must be None or an integer, got '10' \(str\)",
    ),
    (
        mts.SecondOrStepTimer,
        {'every_secs': '5'},
        TypeError,
        r"`every_secs` must be None or a number of seconds \(inf triggers the first time only\), got '5' \(str\)",
    ),
    (mts.SecondOrStepTimer, {'every_secs': math.nan}, ValueError, '`every_secs` must be .*got nan: NaN'),
    (mts.SecondOrStepTimer, {'every_steps': math.inf}, TypeError, '`every_steps` must be None or an integer, got inf'),
    (mts.SecondOrStepTimer, {}, ValueError, '^Either every_secs or every_steps should be provided.$'),
    (
        mts.SecondOrStepTimer,
        {'every_secs': 1, 'every_steps': 1},
        ValueError,
        '^Can not provide both every_secs and every_steps.$',
    ),
    # Hooks.
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 5, 'save_steps': 1},
        TypeError,
        r"`checkpoint_dir` must be a directory path \(str or os.PathLike; '' is the working directory, as in v1\), "
        r'got 5 \(int\)',
    ),
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 'd', 'save_secs': math.nan},
        ValueError,
        r'`save_secs` must be None or a number of seconds \(inf saves only when the session is created and at the '
        r'end\), got nan: NaN',
    ),
    (mts.CheckpointSaverHook, {'checkpoint_dir': 'd', 'save_steps': '1'}, TypeError, "`save_steps` .*got '1'"),
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 'd', 'save_steps': 1, 'listeners': [_Listener]},
        TypeError,
        r'`listeners` holds the class _Listener itself, not an instance of it. Instantiate it: _Listener\(\.\.\.\)',
    ),
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 'd', 'save_steps': 1, 'listeners': _Listener},
        TypeError,
        '`listeners` holds the class _Listener itself',
    ),
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 'd', 'save_steps': 1, 'listeners': [object()]},
        TypeError,
        '`listeners` must hold CheckpointSaverListener instances, got object',
    ),
    (
        mts.CheckpointSaverHook,
        {'checkpoint_dir': 'd'},
        ValueError,
        '^Either every_secs or every_steps should be provided.$',
    ),
    (
        mts.StepCounterHook,
        {'every_n_steps': None, 'every_n_secs': math.nan},
        ValueError,
        r'`every_n_secs` must be None or a number of seconds \(inf never logs a rate\), got nan: NaN',
    ),
    (mts.StepCounterHook, {'every_n_steps': '100'}, TypeError, "`every_n_steps` .*got '100'"),
    (mts.StepCounterHook, {'output_dir': 7}, TypeError, '`output_dir` must be None or a path.*got 7'),
    (
        mts.SummarySaverHook,
        {'save_secs': math.nan, 'summary_op': 'loss'},
        ValueError,
        '`save_secs` must be .*got nan: NaN',
    ),
    (mts.SummarySaverHook, {'save_steps': 1.5, 'summary_op': 'loss'}, TypeError, '`save_steps` .*got 1.5'),
    (
        mts.SummarySaverHook,
        {'save_steps': 1, 'summary_op': 'loss', 'output_dir': 1},
        TypeError,
        '`output_dir` must be None or a path',
    ),
    (
        mts.LoggingTensorHook,
        {'tensors': ['loss'], 'every_n_secs': math.nan},
        ValueError,
        r'`every_n_secs` must be None or a number of seconds \(inf logs the first run only\), got nan: NaN',
    ),
    (mts.LoggingTensorHook, {'tensors': ['loss'], 'every_n_iter': '10'}, TypeError, "`every_n_iter` .*got '10'"),
    (mts.LoggingTensorHook, {'tensors': ['loss'], 'every_n_iter': 0}, ValueError, '^invalid every_n_iter=0.$'),
    (mts.ProfilerHook, {'save_secs': math.nan}, ValueError, '`save_secs` must be .*got nan: NaN'),
    (
        mts.ProfilerHook,
        {'save_steps': 1, 'output_dir': None},
        TypeError,
        r"`output_dir` must be a directory path \(str or os.PathLike; '' is the working directory, as in v1\), "
        r'got None',
    ),
    (mts.StopAtStepHook, {'last_step': '10'}, TypeError, "`last_step` must be None or an integer, got '10'"),
    (mts.StopAtStepHook, {'num_steps': math.inf}, TypeError, '`num_steps` must be None or an integer, got inf'),
    (mts.GlobalStepWaiterHook, {'wait_until_step': 1.0}, TypeError, '`wait_until_step` must be an integer, got 1.0'),
    (
        mts.NanTensorHook,
        {'loss_tensor': 'loss', 'fail_on_nan_loss': 'yes'},
        TypeError,
        "`fail_on_nan_loss` must be a bool, got 'yes'",
    ),
    (
        mts.FinalOpsHook,
        {'final_ops': 'loss', 'final_ops_feed_dict': []},
        TypeError,
        '`final_ops_feed_dict` must be None or a dict',
    ),
    (mts.FeedFnHook, {'feed_fn': {}}, TypeError, '`feed_fn` must be a callable'),
]


@pytest.mark.parametrize(
    'constructor, kwargs, error, message', _BAD, ids=[f'{c.__name__}-{"-".join(k) or "none"}' for c, k, _, _ in _BAD]
)
def test_bad_arguments_name_the_argument_the_value_and_what_is_accepted(
    tmp_path, monkeypatch, constructor, kwargs, error, message
):
    monkeypatch.chdir(tmp_path)
    mts.get_or_create_global_step()
    with pytest.raises(error, match=message):
        constructor(**kwargs)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    'kwargs, argument',
    [
        ({'hooks': [mts.StopAtStepHook]}, 'hooks'),
        ({'chief_only_hooks': [mts.StopAtStepHook]}, 'chief_only_hooks'),
    ],
)
def test_a_hook_class_is_named_with_how_to_instantiate_it(tmp_path, kwargs, argument):
    mts.get_or_create_global_step()
    directory = tmp_path / 'never_created'
    with pytest.raises(
        TypeError,
        match=rf'^`{argument}` holds the class StopAtStepHook itself, not an instance of '
        r'it. Instantiate it: StopAtStepHook\(\.\.\.\).$',
    ):
        mts.MonitoredTrainingSession(checkpoint_dir=str(directory), **kwargs)
    assert not directory.exists()


@pytest.mark.parametrize(
    'constructor, kwargs',
    [
        (mts.MonitoredTrainingSession, {'max_wait_secs': math.inf, 'is_chief': False}),
        (mts.MonitoredTrainingSession, {'stop_grace_period_secs': math.inf}),
        (mts.MonitoredTrainingSession, {'save_checkpoint_secs': math.inf}),
        (mts.MonitoredTrainingSession, {'save_summaries_secs': math.inf, 'save_summaries_steps': None}),
        (mts.WorkerSessionCreator, {'max_wait_secs': math.inf}),
        (mts.SecondOrStepTimer, {'every_secs': math.inf}),
        (mts.StepCounterHook, {'every_n_steps': None, 'every_n_secs': math.inf}),
        (mts.LoggingTensorHook, {'tensors': ['loss'], 'every_n_secs': math.inf}),
        (mts.SummarySaverHook, {'save_secs': math.inf, 'summary_op': 'loss'}),
    ],
)
def test_inf_is_accepted_where_v1_gave_it_a_meaning(constructor, kwargs):
    mts.get_or_create_global_step()
    made = constructor(**kwargs)
    if isinstance(made, mts.MonitoredSession):
        made.close()


def test_an_infinite_timer_triggers_the_first_time_only(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr('time.time', lambda: clock[0])
    timer = mts.SecondOrStepTimer(every_secs=math.inf)
    assert timer.should_trigger_for_step(1)
    timer.update_last_triggered_step(1)
    clock[0] = 1e300
    assert not timer.should_trigger_for_step(10**9)
