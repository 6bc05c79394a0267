"""A custom-`model_fn` Estimator program on `compat_mts.estimator`, against the same program in real v1 graph mode.

`tests/estimator_programs/classifier.py` is the program: a two-layer classifier `model_fn` (v1 graph code, a
`tf.compat.v1.train.LoggingTensorHook` and a user hook in its `training_hooks`, `tf.compat.v1.metrics`),
trained by `train_and_evaluate` with an `EvalSpec` that evaluates after every checkpoint. TF 2.21 has no
`tf.estimator`, so the expected values come from `tests/estimator_programs/v1_estimator.py`, which does what
v1's Estimator did, by hand, with the real `tf.compat.v1.train.MonitoredTrainingSession` and hooks in graph
mode, in its own process; this process runs the program on compat_mts meanwhile.

Compared: every step's loss, the evaluations after the checkpoints of steps 20, 40 and 60, the checkpoints (steps,
v1 names, values, the `checkpoint` state file), the events of `model_dir` and `model_dir/eval`. Then model
directories are handed over both ways at step 40 and must end at step 60 with the weights of the v1 program
run twice in one directory.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator
from tests import support
from tests.estimator_programs import classifier

pytestmark = pytest.mark.slow  # Every test compares with TensorFlow 2.15 in a process of its own.

RUNNER = os.path.join(support.TESTS_DIR, 'estimator_programs', 'v1_estimator.py')
RTOL, ATOL = 1e-5, 1e-6
LAST_STEP, HANDOVER_STEP = 60, 40
CHECKPOINT_STEPS = [0, 20, 40, 60]
EVAL_TAGS = ['accuracy', 'checkpoint_path', 'loss', 'mean_max_probability']


class V1Side:
    """The v1 process (eager execution off from its first line), asked for a list of calls at a time."""

    def __init__(self, log_path):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [support.REPO_ROOT, env.get('PYTHONPATH')]))
        self._log_path = log_path
        self._log = open(log_path, 'w', encoding='utf-8')
        self._process = support.popen(
            [sys.executable, RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            cwd=support.REPO_ROOT,
        )

    def run(self, calls: list[dict]) -> list[dict]:
        self._process.stdin.write(json.dumps(calls) + '\n')
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            self._log.flush()
            with open(self._log_path, encoding='utf-8') as log:
                pytest.fail(f'The v1 process ended without answering {calls}:\n{log.read()[-6000:]}')
        return json.loads(line)

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(timeout=60)
        self._log.close()


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Round 1: the straight 60-step runs on both sides and the first 40 steps of each hand-over; round 2: the
    last 20 steps of each hand-over on the other side."""
    root = tmp_path_factory.mktemp('estimator')
    directory = {name: str(root / name) for name in ('v1', 'compat', 'v1_then_compat', 'compat_then_v1', 'v1_then_v1')}

    def v1_call(name, max_steps, evaluate_after_save=False):
        return {'model_dir': directory[name], 'max_steps': max_steps, 'evaluate_after_save': evaluate_after_save}

    lines = _Lines()
    tf_logger = logging.getLogger('tensorflow')
    previous_verbosity = tf.compat.v1.logging.get_verbosity()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    v1_side = V1Side(root / 'v1_side.log')
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            v1_future = pool.submit(
                v1_side.run,
                [
                    v1_call('v1', LAST_STEP, evaluate_after_save=True),
                    v1_call('v1_then_compat', HANDOVER_STEP),
                    v1_call('v1_then_v1', HANDOVER_STEP),
                    v1_call('v1_then_v1', LAST_STEP),
                ],
            )
            tf_logger.addHandler(lines)
            try:
                compat = classifier.main(compat_mts.estimator, directory['compat'], LAST_STEP)
            finally:
                tf_logger.removeHandler(lines)
            compat_first_leg = classifier.main(
                compat_mts.estimator, directory['compat_then_v1'], HANDOVER_STEP, evaluate_after_save=False
            )
            v1, _, _, v1_legs = v1_future.result()
            v1_future = pool.submit(v1_side.run, [v1_call('compat_then_v1', LAST_STEP)])
            compat_second_leg = classifier.main(
                compat_mts.estimator, directory['v1_then_compat'], LAST_STEP, evaluate_after_save=False
            )
            (v1_second_leg,) = v1_future.result()
    finally:
        v1_side.close()
        tf.compat.v1.logging.set_verbosity(previous_verbosity)
    return {
        'directory': directory,
        'v1': v1,
        'compat': compat,
        'compat_log': lines.lines,
        'compat_first_leg': compat_first_leg,
        'compat_second_leg': compat_second_leg,
        'v1_second_leg': v1_second_leg,
        'v1_legs': v1_legs,
    }


