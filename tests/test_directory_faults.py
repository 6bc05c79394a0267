"""Checkpoint directories on real faulty file systems: read-only, full, unusable paths (issue 20).

The read-only and full file systems are real mounts (`tests/mounts.py`): a read-only bind mount, which
refuses writes even to root, and a small tmpfs.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import tensorflow as tf

import compat_mts as mts
from tests import mounts
from tests.support import (
    REPO_ROOT,
    checkpoint_steps,
    latest_checkpoint_step,
    read_events,
    run_python,
    state_file_steps,
)
from tests.v1_programs.directory_legs import build

_LEGS = os.path.join(REPO_ROOT, 'tests', 'v1_programs', 'directory_legs.py')
_RESTORE_ONLY = dict(
    save_checkpoint_secs=None,
    save_summaries_steps=None,
    save_summaries_secs=None,
    log_step_count_steps=None,
)
_V1_RESTORE_ONLY = """
import json, sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from tests.v1_programs.directory_legs import build
global_step, _, train_op, _ = build()
with tf.compat.v1.train.MonitoredTrainingSession(
        checkpoint_dir=sys.argv[1], save_checkpoint_secs=None, save_summaries_steps=None,
        save_summaries_secs=None, log_step_count_steps=None) as session:
    start = int(session.run(global_step))
    session.run(train_op)
    print(json.dumps({'start': start, 'after': int(session.run(global_step))}))
