"""Checkpoint faults: killed processes, corrupt or truncated checkpoints (issue bars on faults)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from tests import support
from tests.models import FEATURES, TARGETS, Regression
from tests.support import REPO_ROOT, checkpoint_steps, read_events

_TRAIN_UNTIL = os.path.join(REPO_ROOT, 'tests', 'train_until.py')


def _train(directory: str, last_step: int) -> Regression:
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold(),
        save_checkpoint_steps=2,
        save_summaries_steps=0,
        hooks=[mts.StopAtStepHook(last_step=last_step)],
    ) as session:
        while not session.should_stop():
            session.run(model.step)
    return model


def _restored_step(directory: str) -> int:
    mts.reset_global_step()
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold(), save_checkpoint_secs=0
    ) as session:
        return int(session.run(model.global_step))


@pytest.mark.parametrize(
    'damage',
    ['truncate_data', 'garble_data', 'flip_a_data_byte', 'flip_an_index_byte', 'truncate_index', 'delete_data'],
)
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, tf_logs, damage):
    directory = str(tmp_path)
    _train(directory, last_step=5)
    assert checkpoint_steps(directory) == [0, 2, 4, 5]
    data = tmp_path / 'model.ckpt-5.data-00000-of-00001'
    index = tmp_path / 'model.ckpt-5.index'
    if damage == 'truncate_data':
        data.write_bytes(data.read_bytes()[:10])
    elif damage == 'garble_data':
        data.write_bytes(bytes(255 - b for b in data.read_bytes()))
    elif damage in ('flip_a_data_byte', 'flip_an_index_byte'):
        damaged = data if damage == 'flip_a_data_byte' else index
        content = bytearray(damaged.read_bytes())
        content[len(content) // 2] ^= 0xFF
        damaged.write_bytes(bytes(content))
    elif damage == 'truncate_index':
        index.write_bytes(index.read_bytes()[:20])
    else:
        data.unlink()
    assert _restored_step(directory) == 4
    warnings = [m for m in tf_logs.messages() if m.startswith('Could not restore checkpoint')]
    assert warnings and 'model.ckpt-5' in warnings[0]


def test_when_no_checkpoint_loads_the_session_refuses_to_start_afresh_over_them(tmp_path):
    directory = str(tmp_path)
    _train(directory, last_step=1)
    for name in os.listdir(directory):
        if name.startswith('model.ckpt-') and name.endswith('.index'):
            (tmp_path / name).write_bytes(b'')
    files = {
        name: (tmp_path / name).read_bytes()
        for name in os.listdir(directory)
        if name != 'graph.pbtxt' and not name.startswith('events.')
    }
    with pytest.raises(
        mts.DamagedCheckpointsError,
        match=r'No checkpoint of .* could be restored: '
        r'model\.ckpt-1 \(\w+\), model\.ckpt-0',
    ):
        _restored_step(directory)
    assert {name: (tmp_path / name).read_bytes() for name in files} == files  # Nothing written over them.


def _start(directory: str, last_step: int) -> subprocess.Popen:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT)
    return support.popen(
        [sys.executable, _TRAIN_UNTIL, directory, str(last_step)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )


def _checkpoint_values(directory: str) -> tuple[int, list]:
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(directory))
    step = int(reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE'))
    return step, reader.get_tensor('w/.ATTRIBUTES/VARIABLE_VALUE').tolist()


@pytest.mark.slow
def test_sigkill_at_random_moments_resumes_from_the_newest_complete_checkpoint(tmp_path):
    directory = str(tmp_path)
    last_step = 100  # Past the three kills (each at most 25 steps after the last restore), with steps to resume.
    rng = random.Random(7)
    restored_steps = []
    for _ in range(3):
        expected = _checkpoint_values(directory) if os.path.exists(tmp_path / 'checkpoint') else (0, None)
        process = _start(directory, last_step)
        first = process.stdout.readline().split(' ', 2)
        assert first[0] == 'restored', first
        restored_step = int(first[1])
        assert restored_step == expected[0]
        if expected[1] is not None:
            np.testing.assert_array_equal(json.loads(first[2]), expected[1])
        restored_steps.append(restored_step)
        # Past a random step, then at a random moment (mid-step, mid-save or between): counted in steps, not
        # seconds, so that a slow machine still gets past the first checkpoint (step 2) before the kill.
        kill_after_step = restored_step + rng.randint(2, 25)
        for line in process.stdout:
            if int(line.split()[1]) >= kill_after_step:
                break
        time.sleep(rng.uniform(0.0, 0.1))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()
    expected_final = _checkpoint_values(directory)[0]
    process = _start(directory, last_step)
    output = process.communicate(timeout=120)[0].split('\n')
    assert process.returncode == 0
    restored_final = int(output[0].split()[1])
    assert restored_final == expected_final
    assert output[-2] == f'step {last_step}'
    assert restored_steps == sorted(restored_steps)
    assert restored_steps[-1] > 0
    assert _checkpoint_values(directory)[0] == last_step
    loss_steps = [step for step, _ in read_events(directory)['loss']]
    assert loss_steps[-1] == last_step
    assert set(range(restored_final + 1, last_step + 1)) <= set(loss_steps)


_V1_PROGRAM = """
import sys
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from tests.models import FEATURES, TARGETS
gs = tf.compat.v1.train.get_or_create_global_step()
w = tf.compat.v1.get_variable('w', initializer=np.zeros([3, 1], np.float32))
loss = tf.reduce_mean(tf.square(tf.matmul(FEATURES, w) - TARGETS))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
with tf.compat.v1.train.MonitoredTrainingSession(
        checkpoint_dir=sys.argv[1], hooks=[tf.compat.v1.train.StopAtStepHook(last_step=3)]) as session:
    while not session.should_stop():
        session.run(train_op)