def _latest_values(directory: str) -> dict:
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(directory))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _state_file(directory: str):
    """The `checkpoint` state file as written (`tf.train.get_checkpoint_state` makes the paths absolute)."""
    from google.protobuf import text_format
    from tensorflow.python.checkpoint import checkpoint_management

    with open(os.path.join(directory, 'checkpoint'), encoding='utf-8') as state_file:
        return text_format.Parse(state_file.read(), checkpoint_management.CheckpointState())


def _assert_same_values(actual: dict, expected: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], rtol=RTOL, atol=ATOL, err_msg=name)


def test_every_training_step_has_the_loss_of_v1(runs):
    compat, v1 = runs['compat'], runs['v1']
    assert compat['steps'] == list(range(LAST_STEP))
    np.testing.assert_allclose(compat['losses'], v1['losses'], rtol=RTOL, atol=ATOL)


def test_the_estimator_and_spec_hooks_log_v1_lines(runs):
    log, losses = runs['compat_log'], runs['compat']['losses']
    # The Estimator's LoggingTensorHook, every log_step_count_steps=20 steps, then the spec's, every 10.
    for step in (0, 20, 40):
        value = re.escape(str(np.float32(losses[step])))
        expected = re.compile(rf'^loss = {value}, step = {step}( \(\d+\.\d+ sec\))?$')
        assert any(expected.match(line) for line in log), (step, [line for line in log if 'step =' in line])
    assert sum(line.startswith('accuracy = ') for line in log) == LAST_STEP // 10
    assert sum(line.startswith('global_step/sec: ') for line in log) == 2
    assert 'Loss for final step: %s.' % np.float32(losses[-1]) in log


def test_train_and_evaluate_evaluates_after_each_checkpoint_as_v1(runs):
    directories = runs['directory']
    compat_events = support.read_events(os.path.join(directories['compat'], 'eval'))
    v1_events = support.read_events(os.path.join(directories['v1'], 'eval'))
    assert sorted(compat_events) == sorted(v1_events) == [tag for tag in EVAL_TAGS if tag != 'checkpoint_path']
    for tag, pairs in v1_events.items():
        assert [step for step, _ in compat_events[tag]] == [step for step, _ in pairs] == [20, 40, 60]
        np.testing.assert_allclose(
            [value for _, value in compat_events[tag]], [value for _, value in pairs], rtol=RTOL, err_msg=tag
        )
    for index, evaluation in enumerate(runs['v1']['evaluations']):
        assert [compat_events[tag][index][1] for tag in sorted(compat_events)] == pytest.approx(
            [evaluation[tag] for tag in sorted(compat_events)], rel=RTOL
        )
    metrics = runs['compat']['metrics']
    assert metrics['global_step'] == 60 and isinstance(metrics['global_step'], np.int64)
    assert isinstance(metrics['accuracy'], np.float32)
    assert metrics == pytest.approx(runs['v1']['evaluations'][-1], rel=RTOL)
    assert runs['compat']['export_results'] == []


def test_the_eval_directory_holds_the_checkpoint_paths_as_v1(runs):
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    def paths(directory):
        found = []
        for path in support.events_files(os.path.join(directory, 'eval')):
            for event in LegacyEventFileLoader(path).Load():
                found += [
                    (event.step, os.path.basename(tf.make_ndarray(value.tensor).item().decode()))
                    for value in event.summary.value
                    if value.tag == 'checkpoint_path'
                ]
        return found

    directories = runs['directory']
    assert (
        paths(directories['compat'])
        == paths(directories['v1'])
        == [(step, f'model.ckpt-{step}') for step in (20, 40, 60)]
    )
    assert support.has_graph_event(os.path.join(directories['compat'], 'eval'))


