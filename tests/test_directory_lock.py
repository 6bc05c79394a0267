"""One writer per checkpoint directory: the lock is created whole, leased, and taken over only when stale."""

from __future__ import annotations

import atexit
import collections
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from compat_mts.checkpoint_dir import directory_lock
from tests import support
from tests import lock_race
from tests.support import REPO_ROOT

ROUNDS = 200
RACERS = 4  # Two racers on two cores rarely meet inside the window; four, through a barrier, do.


@pytest.fixture(autouse=True)
def no_lock_left_held():
    yield
    for path in list(directory_lock._held_locks):
        directory_lock.unlock_directory(os.path.dirname(path))


def _write_lock(directory, **holder) -> str:
    path = os.path.join(directory, directory_lock.LOCK_FILE)
    with open(path, 'w', encoding='utf-8') as lock:
        json.dump(holder, lock)
    return path


@pytest.mark.slow
def test_processes_racing_for_a_free_directory_never_both_hold_its_lock(tmp_path):
    context = multiprocessing.get_context('spawn')  # No TensorFlow in the racers: they start in a moment.
    barrier = context.Barrier(RACERS)
    results = context.Queue()
    racers = [
        context.Process(target=lock_race.race, args=(str(tmp_path), ROUNDS, barrier, results)) for _ in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    won = [results.get(timeout=300) for _ in racers]
    for racer in racers:
        racer.join(timeout=60)
        assert racer.exitcode == 0
    winners = collections.Counter(round_number for _, rounds in won for round_number in rounds)
    assert sorted(winners) == list(range(ROUNDS))  # Every round has a winner ...
    assert [round_number for round_number, count in winners.items() if count > 1] == []  # ... and only one.


def test_an_empty_lock_is_taken_as_being_written_while_young_and_as_stale_when_old(tmp_path, tf_logs):
    path = os.path.join(tmp_path, directory_lock.LOCK_FILE)
    open(path, 'w').close()
    with pytest.raises(directory_lock.CheckpointDirectoryInUseError, match='is being written'):
        directory_lock.lock_directory(str(tmp_path))
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))
    directory_lock.lock_directory(str(tmp_path))
    with open(path, encoding='utf-8') as lock:
        assert json.load(lock)['pid'] == os.getpid()
    assert any('from an unreadable lock file' in message for message in tf_logs.messages())


def test_a_lock_of_another_host_whose_lease_ran_out_is_taken_over_with_a_warning(tmp_path, tf_logs):
    _write_lock(str(tmp_path), pid=1, host='rescheduled-away', renewed=time.time() - 3600, lease_secs=60)
    directory_lock.lock_directory(str(tmp_path))
    warnings = [m for m in tf_logs.messages() if m.startswith('Taking over the lock')]
    assert len(warnings) == 1 and 'on rescheduled-away, whose lease of 60 s ran out' in warnings[0]


def test_a_lock_of_another_host_inside_its_lease_is_taken_over_once_it_runs_out_unrenewed(tmp_path, tf_logs):
    _write_lock(str(tmp_path), pid=1, host='crashed-host', renewed=time.time(), lease_secs=1.5)
    directory_lock.lock_directory(str(tmp_path))
    assert any('on crashed-host, whose lease of 1.5 s ran out' in m for m in tf_logs.messages())


def test_a_lock_of_another_host_that_renews_its_lease_is_refused(tmp_path):
    holder = {'pid': 1, 'host': 'live-host', 'lease_secs': 2}
    path = _write_lock(str(tmp_path), renewed=time.time(), **holder)
    done = threading.Event()

    def renew():  # The other host's writer, alive.
        while not done.wait(0.2):
            _write_lock(str(tmp_path), renewed=time.time(), **holder)

    renewer = threading.Thread(target=renew)
    renewer.start()
    try:
        with pytest.raises(directory_lock.CheckpointDirectoryInUseError, match='pid 1 on live-host'):
            directory_lock.lock_directory(str(tmp_path))
    finally:
        done.set()
        renewer.join()
    with open(path, encoding='utf-8') as lock:
        assert json.load(lock)['host'] == 'live-host'


