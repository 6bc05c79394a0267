"""The eager fetch and feed model, through `session.run` and hook fetches."""

from __future__ import annotations

import collections
import contextlib

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.saved_model import save_context, save_options

import compat_mts as mts
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import fetch
from tests.models import Recorder, Regression
from tests.support import read_events


def test_callable_fetch_is_the_step_and_returns_numpy():
    model = Regression()
    with mts.MonitoredSession() as session:
        out = session.run(model.step)
    assert isinstance(out['loss'], np.float32)
    assert int(model.global_step.numpy()) == 1


def test_nested_structures_come_back_in_the_same_shape():
    model = Regression()
    Pair = collections.namedtuple('Pair', 'step loss')
    with mts.MonitoredSession() as session:
        out = session.run({'a': [model.step, 'loss'], 'b': Pair(model.global_step, 'loss'), 'c': None})
    assert set(out) == {'a', 'b', 'c'}
    assert out['c'] is None
    assert isinstance(out['b'], Pair)
    assert out['b'].step == 1
    assert out['a'][1] == out['b'].loss == out['a'][0]['loss']


def test_variables_are_read_after_the_step():
    model = Regression()
    with mts.MonitoredSession() as session:
        before = session.run(model.global_step)
        step, _ = session.run([model.global_step, model.step])
    assert (before, step) == (0, 1)


def test_a_callable_named_twice_runs_once():
    calls = []

    def step():
        calls.append(1)
        return tf.constant(3.0)

    with mts.MonitoredSession() as session:
        assert session.run([step, step]) == [3.0, 3.0]
    assert len(calls) == 1


def test_no_op_run_and_eager_tensors():
    with mts.MonitoredSession() as session:
        assert session.run(lambda: None) is None
        assert session.run(tf.constant([1, 2])).tolist() == [1, 2]


def test_string_feeds_are_keyword_arguments_of_the_step():
    seen = []

    @tf.function
    def step(x, scale):
        seen.append(1)
        return {'y': x * scale}

    with mts.MonitoredSession() as session:
        out = session.run(step, feed_dict={'x': np.float32(2.0), 'scale': np.float32(3.0)})
    assert out['y'] == 6.0


def test_string_feeds_without_a_callable_are_rejected():
    with mts.MonitoredSession() as session:
        with pytest.raises(ValueError, match='keyword arguments of the step callable'):
            session.run(tf.constant(1.0), feed_dict={'x': 1.0})


def test_a_graph_tensor_name_fed_to_a_step_names_the_keys_it_takes_and_wrap_graph():
    @tf.function
    def train_step(x):
        return {'loss': tf.reduce_mean(x)}

    batch = np.arange(12, dtype=np.float32).reshape(4, 3)
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError) as error:
            session.run(train_step, feed_dict={'x:0': batch})
        assert session.run(train_step, feed_dict={'x': batch})['loss'] == 5.5  # the session goes on
    message = str(error.value)
    assert message.startswith(
        "`feed_dict` does not fit the step `train_step`, whose keyword arguments are 'x': 'x:0' is not among "
        "them; 'x' is required and not given. A step callable takes its inputs by argument name: "
        "feed_dict={'x': batch}. 'x:0' names a graph tensor"
    )
    assert 'compat_mts.wrap_graph' in message
    assert 'x_0' not in message and '[[' not in message  # neither tf.function's renamed key nor the array


def test_a_feed_key_a_plain_step_does_not_take_is_named_with_the_ones_it_does():
    def step(features, labels=None):
        return {'n': tf.size(features)}

    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match=r"whose keyword arguments are 'features', 'labels': 'label' is not"):
            session.run(step, feed_dict={'features': np.ones(3), 'label': np.ones(3)})
        assert session.run(step, feed_dict={'features': np.ones(3)})['n'] == 3