"""


@pytest.mark.slow
def test_a_checkpoint_of_the_real_v1_session_is_resumed(tmp_path):
    from tests.support import run_python

    directory = str(tmp_path)
    result = run_python(_V1_PROGRAM, directory)
    assert result.returncode == 0, result.stderr[-2000:]
    reference = Regression()
    for _ in range(3):
        reference.step()
    mts.reset_global_step()
    model = Regression()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold(), hooks=[mts.StopAtStepHook(num_steps=2)]
    ) as session:
        np.testing.assert_allclose(model.w.numpy(), reference.w.numpy(), rtol=1e-6)
        assert int(model.global_step.numpy()) == 3
        while not session.should_stop():
            session.run(model.step)
    assert checkpoint_steps(directory) == [0, 3, 5]


def _keras_program(seed_weights):
    """A Keras model trained with Adam, whose slots the first step creates (inside the traced step)."""
    global_step = mts.get_or_create_global_step()
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1, kernel_initializer='zeros')])
    model.layers[0].kernel.assign(seed_weights)
    optimizer = tf.keras.optimizers.Adam(0.05)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(FEATURES) - TARGETS))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        global_step.assign_add(1)
        return {'loss': loss}

    return model, optimizer, step, mts.Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=optimizer))


def _train_to(directory, last_step, seed_weights):
    mts.reset_global_step()
    model, optimizer, step, scaffold = _keras_program(seed_weights)
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=scaffold,
        save_checkpoint_steps=5,
        hooks=[mts.StopAtStepHook(last_step=last_step)],
    ) as session:
        while not session.should_stop():
            session.run(step)
    return model.get_weights(), int(optimizer.iterations.numpy())


def test_a_resumed_keras_optimizer_gets_its_slots_back_and_the_restored_checkpoint_is_kept(tmp_path, tf_logs):
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.DEBUG)  # The kept checkpoint's line is at DEBUG.
    seed_weights = np.array([[0.3], [-0.2], [0.1]], np.float32)
    uninterrupted, _ = _train_to(str(tmp_path / 'once'), 20, seed_weights)
    _train_to(str(tmp_path / 'twice'), 10, seed_weights)
    restored = tf.train.load_checkpoint(str(tmp_path / 'twice' / 'model.ckpt-10'))
    slots_before = {
        name: restored.get_tensor(name)
        for name in restored.get_variable_to_shape_map()
        if name.startswith('optimizer/_variables/')
    }
    assert slots_before  # Adam's moments were saved.
    resumed, iterations = _train_to(str(tmp_path / 'twice'), 20, seed_weights)
    assert iterations == 20
    for resumed_weight, uninterrupted_weight in zip(resumed, uninterrupted):
        np.testing.assert_allclose(resumed_weight, uninterrupted_weight, rtol=1e-6)
    kept = tf.train.load_checkpoint(str(tmp_path / 'twice' / 'model.ckpt-10'))
    for name, value in slots_before.items():
        np.testing.assert_array_equal(kept.get_tensor(name), value)
    debug = tf_logs.messages(tf.compat.v1.logging.DEBUG)  # v1 printed no such lines: they are at DEBUG.
    assert any(
        line.endswith('model.ckpt-10 holds what this session restored; its files are kept as they are.')
        for line in debug
    )
    assert any('model.ckpt-10 have no object of the program yet' in line for line in debug)
    assert not any('have no object of the program yet' in line for line in tf_logs.messages(tf.compat.v1.logging.INFO))


@pytest.mark.parametrize(
    'value',
    [
        'optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE',
        'optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE',
    ],
)
def test_a_flipped_byte_in_any_value_of_the_newest_data_file_falls_back_to_the_previous_checkpoint(
    tmp_path, tf_logs, value
):
    """Adam's moments are read only when the first step creates them: their checksums are checked at restore."""
    seed_weights = np.array([[0.3], [-0.2], [0.1]], np.float32)
    uninterrupted, _ = _train_to(str(tmp_path / 'once'), 20, seed_weights)
    _train_to(str(tmp_path / 'twice'), 10, seed_weights)
    data = tmp_path / 'twice' / 'model.ckpt-10.data-00000-of-00001'
    content = bytearray(data.read_bytes())
    saved = tf.train.load_checkpoint(str(tmp_path / 'twice' / 'model.ckpt-10')).get_tensor(value).tobytes()
    offset = content.find(saved)
    assert offset >= 0 and content.find(saved, offset + 1) == -1
    content[offset + 1] ^= 0x01
    data.write_bytes(bytes(content))
    resumed, iterations = _train_to(str(tmp_path / 'twice'), 20, seed_weights)
    assert iterations == 20
    for resumed_weight, uninterrupted_weight in zip(resumed, uninterrupted):
        np.testing.assert_allclose(resumed_weight, uninterrupted_weight, rtol=1e-6)
    warnings = [m for m in tf_logs.messages() if m.startswith('Could not restore checkpoint')]
    assert len(warnings) == 1 and 'model.ckpt-10.data-00000-of-00001' in warnings[0], warnings
    restored = [m for m in tf_logs.messages() if m.startswith('Restoring parameters from')]
    assert [os.path.basename(m) for m in restored[-2:]] == ['model.ckpt-10', 'model.ckpt-5']
