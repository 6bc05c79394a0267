"""`compat-mts upgrade` on four public v1 trainers, run: the upgraded programs train with no further edit, and
`--verify` shows them equal to v1 graph mode step by step.

The trainers: the tensorflow/models CIFAR-10 tutorial (`tests/upgrade_samples/cifar10_train.py`, TensorFlow 1.x
names, so `tf_upgrade_v2` runs first), Horovod's `tensorflow_mnist.py` shape (`tests/v1_programs/mnist_layers_v1.py`,
`tf.layers` on tf-keras), an official/r1 mnist Estimator program (`tests/upgrade_samples/mnist_estimator.py`, whose
v1 side runs on TensorFlow 2.15, the last with `tf.estimator`), a premade `DNNRegressor` program
(`tests/upgrade_samples/dnn_regression.py`, also on TensorFlow 2.15: it trains through `tf.gradients`), a
cloudml-samples census trainer of two files (`tests/upgrade_samples/census_trainer/`, upgraded and verified as a
directory), and a ps/worker trainer
(`tests/upgrade_samples/mnist_ps.py`), run as two real clusters on localhost: v1's (ps, worker) in graph mode and
the upgraded one (chief, ps, worker). Each `--verify` starts two processes; the clusters five.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from compat_mts.cli import upgrade
from compat_mts.cli.upgrade import verify as upgrade_verify
from tests import support, tf215
from tests.test_distribute_cluster import free_ports, worker_json_lines

SAMPLES = os.path.join(support.TESTS_DIR, 'upgrade_samples')
V1_PROGRAMS = os.path.join(support.TESTS_DIR, 'v1_programs')
STEPS = 10
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def _verify(tmp_path, script: str, args: str, *extra: str) -> tuple[subprocess.CompletedProcess, str]:
    report_dir = str(tmp_path / 'report')
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
    env.pop('PYTHONDONTWRITEBYTECODE', None)  # As on a user's machine: what --verify writes into the tree shows.
    result = support.run(
        [
            sys.executable,
            '-m',
            'compat_mts',
            'upgrade',
            script,
            '--verify',
            str(STEPS),
            '--args',
            args,
            '--report-dir',
            report_dir,
            *extra,
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    return result, report_dir


def _side(report_dir: str, name: str) -> dict:
    with open(os.path.join(report_dir, f'{name}.json'), encoding='utf-8') as file:
        return json.load(file)


def _report(stdout: str) -> list[str]:
    """The report's lines, from the verdict on."""
    lines = stdout.splitlines()
    return lines[[index for index, line in enumerate(lines) if line.startswith('verifying ')][0] + 1 :]


