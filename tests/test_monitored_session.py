"""MonitoredSession / SingularMonitoredSession: v1's run loop, exit rules and recovery."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from tests.models import FEATURES, TARGETS, Recorder, Regression
from tests.support import run_python


def test_hook_methods_run_in_v1_order():
    model = Regression()
    calls = []
    hooks = [Recorder('a', calls), Recorder('b', calls)]
    with mts.MonitoredSession(hooks=hooks) as session:
        session.run(model.step)
    assert calls == [
        ('a', 'begin'),
        ('b', 'begin'),
        ('a', 'after_create_session'),
        ('b', 'after_create_session'),
        ('a', 'before_run'),
        ('b', 'before_run'),
        ('a', 'after_run'),
        ('b', 'after_run'),
        ('a', 'end'),
        ('b', 'end'),
    ]


def test_hooks_get_a_raw_session_and_a_coordinator():
    model = Regression()
    hook = Recorder('a', [])
    with mts.MonitoredSession(hooks=[hook]) as session:
        raw, coord = hook.sessions[0]
        assert isinstance(coord, tf.train.Coordinator)
        assert raw.run(model.global_step) == 0
        raw.run(model.step)  # no hooks
        assert hook.before_runs == 0
        assert session.run(model.global_step) == 1


def test_request_stop_in_before_run_takes_effect_after_that_run():
    model = Regression()
    hook = Recorder('a', [], stop_at_before_run=2)
    with mts.MonitoredSession(hooks=[hook]) as session:
        session.run(model.step)
        assert not session.should_stop()
        session.run(model.step)
        assert session.should_stop()
        with pytest.raises(RuntimeError, match='Run called even after should_stop requested.'):
            session.run(model.step)
    assert int(model.global_step.numpy()) == 2


@pytest.mark.parametrize('error', [tf.errors.OutOfRangeError(None, None, 'end of data'), StopIteration()])
def test_end_of_data_is_suppressed_and_end_is_called(error):
    calls = []

    def step():
        raise error

    with mts.MonitoredSession(hooks=[Recorder('a', calls)]) as session:
        session.run(step)
    assert calls[-1] == ('a', 'end')


def test_other_exceptions_propagate_without_end():
    calls = []

    def step():
        raise ValueError('bad batch')

    with pytest.raises(ValueError, match='bad batch'):
        with mts.MonitoredSession(hooks=[Recorder('a', calls)]) as session:
            session.run(step)
    assert ('a', 'end') not in calls
    assert session.should_stop()


def test_a_subclass_of_out_of_range_is_not_suppressed():
    class Subclass(tf.errors.OutOfRangeError):
        pass

    def step():
        raise Subclass(None, None, 'sub')

    with pytest.raises(Subclass):
        with mts.MonitoredSession() as session:
            session.run(step)


def test_second_close_calls_end_with_no_session_then_raises():
    hook = Recorder('a', [])
    session = mts.MonitoredSession(hooks=[hook])
    session.close()
    assert session.should_stop()
    with pytest.raises(RuntimeError, match='Session is already closed.'):
        session.close()
    assert hook.calls.count(('a', 'end')) == 2
    assert hook.sessions[-1] == (None, None)


def test_close_inside_with_makes_the_exit_raise():
    with pytest.raises(RuntimeError, match='Session is already closed.'):
        with mts.MonitoredSession() as session:
            session.close()


def test_exception_in_before_run_skips_the_run_and_every_after_run():
    model = Regression()
    calls = []

    class Failing(mts.SessionRunHook):
        def before_run(self, run_context):
            raise KeyError('before')

    with pytest.raises(KeyError):
        with mts.MonitoredSession(hooks=[Recorder('a', calls), Failing()]) as session:
            session.run(model.step)
    assert ('a', 'after_run') not in calls
    assert int(model.global_step.numpy()) == 0


def test_exception_in_after_run_skips_later_hooks():
    model = Regression()
    calls = []

    class Failing(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            raise KeyError('after')

    with pytest.raises(KeyError):
        with mts.MonitoredSession(hooks=[Failing(), Recorder('b', calls)]) as session:
            session.run(model.step)
    assert ('b', 'before_run') in calls and ('b', 'after_run') not in calls


def test_feed_conflicts_raise_v1_errors():
    class Feeder(mts.SessionRunHook):
        def before_run(self, run_context):
            return mts.SessionRunArgs(None, feed_dict={'x': 1.0})

    def step(x):
        return x

    with mts.MonitoredSession(hooks=[Feeder(), Feeder()]) as session:
        with pytest.raises(RuntimeError, match=r"Same tensor is fed by two hooks. Conflict\(s\): \['x'\]"):
            session.run(step)
    with mts.MonitoredSession(hooks=[Feeder()]) as session:
        user_feed = {'x': 2.0}
        with pytest.raises(RuntimeError, match=r'Same tensor is fed by a SessionRunHook and user'):
            session.run(step, feed_dict=user_feed)
        assert session.run(step) == 1.0


def test_hook_and_user_feeds_merge_without_mutating_the_users_dict():
    class Feeder(mts.SessionRunHook):
        def before_run(self, run_context):
            return mts.SessionRunArgs(None, feed_dict={'b': 10.0})

    user_feed = {'a': 1.0}
    with mts.MonitoredSession(hooks=[Feeder()]) as session:
        assert session.run(lambda a, b: a + b, feed_dict=user_feed) == 11.0
    assert user_feed == {'a': 1.0}


def test_run_options_merge_with_v1_rules():
    class Optioned(mts.SessionRunHook):
        def __init__(self, level, timeout):
            self.options = tf.compat.v1.RunOptions(trace_level=level, timeout_in_ms=timeout)
            self.seen = None

        def before_run(self, run_context):
            return mts.SessionRunArgs(None, options=self.options)

        def after_run(self, run_context, run_values):
            self.seen = run_values.options

    first, second = Optioned(2, 100), Optioned(1, 500)
    caller_options = tf.compat.v1.RunOptions(trace_level=0)
    with mts.MonitoredSession(hooks=[first, second]) as session:
        session.run(lambda: None, options=caller_options)
    assert first.seen is caller_options
    assert (caller_options.trace_level, caller_options.timeout_in_ms) == (2, 500)


def test_thread_error_stops_the_loop_and_surfaces_from_close():
    hook = Recorder('a', [])
    session = mts.MonitoredSession(hooks=[hook])
    coord = hook.sessions[0][1]

    def worker():
        with coord.stop_on_exception():
            raise RuntimeError('reader thread failed')

    thread = threading.Thread(target=worker)
    coord.register_thread(thread)
    thread.start()
    thread.join()
    assert session.should_stop()
    with pytest.raises(RuntimeError, match='reader thread failed'):
        session.close()


def test_recovery_restores_the_latest_checkpoint_and_retries(tmp_path):
    """Spec §2 [E]: a hook raising AbortedError in its 4th before_run; results 1,2,3,3,4,5."""
    model = Regression()
    calls = []

    class AbortOnce(mts.SessionRunHook):
        def __init__(self):
            self.before_runs = 0

        def before_run(self, run_context):
            self.before_runs += 1
            if self.before_runs == 4:
                raise tf.errors.AbortedError(None, None, 'preempted')
            return None

    recorder = Recorder('r', calls)
    steps = []
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        scaffold=model.scaffold(),
        save_checkpoint_steps=2,
        save_summaries_steps=0,
        log_step_count_steps=0,
        hooks=[AbortOnce(), recorder, mts.StopAtStepHook(last_step=5)],
    ) as session:
        while not session.should_stop():
            session.run(model.step)
            steps.append(int(model.global_step.numpy()))
    assert steps == [1, 2, 3, 3, 4, 5]
    assert calls.count(('r', 'after_create_session')) == 2
    assert calls.count(('r', 'begin')) == 1


def test_recovery_without_checkpoints_reinitializes_to_the_first_values():
    model = Regression()
    fail = {'now': False}

    def step():
        if fail['now']:
            fail['now'] = False
            raise tf.errors.UnavailableError(None, None, 'worker lost')
        return model.step()

    with mts.MonitoredSession(session_creator=mts.ChiefSessionCreator(scaffold=model.scaffold())) as session:
        session.run(step)
        session.run(step)
        fail['now'] = True
        session.run(step)
        assert int(model.global_step.numpy()) == 1
        np.testing.assert_allclose(session.run(model.w), _weights_after_one_step())


def _weights_after_one_step():
    w = np.zeros([3, 1], np.float32)
    gradient = 2 * FEATURES.T @ (FEATURES @ w - TARGETS) / len(TARGETS)
    return w - 0.1 * gradient


def test_singular_session_does_not_recover_and_has_a_raw_session():
    def step():
        raise tf.errors.AbortedError(None, None, 'preempted')

    session = mts.SingularMonitoredSession()
    assert session.raw_session() is not None
    with pytest.raises(tf.errors.AbortedError):
        session.run(step)
    session.close()
    assert session.raw_session() is None


def test_run_step_fn_checks_its_signature():
    with mts.MonitoredSession() as session:
        with pytest.raises(ValueError, match='`step_fn` may either have one `step_context` argument'):
            session.run_step_fn(lambda ctx: None)


def test_run_step_fn_runs_with_and_without_hooks():
    model = Regression()
    hook = Recorder('a', [])
    with mts.MonitoredSession(hooks=[hook]) as session:

        def step_fn(step_context):
            step_context.session.run(model.step)
            return step_context.run_with_hooks(model.step)

        out = session.run_step_fn(step_fn)
    assert 'loss' in out
    assert hook.before_runs == 1
    assert int(model.global_step.numpy()) == 2


def test_step_context_request_stop_raises_stop_iteration_and_with_suppresses_it():
    hook = Recorder('a', [])
    with mts.MonitoredSession(hooks=[hook]) as session:

        def step_fn(step_context):
            step_context.request_stop()

        with pytest.raises(StopIteration, match='step_fn has requested the iterations to stop.'):
            session.run_step_fn(step_fn)
        assert not session.should_stop()
        session.run_step_fn(step_fn)
    assert hook.calls[-1] == ('a', 'end')


def test_run_step_fn_recovers_by_calling_step_fn_again():
    attempts = []

    def step_fn(step_context):
        attempts.append(1)
        if len(attempts) == 1:
            raise tf.errors.AbortedError(None, None, 'preempted')
        return 'done'

    with mts.MonitoredSession() as session:
        assert session.run_step_fn(step_fn) == 'done'
    assert len(attempts) == 2


def test_v1_user_hooks_work_unchanged():
    model = Regression()

    class V1Hook(tf.compat.v1.train.SessionRunHook):
        def __init__(self):
            self.values = []

        def before_run(self, run_context):
            return tf.compat.v1.train.SessionRunArgs({'loss': 'loss'})

        def after_run(self, run_context, run_values):
            self.values.append(run_values.results['loss'])

    hook = V1Hook()
    with mts.MonitoredSession(hooks=[hook]) as session:
        out = session.run(model.step)
    assert hook.values == [out['loss']]


@pytest.mark.parametrize(
    'hook, replacement',
    [
        (lambda: tf.compat.v1.train.StopAtStepHook(last_step=3), 'compat_mts.StopAtStepHook'),
        (lambda: tf.compat.v1.train.NanTensorHook('loss'), 'compat_mts.NanTensorHook'),
    ],
)
def test_v1_builtin_hooks_are_rejected_with_the_replacement(hook, replacement):
    with pytest.raises(TypeError, match=replacement):
        mts.MonitoredSession(hooks=[hook()])


def test_non_hooks_are_rejected_before_anything_runs():
    with pytest.raises(TypeError, match='`hooks` must hold SessionRunHook instances'):
        mts.MonitoredSession(hooks=[object()])
    with pytest.raises(TypeError, match='wrap it in a list'):
        mts.MonitoredSession(hooks=mts.SessionRunHook())
    with pytest.raises(TypeError, match='`session_creator`'):
        mts.MonitoredSession(session_creator='chief')


_DATA_RUNS_OUT_V1 = """
import sys
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
global_step = tf.compat.v1.train.get_or_create_global_step()
batch = tf.compat.v1.data.make_one_shot_iterator(
    tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32))).get_next()
