"""`master`, `config`, strategies, preemption and `stop_grace_period_secs` in one process (the clusters are in
`test_distribute_cluster.py`).

What needs TensorFlow's runtime not started yet, or a connection that resets it, runs in a fresh child
process (`tests/distributed_local.py`, `tests/train_until.py`); the rest runs here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.deploy import deployment
from compat_mts.deploy import distribute
from compat_mts.deploy import preemption
from tests import support
from tests.models import Regression
from tests.support import REPO_ROOT, TESTS_DIR, checkpoint_steps, latest_checkpoint_step, read_events

CHILD_TIMEOUT_SECS = 180


def child_env() -> dict[str, str]:
    return dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL='2',
        PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get('PYTHONPATH')])),
    )


def events_of(stdout: str) -> dict[str, dict]:
    return {event['event']: event for event in map(json.loads, filter(None, stdout.splitlines()))}


# `master`


@pytest.mark.parametrize(
    'master',
    [
        'localhost:2222',
        'grpc://localhost',
        'grpc://:2222',
        'http://host:80',
        'grpc://host:80/path',
        'grpc://two words:1',
    ],
)
def test_a_malformed_master_is_a_value_error_naming_the_accepted_form(master):
    Regression()
    with pytest.raises(ValueError, match="`master` must be '' \\(in-process\\) or a TensorFlow server target"):
        mts.MonitoredTrainingSession(master=master)


@pytest.fixture(scope='module')
def server_target():
    """A `tf.distribute.Server` in a child process on a port it picks itself; yields its `grpc://` target.

    The server binds `localhost:0` and reports the port it got in `.target`, so no other process can take the
    port between choosing and binding it.
    """
    code = (
        'import sys, tensorflow as tf\n'
        "server = tf.distribute.Server({'worker': ['localhost:0']}, job_name='worker', task_index=0)\n"
        'print(server.target, flush=True)\n'
        'server.join()\n'
    )
    server = support.popen([sys.executable, '-c', code], env=child_env(), stdout=subprocess.PIPE, text=True)
    try:
        target = server.stdout.readline().strip()
        assert re.fullmatch(r'grpc://localhost:[1-9]\d*', target), target
        yield target
    finally:
        server.kill()
        server.wait(timeout=30)


@pytest.fixture(scope='module')
def remote_run(server_target):
    result = support.run(
        [sys.executable, os.path.join(TESTS_DIR, 'distributed_local.py'), 'remote', server_target],
        env=child_env(),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECS,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return events_of(result.stdout)


SERVER_DEVICE = re.compile(r'/job:worker/replica:0/task:0/device:[A-Z_]+:\d+')  # Any device type of the server.


@pytest.mark.slow
def test_a_grpc_master_runs_the_steps_on_that_server(remote_run):
    devices = remote_run['remote']['devices']
    assert len(devices) == 1 and SERVER_DEVICE.fullmatch(devices[0]), devices
    training = remote_run['remote_training']
    assert (training['step'], training['w']) == (3, 4.0)
    assert SERVER_DEVICE.fullmatch(training['w_device']), training['w_device']


@pytest.mark.slow
def test_a_master_connected_after_the_variables_exist_is_refused_with_the_fix(remote_run):
    message = remote_run['connect_too_late']['message']
    assert 'created its variables (the global step among them) before connecting' in message
    assert "tf.config.experimental_connect_to_host('localhost:" in message


def test_master_is_ignored_inside_a_strategy_scope(tf_logs):
    with tf.distribute.OneDeviceStrategy('/cpu:0').scope():
        assert distribute.connect('grpc://localhost:1') is None
    assert any('is ignored inside the scope of OneDeviceStrategy' in m for m in tf_logs.messages())


# `config` and MirroredStrategy


def test_config_fields_without_a_tf2_equivalent_are_named_in_one_warning(tf_logs):
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=5, isolate_session_state=True, allow_soft_placement=True)
    config.gpu_options.per_process_gpu_memory_fraction = 0.3
    with mts.MonitoredTrainingSession(config=config):
        pass
    warnings = [m for m in tf_logs.messages() if 'ConfigProto' in m]
    assert warnings == [
        'compat_mts cannot honour these ConfigProto fields eagerly and ignores them: '
        'gpu_options.per_process_gpu_memory_fraction, isolate_session_state, '
        'operation_timeout_in_ms.'
    ]


def test_threads_set_after_the_runtime_started_are_reported_as_too_late(tf_logs):
    tf.constant(0)  # The runtime is running.
    threads = tf.config.threading.get_intra_op_parallelism_threads() + 3
    with mts.MonitoredTrainingSession(config=tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads)):
        pass
    late = [m for m in tf_logs.messages() if 'too late' in m]
    assert len(late) == 1 and late[0].endswith(': intra_op_parallelism_threads.')


def placement_lines(stdout: str, op_name: str) -> list[str]:
    """TensorFlow's `<op name>: (<op type>): <device>` lines for `op_name` (also inside a call op's scope)."""
    line = re.compile(rf'^(?:\S+/)?{op_name}: \(\w+\): /job:\w+/replica:\d+/task:\d+/device:[A-Z_]+:\d+$')
    return [text for text in stdout.splitlines() if line.match(text)]


def run_placement_program(when: str) -> subprocess.CompletedProcess:
    result = support.run(
        [sys.executable, os.path.join(TESTS_DIR, 'placement_program.py'), when],
        env=dict(child_env(), TF_CPP_MIN_LOG_LEVEL='2'),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECS,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result


@pytest.mark.slow
def test_v1_prints_the_placement_of_the_graphs_ops_on_stdout_at_log_level_2():
    assert placement_lines(run_placement_program('v1').stdout, 'graph_step_matmul')


@pytest.mark.slow
@pytest.mark.parametrize('when', ['session_first', 'program_sets_it_first'])
def test_log_device_placement_prints_where_the_steps_ops_run_when_set_before_the_runtime_starts(when):
    result = run_placement_program(when)
    assert placement_lines(result.stdout, 'eager_step_matmul')  # The tf.function step.
    assert placement_lines(result.stdout, 'graph_step_matmul')  # A wrapped graph's pruned call.
    assert 'log_device_placement' not in result.stderr


@pytest.mark.slow
def test_log_device_placement_after_the_runtime_started_is_one_warning_that_says_how():
    result = run_placement_program('too_late')
    assert not placement_lines(result.stdout, 'eager_step_matmul')
    assert not placement_lines(result.stdout, 'graph_step_matmul')
    warnings = [line for line in result.stderr.splitlines() if 'log_device_placement' in line]
    assert len(warnings) == 2, result.stderr[-4000:]  # One per session; the program creates two.
    assert (
        "so the step's ops are not logged; call tf.debugging.set_log_device_placement(True) right after "
        'importing TensorFlow' in warnings[0]
    )


@pytest.fixture(scope='module')
def local_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp('mirrored')
    result = support.run(
        [sys.executable, os.path.join(TESTS_DIR, 'distributed_local.py'), 'local', str(directory)],
        env=child_env(),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECS,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return events_of(result.stdout), str(directory)


@pytest.mark.slow
def test_config_before_the_runtime_starts_sets_threads_soft_placement_and_cpu_devices(local_run):
    config = local_run[0]['config']
    assert (config['intra'], config['inter'], config['cpus'], config['soft']) == (2, 1, 2, True)
    assert config['warnings'] == [
        'compat_mts cannot honour these ConfigProto fields eagerly and ignores them: '
        'gpu_options.per_process_gpu_memory_fraction, operation_timeout_in_ms.'
    ]
    late = local_run[0]['late']
    assert late['intra'] == 2
    assert late['warnings'][0].endswith(
        'too late to apply; set them before any TensorFlow operation runs: intra_op_parallelism_threads.'
    )


@pytest.mark.slow
def test_a_session_in_a_mirrored_strategy_scope_trains_checkpoints_and_summarizes(local_run):
    events, directory = local_run
    mirrored = events['mirrored']
    assert mirrored['variable'] == 'MirroredVariable'
    assert mirrored['step'] == mirrored['fetched_step'] == 4
    assert mirrored['fetched_w'] == mirrored['w']
    assert checkpoint_steps(directory) == [0, 2, 4]
    assert [step for step, _ in read_events(directory)['loss']] == [1, 2, 3, 4]  # Replica 0 records.
    assert events['resumed'] == {'event': 'resumed', 'step': 4, 'w': mirrored['w']}


@pytest.mark.slow
def test_a_per_replica_fetch_comes_back_as_the_local_results_of_the_replicas(local_run):
    mirrored = local_run[0]['mirrored']
    assert len(mirrored['per_replica']) == 2
    assert mirrored['loss'] == pytest.approx(sum(mirrored['per_replica']) / 2)


def test_a_single_process_session_pays_nothing_for_multi_worker_agreement(tmp_path):
    model = Regression()
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=model.scaffold()) as session:
        assert session._deployment is deployment.LOCAL
        assert not session._deployment.agrees
        session.run(model.step)
    assert distribute.current_cluster() is None


def test_a_session_outside_the_strategy_scope_of_a_tf_config_cluster_says_it_runs_alone(monkeypatch, tf_logs):
    monkeypatch.setenv(
        'TF_CONFIG',
        json.dumps({'cluster': {'worker': ['localhost:1', 'localhost:2']}, 'task': {'type': 'worker', 'index': 0}}),
    )
    monkeypatch.setattr(distribute, '_warned_outside_scope', False)
    with mts.MonitoredTrainingSession():
        pass
    assert any(
        m.startswith('TF_CONFIG describes a cluster of several workers, but no MultiWorkerMirroredStrategy')
        for m in tf_logs.messages()
    )


# Preemption


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_at_the_current_step_exits_42_and_the_next_start_resumes(tmp_path):
    directory = str(tmp_path)
    program = os.path.join(TESTS_DIR, 'train_until.py')
    child = support.popen(
        [sys.executable, program, directory, '100000'],
        env=child_env(),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        steps = []
        for line in child.stdout:
            if line.startswith('step '):
                steps.append(int(line.split()[1]))
                if steps[-1] == 5:
                    child.send_signal(signal.SIGTERM)
        code = child.wait(timeout=CHILD_TIMEOUT_SECS)
    finally:
        if child.poll() is None:
            child.kill()
    assert code == preemption.PREEMPTION_EXIT_CODE == 42, child.stderr.read()[-3000:]
    assert steps[-1] < 100000
    assert latest_checkpoint_step(directory) == steps[-1]
    resumed = support.run(
        [sys.executable, program, directory, str(steps[-1] + 1)],
        env=child_env(),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_SECS,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.splitlines()[0].split()[:2] == ['restored', str(steps[-1])]


def test_sigterm_is_left_alone_outside_a_checkpointing_session(tmp_path):
    Regression()
    before = signal.getsignal(signal.SIGTERM)
    with mts.MonitoredTrainingSession(summary_dir=str(tmp_path)):
        assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_in_this_process_stops_after_the_run_and_close_exits_42(tmp_path):
    model = Regression()
    before = signal.getsignal(signal.SIGTERM)
    session = mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), scaffold=model.scaffold(), save_checkpoint_secs=None, save_checkpoint_steps=1000
    )
    assert signal.getsignal(signal.SIGTERM) is not before
    session.run(model.step)
    os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler in this thread before the next line.
    assert session.should_stop()
    with pytest.raises(SystemExit) as exit_info:
        session.close()
    assert exit_info.value.code == 42
    assert checkpoint_steps(str(tmp_path)) == [0, 1]
    assert signal.getsignal(signal.SIGTERM) is before


# `stop_grace_period_secs`


class ThreadHook(mts.SessionRunHook):
    """Starts `target(coord)` in a thread registered with the session's coordinator."""

    def __init__(self, target, name: str):
        self._target = target
        self._name = name

    def after_create_session(self, session, coord):
        thread = threading.Thread(target=self._target, args=(coord,), name=self._name, daemon=True)
        coord.register_thread(thread)
        thread.start()