def test_the_model_dir_has_the_checkpoints_v1s_estimator_wrote(runs):
    compat_dir, v1_dir = runs['directory']['compat'], runs['directory']['v1']
    assert support.checkpoint_steps(compat_dir) == support.checkpoint_steps(v1_dir) == CHECKPOINT_STEPS
    compat_state, v1_state = _state_file(compat_dir), _state_file(v1_dir)
    assert compat_state.model_checkpoint_path == v1_state.model_checkpoint_path == 'model.ckpt-60'  # Relative.
    assert (
        list(compat_state.all_model_checkpoint_paths)
        == list(v1_state.all_model_checkpoint_paths)
        == [f'model.ckpt-{step}' for step in CHECKPOINT_STEPS]
    )
    _assert_same_values(_latest_values(compat_dir), _latest_values(v1_dir))
    assert {'global_step', 'hidden/kernel', 'hidden/kernel/Adam', 'beta1_power'} <= set(_latest_values(compat_dir))

    def layout(directory):  # v1 also wrote a `.meta` file per checkpoint; events files are named by time,
        # and v1 kept one open per directory for the process where compat_mts writes one per session.
        return sorted(
            {
                re.sub(r'events\.out\.tfevents\..*', 'events', name)
                for name in support.listed_files(directory)
                if not name.endswith('.meta')
            }
        )

    assert layout(compat_dir) == layout(v1_dir)


def test_the_model_dir_has_v1s_training_events_and_graph(runs):
    compat_dir, v1_dir = runs['directory']['compat'], runs['directory']['v1']
    compat_events, v1_events = support.read_events(compat_dir), support.read_events(v1_dir)
    assert sorted(compat_events) == sorted(v1_events) == ['accuracy', 'global_step/sec', 'loss']
    # v1's schedule when its hooks read the global step before the train op's increment, which v1 did not
    # order (under load a v1 run may shift by one); compat_mts always reads it before.
    assert [step for step, _ in compat_events['loss']] == [1, 11, 21, 31, 41, 51]
    assert [step for step, _ in compat_events['accuracy']] == [1, 11, 21, 31, 41, 51]
    v1_losses, compat_losses = dict(v1_events['loss']), dict(compat_events['loss'])
    common = sorted(set(v1_losses) & set(compat_losses))
    assert common
    np.testing.assert_allclose(
        [compat_losses[step] for step in common], [v1_losses[step] for step in common], rtol=RTOL
    )
    assert support.value_kinds(compat_dir)['global_step/sec'] == ['simple_value']
    assert support.has_graph_event(compat_dir)
    from google.protobuf import text_format

    graph_def = tf.compat.v1.GraphDef()
    with open(os.path.join(compat_dir, 'graph.pbtxt'), encoding='utf-8') as graph_file:
        text_format.Parse(graph_file.read(), graph_def)
    assert {'global_step', 'hidden/kernel', 'logits/kernel', 'IteratorGetNext'} <= {
        node.name for node in graph_def.node
    }


def test_a_v1_model_dir_resumes_at_its_step_and_ends_with_v1s_weights(runs):
    directories = runs['directory']
    assert runs['compat_second_leg']['steps'] == list(range(HANDOVER_STEP, LAST_STEP))
    np.testing.assert_allclose(runs['compat_second_leg']['losses'], runs['v1_legs']['losses'], rtol=RTOL, atol=ATOL)
    _assert_same_values(_latest_values(directories['v1_then_compat']), _latest_values(directories['v1_then_v1']))
    assert support.checkpoint_steps(directories['v1_then_compat']) == CHECKPOINT_STEPS


def test_a_compat_model_dir_resumes_in_v1_and_ends_with_v1s_weights(runs):
    directories = runs['directory']
    assert runs['compat_first_leg']['steps'] == list(range(HANDOVER_STEP))
    assert len(runs['v1_second_leg']['losses']) == LAST_STEP - HANDOVER_STEP
    np.testing.assert_allclose(runs['v1_second_leg']['losses'], runs['v1_legs']['losses'], rtol=RTOL, atol=ATOL)
    _assert_same_values(_latest_values(directories['compat_then_v1']), _latest_values(directories['v1_then_v1']))
    assert tf.train.load_variable(directories['compat_then_v1'], 'global_step') == LAST_STEP
