"""LoggingTensorHook: validation, tags, names, trigger iterations, v1's lines, at_end, formatter."""

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


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def lines(caplog):
    """The INFO lines this hook logged (the `tensorflow` logger), read at assertion time."""
    caplog.set_level(logging.INFO, logger='tensorflow')
    return lambda: [
        r.getMessage()
        for r in caplog.records
        if r.pathname.endswith(os.path.join('hooks', 'logging.py')) and r.levelno == logging.INFO
    ]


@pytest.fixture
def clock(monkeypatch):
    """`time.time` that advances only when the test says so (v1's hook tests patch it the same way)."""
    now = [100.0]
    monkeypatch.setattr(time, 'time', lambda: now[0])
    return now


def counting_step():
    """loss = 0.25 * global step before the step; 'small' is an array for NumPy's print options."""
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step():
        loss = 0.25 * tf.cast(global_step, tf.float32)
        global_step.assign_add(1)
        return {'loss': loss, 'small': tf.constant([1e-5, 1.5])}

    return step


def run(hooks, step, runs):
    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(runs):
            session.run(step)


# Validation (v1's messages first)


@pytest.mark.parametrize(
    'kwargs', [{}, {'every_n_iter': 1, 'every_n_secs': 1.0}, {'every_n_iter': 1, 'every_n_secs': 1.0, 'at_end': True}]
)
def test_needs_at_end_and_or_exactly_one_trigger(kwargs):
    with pytest.raises(
        ValueError, match='^either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.$'
    ):
        LoggingTensorHook({'loss': 'loss'}, **kwargs)


@pytest.mark.parametrize('every_n_iter', [0, -2])
def test_every_n_iter_must_be_positive(every_n_iter):
    with pytest.raises(ValueError, match=f'^invalid every_n_iter={every_n_iter}.$'):
        LoggingTensorHook({'loss': 'loss'}, every_n_iter=every_n_iter, at_end=True)


