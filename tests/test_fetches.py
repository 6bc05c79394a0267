"""The eager fetch and feed model, through `session.run` and hook fetches."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from tests.models import Recorder, Regression


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
