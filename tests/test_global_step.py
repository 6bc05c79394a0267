"""The process-wide global step: creation, registration, v1's errors."""

from __future__ import annotations

import pytest
import tensorflow as tf

import compat_mts as mts


def test_get_or_create_makes_a_v1_style_variable_once():
    step = mts.get_or_create_global_step()
    assert step.name == 'global_step:0'
    assert step.dtype == tf.int64 and not step.trainable
    assert step.aggregation == tf.VariableAggregation.ONLY_FIRST_REPLICA
    assert mts.get_or_create_global_step() is step
    assert mts.get_global_step() is step


def test_create_twice_raises_v1_error():
    mts.create_global_step()
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        mts.create_global_step()


def test_set_global_step_registers_an_existing_counter():
    iterations = tf.Variable(5, dtype=tf.int64, trainable=False, name='iterations')
    assert mts.set_global_step(iterations) is iterations
    assert mts.get_global_step() is iterations
    with mts.MonitoredSession() as session:
        assert session.run('iterations') == 5


@pytest.mark.parametrize(
    'value, error, message',
    [
        (3, TypeError, 'must be a tf.Variable of an integer dtype, got int'),
        (tf.Variable(1.0), TypeError, 'got float32'),
        (tf.Variable([1, 2]), ValueError, 'must be a scalar'),
    ],
)
def test_set_global_step_rejects_what_cannot_count(value, error, message):
    with pytest.raises(error, match=message):
        mts.set_global_step(value)


def test_reset_forgets_the_registered_step():
    first = mts.get_or_create_global_step()
    mts.reset_global_step()
    assert mts.get_global_step() is None
    assert mts.get_or_create_global_step() is not first


def test_inside_a_v1_graph_the_graphs_own_step_is_used():
    eager_step = mts.get_or_create_global_step()
    with tf.Graph().as_default() as graph:
        graph_step = mts.get_or_create_global_step()
        assert graph_step.graph is graph
        assert mts.get_global_step() is graph_step
    assert mts.get_global_step() is eager_step


def test_inside_a_tf_function_trace_the_registered_step_is_found():
    registered = mts.get_or_create_global_step()
    seen = []

    @tf.function
    def step():
        found = mts.get_global_step()
        seen.append(found)
        return found.assign_add(1)

    assert int(step()) == 1
    assert seen == [registered]
    assert mts.get_or_create_global_step() is registered
