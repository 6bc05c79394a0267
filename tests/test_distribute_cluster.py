"""Real MultiWorkerMirroredStrategy clusters on localhost: one process per worker, TF_CONFIG, loopback ports.

Three cluster runs share one checkpoint directory, as the restarts of one job would (each run is a fixture,
so the tests below read as statements about it):

1. two workers start fresh (`tests/distributed_worker.py first`): the non-chief's wait for the chief, an
   asymmetric stop, the end of a distributed dataset, time-based saves, and a failing worker;
2. three workers resume from it; then one is killed, and the others must fail within a bounded time;
3. two workers resume after every process of run 2 is gone; then one gets SIGTERM, and both must save and
   exit with code 42.

Every worker gets its own TMPDIR, so the tests can see that the non-chiefs' checkpoint copies are removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests import support
from tests.support import REPO_ROOT, TESTS_DIR, checkpoint_steps, latest_checkpoint_step, read_events

pytestmark = pytest.mark.slow  # Every test runs a cluster of processes.

RUN_TIMEOUT_SECS = 240
LOST_WORKER_BOUND_SECS = 60  # The coordination service notices a dead worker after ~10 s of missed heartbeats.
START_ATTEMPTS = 3
PORT_TAKEN = 'Could not start gRPC server'  # What a worker prints when its port was taken before it could bind.


def free_ports(count: int) -> list[int]:
    """Ports that are free now. Another process may take one before a worker binds it: see `LocalCluster`."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(('', 0))  # All interfaces, as the workers' servers bind.
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def worker_json_lines(command_of, workers: int, timeout: float = 600, chief: bool = False) -> list[dict]:
    """Runs `command_of(index)` once per worker, side by side, and returns each worker's last line as JSON.

    Each worker gets TF_CONFIG naming them all on loopback ports (none when there is one: the program alone); with
    `chief`, the first is the `chief` task and the others `worker` 0, 1, ... When another process took a port
    before its worker bound it, they all start again on other ports, as `LocalCluster` does.
    """
    for _attempt in range(START_ATTEMPTS):
        addresses = [f'localhost:{port}' for port in free_ports(workers)]
        cluster = {'chief': addresses[:1], 'worker': addresses[1:]} if chief else {'worker': addresses}
        tasks = (
            [('chief', 0)] + [('worker', i) for i in range(workers - 1)]
            if chief
            else [('worker', i) for i in range(workers)]
        )
        processes = []
        for index in range(workers):
            env = support._child_env()
            env.pop('TF_CONFIG', None)
            if workers > 1:
                task_type, task_index = tasks[index]
                env['TF_CONFIG'] = json.dumps({'cluster': cluster, 'task': {'type': task_type, 'index': task_index}})
            processes.append(
                support.popen(command_of(index), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
        outputs, timed_out = _outputs_of(processes, timeout)
        if not any(PORT_TAKEN in stderr for _, stderr in outputs):
            break
    tails = ''.join(
        f'\n--- worker {index} (status {process.returncode}):\n{stderr[-3000:]}'
        for index, (process, (_, stderr)) in enumerate(zip(processes, outputs))
    )
    assert not timed_out, f'the workers ran {timeout} s without ending: {tails}'
    for process in processes:
        assert process.returncode == 0, tails
    return [json.loads(stdout.splitlines()[-1]) for stdout, _ in outputs]


def _outputs_of(processes: list, timeout: float) -> tuple[list[tuple[str, str]], bool]:
    """Each process's (stdout, stderr) once all have ended, and whether the `timeout` ended them.

    A worker that fails ends the others at once: they would wait for it until the timeout (a peer whose port was
    taken before it bound it, a worker that raised), and its error is what says why. Their pipes are read all
    along, so that none blocks on a full one.
    """
    deadline = time.monotonic() + timeout
    outputs: list = [None] * len(processes)
    timed_out = False
    while True:
        for index, process in enumerate(processes):
            if outputs[index] is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    outputs[index] = process.communicate(timeout=0.05)
        ended = [output is not None for output in outputs]
        if all(ended) or any(done and process.returncode != 0 for done, process in zip(ended, processes)):
            break
        if time.monotonic() > deadline:
            timed_out = True
            break
    for index, process in enumerate(processes):
        if outputs[index] is None:
            process.kill()
            outputs[index] = process.communicate()
    return outputs, timed_out


class LocalCluster:
    """Worker processes of `tests/distributed_worker.py` on loopback ports, and the events they print.

    Every worker must know every address before any starts (TF_CONFIG), so the ports are chosen free and then
    handed over; if another process takes one in between, that worker cannot start its server, and the cluster
    is started again on other ports (up to `START_ATTEMPTS` times).
    """

    def __init__(self, root, workers: int, scenario: str, checkpoint_dir: str):
        self.root = root
        for attempt in range(1, START_ATTEMPTS + 1):
            self._start(workers, scenario, checkpoint_dir)
            if self._wait_until_started() or attempt == START_ATTEMPTS:
                return
            self.kill()

    def _start(self, workers: int, scenario: str, checkpoint_dir: str) -> None:
        root = self.root
        cluster = {'worker': [f'127.0.0.1:{port}' for port in free_ports(workers)]}
        self.events: list[list[dict]] = [[] for _ in range(workers)]
        self._changed = threading.Condition()
        self.processes = []
        self.readers = []
        self.stderr_paths = []
        for index in range(workers):
            temporary = root / f'tmp_worker{index}'
            temporary.mkdir(parents=True, exist_ok=True)
            env = dict(
                os.environ,
                TF_CPP_MIN_LOG_LEVEL='2',
                TMPDIR=str(temporary),
                TF_CONFIG=json.dumps({'cluster': cluster, 'task': {'type': 'worker', 'index': index}}),
                PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get('PYTHONPATH')])),
            )
            stderr_path = root / f'worker{index}.stderr'
            self.stderr_paths.append(stderr_path)
            with open(stderr_path, 'w') as stderr:
                process = support.popen(
                    [sys.executable, os.path.join(TESTS_DIR, 'distributed_worker.py'), scenario, checkpoint_dir],
                    env=env,
                    cwd=REPO_ROOT,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                )
            self.processes.append(process)
            reader = threading.Thread(target=self._read, args=(self.events[index], self._changed, process), daemon=True)
            reader.start()
            self.readers.append(reader)

    def _wait_until_started(self) -> bool:
        """False if a worker could not bind its port (the others then wait for it), else True once all started."""
        deadline = time.monotonic() + RUN_TIMEOUT_SECS
        with self._changed:
            while time.monotonic() < deadline:
                if all(any(found['event'] == 'started' for found in events) for events in self.events):
                    return True
                for index, process in enumerate(self.processes):
                    if process.poll() is not None:  # Any other reason is the tests' to report.
                        return PORT_TAKEN not in self.stderr_paths[index].read_text()
                self._changed.wait(0.5)
        return True

    def _read(self, events: list, changed: threading.Condition, process) -> None:
        for line in process.stdout:
            if line.startswith('{'):
                with changed:
                    events.append(json.loads(line))
                    changed.notify_all()

    def wait_for(self, index: int, event: str, timeout: float = RUN_TIMEOUT_SECS, **minimums) -> dict:
        """Waits for worker `index` to print `event` (with each of `minimums` at least that value)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for found in self.events[index]:
                    if found['event'] == event and all(found.get(k, -1) >= v for k, v in minimums.items()):
                        return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.processes[index].poll() is not None and not self._pending(index):
                    raise AssertionError(f'worker {index} did not print {event} {minimums}:\n{self.report()}')
                self._changed.wait(min(remaining, 1.0))

    def _pending(self, index: int) -> bool:
        return self.processes[index].stdout is not None and not self.processes[index].stdout.closed

    def wait(self, timeout: float = RUN_TIMEOUT_SECS) -> list[int]:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for reader in self.readers:  # Each ends at the end of its worker's output, once it has read every line.
            reader.join(timeout=max(0.1, deadline - time.monotonic()))
        return [process.returncode for process in self.processes]

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait(timeout=30)

    def event(self, index: int, name: str) -> dict:
        matches = [found for found in self.events[index] if found['event'] == name]
        assert matches, f'worker {index} printed no {name}:\n{self.report()}'
        return matches[-1]

    def report(self) -> str:
        parts = []
        for index, process in enumerate(self.processes):
            stderr = self.stderr_paths[index].read_text()[-3000:]
            parts.append(
                f'--- worker {index} (exit {process.poll()}) events: '
                f'{[found["event"] for found in self.events[index]]}\n{stderr}'
            )
        return '\n'.join(parts)


def leftovers(root) -> list[str]:
    """The checkpoint copies (`compat_mts-*` temporary directories) left in the workers' TMPDIRs."""
    return sorted(f'{path.parent.name}/{path.name}' for path in root.glob('tmp_worker*/compat_mts-*'))


