"""A real parameter-server cluster on localhost: 1 chief, 2 workers, 1 ps, one process each.

The tasks are tests/parameter_server_task.py.

The cluster is started once for the module; the chief runs the v1 ps/worker program of the guide: a first
session that trains, a second that resumes from its checkpoint, loses worker 1 and trains on, then loses the ps
task. The tests read what the chief printed and what it left on disk. Ports are chosen free and handed to every
task; when one was taken before its task could bind it, the cluster starts again on other ports.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from compat_mts.deploy import parameter_server
from tests import support
from tests.parameter_server_task import (
    AFTER_WORKER_LOSS,
    FIRST_STEPS,
    FROZEN_STEP_TIMEOUT_SECS,
    KILL_WORKER_AT,
    LOSS_EVERY_N_RUNS,
    MIXED_LAST_STEP,
    MIXED_MAX_RUNS,
    STEPS_PER_RUN,
)
from tests.support import REPO_ROOT, TESTS_DIR, checkpoint_steps, read_events, state_file_steps
from tests.test_distribute_cluster import PORT_TAKEN, free_ports

RUN_TIMEOUT_SECS = 240
START_ATTEMPTS = 3
LOST_PS_BOUND_SECS = 60  # The chief's step_timeout_secs: the error must come before it, and it does at once.


class Cluster:
    """The ps and worker tasks (servers that join), then the chief's run; what each printed."""

    def __init__(self, root, workers: int = 2, chief: str = 'chief'):
        self.root = root
        self.checkpoint_dir = str(root / 'checkpoints')
        for attempt in range(1, START_ATTEMPTS + 1):
            self._start(workers)
            if self._serving() and self._run_chief(chief) or attempt == START_ATTEMPTS:
                return
            self.kill()

    def _start(self, workers: int) -> None:
        ports = free_ports(2 + workers)
        self.cluster = {
            'chief': [f'localhost:{ports[0]}'],
            'ps': [f'localhost:{ports[1]}'],
            'worker': [f'localhost:{port}' for port in ports[2:]],
        }
        self.env = dict(
            os.environ,
            TF_CPP_MIN_LOG_LEVEL='2',
            PS_CLUSTER=json.dumps(self.cluster),
            PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get('PYTHONPATH')])),
        )
        self.tasks = {}
        for job, index in [('ps', 0)] + [('worker', index) for index in range(workers)]:
            stderr = open(self.root / f'{job}{index}.stderr', 'w')
            self.tasks[job, index] = support.popen(
                [sys.executable, os.path.join(TESTS_DIR, 'parameter_server_task.py'), job, str(index), '-'],
                env=self.env,
                cwd=REPO_ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.chief = None

    def _serving(self) -> bool:
        """Whether every task bound its port (each prints `serving` once its server runs)."""
        started = {}

        def read_first_line(key, process):
            started[key] = '"serving"' in process.stdout.readline()

        readers = [threading.Thread(target=read_first_line, args=item, daemon=True) for item in self.tasks.items()]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(RUN_TIMEOUT_SECS)
        return all(started.get(key) for key in self.tasks)

    def _run_chief(self, chief: str) -> bool:
        """Runs the chief to its end; False when it could not bind its own port."""
        ps, last_worker = self.tasks['ps', 0].pid, self.tasks['worker', len(self.cluster['worker']) - 1].pid
        env = dict(
            self.env,
            PS_KILL_WORKER=str(last_worker),
            PS_KILL_PS=str(ps),
            PS_FREEZE_PS=str(ps),
            TF_CONFIG=json.dumps({'cluster': self.cluster, 'task': {'type': 'chief', 'index': 0}}),
        )
        self.chief = support.run(
            [sys.executable, os.path.join(TESTS_DIR, 'parameter_server_task.py'), chief, '0', self.checkpoint_dir],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECS,
        )
        self.ended_at = time.time()
        self.events = {}
        for line in self.chief.stdout.splitlines():
            if line.startswith('{'):
                found = json.loads(line)
                self.events.setdefault(found['event'], []).append(found)
        return PORT_TAKEN not in self.chief.stderr

    def event(self, name: str, index: int = -1) -> dict:
        assert name in self.events, f'the chief printed no {name}:\n{self.report()}'
        return self.events[name][index]

    def kill(self) -> None:
        for process in self.tasks.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # A stopped task dies of SIGKILL too, but only once it runs.
                process.kill()
            process.wait(timeout=30)

    def report(self) -> str:
        chief = self.chief
        return (
            f'chief exit {chief.returncode if chief else None}, events {sorted(self.events)}\n'
            f'{chief.stderr[-4000:] if chief else ""}'
        )


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp('parameter_server'))
    started.kill()
    return started


