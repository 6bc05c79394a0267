"""v1 layers on tf-keras: graph code with `tf.compat.v1.layers` runs on compat_mts under `TF_USE_LEGACY_KERAS=1`.

Keras 3, the `tf.keras` of TensorFlow 2.16 and later, has no `tf.compat.v1.layers` (nor `tf.compat.v1.nn.rnn_cell`);
tf-keras (`compat-mts[legacy]`) has, and TensorFlow routes them to it when `TF_USE_LEGACY_KERAS=1` is set before it
is imported. `tf.compat.v1.losses` and `tf.compat.v1.metrics` are TensorFlow's own and work either way.

The reference is a trainer shaped like Horovod's `tensorflow_mnist.py` (`tests/v1_programs/mnist_layers_v1.py`) in
real v1 graph mode, against its stage-1 twin (`mnist_layers_compat.py`) on compat_mts: same data, same seeds, and
the same losses, accuracies, checkpoints and `LoggingTensorHook` lines. Then a `wrap_graph` program that mixes v1
layers, tf-keras layers and a tf-keras `model.fit`, and the errors `wrap_graph` gives without the set-up. Every
program runs in its own process, since the Keras that TensorFlow uses is chosen once per process.
"""

from __future__ import annotations

import concurrent.futures
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests.support import REPO_ROOT, checkpoint_steps, last_json_line, run_python

pytestmark = pytest.mark.slow  # Every test reads programs run under TF_USE_LEGACY_KERAS=1, in processes.

_PROGRAMS = os.path.join(REPO_ROOT, 'tests', 'v1_programs')
_LEGACY_KERAS = {'TF_USE_LEGACY_KERAS': '1'}
_KERAS_3 = {'TF_USE_LEGACY_KERAS': '0'}  # TensorFlow's default: only 'true', 'True' and '1' switch it on.
_HOOK_LINE = re.compile(r'^INFO:tensorflow:(loss = .*)$')
_LAST_STEP = 40

# v1 graph code in a wrap_graph build_fn: v1 layers (batch normalization and its UPDATE_OPS, a regularizer), a
# tf-keras layer, v1 losses and metrics; then a tf-keras model trained eagerly by model.fit in the same program.
_WRAP_GRAPH_PROGRAM = """
import os
os.environ['TF_USE_LEGACY_KERAS'] = '1'

import json
import sys

import numpy as np
import tensorflow as tf
import compat_mts as mts


def build():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name='x')
    y = tf.compat.v1.placeholder(tf.int64, [None], name='y')
    hidden = tf.compat.v1.layers.dense(x, 8, activation=tf.nn.relu,
                                       kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=1),
                                       kernel_regularizer=tf.keras.regularizers.l2(0.01))
    hidden = tf.compat.v1.layers.batch_normalization(hidden, training=True)
    hidden = tf.keras.layers.Dense(8, name='keras_dense',
                                   kernel_initializer=tf.keras.initializers.GlorotUniform(seed=2))(hidden)
    logits = tf.compat.v1.layers.dense(hidden, 3, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=3))
    tf.compat.v1.losses.sparse_softmax_cross_entropy(y, logits)
    loss = tf.compat.v1.losses.get_total_loss()
    _, accuracy_update = tf.compat.v1.metrics.accuracy(y, tf.argmax(logits, 1))
    global_step = tf.compat.v1.train.get_or_create_global_step()
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
    collected = {'update_ops': len(update_ops), 'regularization_losses': len(
        tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES))}
    return x, y, loss, accuracy_update, train_op, collected


g = mts.wrap_graph(build)
x, y, loss, accuracy_update, train_op, collected = g.outputs
rng = np.random.default_rng(0)
losses = []
with mts.MonitoredTrainingSession(checkpoint_dir=sys.argv[1], hooks=[mts.StopAtStepHook(last_step=30)]) as sess:
    while not sess.should_stop():
        features = rng.normal(size=(32, 4)).astype(np.float32)
        labels = (features[:, 0] > 0).astype(np.int64) + (features[:, 1] > 0)
        _, loss_value, accuracy = sess.run([train_op, loss, accuracy_update], feed_dict={x: features, y: labels})
        losses.append(float(loss_value))

mts.reset_global_step()
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer='adam', loss='mse')
model.fit(rng.normal(size=(64, 4)), rng.normal(size=(64, 1)), batch_size=8, epochs=3, verbose=0,
          callbacks=[mts.keras.HooksCallback([mts.StopAtStepHook(last_step=5)])])
moving_mean = tf.train.load_variable(sys.argv[1], 'batch_normalization/moving_mean')
print(json.dumps({'keras': tf.keras.__name__, 'layers': tf.compat.v1.layers.Dense.__module__,
                  'variables': sorted(name for name, _ in tf.train.list_variables(sys.argv[1])),
                  'moving_mean_moved': bool(np.abs(moving_mean).max() > 0), **collected,
                  'losses': losses, 'accuracy': float(accuracy), 'fit_steps': int(model.optimizer.iterations)}))
"""

