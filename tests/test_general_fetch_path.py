"""The fast paths against the general one: `compat_mts.core.fetch.FAST_PATHS = False`
(`COMPAT_MTS_GENERAL_FETCH_PATH=1`).

A representative set of the session's tests runs here again with the general path forced (every hook called on
every run, every fetch through `Run`'s general resolution), and one program with v1's default hooks runs both ways,
its log lines, summaries and checkpoints compared.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import fetch as fetches
from tests.models import Regression
from tests.support import checkpoint_steps, read_events

# Imported to run again in this module, under the fixture below.
from tests.test_hooks_default import (  # noqa: F401
    test_a_listener_asking_to_stop_stops_training,
    test_checkpoint_hook_saves_at_creation_on_its_timer_and_at_end,
    test_step_counter_first_trigger_only_starts_the_clock,
    test_step_counter_warns_at_most_five_times_when_the_global_step_does_not_move,
    test_stop_is_requested_only_when_the_step_really_got_there,
    test_summary_hook_with_a_summary_op_callable,
)
from tests.test_monitored_session import (  # noqa: F401
    test_exception_in_before_run_skips_the_run_and_every_after_run,
    test_hook_methods_run_in_v1_order,
    test_request_stop_in_before_run_takes_effect_after_that_run,
    test_run_options_merge_with_v1_rules,
    test_two_sessions_open_at_once_each_run_their_own_graph_and_step,
    test_when_the_data_runs_out_inside_the_step_the_final_checkpoint_is_v1s,
)


@pytest.fixture(autouse=True)
def general_path(request, monkeypatch):
    """Every test of this module runs with the general path forced, except those that set it themselves."""
    if 'both_ways' not in request.node.name:
        monkeypatch.setattr(fetches, 'FAST_PATHS', False)


class CountingStepCounter(mts.StepCounterHook):
    """A `StepCounterHook` that counts its `after_run` calls (its capabilities are the built-in hook's, said again
    as a subclass with an `after_run` of its own must: `session_run_hook.said_of_its_runs`)."""

    idle_until = mts.StepCounterHook.idle_until
    reads_clock_after_run = mts.StepCounterHook.reads_clock_after_run
    catch_up = mts.StepCounterHook.catch_up

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.after_runs = 0

    def after_run(self, run_context, run_values):
        self.after_runs += 1
        super().after_run(run_context, run_values)


class CountingSummarySaver(mts.SummarySaverHook):
    """A `SummarySaverHook` that counts its `before_run` and `after_run` calls (the built-in hook's capabilities
    said again)."""

    idle_until = mts.SummarySaverHook.idle_until
    catch_up = mts.SummarySaverHook.catch_up
    decides_on_previous_run = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def before_run(self, run_context):
        self.calls += 1
        return super().before_run(run_context)

    def after_run(self, run_context, run_values):
        self.calls += 1
        super().after_run(run_context, run_values)


def _program(directory: str, fast: bool, logs) -> dict:
    """v1's default hooks and a stop, 30 runs of which some do not move the global step and one jumps it."""
    mts.reset_global_step()
    fetches.FAST_PATHS = fast
    model = Regression()
    still = tf.function(lambda: {'loss': tf.constant(0.0)})  # A run that does not move the global step.
    counter = CountingStepCounter(every_n_steps=4, output_dir=directory)
    summaries = CountingSummarySaver(save_steps=5, output_dir=directory, scaffold=mts.Scaffold())
    hooks = [counter, summaries, mts.StopAtStepHook(last_step=40)]
    del logs.records[:]
    runs = 0
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold(),
        hooks=hooks,
        save_checkpoint_steps=7,
        save_summaries_steps=None,  # The summaries are the counting hook's, v1's default every 5 steps.
        save_summaries_secs=None,
        log_step_count_steps=6,
    ) as session:
        while not session.should_stop() and runs < 100:  # Bounded: a stop that never comes fails, not hangs.
            runs += 1
            session.run(still if runs % 9 == 0 else model.step)
            if runs == 17:
                model.global_step.assign_add(6)  # Moved outside the session's runs.
    # compat_mts's lines (not TensorFlow's retracing warnings); the rates' values are the clock's, and the
    # not-moved warning is logged five times a process (`log_first_n`).
    messages = [
        message
        for message in (record.getMessage() for record in logs.records if 'compat_mts' in record.pathname)
        if '/sec' not in message and not message.startswith('It seems that global step')
    ]
    return {
        'runs': runs,
        'after_runs': counter.after_runs,
        'summary_calls': summaries.calls,
        'messages': [m.replace(directory, 'DIR') for m in messages],
        'checkpoints': checkpoint_steps(directory),
        'summary_steps': {tag: [step for step, _ in values] for tag, values in read_events(directory).items()},
        'w': model.w.numpy(),
        'fast_step': fetches._direct_step(model.step) is not None,
    }


def test_default_hooks_both_ways_write_the_same_logs_summaries_and_checkpoints(tmp_path, tf_logs):
    try:
        fast = _program(str(tmp_path / 'fast'), True, tf_logs)
        general = _program(str(tmp_path / 'general'), False, tf_logs)
    finally:
        fetches.FAST_PATHS = True
    assert fast['fast_step'] and not general['fast_step']
    assert general['after_runs'] == general['runs']  # Every hook on every run.
    assert fast['after_runs'] < fast['runs'] / 2  # Skipped between its triggers.
    assert general['summary_calls'] == 2 * general['runs']
    assert fast['summary_calls'] < fast['runs']  # Left out before the runs it does not act on.
    np.testing.assert_array_equal(fast.pop('w'), general.pop('w'))
    for key in ('runs', 'messages', 'checkpoints', 'summary_steps'):
        assert fast[key] == general[key], key
    assert general['checkpoints'][-1] == 40
    assert {'loss', 'global_step/sec'} <= set(general['summary_steps'])


def _two_summary_hooks_on_one_writer(directory: str, fast: bool) -> dict:
    mts.reset_global_step()
    fetches.FAST_PATHS = fast
    model = Regression()
    hooks = [
        CountingSummarySaver(save_steps=3, output_dir=directory, scaffold=mts.Scaffold()),
        CountingSummarySaver(save_steps=4, output_dir=directory, scaffold=mts.Scaffold()),
    ]
    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(13):
            session.run(model.step)
    return {'calls': [hook.calls for hook in hooks], 'loss_steps': [step for step, _ in read_events(directory)['loss']]}


def test_two_summary_hooks_on_one_writer_record_each_ones_steps_both_ways_and_are_left_out_between(tmp_path):
    """Each one asks its writer's recording for its own runs: both ways record the steps of either (v1's), and
    the fast path leaves each out between its own triggers, as with a writer of its own."""
    try:
        fast = _two_summary_hooks_on_one_writer(str(tmp_path / 'fast'), True)
        general = _two_summary_hooks_on_one_writer(str(tmp_path / 'general'), False)
    finally:
        fetches.FAST_PATHS = True
    assert fast['loss_steps'] == general['loss_steps'] == [1, 4, 5, 7, 9, 10, 13]
    assert general['calls'] == [26, 26]
    assert all(calls < 26 for calls in fast['calls'])