def test_locking_again_after_unlocking_registers_nothing_more_at_exit(tmp_path):
    """Each Estimator call locks its model_dir and unlocks it at its end: the process's atexit list stays put."""
    directory_lock.lock_directory(str(tmp_path))
    directory_lock.unlock_directory(str(tmp_path))
    registered = atexit._ncallbacks()
    for _ in range(3):
        directory_lock.lock_directory(str(tmp_path))
        directory_lock.unlock_directory(str(tmp_path))
    assert atexit._ncallbacks() == registered


def test_a_lock_path_that_is_a_directory_is_a_clear_error(tmp_path):
    os.mkdir(tmp_path / directory_lock.LOCK_FILE)
    with pytest.raises(directory_lock.CheckpointDirectoryInUseError, match='is a directory'):
        directory_lock.lock_directory(str(tmp_path))


@pytest.mark.slow
def test_a_live_session_renews_its_lease_off_the_training_loop(tmp_path):
    child = support.popen(
        [sys.executable, os.path.join(REPO_ROOT, 'tests', 'train_until.py'), str(tmp_path), '100000'],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT, COMPAT_MTS_LOCK_LEASE_SECS='1.5'),
    )
    try:
        assert child.stdout.readline().startswith('restored 0')
        path = tmp_path / directory_lock.LOCK_FILE
        first = json.loads(path.read_text())
        assert (first['pid'], first['lease_secs']) == (child.pid, 1.5)
        deadline = time.monotonic() + 60
        while json.loads(path.read_text())['renewed'] == first['renewed']:
            assert time.monotonic() < deadline, 'the lease was never renewed'
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()


FAKE_CLOCK_PROGRAM = """
import json, sys, time
from compat_mts.checkpoint_dir import directory_lock

directory_lock.lock_directory(sys.argv[1])
real_time, real_sleep = time.time, time.sleep
fake_now = [1000.0]

def fake_sleep(seconds):
    fake_now[0] += seconds

time.time, time.sleep = (lambda: fake_now[0]), fake_sleep  # A fake clock, as v1's own hook tests patch one.
real_sleep(1.5)  # The lease thread wakes about ten times meanwhile.
time.time, time.sleep = real_time, real_sleep
with open(sys.argv[1] + '/compat_mts.lock') as file:
    print(json.dumps({'fake_now': fake_now[0], 'renewed': json.load(file)['renewed'], 'now': time.time()}))
"""


@pytest.mark.slow
def test_a_fake_clock_in_a_programs_tests_neither_moves_with_the_lease_nor_stops_it(tmp_path):
    result = support.run(
        [sys.executable, '-c', FAKE_CLOCK_PROGRAM, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT, COMPAT_MTS_LOCK_LEASE_SECS='0.3'),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen['fake_now'] == 1000.0  # The renewing thread slept on the real clock, not on the program's.
    assert seen['now'] - 60 <= seen['renewed'] <= seen['now']  # Stamped on the real clock, not the fake one.


def test_temporary_lock_copies_left_by_a_killed_process_are_removed_once_old(tmp_path):
    old, young = tmp_path / 'compat_mts.lock.0123abcd.tmp', tmp_path / 'compat_mts.lock.4567ef.tmp'
    for left in (old, young):
        left.write_text('{"pid": 1')
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    directory_lock.lock_directory(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ['compat_mts.lock', young.name]  # A young one may be being written.


def test_a_lock_of_this_host_whose_pid_lives_on_in_another_process_is_taken_over_once_its_lease_ran_out(
    tmp_path, tf_logs
):
    alive = os.getppid()  # Another live process: the pid of a writer before the machine restarted.
    _write_lock(str(tmp_path), pid=alive, host=socket.gethostname(), renewed=time.time(), lease_secs=60)
    with pytest.raises(directory_lock.CheckpointDirectoryInUseError, match=f'pid {alive}'):
        directory_lock.lock_directory(str(tmp_path))
    _write_lock(str(tmp_path), pid=alive, host=socket.gethostname(), renewed=time.time() - 3600, lease_secs=60)
    directory_lock.lock_directory(str(tmp_path))
    assert any(f'pid {alive} on ' in m and 'whose lease of 60 s ran out' in m for m in tf_logs.messages())