# Without the set-up: what wrap_graph says; then once the variable is set too late; then with the variable set and
# tf-keras not installed (the import system is made not to find it) when TensorFlow first resolves `tf.keras`.
_KERAS_3_PROGRAM = """
import importlib.machinery
import json
import os
import sys

import tensorflow as tf
import compat_mts as mts


def dense():
    return tf.compat.v1.layers.dense(tf.compat.v1.placeholder(tf.float32, [None, 4]), 3)


def lstm_cell():
    return tf.compat.v1.nn.rnn_cell.BasicLSTMCell(3)


def losses_and_metrics():
    logits = tf.compat.v1.placeholder(tf.float32, [None, 3])
    labels = tf.compat.v1.placeholder(tf.int64, [None])
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return loss, tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))


def keras_dense():
    return tf.keras.layers.Dense(3)(tf.compat.v1.placeholder(tf.float32, [None, 4]))


def error_of(build_fn):
    try:
        mts.wrap_graph(build_fn)
    except Exception as error:  # Reported: this is what the program checks.
        return {'type': type(error).__name__, 'message': str(error), 'cause': repr(error.__cause__)}
    return None


class _WithoutTfKeras(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split('.')[0] == 'tf_keras':
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)


report = {'dense': error_of(dense), 'lstm_cell': error_of(lstm_cell),
          'losses_and_metrics': error_of(losses_and_metrics)}
os.environ['TF_USE_LEGACY_KERAS'] = '1'
report['set_too_late'] = error_of(dense)
sys.meta_path[:] = [_WithoutTfKeras if finder is importlib.machinery.PathFinder else finder
                    for finder in sys.meta_path]
report['no_tf_keras'] = error_of(keras_dense)
print(json.dumps(report))
"""


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Every program of this module, two at a time: the MNIST trainer in v1 and on compat_mts, then the others."""
    root = tmp_path_factory.mktemp('keras2')
    calls = {
        'v1': (os.path.join(_PROGRAMS, 'mnist_layers_v1.py'), [str(root / 'v1'), str(_LAST_STEP)], _LEGACY_KERAS),
        'compat': (
            os.path.join(_PROGRAMS, 'mnist_layers_compat.py'),
            [str(root / 'compat'), str(_LAST_STEP)],
            _LEGACY_KERAS,
        ),
        'wrap_graph': (_WRAP_GRAPH_PROGRAM, [str(root / 'wrap_graph')], {}),
        'keras_3': (_KERAS_3_PROGRAM, [], _KERAS_3),
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(run_python, program, *args, env=env, timeout=240)
            for name, (program, args, env) in calls.items()
        }
        results = {name: future.result() for name, future in futures.items()}
    for name, result in results.items():
        assert result.returncode == 0, f'{name}:\n{result.stderr[-4000:]}'
    outcome = {name: last_json_line(result.stdout) for name, result in results.items()}
    for mode in ('v1', 'compat'):
        outcome[mode].update(directory=str(root / mode), stderr=results[mode].stderr)
    return outcome


def test_the_mnist_trainer_on_compat_mts_has_v1s_losses_and_metric_values_step_by_step(runs):
    v1, compat = runs['v1'], runs['compat']
    assert len(v1['losses']) == len(compat['losses']) == _LAST_STEP
    np.testing.assert_allclose(compat['losses'], v1['losses'], rtol=1e-5)
    assert v1['losses'][-1] < v1['losses'][0]  # It trains.
    np.testing.assert_allclose(compat['accuracies'], v1['accuracies'], rtol=1e-5)


def test_the_mnist_trainer_on_compat_mts_checkpoints_v1s_steps_names_and_values(runs):
    v1_dir, compat_dir = runs['v1']['directory'], runs['compat']['directory']
    assert checkpoint_steps(compat_dir) == checkpoint_steps(v1_dir) == [0, 20, _LAST_STEP]
    v1 = tf.train.load_checkpoint(tf.train.latest_checkpoint(v1_dir))
    compat = tf.train.load_checkpoint(tf.train.latest_checkpoint(compat_dir))
    names = sorted(v1.get_variable_to_shape_map())
    assert {
        'conv_layer1/conv2d/kernel',
        'conv_layer2/conv2d/bias/Adam',
        'dense_1/kernel',
        'beta2_power',
        'global_step',
    } <= set(names)
    assert sorted(compat.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_allclose(compat.get_tensor(name), v1.get_tensor(name), rtol=1e-5, atol=1e-7, err_msg=name)


def _hook_lines(stderr: str) -> list[tuple[str, list[float]]]:
    """The `LoggingTensorHook` lines: each as its text with the numbers taken out, and the numbers."""
    lines = [match.group(1) for match in map(_HOOK_LINE.match, stderr.splitlines()) if match]
    number = r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?'
    return [(re.sub(number, '#', line), [float(value) for value in re.findall(number, line)]) for line in lines]


def test_the_mnist_trainer_on_compat_mts_prints_v1s_logging_tensor_hook_lines(runs):
    v1, compat = _hook_lines(runs['v1']['stderr']), _hook_lines(runs['compat']['stderr'])
    assert [text for text, _ in v1] == ['loss = #, step = #'] + ['loss = #, step = # (# sec)'] * 3
    assert [text for text, _ in compat] == [text for text, _ in v1]
    v1_losses, compat_losses = [values[0] for _, values in v1], [values[0] for _, values in compat]
    np.testing.assert_allclose(compat_losses, v1_losses, rtol=1e-5)
    np.testing.assert_allclose(v1_losses, runs['v1']['losses'][::10], rtol=1e-6)
    # The v1 program keeps `disable_v2_behavior()`, whose reference variables are fetched by reference: the value
    # of `global_step` fetched next to the train op is read after the run's increment. Stage 1 removes that call,
    # and the resource variables that remain are read before the run's ops (migration_guide/legacy.md).
    assert [values[1] for _, values in v1] == [1, 11, 21, 31]
    assert [values[1] for _, values in compat] == [0, 10, 20, 30]


def test_v1_layers_tf_keras_layers_losses_metrics_and_a_tf_keras_fit_share_one_program(runs):
    outcome = runs['wrap_graph']
    assert outcome['keras'].startswith('tf_keras') and outcome['layers'].startswith('tf_keras')
    assert {
        'dense/kernel',
        'batch_normalization/moving_mean',
        'keras_dense/kernel/Adam',
        'dense_1/bias',
        'global_step',
    } <= set(outcome['variables'])
    assert outcome['update_ops'] == 2 and outcome['moving_mean_moved']  # batch_normalization's moving averages.
    assert outcome['regularization_losses'] == 1  # kernel_regularizer, summed by get_total_loss().
    assert len(outcome['losses']) == 30 and outcome['losses'][-1] < outcome['losses'][0]
    assert 0.5 < outcome['accuracy'] <= 1.0
    assert outcome['fit_steps'] == 5


@pytest.mark.parametrize('build', ['dense', 'lstm_cell'])
def test_without_the_set_up_wrap_graph_says_what_to_install_and_set(runs, build):
    error = runs['keras_3'][build]
    assert error['type'] == 'AttributeError'
    assert 'is not available with Keras 3' in error['cause']
    assert "pip install 'compat-mts[legacy]'" in error['message']
    assert 'set TF_USE_LEGACY_KERAS=1 before TensorFlow is first imported' in error['message']
    assert "os.environ['TF_USE_LEGACY_KERAS'] = '1'" in error['message']


def test_v1_losses_and_metrics_need_no_set_up(runs):
    assert runs['keras_3']['losses_and_metrics'] is None


def test_a_variable_set_after_tensorflow_chose_keras_3_is_named_as_the_cause(runs):
    error = runs['keras_3']['set_too_late']
    assert error['type'] == 'AttributeError'
    assert 'TF_USE_LEGACY_KERAS is set, but it was set after TensorFlow had chosen Keras 3' in error['message']
    assert 'Restart the program with TF_USE_LEGACY_KERAS=1 set before TensorFlow is first imported' in error['message']


def test_with_the_variable_set_and_no_tf_keras_wrap_graph_says_what_to_install(runs):
    error = runs['keras_3']['no_tf_keras']
    assert error['type'] == 'ImportError'
    assert 'Keras cannot be imported' in error['cause']
    assert 'TF_USE_LEGACY_KERAS is set, so TensorFlow looks for tf-keras, which is not installed' in error['message']
    assert "pip install 'compat-mts[legacy]'" in error['message']