@pytest.fixture(scope='module')
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp('cluster')
    checkpoint_dir = root / 'checkpoints'
    return root, str(checkpoint_dir)


@pytest.fixture(scope='module')
def first_run(job):
    root, checkpoint_dir = job
    cluster = LocalCluster(root / 'first', 2, 'first', checkpoint_dir)
    try:
        codes = cluster.wait()
    finally:
        cluster.kill()
    return cluster, codes, sorted(os.listdir(checkpoint_dir)), leftovers(root / 'first')


def checkpoint_files(directory, step):
    """The size and modification time of each file of checkpoint `step` in `directory`."""
    prefix = f'model.ckpt-{step}.'
    return {
        entry.name: (entry.stat().st_size, entry.stat().st_mtime_ns)
        for entry in os.scandir(directory)
        if entry.name.startswith(prefix)
    }


@pytest.fixture(scope='module')
def lost_worker_run(job, first_run):
    root, checkpoint_dir = job
    latest_before = latest_checkpoint_step(checkpoint_dir)
    restored_files = checkpoint_files(checkpoint_dir, latest_before)
    cluster = LocalCluster(root / 'lost', 3, 'resume', checkpoint_dir)
    try:
        trained = cluster.wait_for(2, 'trained')
        cluster.wait_for(2, 'step', step=trained['step'] + 3)
        killed_at = time.time()
        cluster.processes[2].kill()
        codes = cluster.wait(timeout=LOST_WORKER_BOUND_SECS + 30)
    finally:
        cluster.kill()
    written = restored_files != checkpoint_files(checkpoint_dir, latest_before)
    return cluster, codes, latest_before, killed_at, leftovers(root / 'lost'), written


