"""Distributed Estimator jobs on real loopback clusters: each task a process with its own TF_CONFIG, as a job manager
starts them (chief, workers, ps, evaluator), compat_mts beside TensorFlow 2.15's own `tf.estimator`.

The program is `tests/estimator_job.py`. TF 2.15's ps task never ends (it `join()`s), so its job is over when
the chief and the evaluator are; compat_mts's ps and workers return once training has ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from tests import support, tf215
from tests.support import REPO_ROOT, TESTS_DIR, checkpoint_steps, read_events
from tests.test_distribute_cluster import PORT_TAKEN, free_ports

pytestmark = pytest.mark.slow

PROGRAM = os.path.join(TESTS_DIR, 'estimator_job.py')
JOB_TIMEOUT_SECS = 300
START_ATTEMPTS = 3
MAX_STEPS = 60
# TF 2.15's last step: its chief and workers train asynchronously, each stopping when it sees the global step at
# MAX_STEPS after its own run, so on a loaded machine the others' steps in flight may land beyond it (61 seen).
# compat_mts's chief schedules every step, so its last is MAX_STEPS.
TF215_LAST_STEPS = range(MAX_STEPS, MAX_STEPS + 3)
TASKS = (('ps', 0), ('worker', 0), ('worker', 1), ('chief', 0), ('evaluator', 0))


class Job:
    """One run of the job: a process per task, started on free loopback ports, with what each printed."""

    def __init__(
        self,
        root,
        implementation='compat_mts',
        kind='premade',
        max_steps=MAX_STEPS,
        tasks=TASKS,
        model_dir=None,
        chief_job='chief',
        env=None,
    ):
        self.root, self.implementation, self.kind, self.max_steps = root, implementation, kind, max_steps
        self.chief_job, self.extra_env = chief_job, env or {}
        self.model_dir = model_dir or str(root / 'model')
        root.mkdir(parents=True, exist_ok=True)
        self.tasks = tasks
        self.processes: dict[tuple[str, int], subprocess.Popen] = {}
        self.ended_at: dict[tuple[str, int], float] = {}
        for attempt in range(1, START_ATTEMPTS + 1):
            self.cluster = self._cluster()
            for task in tasks:
                self.start(task)
            if not self._wait_for_ports() or attempt == START_ATTEMPTS:
                return
            self.kill()

    def _cluster(self) -> dict:
        ports = free_ports(4)
        return {
            self.chief_job: [f'localhost:{ports[0]}'],
            'worker': [f'localhost:{ports[1]}', f'localhost:{ports[2]}'],
            'ps': [f'localhost:{ports[3]}'],
        }

    def start(self, task: tuple[str, int]) -> None:
        """Starts (or starts again) the process of `task`; its output goes to files under the job's root."""
        job, index = task
        tf_config = {'cluster': self.cluster, 'task': {'type': job, 'index': index}}
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', TF_CONFIG=json.dumps(tf_config), **self.extra_env)
        starts = sum(1 for name in os.listdir(self.root) if name.startswith(f'{job}{index}.') and name.endswith('.out'))
        self.logs = getattr(self, 'logs', {})
        out, err = (self.root / f'{job}{index}.{starts}.{kind}' for kind in ('out', 'err'))
        self.logs[task] = (out, err)
        command = [PROGRAM, self.implementation, self.kind, self.model_dir, str(self.max_steps)]
        if self.implementation == 'compat_mts':
            env['PYTHONPATH'] = os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get('PYTHONPATH')]))
            self.processes[task] = support.popen(
                [sys.executable, *command], env=env, cwd=str(self.root), stdout=open(out, 'w'), stderr=open(err, 'w')
            )
        else:
            env = dict(tf215._child_env(), TF_CONFIG=env['TF_CONFIG'], **self.extra_env)
            self.processes[task] = subprocess.Popen(
                [tf215.python(), *command], env=env, cwd=str(self.root), stdout=open(out, 'w'), stderr=open(err, 'w')
            )
        self.ended_at.pop(task, None)

    def _wait_for_ports(self, timeout: float = 60) -> bool:
        """Whether a task could not bind its port (another process took it): then the job starts again."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(PORT_TAKEN in self.stderr(task) for task in self.tasks):
                return True
            if all(self.stdout(task) or self.processes[task].poll() is not None for task in self.tasks):
                return False
            time.sleep(0.2)
        return False

    def stdout(self, task) -> str:
        return self.logs[task][0].read_text()

    def stderr(self, task) -> str:
        return self.logs[task][1].read_text()

    def wait(self, tasks=None, timeout: float = JOB_TIMEOUT_SECS) -> dict:
        """Waits for `tasks` (default: all but TF 2.15's ps, which never ends) to end; their exit codes."""
        if tasks is None:
            tasks = [t for t in self.processes if not (self.implementation == 'tf215' and t[0] == 'ps')]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._note_ends()
            if all(task in self.ended_at for task in tasks):
                break
            time.sleep(0.2)
        self._note_ends()
        return {task: self.processes[task].poll() for task in tasks}

    def run_to_end(self) -> dict:
        """Waits for the job to end (`wait()`), kills what is left; the exit codes."""
        try:
            return self.wait()
        finally:
            self.kill()

    def worker_batches(self) -> int:
        """How many batches the workers' input pipelines read (each prints `input batch`)."""
        return sum(self.stderr(task).count('input batch') for task in self.tasks if task[0] == 'worker')

    def _note_ends(self) -> None:
        for task, process in self.processes.items():
            if task not in self.ended_at and process.poll() is not None:
                self.ended_at[task] = time.monotonic()

    def wait_for_checkpoint(self, step: int, timeout: float = JOB_TIMEOUT_SECS) -> int:
        """Waits until the model directory has a checkpoint at `step` or later; its step."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            steps = checkpoint_steps(self.model_dir) if os.path.isdir(self.model_dir) else []
            if steps and max(steps) >= step:
                return max(steps)
            assert all(p.poll() is None for p in self.processes.values()), self.report()
            time.sleep(0.2)
        raise AssertionError(f'no checkpoint at step {step} in {timeout} s:\n{self.report()}')

    def kill(self, tasks=None) -> None:
        for task in tasks or list(self.processes):
            process = self.processes[task]
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            self._note_ends()

    def done(self, task) -> dict:
        lines = [line for line in self.stdout(task).splitlines() if line.startswith('{')]
        assert lines, f'{task} printed no result:\n{self.report()}'
        return json.loads(lines[-1])

    def report(self) -> str:
        parts = []
        for task, process in self.processes.items():
            parts.append(f'--- {task} exit {process.poll()}\n{self.stderr(task)[-2500:]}')
        return '\n'.join(parts)


@pytest.fixture(scope='module')
def jobs(tmp_path_factory):
    """The premade job, run once by compat_mts and once by TF 2.15, each to its end."""
    runs = {}
    for implementation in ('tf215', 'compat_mts'):
        root = tmp_path_factory.mktemp(implementation)
        if implementation == 'tf215':
            tf215.python()  # Skips the module's comparisons where TF 2.15 cannot be installed.
        job = Job(root, implementation)
        codes = job.wait()
        job.kill()
        runs[implementation] = (job, codes)
    return runs


def test_every_task_exits_0_and_the_ps_and_workers_end_with_training(jobs):
    job, codes = jobs['compat_mts']
    assert codes == {task: 0 for task in TASKS}, job.report()
    reference, reference_codes = jobs['tf215']
    assert all(code == 0 for code in reference_codes.values()), reference.report()
    assert all(job.done(task)['event'] == 'done' for task in TASKS)


def test_checkpoints_are_the_chiefs_at_tf215s_steps_and_end_at_max_steps(jobs):
    job, _ = jobs['compat_mts']
    reference, _ = jobs['tf215']
    assert checkpoint_steps(job.model_dir) == [0, 20, 40, 60]
    assert max(checkpoint_steps(reference.model_dir)) in TF215_LAST_STEPS


def test_each_worker_reads_its_own_input_and_the_chief_and_ps_read_none(jobs):
    job, _ = jobs['compat_mts']
    batches = {task: job.stderr(task).count('input batch') for task in TASKS}
    assert batches['worker', 0] > 0 and batches['worker', 1] > 0, batches
    assert batches['chief', 0] == batches['ps', 0] == 0, batches
    assert batches['worker', 0] + batches['worker', 1] >= MAX_STEPS, batches


def test_the_evaluator_evaluates_the_final_checkpoint_and_exports_as_tf215(jobs):
    job, _ = jobs['compat_mts']
    reference, _ = jobs['tf215']
    for run, last_steps in ((job, [MAX_STEPS]), (reference, TF215_LAST_STEPS)):
        events = read_events(os.path.join(run.model_dir, 'eval'))
        assert max(step for step, _ in events['loss']) in last_steps, events.keys()
        assert os.listdir(os.path.join(run.model_dir, 'export', 'final')), run.report()
    ours = read_events(os.path.join(job.model_dir, 'eval'))
    theirs = read_events(os.path.join(reference.model_dir, 'eval'))
    assert sorted(ours) == sorted(theirs)
    assert 'Exiting evaluation, global_step=60 >= train max_steps=60' in job.stderr(('evaluator', 0))


def test_the_final_export_serves_the_trained_model(jobs):
    job, _ = jobs['compat_mts']
    export_base = os.path.join(job.model_dir, 'export', 'final')
    loaded = tf.saved_model.load(os.path.join(export_base, sorted(os.listdir(export_base))[-1]))
    example = tf.train.Example(
        features=tf.train.Features(
            feature={
                'a': tf.train.Feature(float_list=tf.train.FloatList(value=[0.9])),
                'b': tf.train.Feature(float_list=tf.train.FloatList(value=[0.8])),
            }
        )
    )
    signature = loaded.signatures['predict']
    outputs = signature(
        **{next(iter(signature.structured_input_signature[1])): tf.constant([example.SerializeToString()])}
    )
    assert 'class_ids' in outputs


def test_the_tasks_report_tf215s_cluster_properties(jobs):
    job, _ = jobs['compat_mts']
    reference, _ = jobs['tf215']
    for task in TASKS:
        if task == ('ps', 0):
            continue  # TF 2.15's ps never returns from train_and_evaluate.
        assert job.done(task) | {'result': None} == reference.done(task) | {'result': None}, task


PROPERTY_CASES = [
    {'cluster': {'chief': ['h:1'], 'worker': ['h:2', 'h:3'], 'ps': ['h:4']}, 'task': {'type': 'chief', 'index': 0}},
    {'cluster': {'chief': ['h:1'], 'worker': ['h:2', 'h:3'], 'ps': ['h:4']}, 'task': {'type': 'worker', 'index': 1}},
    {'cluster': {'chief': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4', 'h:5']}, 'task': {'type': 'ps', 'index': 1}},
    {'cluster': {'chief': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4']}, 'task': {'type': 'evaluator', 'index': 0}},
    {
        'cluster': {'chief': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4'], 'evaluator': ['h:9']},
        'task': {'type': 'evaluator', 'index': 0},
        'eval_session_master': 'grpc://elsewhere:1',
    },
    {
        'cluster': {'chief': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4'], 'evaluator': ['h:9']},
        'task': {'type': 'worker', 'index': 0},
    },
    {'cluster': {'master': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4']}, 'task': {'type': 'master', 'index': 0}},
    {
        'cluster': {'master': ['h:1'], 'worker': ['h:2'], 'ps': ['h:4']},
        'task': {'type': 'worker', 'index': 0},
        'session_master': 'grpc://sm:1',
    },
    {'cluster': {'chief': ['h:1']}, 'task': {'type': 'chief', 'index': 0}},
    {'cluster': {'chief': ['h:1'], 'worker': ['h:2']}, 'task': {'type': 'worker', 'index': 0}},
    {'task': {'type': 'worker', 'index': 0}, 'session_master': 'grpc://a:1', 'eval_session_master': 'grpc://b:1'},
]
PROPERTIES_PROGRAM = """
import json, os, sys
if sys.argv[1] == 'tf215':
    import tensorflow as tf
    RunConfig = tf.estimator.RunConfig
else:
    import compat_mts.estimator
    RunConfig = compat_mts.estimator.RunConfig
found = []
for case in json.loads(sys.argv[2]):
    os.environ['TF_CONFIG'] = json.dumps(case)
    config = RunConfig()
    filters = None if config.session_config is None else list(config.session_config.device_filters)
    found.append([config.cluster_spec.as_dict(), config.task_type, config.task_id, config.is_chief, config.master,
                  config.evaluation_master, config.num_ps_replicas, config.num_worker_replicas,
                  config.global_id_in_cluster, filters])
print(json.dumps(found))
"""


def test_run_config_computes_tf215s_cluster_properties_for_each_task():
    cases = json.dumps(PROPERTY_CASES)
    reference = tf215.run(PROPERTIES_PROGRAM, 'tf215', cases)
    assert reference.returncode == 0, reference.stderr[-3000:]
    ours = support.run_python(PROPERTIES_PROGRAM, 'compat_mts', cases)
    assert ours.returncode == 0, ours.stderr[-3000:]
    expected, found = support.last_json_line(reference.stdout), support.last_json_line(ours.stdout)
    assert len(found) == len(PROPERTY_CASES)
    for case, theirs, mine in zip(PROPERTY_CASES, expected, found):
        assert mine == theirs, case


LOST_TASK_BOUND_SECS = 60  # What the issue promises: every task ends within it when a ps task is lost.
LONG = 10**6  # A max_steps the job does not reach while a test breaks it.


def test_a_worker_killed_mid_training_leaves_the_chief_to_reach_max_steps(tmp_path):
    job = Job(tmp_path, max_steps=200)
    try:
        assert job.wait_for_checkpoint(20) < 200
        job.kill([('worker', 1)])
        codes = job.wait([('chief', 0), ('worker', 0), ('ps', 0), ('evaluator', 0)])
    finally:
        job.kill()
    assert set(codes.values()) == {0}, job.report()
    assert max(checkpoint_steps(job.model_dir)) == 200


def test_a_lost_ps_task_ends_every_task_with_an_error_naming_it_and_a_rerun_resumes(tmp_path):
    job = Job(tmp_path / 'first', max_steps=LONG)
    try:
        job.wait_for_checkpoint(20)
        job.kill([('ps', 0)])
        lost_at = time.monotonic()
        others = [task for task in TASKS if task != ('ps', 0)]
        codes = job.wait(others, timeout=LOST_TASK_BOUND_SECS + 30)
    finally:
        job.kill()
    assert all(code not in (None, 0) for code in codes.values()), (codes, job.report())
    assert max(job.ended_at[task] - lost_at for task in others) < LOST_TASK_BOUND_SECS, job.report()
    for task in [('worker', 0), ('worker', 1), ('evaluator', 0)]:
        assert 'LostTaskError: The ps task /job:ps/task:0' in job.stderr(task), job.report()
    assert 'ParameterServerError' in job.stderr(('chief', 0)) or 'parameter server' in job.stderr(('chief', 0))
    last = max(checkpoint_steps(job.model_dir))
    rerun = Job(tmp_path / 'second', max_steps=last + 40, model_dir=job.model_dir)
    assert set(rerun.run_to_end().values()) == {0}, rerun.report()
    assert f'Restoring parameters from {job.model_dir}/model.ckpt-{last}' in rerun.stderr(('chief', 0))
    assert max(checkpoint_steps(job.model_dir)) == last + 40


def test_a_chief_and_an_evaluator_killed_and_restarted_resume_from_the_last_checkpoint(tmp_path):
    job = Job(tmp_path, max_steps=240)
    try:
        job.wait_for_checkpoint(20)
        job.kill([('chief', 0), ('evaluator', 0)])
        last = max(checkpoint_steps(job.model_dir))
        assert last < 240
        job.start(('chief', 0))
        job.start(('evaluator', 0))
        codes = job.wait()
    finally:
        job.kill()
    assert set(codes.values()) == {0}, job.report()
    assert f'Restoring parameters from {job.model_dir}/model.ckpt-' in job.stderr(('chief', 0))
    assert max(checkpoint_steps(job.model_dir)) == 240
    evaluated = [step for step, _ in read_events(os.path.join(job.model_dir, 'eval'))['loss']]
    assert evaluated[-1] == 240


@pytest.mark.parametrize('kind', ['custom', 'tpu'])
def test_a_custom_model_fn_and_a_tpu_estimator_train_on_the_cluster(tmp_path, kind):
    job = Job(tmp_path, kind=kind, max_steps=40)
    assert set(job.run_to_end().values()) == {0}, job.report()
    assert checkpoint_steps(job.model_dir)[-1] == 40
    assert job.worker_batches() >= 40
    evaluated = read_events(os.path.join(job.model_dir, 'eval'))
    assert max(step for step, _ in evaluated['loss']) == 40


def test_a_v1_parameter_server_strategy_in_train_distribute_trains_on_the_job(tmp_path):
    job = Job(tmp_path, max_steps=40, env={'JOB_TRAIN_DISTRIBUTE': 'ps'})
    assert set(job.run_to_end().values()) == {0}, job.report()
    assert checkpoint_steps(job.model_dir)[-1] == 40
    assert job.worker_batches() >= 40


# With a long throttle, the evaluation of the last checkpoint runs in the training session's `end()` (the
# listener's), where that session's parameter-server deployment is in effect: it must still run in the master's
# process. With 1 s, it runs there or after the checkpoint's save, as the machine's speed has it.
@pytest.mark.parametrize('throttle_secs', ['1', '600'])
def test_a_legacy_master_job_trains_and_evaluates_on_the_master(tmp_path, throttle_secs):
    tasks = (('ps', 0), ('worker', 0), ('worker', 1), ('master', 0))
    job = Job(tmp_path, max_steps=40, tasks=tasks, chief_job='master', env={'JOB_THROTTLE_SECS': throttle_secs})
    assert set(job.run_to_end().values()) == {0}, job.report()
    assert job.done(('master', 0))['is_chief'] is True
    assert checkpoint_steps(job.model_dir)[-1] == 40
    evaluated = read_events(os.path.join(job.model_dir, 'eval'))
    assert max(step for step, _ in evaluated['loss']) == 40
    assert os.listdir(os.path.join(job.model_dir, 'export', 'final'))