@pytest.mark.slow
@pytest.mark.parametrize(
    'script, args, extra',
    [
        (os.path.join(SAMPLES, 'cifar10_train.py'), '{dir}/train 30', ()),
        (os.path.join(V1_PROGRAMS, 'mnist_layers_v1.py'), '{dir}/checkpoints 30', ()),
        (os.path.join(SAMPLES, 'mnist_estimator.py'), '{dir}/model 20', ('tf215',)),
        (os.path.join(SAMPLES, 'dnn_regression.py'), '{dir}/model 20', ('tf215',)),
        (
            os.path.join(SAMPLES, 'census_trainer'),
            '{dir}/job 30',
            ('--main', os.path.join(SAMPLES, 'census_trainer', 'task.py')),
        ),
    ],
    ids=['cifar10_tutorial', 'horovod_mnist', 'r1_mnist_estimator', 'premade_dnn_regressor', 'census_two_files'],
)
def test_verify_shows_the_upgraded_trainer_equal_to_v1_graph_mode_step_by_step(tmp_path, script, args, extra):
    extra = ('--v1-python', tf215.python()) if extra == ('tf215',) else extra
    result, report_dir = _verify(tmp_path, script, args, *extra)
    assert result.returncode == 0, f'{result.stdout[-6000:]}\n{result.stderr[-3000:]}'
    report = _report(result.stdout)
    assert report[0] == 'verdict: the same training', result.stdout[-3000:]
    assert report[1].startswith('losses: equal at every step')
    v1, upgraded = _side(report_dir, 'v1'), _side(report_dir, 'upgraded')
    assert v1['error'] is None and upgraded['error'] is None
    assert len(v1['losses']) == len(upgraded['losses']) == STEPS
    np.testing.assert_allclose(upgraded['losses'], v1['losses'], rtol=upgrade_verify.RTOL, atol=upgrade_verify.ATOL)
    assert len(set(v1['losses'])) > 1, 'the loss moves: the steps trained'
    with open(os.path.join(report_dir, 'losses.txt'), encoding='utf-8') as file:
        table = [line.split() for line in file.read().splitlines()[1:]]
    assert [float(row[1]) for row in table] == pytest.approx(v1['losses'], rel=1e-7)
    assert [row[0] for row in table] == [str(step) for step in range(1, STEPS + 1)]
    assert not any(line.split()[:1] == ['1'] for line in report), 'the step table is in losses.txt only'
    assert 'checkpoint variables: ' in result.stdout and ', same shapes and values' in result.stdout
    with open(os.path.join(report_dir, 'loss.png'), 'rb') as file:
        assert file.read(8) == PNG_SIGNATURE
    if os.path.isdir(script):
        names = sorted(name for name in os.listdir(script) if name.endswith('.py'))
        ran = [os.path.join(report_dir, 'upgraded_tree', name) for name in names]
        assert [os.path.basename(path) for path in ran] == ['model.py', 'task.py']
    else:
        ran = [os.path.join(report_dir, 'upgraded_' + os.path.basename(script))]
    for path in ran:
        with open(path, encoding='utf-8') as file:
            assert upgrade.upgrade_source(file.read()).changed is False  # What ran is a fixed point of the upgrade.


@pytest.mark.slow
def test_verify_of_one_file_of_a_program_of_two_says_its_other_module_ran_unupgraded_and_to_pass_the_directory(
    tmp_path,
):
    tree = shutil.copytree(os.path.join(SAMPLES, 'census_trainer'), tmp_path / 'census_trainer')
    result, _ = _verify(tmp_path, str(tree / 'task.py'), '{dir}/job 30')
    assert result.returncode == 1, result.stderr[-3000:]
    report = _report(result.stdout)
    assert report[0] == 'verdict: not compared'
    assert report[1].startswith('why: the upgraded run failed (exit status 1): AttributeError: ')
    assert report[2].startswith('pass: the directory of the program (upgrade DIR --verify N --main FILE)')
    assert str(tree / 'model.py') + ', which ran as it was' in report[2]
    assert sorted(os.listdir(tree)) == ['model.py', 'task.py']  # Nothing written into the user's tree.


def test_a_side_that_failed_or_recorded_nothing_is_not_compared_and_the_report_says_so_first():
    """No process: the report of two sides as `verify` reads them, one failed, then one that recorded no loss."""
    variables = {'dense/kernel': np.ones((3, 2), np.float32)}
    failed = upgrade_verify.Side('v1', [], {}, set(), 1, "AttributeError: module 'x' has no attribute 'y'", 'log\n')
    upgraded = upgrade_verify.Side('upgraded', [1.0, 0.5], variables, {'loss'}, 0, None, '', ['tf.gradients'])
    comparison = upgrade_verify.Comparison(failed, upgraded)
    assert not comparison.compared and not comparison.equal
    lines = comparison.format('losses.txt').splitlines()
    assert lines[:2] == [
        'verdict: not compared',
        "why: the v1 graph mode run failed (exit status 1): AttributeError: module 'x' has no attribute 'y'",
    ]
    assert lines[2].startswith('pass: ')
    assert not [line for line in lines if 'checkpoint variables' in line or 'summary tags' in line]
    silent = upgrade_verify.Side('v1', [], variables, {'loss'}, 0, None, '', [])
    lines = upgrade_verify.Comparison(silent, upgraded).format().splitlines()
    assert lines[0] == 'verdict: not compared'
    assert lines[1].startswith('why: the v1 graph mode run ended but recorded no loss')
    assert lines[2].startswith('pass: --args')