@pytest.fixture(scope='module')
def preempted_run(job, lost_worker_run):
    root, checkpoint_dir = job
    latest_before = latest_checkpoint_step(checkpoint_dir)
    cluster = LocalCluster(root / 'preempted', 2, 'resume', checkpoint_dir)
    try:
        trained = cluster.wait_for(1, 'trained')
        cluster.wait_for(1, 'step', step=trained['step'] + 3)
        cluster.processes[1].send_signal(signal.SIGTERM)
        codes = cluster.wait()
    finally:
        cluster.kill()
    return cluster, codes, latest_before, leftovers(root / 'preempted')


def test_the_non_chief_waits_for_the_chief_and_times_out_after_max_wait_secs(first_run):
    cluster, _, _, _ = first_run
    assert cluster.event(1, 'deadline')['message'] == 'Session was not ready after waiting 0 secs.'
    assert cluster.event(0, 'created')['restored'] is None
    assert cluster.event(1, 'created')['restored'] is None
    assert [cluster.event(index, 'started')['chief'] for index in (0, 1)] == [True, False]


def test_a_stop_requested_on_the_chief_alone_stops_every_worker_at_that_step(first_run):
    cluster, _, _, _ = first_run
    states = [cluster.event(index, 'asymmetric_stop') for index in (0, 1)]
    assert [state['step'] for state in states] == [5, 5]
    assert states[0]['w'] == states[1]['w']