def test_every_callable_of_a_run_is_given_every_feed_and_one_that_does_not_take_it_is_named():
    model = Regression()
    seen = []

    def scaled(scale):
        seen.append(scale)
        return {'scaled': scale * 2}

    with mts.MonitoredSession() as session:
        with pytest.raises(
            TypeError, match=r'^`feed_dict` does not fit the step `_step`, whose keyword arguments are none'
        ):
            session.run([scaled, model.step], feed_dict={'scale': 3.0})
        assert seen == [] and int(model.global_step.numpy()) == 0  # Refused before either ran.
        assert session.run([scaled], feed_dict={'scale': 3.0}) == [{'scaled': 6.0}]


def test_a_step_taking_any_keywords_takes_any_feed_key():
    @tf.function
    def step(**inputs):
        return {'total': tf.add_n([tf.reduce_sum(v) for v in inputs.values()])}

    with mts.MonitoredSession() as session:
        assert session.run(step, feed_dict={'a': np.float32(1.0), 'b': np.float32(2.0)})['total'] == 3.0


def test_the_outputs_of_a_called_step_are_refused_saying_to_pass_the_step():
    model = Regression()
    with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(last_step=2)]) as session:
        with pytest.raises(TypeError) as error:
            session.run(model.step())  # called: it ran once, outside the session
        while not session.should_stop():
            session.run(model.step)
    assert str(error.value).startswith(
        "sess.run got the outputs of a step that already ran (a dict of values: ['loss']), so this run would "
        'run nothing and the global step would not move. Pass the step, do not call it: sess.run(train_step)'
    )
    assert int(model.global_step.numpy()) == 2


def _counting_step(outputs):
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step():
        global_step.assign_add(1)
        return outputs(tf.cast(global_step, tf.float32))

    return global_step, train_step


@pytest.mark.parametrize(
    'outputs, what',
    [(lambda loss: loss, 'an eager tensor'), (lambda loss: (loss, 2.0 * loss), '2 eager tensors')],
    ids=['a_lone_tensor', 'a_tuple'],
)
def test_the_tensors_of_a_called_step_are_refused_once_the_step_moved_outside_the_session(outputs, what):
    global_step, train_step = _counting_step(outputs)
    with mts.MonitoredTrainingSession(hooks=[mts.StopAtStepHook(last_step=5)]) as session:
        session.run(train_step())  # The first cannot be told from a fetch of a tensor.
        with pytest.raises(TypeError) as error:
            session.run(train_step())
        while not session.should_stop():
            session.run(train_step)
    assert str(error.value).startswith(
        f'sess.run got the outputs of a step that already ran ({what}): the global step moved from 1 to 2 since '
        'the previous run of this session, which ran nothing either, so a step ran outside the session'
    )
    assert 'Pass the step, do not call it: sess.run(train_step)' in str(error.value)
    assert int(global_step.numpy()) == 5


def test_eager_tensors_fetched_between_the_sessions_own_steps_are_their_values():
    global_step, train_step = _counting_step(lambda loss: loss)
    constant = tf.constant([1.0, 2.0])
    with mts.MonitoredTrainingSession() as session:
        for expected in range(1, 4):
            assert session.run(constant).tolist() == [1.0, 2.0]
            assert session.run((constant, constant))[1].tolist() == [1.0, 2.0]
            assert session.run(train_step) == expected  # The session's own step moves the global step.
            assert session.run([constant])[0].tolist() == [1.0, 2.0]
        computed = constant * float(session.run(global_step))  # An eager tensor made between runs.
        assert session.run(computed).tolist() == [3.0, 6.0]
    assert int(global_step.numpy()) == 3


def test_hook_fetches_resolve_from_the_same_run():
    model = Regression()
    calls = []
    by_name = Recorder('by_name', calls, fetches={'loss': 'loss', 'step': 'global_step'})
    by_variable = Recorder('by_variable', calls, fetches=model.global_step)
    stale = Recorder('stale', calls, fetches=mts.STALE_GLOBAL_STEP)
    silent = Recorder('silent', calls)
    with mts.MonitoredSession(hooks=[by_name, by_variable, stale, silent]) as session:
        out = session.run(model.step)
        session.run(model.step)
    assert by_name.results[0]['loss'] == out['loss']
    assert [r['step'] for r in by_name.results] == [1, 2]
    assert by_variable.results == [1, 2]
    assert stale.results == [0, 1]
    assert silent.results == [None, None]


