"""FinalOpsHook: values evaluated at end(), kept in final_ops_values; v1's OutOfRange warning."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks.final_ops import FinalOpsHook


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def warnings(caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    return lambda: [
        r.getMessage()
        for r in caplog.records
        if r.pathname.endswith(os.path.join('hooks', 'final_ops.py')) and r.levelno == logging.WARNING
    ]


def train(hooks, runs=2):
    global_step = mts.get_or_create_global_step()
    weight = tf.Variable(0.0, name='weight')

    @tf.function
    def step():
        weight.assign_add(0.5)
        global_step.assign_add(1)
        return {'loss': weight * 2}

    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(runs):
            session.run(step)
    return weight


def test_values_are_none_until_end_then_kept_in_the_structure_of_final_ops():
    total = tf.Variable(0.0)
    hooks = [FinalOpsHook(total), FinalOpsHook([total]), FinalOpsHook({'total': total, 'step': 'global_step'})]
    assert [hook.final_ops_values for hook in hooks] == [None, None, None]
    total.assign(3.0)
    train(hooks)
    assert hooks[0].final_ops_values == 3.0
    assert hooks[1].final_ops_values == [3.0]
    assert hooks[2].final_ops_values == {'total': 3.0, 'step': 2}


def test_callables_are_run_at_the_end_as_a_metric_value_op_was():
    metric = tf.keras.metrics.Mean()
    metric.update_state([1.0, 3.0])
    hook = FinalOpsHook({'mean': metric.result})
    train([hook])
    assert hook.final_ops_values == {'mean': 2.0}


def test_string_keys_of_the_feed_dict_are_keyword_arguments_of_the_final_callables():
    hook = FinalOpsHook(lambda scale: tf.constant(2.0) * scale, final_ops_feed_dict={'scale': np.float32(4.0)})
    train([hook])
    assert hook.final_ops_values == 8.0


def test_each_end_overwrites_the_values():
    total = tf.Variable(1.0)
    hook = FinalOpsHook(total)
    train([hook])
    total.assign(5.0)
    train([hook])
    assert hook.final_ops_values == 5.0


def test_none_runs_nothing():
    hook = FinalOpsHook(None)
    train([hook])
    assert hook.final_ops_values is None


def test_step_outputs_do_not_exist_at_the_end_and_the_error_lists_what_does():
    with pytest.raises(KeyError, match=r"'loss'.*Available names: \['global_step'\]"):
        train([FinalOpsHook('loss')])


@pytest.mark.parametrize(
    'make_final_op',
    [
        lambda: iter(tf.data.Dataset.range(0)).get_next,
        lambda: lambda: next(iter([])),
    ],
    ids=['OutOfRangeError', 'StopIteration'],
)
def test_reading_the_input_at_the_end_warns_as_v1_and_reraises(make_final_op, warnings):
    error = tf.errors.OutOfRangeError if 'get_next' in repr(make_final_op()) else StopIteration
    with pytest.raises(error):
        train([FinalOpsHook(make_final_op())])
    assert len(warnings()) == 1
    assert 'have a dependency back to some input source' in warnings()[0]


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({'final_ops': 5}, '`final_ops` must be a name'),
        ({'final_ops': [tf.constant(1.0), 2.5]}, '`final_ops` must be a name'),
        ({'final_ops': 'global_step', 'final_ops_feed_dict': [('scale', 1.0)]}, '`final_ops_feed_dict` must be None'),
    ],
)
def test_constructor_rejects_what_is_not_a_fetch(kwargs, message):
    with pytest.raises(TypeError, match=message):
        FinalOpsHook(**kwargs)