LEARNING_PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

with tf.Graph().as_default():
    x = tf.constant(np.linspace(-1, 1, 32, dtype=np.float32).reshape(32, 1))
    w = tf.compat.v1.get_variable('w', [1, 1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 3 * x), name='loss')
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss, global_step=step)
    with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
"""


@pytest.mark.slow
def test_verify_says_so_when_the_upgraded_program_trains_differently(tmp_path):
    original = tmp_path / 'regression.py'
    original.write_text(LEARNING_PROGRAM.replace('LEARNING_RATE', '0.1'))
    upgraded = upgrade.upgrade_source(original.read_text(), str(original)).upgraded
    assert 'mts.MonitoredTrainingSession' in upgraded
    comparison = upgrade_verify.verify(
        str(original), upgraded.replace('0.1', '0.2'), 5, ['{dir}/ckpt'], report_dir=str(tmp_path / 'report')
    )
    assert len(comparison.v1.losses) == len(comparison.upgraded.losses) == 5
    assert comparison.v1.losses[0] == pytest.approx(comparison.upgraded.losses[0])  # Same start, then apart.
    assert not comparison.losses_equal and not comparison.variables_equal and not comparison.equal
    lines = comparison.format().splitlines()
    assert lines[:2] == [
        'verdict: NOT the same training',
        f'first differing step: 2 (v1 graph mode {comparison.v1.losses[1]:.8g}, '
        f'upgraded {comparison.upgraded.losses[1]:.8g})',
    ]
    assert lines[2].startswith('losses: DIFFER') and "    values differ: ['ckpt/w']" in lines


@pytest.mark.slow
def test_verify_does_not_vouch_for_a_training_where_nothing_trained(tmp_path):
    """Equal losses that never change show no training: an optimizer that updates nothing on both sides."""
    original = tmp_path / 'frozen.py'
    original.write_text(LEARNING_PROGRAM.replace('LEARNING_RATE', '0.0'))
    upgraded = upgrade.upgrade_source(original.read_text(), str(original)).upgraded
    comparison = upgrade_verify.verify(str(original), upgraded, 4, ['{dir}/ckpt'], report_dir=str(tmp_path / 'report'))
    assert comparison.v1.losses == comparison.upgraded.losses and len(set(comparison.v1.losses)) == 1
    assert comparison.losses_equal and not comparison.trained and not comparison.equal
    text = comparison.format()
    assert 'losses: one value at every step on both sides: nothing trained' in text
    assert text.startswith('verdict: NOT shown: nothing trained on either side\n')


def _start(command: list[str], env: dict, log) -> subprocess.Popen:
    return support.popen(command, env=env, cwd=support.REPO_ROOT, stdout=subprocess.PIPE, stderr=log, text=True)


def _cluster_run(tmp_path, name: str, jobs: dict, script: list[str], runner: str, tf1: bool) -> list[float]:
    """Starts the cluster's serving tasks, then its training task (the last job), and returns its losses."""
    ports = iter(free_ports(sum(len(tasks) for tasks in jobs.values())))
    cluster = {job: [f'localhost:{next(ports)}' for _ in tasks] for job, tasks in jobs.items()}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', CLUSTER=json.dumps(cluster), TF_ENABLE_ONEDNN_OPTS='0')
    env['PYTHONPATH'] = support.REPO_ROOT
    if tf1:
        env['COMPAT_MTS_PROBE_TF1'] = '1'
    checkpoint_dir = str(tmp_path / name / 'checkpoints')
    out = str(tmp_path / name / 'losses.json')
    os.makedirs(os.path.dirname(out))
    *serving, (train_job, train_index) = [(job, index) for job, tasks in jobs.items() for index in tasks]
    log = open(tmp_path / name / 'tasks.log', 'w', encoding='utf-8')  # noqa: SIM115
    servers = [
        _start([sys.executable, *script, job, str(index), checkpoint_dir, str(STEPS)], env, log)
        for job, index in serving
    ]
    try:
        trainer = support.run(
            [
                sys.executable,
                upgrade_verify.PROBE,
                runner,
                out,
                str(STEPS),
                SAMPLES,
                script[-1],
                train_job,
                str(train_index),
                checkpoint_dir,
                str(STEPS),
            ],
            env=env,
            cwd=support.REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        for server in servers:
            server.kill()
            server.wait()
        log.close()
    assert trainer.returncode == 0, trainer.stderr[-5000:]
    assert support.latest_checkpoint_step(checkpoint_dir) == STEPS
    return json.loads(trainer.stdout.splitlines()[-1])['losses']


@pytest.mark.slow
def test_the_upgraded_ps_worker_trainer_runs_on_a_chief_ps_worker_cluster_with_v1s_losses(tmp_path):
    original = os.path.join(SAMPLES, 'mnist_ps.py')
    [result] = upgrade.upgrade_files([original])
    upgraded = tmp_path / 'upgraded_mnist_ps.py'
    upgraded.write_text(result.upgraded)
    assert [note.text for note in result.notes if not note.done and "'chief' job" in note.text]
    v1_losses = _cluster_run(
        tmp_path,
        'v1',
        {'ps': [0], 'worker': [0]},
        [upgrade_verify.PROBE, 'v1', os.devnull, '0', SAMPLES, original],
        'v1',
        tf1=True,
    )
    compat_losses = _cluster_run(
        tmp_path, 'upgraded', {'ps': [0], 'worker': [0], 'chief': [0]}, [str(upgraded)], 'upgraded', tf1=False
    )
    assert len(v1_losses) == len(compat_losses) == STEPS
    np.testing.assert_allclose(compat_losses, v1_losses, rtol=1e-5, atol=1e-6)
    assert compat_losses[-1] < compat_losses[0]


@pytest.mark.slow
def test_verify_of_an_estimator_program_without_tf_estimator_says_first_it_did_not_compare_and_what_to_pass(
    tmp_path,
):
    """The premade `DNNRegressor` program, its v1 side on TensorFlow 2.21 (no `tf.estimator`): that side fails,
    so nothing is compared, and the report says so, why, and which interpreter to give, before anything else."""
    result, _ = _verify(tmp_path, os.path.join(SAMPLES, 'dnn_regression.py'), '{dir}/model 2')
    assert result.returncode == 1, result.stderr[-3000:]
    report = _report(result.stdout)
    assert report[0] == 'verdict: not compared'
    assert report[1].startswith('why: the v1 graph mode run failed (exit status 1): AttributeError: ')
    assert "has no attribute 'estimator'" in report[1]
    assert report[2].startswith('pass: --v1-python PYTHON')
    assert not [line for line in report if line.startswith(('checkpoint variables', 'summary tags', 'losses'))]


HOROVOD_STEPS = 12


def _horovod_workers(tmp_path, script: str, workers: int) -> list[dict]:
    """Runs `script CHECKPOINT_DIR HOROVOD_STEPS` once per worker (one process each; with TF_CONFIG when several)
    and returns each worker's JSON line."""
    return worker_json_lines(
        lambda index: [sys.executable, script, str(tmp_path / f'checkpoints_{index}'), str(HOROVOD_STEPS)], workers
    )


@pytest.fixture(scope='module')
def upgraded_horovod_mnist(tmp_path_factory) -> str:
    [result] = upgrade.upgrade_files([os.path.join(SAMPLES, 'horovod_mnist.py')])
    path = tmp_path_factory.mktemp('horovod') / 'horovod_mnist.py'
    path.write_text(result.upgraded, encoding='utf-8')
    return str(path)


@pytest.mark.slow
def test_the_upgraded_horovod_trainer_runs_as_one_worker_without_tf_config(tmp_path, upgraded_horovod_mnist):
    [worker] = _horovod_workers(tmp_path, upgraded_horovod_mnist, 1)
    assert (worker['rank'], worker['size']) == (0, 1)
    assert len(worker['losses']) == HOROVOD_STEPS
    assert np.mean(worker['losses'][-3:]) < np.mean(worker['losses'][:3])
    assert support.latest_checkpoint_step(str(tmp_path / 'checkpoints_0')) == HOROVOD_STEPS


@pytest.mark.slow
def test_the_upgraded_horovod_trainer_trains_one_model_on_two_workers_with_tf_config(tmp_path, upgraded_horovod_mnist):
    """Two processes on loopback ports: Horovod's rank, size and step count, one set of weights from the first
    step on (rank 0's, broadcast; the initializers are unseeded), different batches, checkpoints on rank 0 only."""
    first, second = _horovod_workers(tmp_path, upgraded_horovod_mnist, 2)
    assert [(first['rank'], first['size']), (second['rank'], second['size'])] == [(0, 2), (1, 2)]
    assert len(first['losses']) == len(second['losses']) == HOROVOD_STEPS // 2
    np.testing.assert_allclose(first['weight_sums'], second['weight_sums'], rtol=1e-5, atol=1e-5)
    assert len(set(first['weight_sums'])) == HOROVOD_STEPS // 2, 'the weights move at every step'
    assert first['losses'] != second['losses'], 'each worker trains on batches of its own'
    assert support.latest_checkpoint_step(str(tmp_path / 'checkpoints_0')) == HOROVOD_STEPS // 2
    assert not os.path.exists(tmp_path / 'checkpoints_1')


KERAS_OPTIMIZER_PROGRAM = """\
import os
import sys

os.environ['TF_USE_LEGACY_KERAS'] = '1'

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

with tf.Graph().as_default():
    x = tf.constant(np.linspace(-1, 1, 32, dtype=np.float32).reshape(32, 1))
    w = tf.compat.v1.get_variable('w', [1, 1], initializer=tf.compat.v1.zeros_initializer())
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 3 * x), name='loss')
    optimizer = tf.keras.optimizers.legacy.SGD(0.1)
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.group(optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w])), step.assign_add(1))
    with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
"""


@pytest.mark.slow
def test_verify_records_the_loss_a_keras_optimizer_trains_on_through_a_gradient_tape(tmp_path):
    original = tmp_path / 'keras_optimizer.py'
    original.write_text(KERAS_OPTIMIZER_PROGRAM)
    upgraded = upgrade.upgrade_source(original.read_text(), str(original)).upgraded
    comparison = upgrade_verify.verify(str(original), upgraded, 5, ['{dir}/ckpt'], report_dir=str(tmp_path / 'report'))
    assert len(comparison.v1.losses) == len(comparison.upgraded.losses) == 5
    assert comparison.v1.losses[-1] < comparison.v1.losses[0]
    np.testing.assert_allclose(comparison.upgraded.losses, comparison.v1.losses, rtol=upgrade_verify.RTOL)
    assert comparison.equal, comparison.format()


@pytest.mark.slow
def test_the_upgraded_horovod_trainer_as_one_worker_trains_as_its_one_process_twin_in_v1_graph_mode(
    tmp_path, upgraded_horovod_mnist
):
    """No Horovod runs here, nor a stand-in for it: the v1 side is the trainer written out by hand for one process
    (`hvd.size()` 1), run in v1 graph mode; the other side is the upgraded Horovod trainer, as one worker."""
    twin = os.path.join(V1_PROGRAMS, 'horovod_mnist_single_v1.py')
    with open(upgraded_horovod_mnist, encoding='utf-8') as file:
        upgraded = file.read()
    comparison = upgrade_verify.verify(
        twin, upgraded, STEPS, ['{dir}/checkpoints', '30'], report_dir=str(tmp_path / 'report'), tf1=True
    )
    assert comparison.v1.error is None and comparison.upgraded.error is None, comparison.format()
    assert len(comparison.v1.losses) == len(comparison.upgraded.losses) == STEPS
    assert len(set(comparison.v1.losses)) > 1, 'the loss moves: the steps trained'
    assert comparison.equal, comparison.format()