def test_unknown_name_lists_what_is_available():
    model = Regression()
    with mts.MonitoredSession() as session:
        with pytest.raises(KeyError) as error:
            session.run([model.step, 'accuracy'])
    assert "'accuracy'" in str(error.value)
    assert "'loss'" in str(error.value) and "'global_step'" in str(error.value)


def test_invalid_fetch_type_is_named():
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match='has invalid type ndarray'):
            session.run(np.zeros(2))


def test_graph_tensor_of_a_foreign_graph_names_wrap_graph():
    with tf.Graph().as_default():
        graph_tensor = tf.constant(1.0)
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match='wrap_graph'):
            session.run(graph_tensor)


def test_feed_keys_of_other_types_are_rejected():
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match='`feed_dict` keys must be strings'):
            session.run(lambda: None, feed_dict={1: 2})


# A `tf.function` step is called through its concrete function, with the stale global-step read in the same call.


def test_stale_global_step_is_read_before_the_step_on_every_run_with_and_without_feeds():
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step(scale=np.float32(1.0)):
        global_step.assign_add(1)
        return {'scaled': tf.cast(global_step, tf.float32) * scale}

    calls = []
    stale = Recorder('stale', calls, fetches=mts.STALE_GLOBAL_STEP)
    after = Recorder('after', calls, fetches=global_step)
    outputs = []
    with mts.MonitoredSession(hooks=[stale, after]) as session:
        for run in range(6):
            feed_dict = {'scale': np.float32(10.0)} if run % 2 else None
            outputs.append(float(session.run(step, feed_dict=feed_dict)['scaled']))
    assert stale.results == [0, 1, 2, 3, 4, 5]
    assert after.results == [1, 2, 3, 4, 5, 6]
    assert outputs == [1.0, 20.0, 3.0, 40.0, 5.0, 60.0]


def test_a_step_that_creates_its_variables_on_the_first_call_keeps_them():
    global_step = mts.get_or_create_global_step()

    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = None

        @tf.function
        def __call__(self):
            if self.total is None:
                self.total = tf.Variable(100.0)
            self.total.assign_add(1.0)
            global_step.assign_add(1)
            return self.total.read_value()

    counter = Counter()
    stale = Recorder('stale', [], fetches=mts.STALE_GLOBAL_STEP)
    with mts.MonitoredSession(hooks=[stale]) as session:
        totals = [float(session.run(counter)) for _ in range(4)]
    assert totals == [101.0, 102.0, 103.0, 104.0]
    assert stale.results == [0, 1, 2, 3]


def _run_recorded(step, directory, runs: int) -> None:
    """Runs `step` `runs` times in a session whose `SummarySaverHook` records every third step into `directory`."""
    hooks = [mts.SummarySaverHook(save_steps=3, output_dir=str(directory), scaffold=mts.Scaffold())]
    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(runs):
            session.run(step)


def test_runs_that_record_no_summaries_call_the_step_traced_without_them(tmp_path):
    global_step = mts.get_or_create_global_step()
    total = tf.Variable(1.0)
    traces = []

    @tf.function
    def step():
        traces.append(tf.summary.should_record_summaries())
        total.assign_add(1.0)
        global_step.assign_add(1)
        tf.summary.scalar('total', total)

    _run_recorded(step, tmp_path, 10)
    # Its own first call (the recording condition a variable read), then once with recording off (a private API).
    again = [False] if tf_internals.PRIVATE_TF and fetch.fast_paths() else []
    assert [tf.get_static_value(condition) for condition in traces] == [None, *again]
    assert read_events(str(tmp_path))['total'] == [(1, 2.0), (4, 5.0), (7, 8.0), (10, 11.0)]