def test_close_waits_stop_grace_period_secs_for_the_threads_and_names_those_still_running(tf_logs):
    release = threading.Event()
    hooks = [
        ThreadHook(lambda coord: coord.wait_for_stop(), 'polite-reader'),
        ThreadHook(lambda coord: release.wait(30), 'stubborn-writer'),
    ]
    session = mts.MonitoredSession(hooks=hooks, stop_grace_period_secs=0.5)
    started = time.monotonic()
    try:
        session.close()
        elapsed = time.monotonic() - started
    finally:
        release.set()
    assert 0.4 < elapsed < 10
    stragglers = [m for m in tf_logs.messages() if 'stop_grace_period_secs' in m]
    assert stragglers == [
        'These threads of the session were still running 0.5 secs (stop_grace_period_secs) '
        'after close() asked them to stop; they are left running: stubborn-writer.'
    ]


def test_close_returns_as_soon_as_the_threads_have_stopped(tf_logs):
    session = mts.MonitoredSession(
        hooks=[ThreadHook(lambda coord: coord.wait_for_stop(), 'polite-reader')], stop_grace_period_secs=60
    )
    started = time.monotonic()
    session.close()
    assert time.monotonic() - started < 10
    assert not [m for m in tf_logs.messages() if 'stop_grace_period_secs' in m]