"""


def _files(directory: str) -> dict[str, bytes]:
    return {name: open(os.path.join(directory, name), 'rb').read() for name in sorted(os.listdir(directory))}


def _restore_only_compat(directory: str, **saving) -> dict:
    mts.reset()
    global_step, _, train_op, _ = mts.wrap_graph(build).outputs
    with mts.MonitoredTrainingSession(checkpoint_dir=directory, **{**_RESTORE_ONLY, **saving}) as session:
        start = int(session.run(global_step))
        session.run(train_op)
        return {'start': start, 'after': int(session.run(global_step))}


@pytest.mark.slow
def test_a_restore_only_chief_reads_a_read_only_directory_as_v1_does(tmp_path):
    written = str(tmp_path / 'written')
    trained = run_python(_LEGS, 'v1', written, '3:1')
    assert trained.returncode == 0, trained.stderr[-3000:]
    before = _files(written)
    with mounts.read_only_view(written, str(tmp_path / 'read_only')) as read_only:
        v1 = run_python(_V1_RESTORE_ONLY, read_only)
        assert v1.returncode == 0, v1.stderr[-3000:]
        assert _restore_only_compat(read_only) == json.loads(v1.stdout.splitlines()[-1]) == {'start': 3, 'after': 4}
        with pytest.raises(PermissionError, match=f"`checkpoint_dir` '{read_only}' is not writable"):
            _restore_only_compat(read_only, save_checkpoint_steps=1)
    assert _files(written) == before
    assert checkpoint_steps(written) == [0, 1, 2, 3]


def _deep_directory(root, length: int) -> str:
    """A directory path under `root` exactly `length` bytes long (components of up to 200 bytes)."""
    path = str(root)
    while len(os.fsencode(path)) < length:
        path = os.path.join(path, 'd' * min(200, length - len(os.fsencode(path)) - 1))
    assert len(os.fsencode(path)) == length
    return path


def _unusable(root, kind: str) -> str:
    """A `checkpoint_dir` under `root` of the `kind` that cannot hold checkpoints."""
    if kind == 'dangling_symlink':
        os.symlink(root / 'missing', root / 'dangling')
        return str(root / 'dangling')
    if kind == 'symlink_loop':
        os.symlink(root / 'loop_b', root / 'loop_a')
        os.symlink(root / 'loop_a', root / 'loop_b')
        return str(root / 'loop_a')
    if kind == 'a_file':
        (root / 'a_file').write_text('not a directory')
        return str(root / 'a_file')
    if kind == 'not_utf8':
        return os.fsdecode(os.path.join(os.fsencode(root), b'caf\xe9'))
    # Near the path limit: the directory can be made, but the files of a save in it would be too long.
    return _deep_directory(root, os.pathconf(root, 'PC_PATH_MAX') - 40)


_PROBLEMS = {
    'dangling_symlink': r"is a symlink to '.*missing', which does not exist",
    'symlink_loop': 'is a symlink loop',
    'a_file': 'is a file, not a directory',
    'not_utf8': 'is not a valid UTF-8 path',
    'near_the_path_limit': r'bytes long: the files written in it would have paths of up to \d+ bytes, over the limit',
}


@pytest.mark.parametrize('kind', sorted(_PROBLEMS))
def test_a_checkpoint_dir_that_cannot_hold_checkpoints_is_a_clear_error_before_anything_is_written(tmp_path, kind):
    directory = _unusable(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ValueError, match=f'^`checkpoint_dir` .*{_PROBLEMS[kind]}'):
        _restore_only_compat(directory, save_checkpoint_steps=1)
    assert sorted(os.listdir(tmp_path)) == before  # No directory made, no `_temp` folder left.


def test_a_lock_path_that_is_a_directory_is_a_clear_error_of_the_session(tmp_path):
    os.mkdir(tmp_path / 'compat_mts.lock')
    with pytest.raises(
        mts.CheckpointDirectoryInUseError, match=r'compat_mts\.lock of checkpoint_dir .* is a directory'
    ):
        _restore_only_compat(str(tmp_path), save_checkpoint_steps=1)


@pytest.mark.slow
def test_convert_into_a_directory_whose_name_is_not_utf8_is_a_clear_error(tmp_path):
    trained = run_python(_LEGS, 'v1', str(tmp_path / 'v1'), '2:1')
    assert trained.returncode == 0, trained.stderr[-3000:]
    destination = os.path.join(os.fsencode(tmp_path), b'caf\xe9')
    result = run_python(
        'import sys; from compat_mts.cli.main import main; sys.exit(main())',
        'convert',
        str(tmp_path / 'v1'),
        os.fsdecode(destination),
        '--to',
        'object',
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert '`dst_dir`' in result.stderr and 'is not a valid UTF-8 path' in result.stderr
    assert 'Traceback' not in result.stderr
    assert not os.path.exists(destination)


def _big_program():
    """A global step and 24 KB of weights: a few checkpoints fill the small file system."""
    global_step = mts.get_or_create_global_step()
    weights = tf.Variable(tf.zeros([6000]))

    @tf.function
    def step():
        weights.assign_add(tf.ones([6000]))
        global_step.assign_add(1)
        return {'weights': weights[0]}

    return global_step, weights, step, mts.Scaffold(saver=tf.train.Checkpoint(weights=weights))


@pytest.mark.slow
def test_a_full_disk_is_one_clear_error_that_leaves_no_partial_files_and_keeps_the_last_checkpoint(tmp_path, tf_logs):
    with mounts.small_file_system(str(tmp_path / 'small'), 120) as directory:
        _, _, step, scaffold = _big_program()
        with pytest.raises(tf.errors.ResourceExhaustedError) as full:
            with mts.MonitoredTrainingSession(
                checkpoint_dir=directory,
                scaffold=scaffold,
                save_checkpoint_steps=1,
                save_summaries_steps=0,
                hooks=[mts.StopAtStepHook(last_step=100)],
            ) as session:
                while not session.should_stop():
                    session.run(step)
        message = str(full.value)
        listed = state_file_steps(directory)
        assert message.startswith(f'The checkpoint of step {listed[-1] + 1} could not be saved into {directory}: no ')
        assert f'the last good checkpoint ({directory}/model.ckpt-{listed[-1]}) is kept' in message
        assert 'function_node' not in message and 'Traceback' not in message
        left = sorted(os.listdir(directory))
        assert not [name for name in left if '_temp' in name or '.tmp' in name], left
        assert checkpoint_steps(directory) == listed  # The files of every listed checkpoint, and no others.
        mts.reset()
        global_step, weights, step, scaffold = _big_program()
        with mts.MonitoredTrainingSession(checkpoint_dir=directory, scaffold=scaffold, **_RESTORE_ONLY) as session:
            assert int(session.run(global_step)) == listed[-1]
            assert float(session.run(weights)[0]) == listed[-1]


@pytest.mark.slow
def test_the_legacy_tools_and_the_demo_read_an_unreadable_state_file_from_the_checkpoints_on_disk(tmp_path):
    from compat_mts.cli import demo
    from compat_mts.legacy.checkpoints import resolve_checkpoint_path
    from compat_mts.legacy.convert import convert_checkpoint

    v1 = str(tmp_path / 'v1')
    trained = run_python(_LEGS, 'v1', v1, '2:1')
    assert trained.returncode == 0, trained.stderr[-3000:]
    garbage = bytes(range(128, 256))
    (tmp_path / 'v1' / 'checkpoint').write_bytes(garbage)
    assert resolve_checkpoint_path(v1) == os.path.join(v1, 'model.ckpt-2')
    (tmp_path / 'taken').mkdir()
    (tmp_path / 'taken' / 'checkpoint').write_bytes(garbage)
    with pytest.raises(ValueError, match='already holds checkpoints'):
        convert_checkpoint(v1, str(tmp_path / 'taken'), to='object')
    written = convert_checkpoint(v1, str(tmp_path / 'object'), to='object')
    assert [os.path.basename(path) for path in written] == ['model.ckpt-0', 'model.ckpt-1', 'model.ckpt-2']
    first = demo.run_demo(str(tmp_path / 'demo'), 3, out=lambda line: None)
    (tmp_path / 'demo' / 'train' / 'checkpoint').write_bytes(garbage)
    second = demo.run_demo(str(tmp_path / 'demo'), 3, out=lambda line: None)
    assert second['resumed'] and second['start_step'] == first['final_step'] == 3


# Summary directories on a full disk. TensorFlow's summary writer fails a step whose summary op cannot write its
# events file, drops what it cannot flush from the host without an error, and fails to create an events file on a
# full disk with a raw error. compat_mts names the directory in each case and keeps the checkpoints.


def _fill(directory: str) -> None:
    """Writes a file into `directory` until its file system is full."""
    descriptor = os.open(os.path.join(directory, 'filler'), os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match='No space left on device'):
            for _ in range(1024):
                os.write(descriptor, b'x' * 4096)
    finally:
        os.close(descriptor)
    assert os.statvfs(directory).f_bavail == 0


def _summarized_program(summary):
    global_step = mts.get_or_create_global_step()
    weights = tf.Variable(tf.zeros([8]))

    @tf.function
    def step():
        weights.assign_add(tf.ones([8]))
        global_step.assign_add(1)
        summary(tf.cast(global_step, tf.float32))
        return {'loss': tf.reduce_sum(weights)}

    return global_step, step, mts.Scaffold(saver=tf.train.Checkpoint(weights=weights))


def _big_text(value):
    tf.summary.text('blob', tf.strings.as_string(tf.fill([600], value)))


def _train_with_a_fault(run, summaries, global_step, step, scaffold, last_step: int, fault_step: int, fault) -> None:
    """Trains to `last_step`, recording summaries every step; calls `fault()` once the global step is `fault_step`."""
    with mts.MonitoredTrainingSession(
        checkpoint_dir=run,
        summary_dir=summaries,
        scaffold=scaffold,
        save_summaries_steps=1,
        log_step_count_steps=None,
        hooks=[mts.StopAtStepHook(last_step=last_step)],
    ) as session:
        while not session.should_stop():
            session.run(step)
            if int(global_step.numpy()) == fault_step:  # Read outside the session: a run of it would record.
                fault()


@pytest.mark.slow
def test_a_summary_directory_on_a_full_disk_is_a_clear_error_naming_it_before_anything_is_written(tmp_path):
    with mounts.small_file_system(str(tmp_path / 'small'), 64) as directory:
        _fill(directory)
        _, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
        with pytest.raises(tf.errors.ResourceExhaustedError) as full:
            mts.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path / 'run'), summary_dir=directory, scaffold=scaffold, save_summaries_steps=1
            )
        message = str(full.value)
        assert message.startswith(
            f'Summary directory {directory} has no space left on its device: its events file could not be created '
            f'({directory}/events.out.tfevents.'
        )
        assert message.endswith(
            ': No space left on device). Free some space, or give the summaries another directory (summary_dir=...).'
        )
        assert 'function_node' not in message
        assert not (tmp_path / 'run').exists() or not checkpoint_steps(str(tmp_path / 'run'))


@pytest.mark.slow
def test_a_summary_op_that_cannot_write_its_events_file_is_one_clear_error_and_the_checkpoints_are_kept(tmp_path):
    run = str(tmp_path / 'run')
    with mounts.small_file_system(str(tmp_path / 'small'), 64) as directory:
        global_step, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
        with pytest.raises(tf.errors.ResourceExhaustedError) as full:
            with mts.MonitoredTrainingSession(
                checkpoint_dir=run,
                summary_dir=directory,
                scaffold=scaffold,
                save_checkpoint_steps=2,
                save_summaries_steps=1,
                hooks=[mts.StopAtStepHook(last_step=100)],
            ) as session:
                while not session.should_stop():
                    session.run(step)
                    if int(session.run(global_step)) == 1:
                        _fill(directory)  # The events file's last page takes a few dozen more events.
        message = str(full.value)
    assert message.startswith(
        f'The summaries of this run could not be written into {directory}: No space left on device '
        f'({directory}/events.out.tfevents.'
    )
    assert 'checkpoints are not affected' in message and 'summary_dir=' in message
    assert 'function_node' not in message and 'Detected at node' not in message
    listed = state_file_steps(run)
    assert listed and listed[-1] < 100
    assert checkpoint_steps(run) == listed  # Every listed checkpoint whole, no partial ones.
    mts.reset()
    global_step, step, scaffold = _summarized_program(_big_text)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=run, summary_dir=str(tmp_path / 'summaries'), scaffold=scaffold, **_RESTORE_ONLY
    ) as session:
        assert int(session.run(global_step)) == listed[-1]  # Resumes from the last checkpoint.
        assert session.run(step)['loss'] == 8.0 * (listed[-1] + 1)


@pytest.mark.slow
def test_a_disk_full_between_recordings_stops_recording_with_a_warning_naming_it_and_training_goes_on(
    tmp_path, tf_logs
):
    run = str(tmp_path / 'run')
    with mounts.small_file_system(str(tmp_path / 'small'), 64) as directory:
        global_step, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
        _train_with_a_fault(run, directory, global_step, step, scaffold, 250, 100, lambda: _fill(directory))
        warnings = [m for m in tf_logs.messages() if m.startswith(f'Summary directory {directory} ')]
        recorded = read_events(directory).get('loss', [])
    assert int(global_step.numpy()) == 250 and latest_checkpoint_step(run) == 250  # Trained and saved to the end.
    assert warnings[0] == (
        f'Summary directory {directory} has no space left on its device: summaries are not recorded from step 101 '
        'on, until it can take events again (looked at every 100 steps). Training and checkpoints go on. Free some '
        'space, or give the summaries another directory (summary_dir=...).'
    )
    assert warnings[-1].startswith(f'Summary directory {directory} has no space left on its device: its events file')
    steps = [recorded_step for recorded_step, _ in recorded]
    assert (
        steps == list(range(1, len(steps) + 1)) and 80 <= len(steps) <= 100
    )  # What was flushed before the disk filled.


@pytest.mark.slow
def test_summaries_that_cannot_be_flushed_at_the_end_are_warned_about_and_the_final_checkpoint_is_still_saved(
    tmp_path, tf_logs
):
    # Each step records a text of ~1 KiB: once the disk is full, the hooks' `end()` flushes more than the events
    # file's last page holds, and TensorFlow's flush fails. SummarySaverHook.end comes before
    # CheckpointSaverHook.end (v1's order).
    run = str(tmp_path / 'run')
    with mounts.small_file_system(str(tmp_path / 'small'), 256) as directory:
        global_step, step, scaffold = _summarized_program(
            lambda value: tf.summary.text('blob', tf.strings.as_string(tf.fill([100], value)))
        )
        _train_with_a_fault(run, directory, global_step, step, scaffold, 8, 3, lambda: _fill(directory))
        warnings = [m for m in tf_logs.messages() if m.startswith(f'Summary directory {directory} ')]
    assert latest_checkpoint_step(run) == 8  # Before the fix: 0, the flush's error skipped the final save.
    assert warnings == [
        f'Summary directory {directory} has no space left on its device: its events file may lack the last '
        'summaries, which TensorFlow dropped without an error. Checkpoints are not affected.'
    ]


def test_a_summary_directory_removed_during_training_stops_recording_with_a_warning_naming_it(tmp_path, tf_logs):
    run, summaries = str(tmp_path / 'run'), str(tmp_path / 'summaries')
    global_step, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
    _train_with_a_fault(run, summaries, global_step, step, scaffold, 120, 50, lambda: shutil.rmtree(summaries))
    assert latest_checkpoint_step(run) == 120
    assert [m for m in tf_logs.messages() if m.startswith(f'Summary directory {summaries} ')] == [
        f'Summary directory {summaries} no longer exists: summaries are not recorded from step 101 on, until it can '
        'take events again (looked at every 100 steps). Training and checkpoints go on. The next session makes it '
        'again, with a new events file.',
        f'Summary directory {summaries} no longer exists: its events file may lack the last summaries, which '
        'TensorFlow dropped without an error. Checkpoints are not affected.',
    ]
    # The next session (a new program, its global step from 0) makes the directory again and records from its start.
    mts.reset()
    global_step, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
    with mts.MonitoredTrainingSession(
        summary_dir=summaries, save_summaries_steps=1, log_step_count_steps=None, scaffold=scaffold
    ) as session:
        for _ in range(5):
            session.run(step)
    assert [recorded_step for recorded_step, _ in read_events(summaries)['loss']] == [1, 2, 3, 4, 5]


def test_a_summary_dir_with_room_for_events_but_not_for_checkpoints_takes_the_summaries(tmp_path):
    from compat_mts.checkpoint_dir import directory as directory_lib

    # Longer than a checkpoint directory may be, still short enough for an events file: only events go there.
    limit = os.pathconf(tmp_path, 'PC_PATH_MAX')
    summaries = _deep_directory(tmp_path / 's', limit - 2 - directory_lib.EVENTS_NAME_BYTES)
    _, step, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
    if directory_lib.checkpoint_name_bytes('model.ckpt') > directory_lib.EVENTS_NAME_BYTES + 1:  # A short host name.
        with pytest.raises(ValueError, match=r'^`checkpoint_dir` .*over the limit'):
            mts.MonitoredTrainingSession(checkpoint_dir=summaries, scaffold=scaffold)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path / 'run'), summary_dir=summaries, scaffold=scaffold, save_summaries_steps=1
    ) as session:
        for _ in range(3):
            session.run(step)
    assert [recorded_step for recorded_step, _ in read_events(summaries)['loss']] == [1, 2, 3]


def test_summaries_in_the_checkpoint_dir_by_default_name_checkpoint_dir_when_it_has_no_room_for_them(tmp_path):
    from compat_mts.checkpoint_dir import directory as directory_lib

    # No checkpoints saved, so only the default summary directory (checkpoint_dir) is written: one byte too
    # short for an events file's name. The user gave checkpoint_dir, not summary_dir.
    limit = os.pathconf(tmp_path, 'PC_PATH_MAX')
    directory = _deep_directory(tmp_path / 'c', limit - 1 - directory_lib.EVENTS_NAME_BYTES)
    _, _, scaffold = _summarized_program(lambda value: tf.summary.scalar('loss', value))
    with pytest.raises(ValueError, match=r'^`checkpoint_dir` .*bytes long: the files written in it would have paths'):
        mts.MonitoredTrainingSession(
            checkpoint_dir=directory, scaffold=scaffold, save_checkpoint_secs=None, save_summaries_steps=1
        )
    assert not os.path.exists(directory)


def test_convert_into_a_dst_dir_too_long_for_the_saves_is_a_clear_error_before_anything_is_written(tmp_path):
    from compat_mts.checkpoint_dir import directory as directory_lib
    from compat_mts.legacy.convert import convert_checkpoint

    source = str(tmp_path / 'v1')
    prefix = 'the_census_wide_and_deep_model_of_the_team.ckpt-7'  # Longer than an events file's name.
    tf.train.Checkpoint(weights=tf.Variable([1.0, 2.0])).write(os.path.join(source, prefix))
    with open(os.path.join(source, 'checkpoint'), 'w') as state:
        state.write(f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n')
    # Room for an events file and for the prefix itself, not for the save's temporary data file.
    limit = os.pathconf(tmp_path, 'PC_PATH_MAX')
    dst_dir = _deep_directory(tmp_path / 'o', limit - 2 - directory_lib.save_name_bytes(prefix) + 1)
    os.makedirs(dst_dir)
    with pytest.raises(ValueError, match=r'^`dst_dir` .*bytes long: the files written in it would have paths'):
        convert_checkpoint(source, dst_dir, to='name')
    assert os.listdir(dst_dir) == []