def _run_a_step_whose_python_state_changes(run, global_step: tf.Variable, change: str) -> list[float]:
    """Runs a summary-writing step six times with `run`, changing what its Python reads after the first."""
    totals = [tf.Variable(0.0), tf.Variable(100.0)]
    state = {'increment': 1.0, 'which': 0}

    @tf.function
    def step():
        totals[state['which']].assign_add(state['increment'])
        global_step.assign_add(1)
        tf.summary.scalar('total', totals[0])

    run(step)
    if change == 'a Python number':
        state['increment'] = 10.0
    else:
        state['which'] = 1
    for _ in range(5):
        run(step)
    return [float(total.numpy()) for total in totals]


@pytest.mark.parametrize('change', ['a Python number', 'the variable read'])
def test_a_step_whose_python_reads_what_changed_since_its_first_trace_keeps_that_trace(tmp_path, change):
    """As a `tf.function` called in a loop does: its first trace holds the number, or reads the variable, it saw."""
    with tf.summary.create_file_writer(str(tmp_path / 'loop')).as_default(step=0):
        expected = _run_a_step_whose_python_state_changes(lambda step: step(), tf.Variable(0, dtype=tf.int64), change)
    global_step = mts.get_or_create_global_step()
    hooks = [mts.SummarySaverHook(save_steps=2, output_dir=str(tmp_path / 'session'), scaffold=mts.Scaffold())]
    with mts.MonitoredSession(hooks=hooks) as session:
        totals = _run_a_step_whose_python_state_changes(session.run, global_step, change)
    assert totals == expected == [6.0, 100.0]


def test_a_step_whose_python_fails_when_traced_again_keeps_its_first_trace(tmp_path):
    """A `tf.function` called in a loop traces it once; the session's trace without summaries must not fail it."""
    global_step = mts.get_or_create_global_step()
    traces = []

    @tf.function
    def step():
        traces.append(len(traces))
        if len(traces) > 1:
            raise RuntimeError('traced again')
        global_step.assign_add(1)
        tf.summary.scalar('step', global_step)

    _run_recorded(step, tmp_path, 6)
    assert int(global_step.numpy()) == 6
    assert read_events(str(tmp_path))['step'] == [(1, 1.0), (4, 4.0)]


def test_with_run_functions_eagerly_the_step_runs_as_python_every_time():
    global_step = mts.get_or_create_global_step()
    python_calls = []

    @tf.function
    def step():
        python_calls.append(1)
        global_step.assign_add(1)

    stale = Recorder('stale', [], fetches=mts.STALE_GLOBAL_STEP)
    with mts.MonitoredSession(hooks=[stale]) as session:
        session.run(step)
        session.run(step)  # Traced twice by now: once alone, once in the call that reads the step first.
        traced = len(python_calls)
        tf.config.run_functions_eagerly(True)
        try:
            session.run(step)
            session.run(step)
        finally:
            tf.config.run_functions_eagerly(False)
        session.run(step)
    assert len(python_calls) == traced + 2
    assert stale.results == [0, 1, 2, 3, 4]


def test_a_step_run_in_a_strategy_scope_goes_through_its_tf_function():
    global_step = mts.get_or_create_global_step()
    strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
    with strategy.scope():
        weight = tf.Variable(1.0)

    @tf.function
    def step():
        strategy.run(lambda: weight.assign_add(1.0))
        global_step.assign_add(1)
        return weight.read_value()

    stale = Recorder('stale', [], fetches=mts.STALE_GLOBAL_STEP)
    with mts.MonitoredSession(hooks=[stale]) as session:
        values = [float(session.run(step))]
        with strategy.scope():
            values += [float(session.run(step)) for _ in range(2)]
        values.append(float(session.run(step)))
    assert values == [2.0, 3.0, 4.0, 5.0]
    assert stale.results == [0, 1, 2, 3]


@contextlib.contextmanager
def _execution_context(name: str):
    if name == 'a tf.distribute scope':
        with tf.distribute.OneDeviceStrategy('/cpu:0').scope():
            yield
    elif name == 'a SavedModel save':
        with save_context.save_context(save_options.SaveOptions()):
            yield
    else:
        tf.config.run_functions_eagerly(True)
        try:
            yield
        finally:
            tf.config.run_functions_eagerly(False)