@pytest.mark.parametrize(
    'args, kwargs, message',
    [
        (('loss',), {'every_n_iter': 1}, r"`tensors` must be a dict .* for one name write \['loss'\]"),
        ((5,), {'every_n_iter': 1}, '`tensors` must be a dict'),
        (({'a': 'a'},), {'every_n_iter': 1.5}, '`every_n_iter` must be None or an integer'),
        (({'a': 'a'},), {'every_n_secs': '3'}, '`every_n_secs` must be None or a number'),
        (({'a': 'a'},), {'at_end': 1}, '`at_end` must be a bool'),
        (({'a': 'a'},), {'every_n_iter': 1, 'formatter': 'x'}, '`formatter` must be None or a callable'),
    ],
)
def test_rejects_wrong_types(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        LoggingTensorHook(*args, **kwargs)


def test_a_value_that_is_not_a_fetch_is_a_value_error_as_in_v1():
    with pytest.raises(ValueError, match='Passed 5 should be a name'):
        LoggingTensorHook({'a': 5}, every_n_iter=1)


# Tags and names


def test_dict_tags_are_logged_in_sorted_order_and_list_items_in_the_given_order(lines):
    step = counting_step()
    hooks = [
        LoggingTensorHook({'zeta': 'loss', 'alpha': 'global_step'}, every_n_iter=10),
        LoggingTensorHook(['loss', 'global_step:0'], every_n_iter=10),
    ]
    run(hooks, step, 1)
    assert lines() == ['alpha = 1, zeta = 0.0', 'loss = 0.0, global_step:0 = 1']


def test_values_can_be_names_variables_tensors_and_callables(lines):
    step = counting_step()
    weight = tf.Variable([1.5, 2.0], name='weight')
    hook = LoggingTensorHook({'a': weight, 'b': lambda: weight * 2, 'c': tf.constant(7), 'd': 'small'}, every_n_iter=10)
    run([hook], step, 1)
    assert lines() == ['a = [1.5 2. ], b = [3. 4.], c = 7, d = [0.00001 1.5    ]']


def test_a_listed_variable_is_tagged_with_its_v1_text(lines):
    step = counting_step()
    weight = tf.Variable(2.5, name='weight')
    run([LoggingTensorHook([weight], every_n_iter=10)], step, 1)
    assert lines() == ["<tf.Variable 'weight:0' shape=() dtype=float32> = 2.5"]


def test_an_unknown_name_raises_at_the_first_logging_run_listing_the_available_names():
    step = counting_step()
    with pytest.raises(KeyError, match=r"'los'.*Available names: \['global_step', 'loss', 'small'\]"):
        run([LoggingTensorHook({'loss': 'los'}, every_n_iter=2)], step, 1)


# Trigger iterations and lines


def test_counts_local_iterations_from_begin_not_the_global_step(lines, clock):
    step = counting_step()
    mts.get_global_step().assign(7)
    run([LoggingTensorHook({'step': 'global_step'}, every_n_iter=2)], step, 5)
    assert lines() == ['step = 8', 'step = 10 (0.000 sec)', 'step = 12 (0.000 sec)']


def test_every_n_iter_logs_at_iterations_0_n_2n_with_the_elapsed_time(lines, clock):
    step = counting_step()

    class Tick(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            clock[0] += 0.25

    run([LoggingTensorHook({'loss': 'loss'}, every_n_iter=2), Tick()], step, 5)
    assert lines() == ['loss = 0.0', 'loss = 0.5 (0.500 sec)', 'loss = 1.0 (0.500 sec)']


def test_every_n_secs_logs_when_the_time_has_come(lines, clock):
    step = counting_step()

    class Tick(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            clock[0] += 0.4

    run([LoggingTensorHook({'loss': 'loss'}, every_n_secs=1.0), Tick()], step, 7)
    assert lines() == ['loss = 0.0', 'loss = 0.75 (1.200 sec)', 'loss = 1.5 (1.200 sec)']


def test_begin_resets_the_count_and_the_timer_for_a_new_session(lines, clock):
    step = counting_step()
    hook = LoggingTensorHook({'loss': 'loss'}, every_n_iter=2)
    run([hook], step, 3)
    run([hook], step, 3)
    assert lines() == ['loss = 0.0', 'loss = 0.5 (0.000 sec)', 'loss = 0.75', 'loss = 1.25 (0.000 sec)']


def test_values_are_printed_with_suppress_and_the_print_options_are_restored(lines):
    step = counting_step()
    before = np.get_printoptions()
    run([LoggingTensorHook({'small': 'small'}, every_n_iter=1)], step, 1)
    assert lines() == ['small = [0.00001 1.5    ]']
    assert np.get_printoptions() == before


def test_values_are_fetched_only_on_the_runs_that_log():
    step = counting_step()
    evaluations = []

    def value():
        evaluations.append(int(mts.get_global_step().numpy()))
        return tf.constant(1)

    run([LoggingTensorHook({'v': value}, every_n_iter=3)], step, 7)
    assert evaluations == [1, 4, 7]


def test_a_formatter_is_the_only_thing_logged(lines):
    step = counting_step()
    seen = []

    def formatter(values):
        seen.append(sorted(values))
        return 'custom %s' % values['loss']

    run([LoggingTensorHook({'loss': 'loss', 'step': 'global_step'}, every_n_iter=2, formatter=formatter)], step, 3)
    assert lines() == ['custom 0.0', 'custom 0.5']
    assert seen == [['loss', 'step'], ['loss', 'step']]


# at_end


def test_at_end_evaluates_variables_at_the_end_and_logs_without_elapsed_time_when_only_at_end(lines):
    step = counting_step()
    weight = tf.Variable(1.0)
    with mts.MonitoredSession(hooks=[LoggingTensorHook({'w': weight}, at_end=True)]) as session:
        session.run(step)
        weight.assign(4.0)
    assert lines() == ['w = 4.0']


def test_at_end_logs_step_outputs_from_the_last_run_and_the_time_since_the_last_line(lines, clock):
    step = counting_step()

    class Tick(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            clock[0] += 0.5

    hook = LoggingTensorHook({'loss': 'loss', 'step': 'global_step'}, every_n_iter=3, at_end=True)
    run([hook, Tick()], step, 4)
    assert lines() == ['loss = 0.0, step = 1', 'loss = 0.75, step = 4 (1.500 sec)', 'loss = 0.75, step = 4 (0.500 sec)']


def test_at_end_without_any_run_reads_what_exists_and_names_what_does_not():
    mts.get_or_create_global_step()
    with pytest.raises(KeyError, match="Available names: \\['global_step'\\]"):
        with mts.MonitoredSession(hooks=[LoggingTensorHook({'loss': 'loss'}, at_end=True)]):
            pass


def test_a_recovered_session_keeps_counting_where_it_was(lines, clock):
    step = counting_step()

    class PreemptOnce(mts.SessionRunHook):
        runs = 0

        def before_run(self, run_context):
            PreemptOnce.runs += 1
            if PreemptOnce.runs == 3:
                raise tf.errors.AbortedError(None, None, 'preempted')

    run([LoggingTensorHook({'step': 'global_step'}, every_n_iter=2), PreemptOnce()], step, 5)
    # The third call is retried in a re-created session, re-initialized to step 0 (no checkpoint);
    # begin() is not called again, so the count goes on: iterations 2 and 4 log, as in v1.
    assert lines() == ['step = 1', 'step = 1 (0.000 sec)', 'step = 3 (0.000 sec)']


# Legacy graphs (`wrap_graph`)


def wrapped_regression():
    from compat_mts.legacy import wrap_graph

    def build():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
        weights = tf.compat.v1.get_variable('weights', [2, 1], initializer=tf.compat.v1.ones_initializer())
        loss = tf.reduce_mean(tf.matmul(x, weights), name='loss')
        tf.split(tf.constant([1.0, 2.0]), 2, name='halves')
        global_step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
        return x, loss, train_op

    return wrap_graph(build).outputs


def test_in_a_wrapped_graph_tensors_and_names_without_a_colon_are_read_as_v1_read_them(lines):
    x, loss, train_op = wrapped_regression()
    hook = LoggingTensorHook(
        {'tensor': loss, 'name': 'loss', 'full_name': 'loss:0', 'step': 'global_step'}, every_n_iter=10
    )
    with mts.MonitoredSession(hooks=[hook]) as session:
        session.run(train_op, feed_dict={x: np.ones([1, 2], np.float32)})
    assert lines() == ['full_name = 2.0, name = 2.0, step = 1, tensor = 2.0']


def test_in_a_wrapped_graph_the_name_of_an_op_with_several_outputs_is_ambiguous_as_in_v1():
    wrapped_regression()
    with pytest.raises(
        ValueError,
        match=r'^Name halves is ambiguous, as this `Operation` has multiple outputs '
        r'\(at least 2\).$',
    ):
        mts.MonitoredSession(hooks=[LoggingTensorHook(['halves'], every_n_iter=1)])
