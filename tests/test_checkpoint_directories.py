"""Checkpoint directories as users give them, next to real v1: relative, `~`, symlinks, v1's state, other programs.

The programs are `tests/v1_programs/directory_legs.py`: the same graph code run by the real v1
`MonitoredTrainingSession` (graph mode, in a subprocess) or by compat_mts (`wrap_graph`, in this process).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.checkpoint_dir import checkpoints as checkpoints_lib
from tests import support
from tests.models import Regression
from tests.support import REPO_ROOT, checkpoint_steps, run_python, state_file_steps
from tests.v1_programs.directory_legs import leg_compat

_LEGS = os.path.join(REPO_ROOT, 'tests', 'v1_programs', 'directory_legs.py')


def _v1_legs(
    directory: str, *legs: str, cwd: str | None = None, model: str = 'regression', max_to_keep: int | None = None
) -> list[dict]:
    options = ['--max-to-keep', str(max_to_keep)] if max_to_keep is not None else []
    result = run_python(_LEGS, 'v1', directory, *legs, '--model', model, *options, cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{')]


def _checkpoint_files(directory) -> dict[str, bytes]:
    """The checkpoint files and the state file of `directory`, with their contents."""
    return {
        path.name: path.read_bytes()
        for path in directory.iterdir()
        if path.name == 'checkpoint' or path.name.startswith('model.ckpt')
    }


def _straight_weights(last_step: int) -> list[float]:
    """`w` after `last_step` uninterrupted steps, computed here with NumPy."""
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    targets = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    weights = np.zeros([3, 1], np.float32)
    for _ in range(last_step):
        weights -= 0.1 * 2 * features.T @ (features @ weights - targets) / len(features)
    return weights.ravel().tolist()


@pytest.mark.parametrize('writer', [pytest.param('v1', marks=pytest.mark.slow), 'compat'])
@pytest.mark.parametrize('form', ['relative', 'home', 'symlink'])
def test_a_relative_home_or_symlinked_directory_resumes_as_an_absolute_one(tmp_path, monkeypatch, form, writer):
    real = tmp_path / 'work' / 'checkpoints'
    real.parent.mkdir()
    monkeypatch.chdir(real.parent)
    monkeypatch.setenv('HOME', str(real.parent))
    given = {'relative': './checkpoints', 'home': '~/checkpoints', 'symlink': str(tmp_path / 'link')}[form]
    if form == 'symlink':
        real.mkdir()
        os.symlink(real, tmp_path / 'link')
    if writer == 'v1':  # v1 does not expand `~`; it wrote through the real path.
        written = _v1_legs(str(real) if form == 'home' else given, '3:0', cwd=str(real.parent))
    else:
        written = [leg_compat(given, 3, 0, 'regression')]
    assert written[0]['final'] == 3
    assert checkpoint_steps(str(real)) == [0, 3]

    resumed = leg_compat(given, 5, 0, 'regression')
    assert resumed['start'] == 3
    np.testing.assert_allclose(resumed['w'], _straight_weights(5), rtol=1e-5)
    assert checkpoint_steps(str(real)) == [0, 3, 5]
    assert state_file_steps(str(real)) == [0, 3, 5]
    assert not (real.parent / '~').exists()


@pytest.mark.slow
def test_continuing_a_v1_directory_keeps_v1s_entries_and_rotates_them_as_v1_does(tmp_path):
    reference = str(tmp_path / 'v1_only')
    v1_only = _v1_legs(reference, '3:0', '6:1', '9:1')
    mixed = str(tmp_path / 'mixed')
    first = _v1_legs(mixed, '3:0')
    second = leg_compat(mixed, 6, 1, 'regression')
    assert state_file_steps(mixed) == [0, 3, 4, 5, 6]  # v1's 0 and 3 stay listed, as v1 keeps them.
    third = _v1_legs(mixed, '9:1')
    assert [leg['start'] for leg in first + [second] + third] == [leg['start'] for leg in v1_only] == [0, 3, 6]
    assert state_file_steps(mixed) == state_file_steps(reference) == [5, 6, 7, 8, 9]
    assert checkpoint_steps(mixed) == checkpoint_steps(reference)
    np.testing.assert_allclose(third[-1]['w'], v1_only[-1]['w'], rtol=1e-5)


@pytest.mark.slow
def test_a_v1_saver_built_in_the_graph_code_keeps_as_many_checkpoints_as_in_v1(tmp_path):
    reference = str(tmp_path / 'v1')
    v1 = _v1_legs(reference, '6:1', max_to_keep=2)
    compat_dir = str(tmp_path / 'compat')
    compat = leg_compat(compat_dir, 6, 1, 'regression', max_to_keep=2)
    assert checkpoint_steps(reference) == [5, 6]
    assert checkpoint_steps(compat_dir) == checkpoint_steps(reference)
    assert state_file_steps(compat_dir) == state_file_steps(reference)
    np.testing.assert_allclose(compat['w'], v1[0]['w'], rtol=1e-5)
    assert sorted(tf.train.load_checkpoint(compat_dir).get_variable_to_shape_map()) == ['global_step', 'w']


@pytest.mark.slow
def test_a_checkpoint_of_another_program_is_refused_as_v1_refused_it(tmp_path):
    directory = str(tmp_path)
    assert _v1_legs(directory, '2:0', model='other')[0]['final'] == 2
    before = _checkpoint_files(tmp_path)

    v1 = _v1_legs(directory, '4:0')
    assert v1[0]['error'] == 'NotFoundError' and 'Key w not found in checkpoint' in v1[0]['message']

    with pytest.raises(mts.CheckpointMismatchError) as refused:
        leg_compat(directory, 4, 0, 'regression')
    message = str(refused.value)
    assert os.path.join(directory, 'model.ckpt-2') in message
    assert 'does not hold these variables of the program: w.' in message
    assert 'it holds global_step, other' in message
    assert 'allow_partial_restore=True' in message
    assert len(message) < 600  # Names, not values.
    assert _checkpoint_files(tmp_path) == before


@pytest.mark.slow
def test_an_eager_program_refuses_a_v1_directory_of_another_model_instead_of_resuming_its_step(tmp_path):
    directory = str(tmp_path)
    _v1_legs(directory, '2:0', model='other')
    global_step = mts.get_or_create_global_step()
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
    scaffold = mts.Scaffold(saver=tf.train.Checkpoint(model=model))
    # Keras numbers the names of its layers per process (`sequential_1/dense_3` after other tests' models).
    kernel, bias = (re.escape(variable.path) for variable in model.variables)
    with pytest.raises(mts.CheckpointMismatchError, match=rf'variables of the program: {kernel}, {bias}\.'):
        mts.MonitoredTrainingSession(checkpoint_dir=directory, scaffold=scaffold)
    assert checkpoint_steps(directory) == [0, 2]
    del global_step


def test_a_failed_save_leaves_the_last_good_checkpoint_to_resume_from(tmp_path):
    directory = str(tmp_path)
    # A directory where the step-4 data file goes: the save of step 4 cannot write it.
    os.makedirs(os.path.join(directory, 'model.ckpt-4.data-00000-of-00001', 'x'))
    with pytest.raises((tf.errors.OpError, OSError)):
        leg_compat(directory, 6, 2, 'regression')
    assert state_file_steps(directory) == [0, 2]
    mts.reset_global_step()
    assert leg_compat(directory, 3, 0, 'regression')['start'] == 2


@pytest.mark.parametrize('damage', ['deleted', 'text_garbage', 'empty', 'binary_garbage'])
def test_a_missing_or_unreadable_state_file_is_rebuilt_from_the_checkpoints_on_disk(tmp_path, tf_logs, damage):
    directory = str(tmp_path)
    leg_compat(directory, 4, 2, 'regression')
    state = tmp_path / 'checkpoint'
    if damage == 'deleted':
        state.unlink()
    else:
        state.write_bytes(
            {'text_garbage': b'not a checkpoint state\n', 'empty': b'', 'binary_garbage': bytes(range(256))}[damage]
        )
    mts.reset_global_step()
    resumed = leg_compat(directory, 6, 2, 'regression')
    assert resumed['start'] == 4
    np.testing.assert_allclose(resumed['w'], _straight_weights(6), rtol=1e-5)
    warnings = [m for m in tf_logs.messages() if 'no readable `checkpoint` state file' in m]
    assert len(warnings) == 1 and 'model.ckpt-4' in warnings[0]
    assert state_file_steps(directory) == [0, 2, 4, 6]


def test_a_flipped_byte_in_the_newest_v1_named_checkpoint_falls_back_to_the_previous_one(tmp_path, tf_logs):
    directory = str(tmp_path)
    leg_compat(directory, 4, 2, 'regression')
    data = tmp_path / 'model.ckpt-4.data-00000-of-00001'
    content = bytearray(data.read_bytes())
    content[len(content) // 2] ^= 0xFF
    data.write_bytes(bytes(content))
    mts.reset_global_step()
    assert leg_compat(directory, 5, 0, 'regression')['start'] == 2
    assert any(m.startswith('Could not restore checkpoint') and 'model.ckpt-4' in m for m in tf_logs.messages())


@pytest.mark.slow
def test_a_second_live_writer_is_refused_and_a_killed_ones_lock_is_taken_over(tmp_path, tf_logs):
    directory = str(tmp_path)
    child = support.popen(
        [sys.executable, os.path.join(REPO_ROOT, 'tests', 'train_until.py'), directory, '100000'],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT),
    )
    try:
        assert child.stdout.readline().startswith('restored 0')
        child.stdout.readline()  # A step is done: the child is saving into the directory.
        with pytest.raises(mts.CheckpointDirectoryInUseError) as refused:
            leg_compat(directory, 3, 1, 'regression')
        assert f'pid {child.pid}' in str(refused.value) and directory in str(refused.value)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    mts.reset_global_step()
    model = Regression()  # The child's program, resuming the checkpoints the child saved.
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold(), hooks=[mts.StopAtStepHook(num_steps=1)]
    ) as session:
        while not session.should_stop():
            session.run(model.step)
    assert any('whose process is gone' in message for message in tf_logs.messages())
    assert not os.path.exists(os.path.join(directory, 'compat_mts.lock'))  # Released at the end.


_KILLED_MID_SAVE = """
import os, signal, sys
import tensorflow as tf
from tensorflow.python.ops import gen_io_ops
import compat_mts as mts
from compat_mts.checkpoint_dir import checkpoints as checkpoints_lib

