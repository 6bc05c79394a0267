"""The six hook families (and the global step several hooks read after a run) against the real v1 hooks: same
scenarios, v1 graph mode versus compat_mts eagerly.

`hooks_v1_scenarios.py` holds the scenarios. Run as a script it plays all of them with
`tf.compat.v1.train` under `disable_eager_execution()` (one subprocess, started when this module is
collected so that it runs while the eager side does); here the same functions run through compat_mts
in this process. Compared: the values `run` returned, `should_stop`, `end()` calls, errors (class and
message), the hooks' log lines (exact, under a fake clock), fetched values, sleeps, trigger steps and the
files written. Where compat_mts differs on purpose, the test says so and checks the documented behaviour.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from tests import hooks_v1_scenarios as scenarios
from tests import support

pytestmark = pytest.mark.slow  # Every test compares with v1 graph mode in a process.


class EagerModel:
    """`GraphModel`'s program as a `tf.function` step; names and variables stand where v1 had tensors."""

    def __init__(self, losses):
        self.global_step = mts.get_or_create_global_step()
        self.w = tf.Variable(np.float32(0.0), name='w')
        table = tf.constant(losses, tf.float32)
        global_step, w = self.global_step, self.w

        @tf.function
        def step(scale=np.float32(1.0)):
            loss = tf.gather(table, tf.minimum(global_step, len(losses) - 1)) * scale
            vec = tf.stack([loss * 1e-5, loss])
            global_step.assign_add(1)
            w.assign_add(0.5)
            return {'loss': loss, 'vec': vec}

        self.step = step
        self.loss = self.loss_name = 'loss'
        self.vec = self.vec_name = 'vec'
        self.global_step_after = global_step  # Variables are read after the step.
        self.feed_key = 'scale'
        self.scaled_w = lambda scale: w * scale
        self.summary_a = lambda: tf.summary.scalar('a', w)
        self.summary_b = lambda: tf.summary.scalar('b', w * 10.0)
        exhausted = iter(tf.data.Dataset.range(0))
        self.exhausted_input = exhausted.get_next
        self.sessions = []

    def run_step(self, session, feed_dict=None):
        return float(session.run(self.step, feed_dict=feed_dict)['loss'])

    def advance_global_step(self, amount):
        self.global_step.assign_add(amount)

    @staticmethod
    def summary_writer(directory):
        return tf.summary.create_file_writer(directory)

    @staticmethod
    def flush_summaries():
        """Nothing: compat_mts has flushed every writer when the session closed."""

    def summary_scaffold(self):
        return mts.Scaffold(summary_op=self.summary_a)


class EagerSide:
    """The compat_mts side: each scenario with a fresh global step."""

    train = mts

    @staticmethod
    @contextlib.contextmanager
    def prepare():
        global_step_lib.reset_global_step()
        try:
            yield
        finally:
            global_step_lib.reset_global_step()

    @staticmethod
    def model(losses):
        return EagerModel(losses)


