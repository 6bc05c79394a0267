"""Soaks: many sessions in one process (open files, threads and memory stay flat), and a writer killed and restarted
many times over damaged checkpoints.

A long-lived process (a notebook, a hyper-parameter sweep, a test suite) opens and closes sessions on many
directories. Each session here has a checkpoint directory of its own, so it writes checkpoints and events; what
it opened must be closed when it closes.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from tests import support


pytestmark = pytest.mark.slow  # A long run.

SESSIONS = 200
WARM_UP = 20


def _open_files() -> int:
    return len(os.listdir('/proc/self/fd'))


def _threads() -> int:
    return len(os.listdir('/proc/self/task'))


def _resident_megabytes() -> float:
    with open('/proc/self/statm', encoding='ascii') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20


def test_two_hundred_sessions_leave_files_threads_and_memory_flat(tmp_path):
    global_step = mts.get_or_create_global_step()
    weights = tf.Variable(tf.zeros([4, 1]))
    scaffold_checkpoint = tf.train.Checkpoint(weights=weights)

    @tf.function
    def step():
        weights.assign_add(tf.ones([4, 1]))
        global_step.assign_add(1)
        tf.summary.scalar('weight', tf.reduce_sum(weights))
        return {'loss': tf.reduce_sum(weights)}

    readings = []
    for index in range(SESSIONS):
        with mts.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path / f'run-{index}'),
            scaffold=mts.Scaffold(saver=scaffold_checkpoint),
            save_summaries_steps=1,
            hooks=[mts.StopAtStepHook(num_steps=2)],
        ) as session:
            while not session.should_stop():
                session.run(step)
        if index + 1 in (WARM_UP, SESSIONS):
            readings.append((_open_files(), _threads(), threading.active_count(), _resident_megabytes()))
    (files_before, tasks_before, python_threads_before, memory_before), after = readings
    files_after, tasks_after, python_threads_after, memory_after = after
    assert files_after <= files_before + 2, readings
    assert tasks_after <= tasks_before + 2 and python_threads_after <= python_threads_before, readings
    assert memory_after - memory_before < 50, readings  # Megabytes over 180 sessions: no per-session leak.
    assert int(global_step.numpy()) == 2 * SESSIONS
    assert all((tmp_path / f'run-{index}' / 'checkpoint').exists() for index in (0, SESSIONS - 1))


RESTARTS = 20
_CORRUPTIONS = ('flip_a_data_byte', 'flip_an_index_byte', 'truncate_data', 'truncate_index', 'garbage_state', None)


def _newest_listed(directory: str) -> int:
    """The newest step of the `checkpoint` state file."""
    return support.state_file_steps(directory)[-1]


def _corrupt(directory: str, how: str | None, rng: random.Random) -> int | None:
    """Damages the newest checkpoint `how`; returns the step the next writer must restore (None: unknown)."""
    steps = support.state_file_steps(directory)
    newest = os.path.join(directory, f'model.ckpt-{steps[-1]}')
    if how is None:
        return steps[-1]
    if how == 'garbage_state':  # The session rebuilds it from the files, which may hold a newer, unlisted one.
        with open(os.path.join(directory, 'checkpoint'), 'wb') as state:
            state.write(bytes(rng.randrange(256) for _ in range(200)))
        return None
    path = newest + ('.index' if how.endswith('index') else '.data-00000-of-00001')
    content = bytearray(open(path, 'rb').read())
    if how.startswith('flip'):  # Anywhere but the index's 48-byte footer, whose padding nothing reads.
        content[rng.randrange(len(content) - (48 if how.endswith('index') else 0))] ^= 1 << rng.randrange(8)
    else:
        content = content[: rng.randrange(len(content))]
    with open(path, 'wb') as damaged:
        damaged.write(bytes(content))
    return steps[-2]


def _read_until(server: subprocess.Popen, prefix: str) -> list[str]:
    while True:
        line = server.stdout.readline()
        assert line, f'the fork server ended before {prefix!r}'
        if line.startswith(prefix):
            return line.split()


def test_a_writer_killed_twenty_times_with_its_newest_checkpoint_damaged_resumes_monotonically(tmp_path):
    """kill -9 at random steps, then a random damage to the newest checkpoint (a flipped bit in either file, a
    truncated file, a garbage state file, or none): each restart resumes from the newest intact checkpoint,
    so the restored global steps never go back, and the last run trains to the end on the uninterrupted
    run's weights."""
    directory = str(tmp_path)
    last_step = RESTARTS * 10 + 20  # Each writer runs at most 9 steps before its kill.
    rng = random.Random(20)
    server = subprocess.Popen(
        [sys.executable, os.path.join(support.REPO_ROOT, 'tests', 'writer_fork_server.py'), directory, str(last_step)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=support.REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=support.REPO_ROOT),
    )
    try:
        _read_until(server, 'ready')
        restored_steps, expected, damages = [], 0, []
        for _ in range(RESTARTS):
            server.stdin.write('start\n')
            server.stdin.flush()
            writer = int(_read_until(server, 'writer')[1])
            restored = int(_read_until(server, 'restored')[1])
            if expected is not None:
                assert restored == expected, (restored_steps, damages)
            restored_steps.append(restored)
            kill_after = restored + rng.randint(5, 9)  # At least one checkpoint past the restored one is complete.
            while int(_read_until(server, 'step')[1]) < kill_after:
                pass
            os.kill(writer, signal.SIGKILL)
            assert _read_until(server, 'ended')[1:] == [str(writer), str(int(signal.SIGKILL))]
            damages.append(rng.choice(_CORRUPTIONS))
            expected = _corrupt(directory, damages[-1], rng)
        server.stdin.write('start\n')
        server.stdin.flush()
        restored_steps.append(int(_read_until(server, 'restored')[1]))
        assert _read_until(server, 'step') == ['step', str(restored_steps[-1] + 1)]
        _read_until(server, 'done')
        assert _read_until(server, 'ended')[2] == '0'
    finally:
        server.stdin.close()
        server.wait(timeout=60)
        server.stdout.close()
    assert restored_steps == sorted(restored_steps) and restored_steps[-1] > 0, (restored_steps, damages)
    assert _newest_listed(directory) == last_step
    final = tf.train.load_checkpoint(os.path.join(directory, f'model.ckpt-{last_step}'))
    np.testing.assert_allclose(
        final.get_tensor('w/.ATTRIBUTES/VARIABLE_VALUE').ravel(), _straight_weights(last_step), rtol=1e-5
    )


def _straight_weights(last_step: int) -> np.ndarray:
    """`w` of tests/models.Regression after `last_step` uninterrupted steps, computed with NumPy."""
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    targets = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    weights = np.zeros([3, 1], np.float32)
    for _ in range(last_step):
        weights -= 0.1 * 2 * features.T @ (features @ weights - targets) / len(features)
    return weights.ravel()