@pytest.mark.parametrize('context', ['a tf.distribute scope', 'a SavedModel save', 'run_functions_eagerly'])
def test_a_context_entered_between_runs_sends_that_run_of_the_default_hooks_through_the_tf_function(tmp_path, context):
    """The step's direct call, the usual run of v1's default hooks, is for plain eager execution only: a run in a
    strategy's scope, a SavedModel save, or with `run_functions_eagerly` calls the `tf.function`, which traces the
    step again in that context (or runs it as Python), as a loop calling it would; the runs after it are direct
    again."""
    global_step = mts.get_or_create_global_step()
    seen = []

    @tf.function
    def step():
        seen.append((tf.distribute.has_strategy(), save_context.in_save_context()))
        global_step.assign_add(1)
        return {'loss': tf.constant(1.0)}

    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as session:
        for _ in range(3):
            session.run(step)
        assert fetch._direct_step(step) is not None
        traced = len(seen)
        with _execution_context(context):
            assert session.run(step) == {'loss': 1.0}
        session.run(step)
        session.run(step)
    expected = {'a tf.distribute scope': (True, False), 'a SavedModel save': (False, True)}.get(context, (False, False))
    assert seen[traced:] == [expected]
    assert int(global_step.numpy()) == 6


def test_keras_variables_are_fetched_as_variables():
    layer = tf.keras.layers.Dense(2, kernel_initializer='ones')
    layer.build((None, 3))
    assert not isinstance(layer.kernel, tf.Variable)
    reads = Recorder('reads', [], fetches={'kernel': layer.kernel})
    with mts.MonitoredSession(hooks=[reads]) as session:
        kernel = session.run(layer.kernel)
        session.run(lambda: layer.kernel.assign(layer.kernel * 2.0))
    assert kernel.tolist() == [[1.0, 1.0]] * 3
    assert [result['kernel'].tolist() for result in reads.results] == [[[1.0, 1.0]] * 3, [[2.0, 2.0]] * 3]


def test_python_numbers_fed_to_a_tf_function_step_do_not_trace_it_again():
    global_step = mts.get_or_create_global_step()
    traces = []

    @tf.function
    def step(learning_rate, training):
        traces.append(learning_rate)  # Runs when the step is traced, not when it runs.
        global_step.assign_add(1)
        return {'scaled': learning_rate * tf.cast(training, tf.float32)}

    with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=20)]) as session:
        values = [
            session.run(step, feed_dict={'learning_rate': 0.1 * 0.9**run, 'training': True})['scaled']
            for run in range(20)
        ]
    assert len(traces) <= 2  # The step's own trace, and the session's call of it with the stale step read.
    np.testing.assert_allclose(values, [0.1 * 0.9**run for run in range(20)], rtol=1e-6)


def test_a_failing_op_in_a_step_that_has_run_before_names_the_node_as_a_tf_function_call_does():
    global_step = mts.get_or_create_global_step()
    value = tf.Variable(1.0)

    @tf.function
    def step():
        global_step.assign_add(1)
        return {'checked': tf.debugging.check_numerics(tf.math.log(value), 'log of value')}

    stale = Recorder('stale', [], fetches=mts.STALE_GLOBAL_STEP)
    with mts.MonitoredSession(hooks=[stale]) as session:
        assert [float(session.run(step)['checked']) for _ in range(3)] == [0.0, 0.0, 0.0]
        value.assign(-1.0)
        with pytest.raises(tf.errors.InvalidArgumentError, match='log of value') as raised:
            session.run(step)
    assert 'Detected at node CheckNumerics defined at' in raised.value.message
    assert stale.results == [0, 1, 2]


def test_a_step_run_while_a_gradient_tape_records_is_seen_by_the_tape():
    weight = tf.Variable(3.0)

    @tf.function
    def step():
        return weight * weight

    with mts.MonitoredSession() as session:
        assert [float(session.run(step)) for _ in range(2)] == [9.0, 9.0]
        with tf.GradientTape() as tape:
            assert float(session.run(step)) == 9.0
        assert tape.watched_variables() == (weight,)