@pytest.fixture(scope='module')
def v1_process():
    """The v1 subprocess, started first so that it runs while this process plays the eager side."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(support.run_python, os.path.join(support.TESTS_DIR, 'hooks_v1_scenarios.py'), timeout=600)


@pytest.fixture(scope='module')
def compat_runs(v1_process) -> dict:
    return json.loads(json.dumps(scenarios.run_all(EagerSide)))


@pytest.fixture(scope='module')
def v1_runs(v1_process, compat_runs) -> dict:
    process = v1_process.result()
    if process.returncode != 0:
        pytest.fail(f'hooks_v1_scenarios.py exited with {process.returncode}:\n{process.stderr[-6000:]}')
    return support.last_json_line(process.stdout)


def _without_traceback(result: dict) -> dict:
    result = dict(result)
    if result.get('error'):
        result['error'] = {key: value for key, value in result['error'].items() if key != 'traceback'}
    return result


def _equal(v1, compat) -> bool:
    if isinstance(v1, float) and isinstance(compat, float):
        return (math.isnan(v1) and math.isnan(compat)) or math.isclose(v1, compat, rel_tol=1e-6)
    if isinstance(v1, list) and isinstance(compat, list):
        return len(v1) == len(compat) and all(_equal(a, b) for a, b in zip(v1, compat))
    if isinstance(v1, dict) and isinstance(compat, dict):
        return v1.keys() == compat.keys() and all(_equal(v1[key], compat[key]) for key in v1)
    return v1 == compat


def assert_same(v1: dict, compat: dict, ignore=()):
    v1, compat = _without_traceback(v1), _without_traceback(compat)
    if compat.get('error') and not v1.get('error'):
        pytest.fail(f'compat_mts raised {compat["error"]}')
    for key in sorted(set(v1) | set(compat)):
        if key not in ignore:
            assert _equal(v1.get(key), compat.get(key)), f'{key}: v1 {v1.get(key)!r}\n compat {compat.get(key)!r}'


SAME_AS_V1 = [
    'nan_fail',
    'nan_stop',
    'nan_vector_loss',
    'logging_sorted_dict_every_n_iter',
    'logging_list_in_given_order',
    'logging_every_n_secs',
    'logging_two_hooks_different_periods',
    'logging_formatter',
    'logging_only_at_end',
    'logging_at_end_with_timer',
    'logging_counts_from_each_begin',
    'waiter_zero_never_waits',
    'waiter_polls_until_the_step',
    'waiter_needs_a_global_step',
    'final_ops_values',
    'final_ops_feed_dict',
    'final_ops_out_of_range',
    'feed_fn_feeds_every_run',
    'feed_fn_conflicts_with_user_feed',
    'feed_fn_conflicts_between_hooks',
    'stop_reads_the_step_a_hook_moved',
    'stop_reads_the_step_a_subclassed_hook_moved',
    'subclassed_hooks_are_called_on_every_run',
    # Several hooks writing into one writer: each hook's own summaries at its own steps, in v1's order.
    'summary_hooks_two_ops_one_directory',
    'summary_hooks_steps_and_secs_one_directory',
    'summary_hooks_one_given_writer',
    'summary_hooks_two_directories',
    'summary_hook_beside_the_session_default',
    'step_counter_hooks_one_directory',
]


def test_every_scenario_is_compared():
    compared = set(SAME_AS_V1) | {'profiler_every_2_steps', 'profiler_every_second', 'constructor_errors'}
    assert compared == set(scenarios.SCENARIOS)


@pytest.mark.parametrize('name', SAME_AS_V1)
def test_hook_behaves_as_v1(name, v1_runs, compat_runs):
    assert_same(v1_runs[name], compat_runs[name])


@pytest.mark.parametrize('name', ['profiler_every_2_steps', 'profiler_every_second'])
def test_profiler_hook_traces_the_steps_v1_traces(name, v1_runs, compat_runs):
    v1, compat = v1_runs[name], compat_runs[name]
    # Eagerly the capture is also left in TensorBoard's profile-plugin layout (DESIGN: v1 had no such files).
    plugin_files = [path for path in compat['files'] if path.startswith('plugins/profile/')]
    assert plugin_files and all(path.endswith('.xplane.pb') for path in plugin_files)
    compat['files'] = [path for path in compat['files'] if path not in plugin_files]
    # v1 never flushed its run metadata: what reached its file when the process ended (none, or the first
    # step's, as its writer's thread allowed) is a prefix of its traced steps. compat_mts writes each at its step.
    v1_tags = [tag for tag, _ in v1['run_metadata_tags']]
    assert len(v1_tags) <= 1 and v1_tags == [f'step_{step}' for step in _timeline_steps(v1)][: len(v1_tags)]
    assert compat['run_metadata_tags'] == [[f'step_{step}', step] for step in _timeline_steps(compat)]
    assert_same(v1, compat, ignore=('run_metadata_tags',))


def _timeline_steps(result):
    return [int(name[len('timeline-') : -len('.json')]) for name in result['timelines']]


def test_constructors_reject_what_v1_rejects_with_v1_class_and_message(v1_runs, compat_runs):
    v1, compat = v1_runs['constructor_errors']['errors'], compat_runs['constructor_errors']['errors']
    for name in scenarios.CONSTRUCTOR_CASES:
        assert v1[name] == compat[name], name


def test_constructors_reject_early_what_v1_rejected_late_with_the_same_class(v1_runs, compat_runs):
    v1, compat = v1_runs['constructor_errors']['errors'], compat_runs['constructor_errors']['errors']
    for name in scenarios.LATE_CASES:
        assert compat[name]['at'] == 'construction', name
        assert compat[name]['type'] == v1[name]['type'], (name, v1[name], compat[name])
