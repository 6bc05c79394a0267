"""Many sessions in one process: open files, threads and memory stay flat (issue bar: 200 sessions, one process).

A long-lived process (a notebook, a hyper-parameter sweep, a test suite) opens and closes sessions on many
directories. Each session here has a checkpoint directory of its own, so it writes checkpoints and events; what
it opened must be closed when it closes.
"""

from __future__ import annotations

import os
import threading

import pytest
import tensorflow as tf

import compat_mts as mts


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