@pytest.fixture(scope='module')
def frozen_ps_cluster(tmp_path_factory, cluster):  # After `cluster`: one cluster at a time on two cores.
    started = Cluster(tmp_path_factory.mktemp('frozen_ps'), workers=1, chief='frozen')
    started.kill()
    return started


@pytest.mark.slow
def test_the_chief_runs_the_v1_program_to_its_end(cluster):
    assert cluster.chief.returncode == 0, cluster.report()
    assert 'no_error' not in cluster.events
    # TF_CONFIG describes a cluster without a MultiWorkerMirroredStrategy scope, and that is right here.
    assert 'MultiWorkerMirroredStrategy' not in cluster.chief.stderr
    assert 'has not been increased' not in cluster.chief.stderr  # Scheduled steps are not stuck steps.


@pytest.mark.slow
def test_variables_live_on_the_ps_task(cluster):
    devices = cluster.event('first')['devices']
    assert set(devices) == {'global_step:0', 'weights:0', 'bias:0'}
    assert all(device.startswith('/job:ps/replica:0/task:0/') for device in devices.values()), devices


@pytest.mark.slow
def test_each_run_runs_k_steps_on_a_worker(cluster):
    first = cluster.event('first')
    assert first['step'] == FIRST_STEPS  # The stop hook's last_step, exactly: checked on the worker.
    # The loop runs on until the hooks' reads of the global step catch up with the workers; those runs run none.
    assert first['runs'] >= FIRST_STEPS // STEPS_PER_RUN


@pytest.mark.slow
def test_hooks_wait_for_a_worker_only_on_the_runs_where_they_trigger(cluster):
    first = cluster.event('first')
    runs = first['runs']
    # The loss hook triggers every 4th run; LoggingTensorHook(every_n_iter=10) on runs of 5 steps every 2nd run,
    # from the first (runs 1, 3, 5...). Every other run returned as soon as it was scheduled.
    nth_runs = runs // LOSS_EVERY_N_RUNS
    assert len(first['losses']) == nth_runs
    assert first['fetched_runs'] == nth_runs + len(range(0, runs, 2)) < runs
    assert first['losses'][-1] < first['losses'][0]


@pytest.mark.slow
def test_a_loop_that_fetches_the_loss_between_train_runs_stops_at_last_step(cluster):
    """Runs that fetch only (the loss, the global step, the summaries) run once and are not counted as steps."""
    mixed = cluster.event('mixed')
    assert mixed['stopped'] and mixed['runs'] < MIXED_MAX_RUNS, mixed
    assert mixed['step'] == MIXED_LAST_STEP
    # Each fetch-only run waited for its values, computed on a worker from the variables the train runs move.
    losses = mixed['losses']
    assert len(losses) >= 2 and mixed['fetched_runs'] >= len(losses)
    assert len(set(losses)) > 1 and losses[-1] < losses[0], losses


@pytest.mark.slow
def test_the_chief_alone_writes_the_checkpoints_and_a_new_session_resumes(cluster):
    first = cluster.event('first')
    assert first['checkpoint'].endswith(f'model.ckpt-{FIRST_STEPS}')
    assert cluster.event('resumed')['step'] == FIRST_STEPS
    steps = checkpoint_steps(cluster.checkpoint_dir)
    # Saves between the first and the last name the global step read when the hook triggered, which the
    # workers may have moved past a multiple of 20; the last save of a session holds every step.
    assert FIRST_STEPS in steps and sorted(set(state_file_steps(cluster.checkpoint_dir))) == steps
    reader = tf.train.load_checkpoint(first['checkpoint'])
    assert reader.get_tensor('global_step') == FIRST_STEPS and reader.get_tensor('weights').shape == (4, 1)


