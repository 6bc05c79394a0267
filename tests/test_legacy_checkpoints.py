"""v1 name-based checkpoints eagerly: `NameBasedCheckpoint`, `restore_from_v1` and `convert_checkpoint`.

The v1 checkpoints here are written by the real `tf.compat.v1.train.Saver`, in graph mode (a plain graph and a
`tf.compat.v1.Session`), as a v1 program wrote them.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.legacy import CheckpointMismatchError, NameBasedCheckpoint, convert_checkpoint, restore_from_v1

KERNEL = np.arange(6, dtype=np.float32).reshape(3, 2)
BIAS = np.array([0.5, -0.5], np.float32)


@pytest.fixture
def v1_checkpoint_dir(tmp_path):
    """A directory of two checkpoints (steps 10 and 20) written by v1's Saver: dense/kernel, dense/bias, the
    Momentum slot of the kernel, global_step."""
    directory = str(tmp_path / 'v1')
    graph = tf.Graph()
    with graph.as_default():
        with tf.compat.v1.variable_scope('dense'):
            kernel = tf.compat.v1.get_variable('kernel', initializer=KERNEL)
            tf.compat.v1.get_variable('bias', initializer=BIAS)
        tf.compat.v1.get_variable('dense/kernel/Momentum', initializer=KERNEL * 10)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        assign_step = global_step.assign(20)
        scale = kernel.assign(KERNEL * 2)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(global_step.assign(10))
            saver.save(session, os.path.join(directory, 'model.ckpt'), global_step=10)
            session.run([assign_step, scale])
            saver.save(session, os.path.join(directory, 'model.ckpt'), global_step=20)
    return directory


def test_name_based_checkpoint_writes_the_keys_v1_wrote(tmp_path):
    kernel, step = tf.Variable(KERNEL), tf.Variable(7, dtype=tf.int64)
    path = NameBasedCheckpoint({'dense/kernel': kernel, 'global_step': step}).write(str(tmp_path / 'ckpt-7'))
    assert dict(tf.train.list_variables(path)) == {'dense/kernel': [3, 2], 'global_step': []}
    np.testing.assert_array_equal(tf.train.load_variable(path, 'dense/kernel'), KERNEL)


def test_restore_assigns_what_matches_and_reports_the_rest(v1_checkpoint_dir):
    kernel, extra = tf.Variable(np.zeros((3, 2), np.float32)), tf.Variable(3.0)
    checkpoint = NameBasedCheckpoint({'dense/kernel': kernel, 'not/in/file': extra})
    status = checkpoint.restore(tf.train.latest_checkpoint(v1_checkpoint_dir))
    np.testing.assert_array_equal(kernel.numpy(), KERNEL * 2)
    assert extra.numpy() == 3.0
    assert status.matched == ['dense/kernel'] and status.unmatched == ['not/in/file']
    assert status.unused == ['dense/bias', 'dense/kernel/Momentum', 'global_step']
    with pytest.raises(AssertionError, match='not/in/file'):
        status.assert_existing_objects_matched()


def test_restore_of_a_value_that_does_not_fit_raises_and_assigns_nothing(v1_checkpoint_dir):
    bias, kernel = tf.Variable(np.zeros(2, np.float32)), tf.Variable(np.zeros((2, 3), np.float32))
    checkpoint = NameBasedCheckpoint({'dense/bias': bias, 'dense/kernel': kernel})
    with pytest.raises(
        CheckpointMismatchError, match=r'dense/kernel: shape \[3, 2\] in the checkpoint, \[2, 3\] in the program'
    ):
        checkpoint.restore(tf.train.latest_checkpoint(v1_checkpoint_dir))
    np.testing.assert_array_equal(bias.numpy(), [0.0, 0.0])


def test_checkpoint_manager_numbers_and_rotates_name_based_checkpoints(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(
        NameBasedCheckpoint({'global_step': step}), str(tmp_path), max_to_keep=2, checkpoint_name='model.ckpt'
    )
    for number in (1, 2, 3):
        step.assign(number)
        manager.save(checkpoint_number=number)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-3')
    assert sorted(name for name in os.listdir(tmp_path) if name.endswith('.index')) == [
        'model.ckpt-2.index',
        'model.ckpt-3.index',
    ]
    assert tf.train.load_variable(str(tmp_path), 'global_step') == 3


def test_the_session_snapshot_restores_the_first_values_from_memory():
    kernel = tf.Variable(KERNEL)
    snapshot = checkpoints.Snapshot(NameBasedCheckpoint({'dense/kernel': kernel}))
    kernel.assign(KERNEL * 0)
    snapshot.restore()
    np.testing.assert_array_equal(kernel.numpy(), KERNEL)


def test_scaffold_saver_adds_the_global_step_under_its_v1_name(tmp_path):
    step = mts.get_or_create_global_step()
    kernel = tf.Variable(KERNEL)
    scaffold = mts.Scaffold(saver=NameBasedCheckpoint({'dense/kernel': kernel}))
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold) as session:
        session.run(lambda: step.assign_add(1))
    assert dict(tf.train.list_variables(str(tmp_path))) == {'dense/kernel': [3, 2], 'global_step': []}
    assert tf.train.load_variable(str(tmp_path), 'global_step') == 1


def test_restore_from_v1_dry_run_lists_matched_missing_and_unused_names(v1_checkpoint_dir):
    layer = tf.keras.layers.Dense(2)
    layer.build((None, 3))
    report = restore_from_v1(
        v1_checkpoint_dir,
        {'dense/kernel': layer.kernel, 'dense/bias': layer.bias, 'dense_1/bias': tf.Variable(BIAS)},
        dry_run=True,
    )
    assert report.path.endswith('model.ckpt-20') and not report.restored and not report.ok
    assert report.matched == ['dense/kernel', 'dense/bias'] and report.missing == ['dense_1/bias']
    assert report.unused == ['dense/kernel/Momentum', 'global_step']
    assert 'missing     dense_1/bias' in str(report)
    assert not np.array_equal(layer.kernel.numpy(), KERNEL * 2)


def test_restore_from_v1_starts_a_keras_layer_from_a_v1_checkpoint(v1_checkpoint_dir):
    layer = tf.keras.layers.Dense(2)
    layer.build((None, 3))
    report = restore_from_v1(
        os.path.join(v1_checkpoint_dir, 'model.ckpt-10'), {'dense/kernel': layer.kernel, 'dense/bias': layer.bias}
    )
    assert report.restored and report.ok and report.matched == ['dense/kernel', 'dense/bias']
    np.testing.assert_array_equal(layer.kernel.numpy(), KERNEL)
    np.testing.assert_array_equal(layer(np.eye(3, dtype=np.float32)).numpy(), KERNEL + BIAS)


def test_restore_from_v1_restores_nothing_unless_everything_fits(v1_checkpoint_dir):
    bias, kernel = tf.Variable(np.zeros(2, np.float32)), tf.Variable(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r'Nothing was restored(.|\n)*mismatched  dense/kernel \(shape'):
        restore_from_v1(v1_checkpoint_dir, {'dense/bias': bias, 'dense/kernel': kernel})
    np.testing.assert_array_equal(bias.numpy(), [0.0, 0.0])
    with pytest.raises(ValueError, match='holds no checkpoint'):
        restore_from_v1(os.path.dirname(v1_checkpoint_dir), {'dense/bias': bias})
    with pytest.raises(TypeError, match='`mapping` must be a dict'):
        restore_from_v1(v1_checkpoint_dir, [bias])


def test_convert_checkpoint_to_object_and_back_keeps_names_values_and_steps(v1_checkpoint_dir, tmp_path):
    object_dir, name_dir = str(tmp_path / 'object'), str(tmp_path / 'name')
    written = convert_checkpoint(v1_checkpoint_dir, object_dir, to='object')
    assert [os.path.basename(path) for path in written] == ['model.ckpt-10', 'model.ckpt-20']
    object_names = dict(tf.train.list_variables(object_dir))
    assert '_CHECKPOINTABLE_OBJECT_GRAPH' in object_names
    assert 'dense.Skernel/.ATTRIBUTES/VARIABLE_VALUE' in object_names
    step = tf.Variable(0, dtype=tf.int64)
    tf.train.Checkpoint(global_step=step).read(tf.train.latest_checkpoint(object_dir)).expect_partial()
    assert int(step.numpy()) == 20

    convert_checkpoint(object_dir, name_dir, to='name')
    for number in (10, 20):
        original = tf.train.load_checkpoint(os.path.join(v1_checkpoint_dir, f'model.ckpt-{number}'))
        converted = tf.train.load_checkpoint(os.path.join(name_dir, f'model.ckpt-{number}'))
        names = original.get_variable_to_shape_map()
        assert converted.get_variable_to_shape_map() == names
        for name in names:
            np.testing.assert_array_equal(converted.get_tensor(name), original.get_tensor(name))
    assert tf.train.latest_checkpoint(name_dir) == os.path.join(name_dir, 'model.ckpt-20')


def test_a_compat_session_resumes_the_global_step_of_a_converted_v1_directory(v1_checkpoint_dir, tmp_path):
    object_dir = str(tmp_path / 'object')
    convert_checkpoint(v1_checkpoint_dir, object_dir, to='object')
    mts.get_or_create_global_step()
    with mts.MonitoredTrainingSession(checkpoint_dir=object_dir) as session:
        assert session.run('global_step') == 20


def test_convert_checkpoint_rejects_bad_arguments(v1_checkpoint_dir, tmp_path):
    with pytest.raises(ValueError, match='`to` must be one of'):
        convert_checkpoint(v1_checkpoint_dir, str(tmp_path / 'out'), to='v1')
    with pytest.raises(ValueError, match='holds no checkpoint'):
        convert_checkpoint(str(tmp_path / 'empty'), str(tmp_path / 'out'), to='object')
    copy_dir = str(tmp_path / 'copy')
    convert_checkpoint(v1_checkpoint_dir, copy_dir, to='object')
    with pytest.raises(ValueError, match='already holds checkpoints'):
        convert_checkpoint(v1_checkpoint_dir, copy_dir, to='object')


def test_compat_mts_convert_command_converts_a_directory(v1_checkpoint_dir, tmp_path, capsys):
    from compat_mts import cli

    object_dir = str(tmp_path / 'object')
    assert cli.main(['convert', v1_checkpoint_dir, object_dir, '--to', 'object']) == 0
    output = capsys.readouterr()
    assert output.out.split() == [os.path.join(object_dir, 'model.ckpt-10'), os.path.join(object_dir, 'model.ckpt-20')]
    # The progress, on stderr (not a terminal here: a line at each quarter of the bytes that were converted).
    progress = output.err.splitlines()
    assert 1 <= len(progress) <= 4, progress
    assert re.fullmatch(
        r'([\d.]+ [KM]?B)/\1 \(100%\), [\d.]+ [KMG]?B/s, took [\d.]+s, '
        r'model\.ckpt-20 \(2/2 checkpoints\)',
        progress[-1],
    ), progress
    assert cli.main(['convert', v1_checkpoint_dir, object_dir, '--to', 'object']) == 2
    assert 'already holds checkpoints' in capsys.readouterr().err


def damage(checkpoint_dir: str, step: int, how: str) -> str:
    """Damages checkpoint `step` of `checkpoint_dir` the way a crash or a broken copy does; returns the file hit."""
    prefix = os.path.join(checkpoint_dir, f'model.ckpt-{step}')
    index, data = f'{prefix}.index', f'{prefix}.data-00000-of-00001'
    if how == 'index truncated':
        with open(index, 'r+b') as file:
            file.truncate(20)
        return index
    if how == 'index garbage':
        with open(index, 'wb') as file:
            file.write(bytes(range(256)) * 2)
        return index
    if how == 'data missing':
        os.remove(data)
        return data
    with open(data, 'r+b') as file:  # data truncated
        file.truncate(4)
    return data


@pytest.mark.parametrize('how', ['index truncated', 'index garbage', 'data missing', 'data truncated'])
def test_convert_checkpoint_names_a_damaged_file_and_leaves_dst_dir_as_it_was(how, v1_checkpoint_dir, tmp_path):
    hit = damage(v1_checkpoint_dir, 20, how)  # the newer one: the older is read and written first
    object_dir = tmp_path / 'object'
    with pytest.raises(checkpoints.DamagedCheckpointsError) as error:
        convert_checkpoint(v1_checkpoint_dir, str(object_dir), to='object')
    prefix = os.path.join(v1_checkpoint_dir, 'model.ckpt-20')
    named = f'{prefix}.index' if hit.endswith('.index') else f'{prefix}.data-*'
    assert str(error.value).startswith(f'{named} cannot be read (')
    assert str(error.value).endswith('; nothing was converted.') and '\n' not in str(error.value)
    assert not object_dir.exists()
    object_dir.mkdir()
    with pytest.raises(checkpoints.DamagedCheckpointsError):
        convert_checkpoint(v1_checkpoint_dir, str(object_dir), to='name')
    assert list(object_dir.iterdir()) == []  # a directory that was there stays, emptied of what was written


@pytest.mark.slow
@pytest.mark.parametrize('how', ['index truncated', 'data missing'])
def test_compat_mts_convert_command_on_a_damaged_checkpoint_is_a_one_line_error(how, v1_checkpoint_dir, tmp_path):
    from tests.support import run_python

    hit = damage(v1_checkpoint_dir, 10, how)
    result = run_python(
        'import sys; from compat_mts import cli; sys.exit(cli.main(sys.argv[1:]))',
        'convert',
        v1_checkpoint_dir,
        str(tmp_path / 'object'),
        '--to',
        'object',
        timeout=180,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert 'Traceback' not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith('compat-mts convert: ')]
    assert len(errors) == 1 and (hit if hit.endswith('.index') else 'model.ckpt-10.data-*') in errors[0], result.stderr
    assert result.stdout == ''


@pytest.mark.slow
def test_compat_mts_convert_command_takes_relative_directories(v1_checkpoint_dir, tmp_path):
    from tests.support import run_python

    command = 'import sys; from compat_mts import cli; sys.exit(cli.main(sys.argv[1:]))'
    first = run_python(
        command,
        'convert',
        os.path.relpath(v1_checkpoint_dir, tmp_path),
        'object',
        '--to',
        'object',
        cwd=str(tmp_path),
        timeout=180,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.split() == [os.path.join('object', 'model.ckpt-10'), os.path.join('object', 'model.ckpt-20')]
    # The state file of `object` lists relative paths, which are relative to the directory, not the cwd.
    second = run_python(command, 'convert', 'object', 'name', '--to', 'name', cwd=str(tmp_path), timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    assert tf.train.latest_checkpoint(str(tmp_path / 'name')) == str(tmp_path / 'name' / 'model.ckpt-20')
    assert tf.train.load_variable(str(tmp_path / 'name'), 'global_step') == 20