directory = sys.argv[1]
global_step = mts.get_or_create_global_step()
weight = tf.Variable(0.0, name='weight')

@tf.function
def train_step():
    weight.assign_add(1.0)
    return global_step.assign_add(1)

class KillInTheSaveOfStep30(mts.SessionRunHook):
    def after_run(self, run_context, run_values):
        if int(global_step.numpy()) == 29:
            # The save of step 30 writes its shards into model.ckpt-30_temp/, then merges them: the kill comes
            # between the two, as a kill -9 in the middle of a save does.
            gen_io_ops.merge_v2_checkpoints = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)

with mts.MonitoredTrainingSession(checkpoint_dir=directory, save_checkpoint_steps=10, save_summaries_steps=None,
                                  hooks=[KillInTheSaveOfStep30()]) as session:
    while not session.should_stop():
        session.run(train_step)
"""


@pytest.fixture(scope='module')
def killed_mid_save(tmp_path_factory):
    """A directory whose program was killed (SIGKILL) in the middle of saving step 30, after 0, 10 and 20."""
    directory = str(tmp_path_factory.mktemp('killed'))
    result = run_python(_KILLED_MID_SAVE, directory)
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    return directory


def _copy_of(directory, tmp_path) -> str:
    import shutil

    return shutil.copytree(directory, str(tmp_path / 'checkpoints'))


def _restored_step(directory, train_steps: int = 0) -> int:
    """The global step a session on `directory` starts from; it then trains `train_steps` steps, saving each."""
    global_step = mts.get_or_create_global_step()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, save_summaries_steps=None, save_checkpoint_steps=1
    ) as session:
        restored = int(session.run(global_step))
        for _ in range(train_steps):
            session.run(lambda: global_step.assign_add(1))
    return restored


@pytest.mark.slow
def test_the_temp_folder_of_a_save_killed_midway_is_removed_at_the_next_start(killed_mid_save, tmp_path):
    directory = _copy_of(killed_mid_save, tmp_path)
    left = sorted(name for name in os.listdir(directory) if name.endswith('_temp'))
    assert left == ['model.ckpt-30_temp'] and os.listdir(os.path.join(directory, left[0]))  # TF's shards in it.
    assert state_file_steps(directory) == [0, 10, 20]
    assert _restored_step(directory) == 20
    assert not [name for name in os.listdir(directory) if '_temp' in name]
    assert checkpoint_steps(directory) == [0, 10, 20]


@pytest.mark.slow
def test_the_temp_folder_stays_while_another_live_process_holds_the_directory(killed_mid_save, tmp_path):
    directory = _copy_of(killed_mid_save, tmp_path)
    holder = support.popen(
        [
            sys.executable,
            '-c',
            'import sys\nfrom compat_mts.checkpoint_dir import directory_lock\n'
            'directory_lock.lock_directory(sys.argv[1])\nprint("locked", flush=True)\nsys.stdin.read()',
            directory,
        ],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == 'locked'
        with pytest.raises(mts.CheckpointDirectoryInUseError):
            _restored_step(directory)
        assert os.path.isdir(os.path.join(directory, 'model.ckpt-30_temp'))  # Perhaps that process's save.
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


@pytest.mark.slow
def test_the_temp_folder_stays_while_another_writer_of_this_process_holds_the_directory(killed_mid_save, tmp_path):
    directory = _copy_of(killed_mid_save, tmp_path)
    assert checkpoints_lib.lock_directory(directory)  # Taken over from the killed process: this writer's now.
    try:
        assert not checkpoints_lib.lock_directory(directory)  # Held already: that writer may be mid-save.
        assert _restored_step(directory) == 20
        assert os.path.isdir(os.path.join(directory, 'model.ckpt-30_temp'))
    finally:
        checkpoints_lib.unlock_directory(directory)


@pytest.mark.slow
def test_the_newest_complete_checkpoint_wins_over_a_state_file_naming_a_missing_one(killed_mid_save, tmp_path):
    directory = _copy_of(killed_mid_save, tmp_path)
    # The state file names step 30, which never finished, and lists 10 but not the complete newer 20.
    tf.compat.v1.train.update_checkpoint_state(
        directory,
        os.path.join(directory, 'model.ckpt-30'),
        all_model_checkpoint_paths=[os.path.join(directory, f'model.ckpt-{step}') for step in (10, 30)],
    )
    assert checkpoints_lib.latest_checkpoint(directory).endswith('model.ckpt-20')
    assert _restored_step(directory, train_steps=2) == 20
    assert state_file_steps(directory) == [0, 10, 20, 21, 22]  # The missing one is listed no more, 0 and 20 are.