@pytest.mark.slow
def test_the_chief_writes_the_graph_summaries(cluster):
    losses = read_events(cluster.checkpoint_dir)['training_loss']  # Only the resumed session writes summaries.
    assert len(losses) >= 2 and all(step > FIRST_STEPS for step, _ in losses), losses
    assert all(value >= 0 for _, value in losses)


@pytest.mark.slow
def test_a_lost_worker_is_survived(cluster):
    assert cluster.event('killed', 0)['task'] == 'worker:1'
    after = cluster.event('after_worker_loss')
    assert after['step'] >= AFTER_WORKER_LOSS > KILL_WORKER_AT
    assert int(after['checkpoint'].rsplit('-', 1)[1]) > KILL_WORKER_AT  # Saved by the training after the loss.


@pytest.mark.slow
def test_a_lost_ps_ends_the_run_with_a_clear_error_in_bounded_time(cluster):
    killed = cluster.event('killed', 1)
    assert killed['task'] == 'ps:0'
    lost = cluster.event('ps_lost')
    assert lost['at'] - killed['at'] < LOST_PS_BOUND_SECS
    assert 'parameter server of the cluster was lost' in lost['error'] and 'Restart the ps tasks' in lost['error']
    # The last good checkpoint is still there, and whole.
    saved_after_worker_loss = int(cluster.event('after_worker_loss')['checkpoint'].rsplit('-', 1)[1])
    reader = tf.train.load_checkpoint(lost['checkpoint'])
    assert saved_after_worker_loss <= reader.get_tensor('global_step')


@pytest.mark.parametrize(
    'arguments, message',
    [
        (dict(cluster={'ps': ['h:1'], 'worker': ['h:2']}), 'needs one chief task'),
        (dict(cluster={'chief': ['h:0'], 'worker': ['h:2']}), 'needs one chief task'),
        (dict(cluster=['h:1']), '`cluster` must be a tf.train.ClusterSpec'),
        (dict(cluster=None), 'needs `cluster`'),
        (dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, steps_per_run=0), '`steps_per_run`'),
        (
            dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, step_timeout_secs=0),
            '`step_timeout_secs`',
        ),
        (dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, steps_per_run='10'), r'\(str\)'),
        (dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, steps_per_run=2**31), 'at most 2\\*\\*31'),
        (
            dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, step_timeout_secs=math.inf),
            '`step_timeout_secs` must be a positive, finite number of seconds, got inf',
        ),
        (
            dict(cluster={'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, step_timeout_secs=math.nan),
            '`step_timeout_secs` must be a positive, finite number of seconds, got nan',
        ),
    ],
)
def test_parameter_server_strategy_names_a_bad_argument(arguments, message, monkeypatch):
    monkeypatch.delenv('TF_CONFIG', raising=False)
    with pytest.raises((TypeError, ValueError), match=message):
        parameter_server.parameter_server_strategy(**arguments)


def test_parameter_server_strategy_runs_in_the_chief_only(monkeypatch):
    monkeypatch.setenv(
        'TF_CONFIG',
        json.dumps(
            {'cluster': {'chief': ['h:0'], 'ps': ['h:1'], 'worker': ['h:2']}, 'task': {'type': 'worker', 'index': 0}}
        ),
    )
    with pytest.raises(ValueError, match="runs in the chief's process.*join"):
        parameter_server.parameter_server_strategy()


def test_a_graph_on_job_ps_outside_a_parameter_server_chief_says_what_to_edit():
    def build():
        with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(ps_tasks=1)):
            tf.compat.v1.get_variable('weights', [2], initializer=tf.compat.v1.zeros_initializer())

    from compat_mts import legacy

    with pytest.raises(ValueError, match=r"\['ps'\].*add a 'chief' job.*compat_mts.parameter_server_strategy"):
        legacy.wrap_graph(build)


def test_a_callable_fetched_on_the_chief_says_it_would_not_run_on_the_workers():
    step = tf.function(lambda: None)
    for fetches in (step, [step], {'train': step}):
        with pytest.raises(TypeError, match='would run on the chief itself.*ClusterCoordinator'):
            parameter_server.check_graph_fetches(fetches)
    parameter_server.check_graph_fetches(['loss:0', None, {'step': tf.constant(1)}])