def test_a_distributed_dataset_ends_on_every_worker_at_the_same_step(first_run):
    cluster, _, _, _ = first_run
    states = [cluster.event(index, 'end_of_data') for index in (0, 1)]
    assert 5 < states[0]['step'] == states[1]['step'] < 1000  # Before the StopAtStepHook's last_step.
    assert states[0]['w'] == states[1]['w']


def test_time_based_saves_happen_on_every_worker_at_the_chiefs_steps(first_run):
    cluster, _, _, _ = first_run
    states = [cluster.event(index, 'time_based_saves') for index in (0, 1)]
    assert states[0]['step'] == states[1]['step'] == cluster.event(0, 'end_of_data')['step'] + 12
    assert states[0]['save_counter'] == states[1]['save_counter'], cluster.report()
    assert states[0]['w'] == states[1]['w']


def test_a_failing_worker_makes_the_others_fail_at_once_instead_of_hanging(first_run):
    cluster, codes, _, _ = first_run
    failing, peer = cluster.event(1, 'failed'), cluster.event(0, 'failed')
    assert failing['error'] == 'ValueError'
    assert peer['error'] == 'ClusterError'
    assert 'worker:1 failed with ValueError: worker 1 hook failed on purpose' in peer['message']
    assert 'Restart all workers' in peer['message']
    assert peer['time'] - cluster.event(1, 'failing')['time'] < 30
    assert failing['step'] == peer['step']
    assert codes == [0, 0], cluster.report()


def test_only_the_chief_writes_checkpoints_and_summaries_and_workers_leave_no_temporary_files(job, first_run):
    _, checkpoint_dir = job
    cluster, _, files, temporary = first_run
    assert temporary == []
    assert all(os.path.isfile(os.path.join(checkpoint_dir, name)) for name in files), files
    assert {name.split('.')[0] for name in files} <= {'checkpoint', 'events', 'graph', 'model'}, files
    assert 'graph.pbtxt' in files
    assert [step for step, _ in read_events(checkpoint_dir)['loss']] == [1, 3, 5]  # The first session's.


def test_every_worker_of_a_bigger_cluster_resumes_from_the_same_checkpoint(lost_worker_run):
    cluster, _, latest_before, _, _, written = lost_worker_run
    restored = [cluster.event(index, 'restored') for index in range(3)]
    assert [state['step'] for state in restored] == [latest_before] * 3
    # The other workers read the checkpoint the chief announced: its creation save leaves those files alone.
    assert not written
    trained = [cluster.event(index, 'trained') for index in range(3)]
    assert [state['step'] for state in trained] == [latest_before + 4] * 3
    assert trained[0]['w'] == trained[1]['w'] == trained[2]['w']


def test_a_lost_worker_is_reported_as_an_error_on_the_others_within_a_bounded_time(lost_worker_run):
    cluster, codes, _, killed_at, temporary, _ = lost_worker_run
    for index in (0, 1):
        failed = cluster.event(index, 'failed')
        assert failed['error'] == 'ClusterError'
        assert 'cannot continue' in failed['message']
        assert failed['time'] - killed_at < LOST_WORKER_BOUND_SECS
    assert codes[:2] == [0, 0] and codes[2] == -signal.SIGKILL, cluster.report()
    assert [path for path in temporary if not path.startswith('tmp_worker2/')] == []  # 2 was killed.


def test_after_every_process_was_killed_a_restarted_cluster_resumes(job, preempted_run):
    cluster, _, latest_before, _ = preempted_run
    assert [cluster.event(index, 'restored')['step'] for index in (0, 1)] == [latest_before] * 2
    assert latest_before in checkpoint_steps(job[1])


def test_sigterm_on_one_worker_saves_at_a_step_every_worker_agrees_on_and_exits_42(job, preempted_run):
    cluster, codes, _, temporary = preempted_run
    assert codes == [42, 42], cluster.report()
    preempted = [cluster.event(index, 'preempted') for index in (0, 1)]
    assert preempted[0]['step'] == preempted[1]['step']
    assert preempted[0]['w'] == preempted[1]['w']
    assert latest_checkpoint_step(job[1]) == preempted[0]['step']
    assert temporary == []