total = tf.compat.v1.get_variable('total', initializer=0.0)
with tf.control_dependencies([tf.compat.v1.assign_add(total, batch)]):  # What minimize(global_step=) does.
    train_op = tf.compat.v1.assign_add(global_step, 1)
with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1]) as session:
    while not session.should_stop():
        session.run(train_op)
"""


@pytest.mark.slow
def test_when_the_data_runs_out_inside_the_step_the_final_checkpoint_is_v1s(tmp_path):
    from tests.support import latest_checkpoint_step

    result = run_python(_DATA_RUNS_OUT_V1, str(tmp_path / 'v1'))
    assert result.returncode == 0, result.stderr[-2000:]
    global_step = mts.get_or_create_global_step()
    total = tf.Variable(0.0)
    iterator = iter(tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)))

    @tf.function
    def step():
        total.assign_add(next(iterator))
        global_step.assign_add(1)  # Independent of the batch: it may run before next() raises.

    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'compat')) as session:
        while not session.should_stop():
            session.run(step)
    assert latest_checkpoint_step(str(tmp_path / 'compat')) == latest_checkpoint_step(str(tmp_path / 'v1')) == 10
    assert float(total.numpy()) == 45.0


def _graph_of_value(value: float):
    """A legacy graph whose `value:0` is `value` and whose `train_op` increments its own global step."""

    def build_fn():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        tf.constant(value, name='value')
        return {'train_op': tf.compat.v1.assign_add(global_step, 1, name='train_op')}

    return mts.wrap_graph(build_fn)


def test_two_sessions_open_at_once_each_run_their_own_graph_and_step():
    first_graph = _graph_of_value(1.0)
    first = mts.SingularMonitoredSession()
    second_graph = _graph_of_value(2.0)  # Registered last: it would win on names for every session.
    second = mts.SingularMonitoredSession()
    with first, second:
        for _ in range(2):  # Interleaved runs.
            assert first.run('value:0') == 1.0
            assert second.run('value:0') == 2.0
            first.run(first_graph.outputs['train_op'])
        assert first.run(first_graph.global_step) == 2
        assert second.run(second_graph.global_step) == 0
        assert first.raw_session().fetch_state.graph_runner is first_graph
        assert second.raw_session().fetch_state.graph_runner is second_graph


def test_two_sessions_open_at_once_each_remember_their_own_last_step():
    model = Regression()
    other_step = tf.function(lambda: model.global_step.read_value())
    first = mts.SingularMonitoredSession()
    first.run(model.step)
    second = mts.SingularMonitoredSession()  # Creating a session forgot v1's one default graph; not another's.
    second.run(other_step)
    first.run(model.step)
    with first, second:
        assert first.raw_session().fetch_state.last_step is model.step
        assert second.raw_session().fetch_state.last_step is other_step


def test_reset_forgets_the_global_step_and_the_legacy_graphs():
    graph = _graph_of_value(1.0)
    assert mts.get_global_step() is graph.global_step
    mts.reset()
    assert mts.get_global_step() is None
    with mts.SingularMonitoredSession() as session:
        with pytest.raises(KeyError, match="'value:0'"):
            session.run('value:0')


@pytest.mark.slow
def test_the_fetch_model_and_scaffold_import_no_legacy_code_and_the_session_no_hook():
    result = run_python(
        'import sys\n'
        'import compat_mts.core.fetch, compat_mts.session.scaffold, compat_mts.session.steps, compat_mts.summary\n'
        'assert "compat_mts.legacy" not in sys.modules, "legacy imported by the core"\n'
        'import compat_mts.session.monitored_session\n'
        'assert "compat_mts.legacy" not in sys.modules, "legacy imported by the session"\n'
        'hooks = sorted(name for name in sys.modules if name.startswith("compat_mts.hooks"))\n'
        'assert not hooks, hooks\n'
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_when_the_data_runs_out_an_optimizer_s_iterations_as_the_global_step_is_taken_back_too(tmp_path):
    """The remedy migration_guide/stages.md gives for `iterations` ending one ahead of a separate global step."""
    import keras

    from tests.support import latest_checkpoint_step

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)
    global_step = mts.set_global_step(optimizer.iterations, name='global_step')
    ones = np.ones((10, 1), np.float32)
    iterator = iter(tf.data.Dataset.from_tensor_slices((ones, ones)).batch(1))

    @tf.function
    def step():
        features, labels = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features) - labels))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    scaffold = mts.Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=optimizer))
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold) as session:
        while not session.should_stop():
            session.run(step)
    assert int(optimizer.iterations.numpy()) == int(global_step.numpy()) == 10
    assert latest_checkpoint_step(str(tmp_path)) == 10
    saved = tf.train.load_checkpoint(str(tmp_path))
    iterations = [name for name in saved.get_variable_to_shape_map() if name.startswith('optimizer/_iterations/')]
    assert [saved.get_tensor(name) for name in iterations] == [10], iterations
