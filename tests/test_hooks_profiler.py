"""ProfilerHook: v1's trigger steps, eagerly captured by the TF profiler.

Each triggered run leaves `timeline-<step>.json` (a Chrome trace of the capture), the capture in
TensorBoard's profile-plugin layout, and the step's graph as run metadata `step_<N>` in the events file.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import time

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks.profiler import ProfilerHook


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    return lambda: [
        (r.levelno, r.getMessage()) for r in caplog.records if r.pathname.endswith(os.path.join('hooks', 'profiler.py'))
    ]


def make_step():
    global_step = mts.get_or_create_global_step()
    weights = tf.Variable(tf.ones([8, 8]))

    @tf.function
    def profiled_train_step():
        weights.assign(tf.matmul(weights, weights, name='weights_product') / 8.0)
        global_step.assign_add(1)
        return {'loss': tf.reduce_sum(weights)}

    return profiled_train_step


def run(hooks, step, runs):
    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(runs):
            session.run(step)


def timelines(directory):
    return sorted(os.path.basename(path) for path in glob.glob(os.path.join(directory, 'timeline-*.json')))


def run_metadata_tags(directory):
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    tags = []
    for path in sorted(glob.glob(os.path.join(directory, 'events.out.tfevents.*'))):
        for event in LegacyEventFileLoader(path).Load():
            tags.extend(
                (value.tag, event.step)
                for value in event.summary.value
                if value.metadata.plugin_data.plugin_name == 'graph_run_metadata_graph'
            )
    return tags


def test_the_first_run_is_never_traced_and_then_every_n_steps_by_the_global_step(tmp_path, lines):
    step = make_step()
    run([ProfilerHook(save_steps=2, output_dir=str(tmp_path))], step, 5)
    assert timelines(tmp_path) == ['timeline-2.json', 'timeline-4.json']
    assert lines() == [(logging.INFO, f"Saving timeline for {n} into '{tmp_path}/timeline-{n}.json'.") for n in (2, 4)]


def test_a_timeline_is_a_chrome_trace_with_the_traced_steps_events(tmp_path):
    step = make_step()
    run([ProfilerHook(save_steps=1, output_dir=str(tmp_path))], step, 2)
    with open(tmp_path / 'timeline-2.json') as timeline:
        trace = json.load(timeline)
    complete = [event for event in trace['traceEvents'] if event['ph'] == 'X']
    assert complete and all({'pid', 'tid', 'ts', 'dur', 'name'} <= set(event) for event in complete)
    assert 'profiled_train_step' in {event['name'] for event in complete}  # The tf.function call of the run,
    # and the ops it ran, found by the op's name: the kernel's name depends on the machine (`_MklMatMul` where
    # oneDNN is on).
    texts = [text for event in complete for text in [event['name'], *event['args'].values()] if isinstance(text, str)]
    assert any('weights_product' in text for text in texts)
    assert {event['args']['name'] for event in trace['traceEvents'] if event['name'] == 'process_name'} >= {'/host:CPU'}


def test_the_capture_is_left_in_tensorboards_profile_plugin_layout(tmp_path):
    step = make_step()
    run([ProfilerHook(save_steps=1, output_dir=str(tmp_path))], step, 2)
    assert glob.glob(os.path.join(tmp_path, 'plugins', 'profile', '*', '*.xplane.pb'))


def test_the_traced_steps_graph_is_run_metadata_named_after_the_step(tmp_path):
    step = make_step()
    run([ProfilerHook(save_steps=2, output_dir=str(tmp_path))], step, 5)
    assert run_metadata_tags(tmp_path) == [('step_2', 2), ('step_4', 4)]


def test_every_n_secs(tmp_path, monkeypatch):
    now = [50.0]
    monkeypatch.setattr(time, 'time', lambda: now[0])
    step = make_step()

    class Tick(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            now[0] += 0.4

    run([ProfilerHook(save_secs=1.0, output_dir=str(tmp_path)), Tick()], step, 7)
    assert timelines(tmp_path) == ['timeline-4.json', 'timeline-7.json']


def test_the_constructor_makes_the_writer_for_output_dir(tmp_path):
    output_dir = tmp_path / 'profile'
    ProfilerHook(save_steps=10, output_dir=str(output_dir))
    assert glob.glob(os.path.join(output_dir, 'events.out.tfevents.*'))


def test_needs_a_global_step(tmp_path):
    with pytest.raises(RuntimeError, match='^Global step should be created to use ProfilerHook.$'):
        mts.MonitoredSession(hooks=[ProfilerHook(save_steps=1, output_dir=str(tmp_path))])


def test_a_run_is_not_traced_while_another_profiler_runs(tmp_path, lines):
    step = make_step()
    tf.profiler.experimental.start(str(tmp_path / 'user'))
    try:
        run([ProfilerHook(save_steps=1, output_dir=str(tmp_path))], step, 2)
    finally:
        tf.profiler.experimental.stop()
    assert timelines(tmp_path) == []
    assert lines() == [(logging.WARNING, 'ProfilerHook: another profiler is running, so the next run is not traced.')]


def test_a_traced_run_that_raises_leaves_the_profiler_free(tmp_path):
    global_step = mts.get_or_create_global_step()

    def failing_step():
        global_step.assign_add(1)
        if int(global_step.numpy()) == 2:
            raise ValueError('the step failed')

    hook = ProfilerHook(save_steps=1, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match='the step failed'):
        run([hook], failing_step, 2)
    run([hook], make_step(), 2)
    assert timelines(tmp_path) == ['timeline-4.json']


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({}, '^Either every_secs or every_steps should be provided.$'),
        ({'save_steps': 1, 'save_secs': 1}, '^Can not provide both every_secs and every_steps.$'),
    ],
)
def test_v1_timer_errors(kwargs, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        ProfilerHook(output_dir=str(tmp_path), **kwargs)


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({'save_steps': 1, 'output_dir': None}, '`output_dir` must be a directory path'),
        ({'save_steps': '1'}, '`save_steps` must be None or an integer'),
        ({'save_secs': 'soon'}, '`save_secs` must be None or a number'),
        ({'save_steps': 1, 'show_dataflow': 'yes'}, '`show_dataflow` must be a bool'),
        ({'save_steps': 1, 'show_memory': None}, '`show_memory` must be a bool'),
    ],
)
def test_wrong_types_are_rejected_before_anything_is_written(kwargs, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match=message):
        ProfilerHook(**kwargs)
    assert os.listdir(tmp_path) == []


def test_a_resumed_session_is_first_traced_n_steps_after_the_restored_step(tmp_path):
    checkpoint_dir, profile_dir = str(tmp_path / 'checkpoints'), str(tmp_path / 'profile')
    step = make_step()
    first_hooks = [mts.StopAtStepHook(last_step=7)]
    with mts.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=first_hooks) as session:
        while not session.should_stop():
            session.run(step)
    mts.get_global_step().assign(0)  # A new process would start from 0; the session restores step 7.
    hooks = [mts.StopAtStepHook(last_step=13), ProfilerHook(save_steps=3, output_dir=profile_dir)]
    with mts.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks) as session:
        while not session.should_stop():
            session.run(step)
    assert timelines(profile_dir) == ['timeline-10.json', 'timeline-13.json']


def test_the_profile_extra_installs_the_plugin_that_opens_the_captures_and_the_guide_says_how():
    import pathlib
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    repo = pathlib.Path(__file__).resolve().parent.parent
    extras = tomllib.loads((repo / 'pyproject.toml').read_text())['project']['optional-dependencies']
    assert extras['profile'] == ['tensorboard-plugin-profile']
    assert not any(requirement.startswith('tensorboard-plugin-profile') for requirement in extras['test'])
    guide = (repo / 'migration_guide' / 'hooks.md').read_text()
    assert "pip install 'compat-mts[profile]'" in guide and 'tensorboard --logdir' in guide