def test_worker_placements_are_dropped_and_ps_placements_kept():
    graph = tf.Graph()
    with graph.as_default():
        with tf.compat.v1.device(
            tf.compat.v1.train.replica_device_setter(ps_tasks=2, worker_device='/job:worker/task:1')
        ):
            first = tf.compat.v1.get_variable('first', [1])
            second = tf.compat.v1.get_variable('second', [1])
            total = tf.add(first, second, name='total')
        with tf.compat.v1.device('/job:chief/task:0/device:CPU:0'):
            tf.identity(total, name='on_chief')
    graph_def = graph.as_graph_def()
    parameter_server.Scheduler.strip_worker_placement(graph_def)
    devices = {node.name: node.device for node in graph_def.node}
    assert (devices['first'], devices['second']) == ('/job:ps/task:0', '/job:ps/task:1')
    assert devices['total'] == '' and devices['on_chief'] == '/device:CPU:0'


@pytest.mark.slow
def test_a_ps_that_stops_answering_ends_the_chief_with_a_clear_message_in_bounded_time(frozen_ps_cluster):
    chief = frozen_ps_cluster.chief
    assert chief.returncode == parameter_server.LOST_CLUSTER_EXIT_CODE, frozen_ps_cluster.report()
    assert 'no_exit' not in frozen_ps_cluster.events
    assert 'a ps task stopped answering' in chief.stderr and 'Restart the ps tasks and the chief' in chief.stderr
    frozen_at = frozen_ps_cluster.event('frozen')['at']
    assert frozen_ps_cluster.ended_at - frozen_at < FROZEN_STEP_TIMEOUT_SECS + parameter_server.WATCHDOG_GRACE_SECS + 30


@pytest.fixture(scope='module')
def frozen_at_start_cluster(tmp_path_factory, frozen_ps_cluster):  # One cluster at a time on two cores.
    started = Cluster(tmp_path_factory.mktemp('frozen_at_start'), workers=1, chief='frozen_at_start')
    started.kill()
    return started


@pytest.mark.slow
def test_a_ps_that_stops_answering_before_the_session_is_created_ends_the_chief_too(frozen_at_start_cluster):
    """Creating the session initializes the variables on the ps task: the watchdog covers it as it covers runs."""
    chief = frozen_at_start_cluster.chief
    assert chief.returncode == parameter_server.LOST_CLUSTER_EXIT_CODE, frozen_at_start_cluster.report()
    assert 'session_created' not in frozen_at_start_cluster.events
    assert 'has not returned' in chief.stderr and 'Restart the ps tasks' in chief.stderr
    # Once: connecting to the cluster no longer configures the root logger (absl), which doubled every line.
    assert chief.stderr.count('ERROR:tensorflow:compat_mts: a session call') == 1, chief.stderr[-3000:]
    frozen_at = frozen_at_start_cluster.event('frozen')['at']
    bound = FROZEN_STEP_TIMEOUT_SECS + parameter_server.WATCHDOG_GRACE_SECS + 30
    assert frozen_at_start_cluster.ended_at - frozen_at < bound


def test_each_variable_goes_to_the_ps_task_its_op_names_else_round_robin():
    placement = parameter_server.VariablePlacement(2)
    assert placement.device_for('/job:ps/task:1') == '/job:ps/replica:0/task:1/device:CPU:0'
    assert [placement.device_for(device) for device in ('', '/job:worker/task:0', '/job:ps/task:7', '')] == [
        f'/job:ps/replica:0/task:{task}/device:CPU:0' for task in (0, 1, 0, 1)
    ]


def test_a_chief_that_still_starts_v1_s_server_is_told_to_drop_it(monkeypatch):
    monkeypatch.delenv('TF_CONFIG', raising=False)
    chief, ps, worker = free_ports(3)
    cluster = {'chief': [f'localhost:{chief}'], 'ps': [f'localhost:{ps}'], 'worker': [f'localhost:{worker}']}
    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name='chief', task_index=0)  # v1's line.
    with pytest.raises(ValueError, match='already runs a tf.distribute.Server.*drop master=server.target'):
        parameter_server.parameter_server_strategy(cluster)
    del server


@pytest.mark.slow
def test_a_step_that_fails_on_a_worker_raises_its_own_error_on_the_chief(frozen_ps_cluster):
    failed = frozen_ps_cluster.event('step_failed')
    assert failed['error'] == 'InvalidArgumentError', failed
    assert 'CheckNumerics' in failed['message']
