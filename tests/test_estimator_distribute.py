"""`RunConfig(train_distribute=..., eval_distribute=...)`: MirroredStrategy on two logical CPUs and
OneDeviceStrategy, against TF 2.15's Estimator.

Both sides run `tests/estimator_programs/distribute_runner.py` in a process of their own (the two logical CPU
devices are made before TensorFlow starts). v1's Estimator gave each replica a batch of the `input_fn` of its own
and its v1 optimizers averaged the replicas' gradients, so a MirroredStrategy over two devices with batches of
`BATCH` trains as one device with batches of `2 * BATCH` (the replicas take consecutive batches) and reports
the same mean loss. TF 2.15's own MirroredStrategy Estimator does not finish a step with two logical CPUs (its
session blocks in the first run), so the MirroredStrategy side is compared with TF 2.15 on one device with the
doubled batch: losses step by step, the checkpoint's names and shapes, the evaluation metrics, and the
directories handed over both ways (which restores every replica's copy of each variable). OneDeviceStrategy is
compared with TF 2.15's OneDeviceStrategy directly, for the custom `model_fn` and the premade `DNNClassifier`.
"""

import concurrent.futures
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'distribute_runner.py')
BATCH = 4
STEPS = 4
MORE = 3


def _step(op, model_dir, program='custom', strategy=None, batch=BATCH, steps=STEPS, **extra):
    return dict(op=op, model_dir=str(model_dir), program=program, strategy=strategy, batch=batch, steps=steps, **extra)


def _results(process):
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.split('RESULTS:', 1)[1])


def _both(compat_steps, tf215_steps):
    """Runs the compat_mts and the TF 2.15 steps, side by side (two processes, the machines have two cores)."""
    tf215.python()  # Made (or skipped) here, not in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        compat = pool.submit(support.run_python, RUNNER, 'compat', json.dumps(compat_steps), timeout=900)
        reference = pool.submit(tf215.run, RUNNER, 'tf215', json.dumps(tf215_steps), timeout=900)
        return compat.result(), reference.result()


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """The results of both sides, by name (see the module docstring)."""
    root = tmp_path_factory.mktemp('distribute')
    d = {name: root / name for name in ('tf215', 'tf215_one', 'tf215_dnn', 'tf215_to_compat', 'dnn_to_compat')}
    d.update({name: root / name for name in ('compat', 'compat_one', 'compat_to_tf215', 'compat_dnn_mirrored')})
    tf215_steps = {
        'train': _step('train', d['tf215'], batch=2 * BATCH),
        'copy': _step('copy', d['tf215'], to=str(d['tf215_to_compat'])),
        'evaluate': _step('evaluate', d['tf215'], batch=2 * BATCH, steps=2),
        'more': _step('train', d['tf215'], batch=2 * BATCH, steps=MORE),
        'one': _step('train', d['tf215_one'], strategy='one'),
        'one_evaluate': _step('evaluate', d['tf215_one'], strategy='one', steps=2),
        'dnn': _step('train', d['tf215_dnn'], program='dnn', strategy='one'),
        'dnn_copy': _step('copy', d['tf215_dnn'], to=str(d['dnn_to_compat'])),
        'dnn_more': _step('train', d['tf215_dnn'], program='dnn', strategy='one', steps=MORE),
        'dnn_evaluate': _step('evaluate', d['tf215_dnn'], program='dnn', strategy='one', steps=2),
        'in_scope': _step('train_in_scope', root / 'tf215_in_scope', steps=2),
        'keras': _step('train', root / 'tf215_keras', program='keras', batch=2 * BATCH),
    }
    compat_steps = {
        'train': _step('train', d['compat'], strategy='mirrored'),
        'copy': _step('copy', d['compat'], to=str(d['compat_to_tf215'])),
        'evaluate': _step('evaluate', d['compat'], strategy='mirrored', steps=2),
        'more': _step('train', d['compat'], strategy='mirrored', steps=MORE),
        'one': _step('train', d['compat_one'], strategy='one'),
        'one_evaluate': _step('evaluate', d['compat_one'], strategy='one', steps=2),
        'dnn_mirrored': _step('train', d['compat_dnn_mirrored'], program='dnn', strategy='mirrored'),
        'in_scope': _step('train_in_scope', root / 'compat_in_scope', steps=2),
        'keras': _step('train', root / 'compat_keras', program='keras', strategy='mirrored'),
    }
    compat, reference = _both(list(compat_steps.values()), list(tf215_steps.values()))
    results = {
        'compat': dict(zip(compat_steps, _results(compat))),
        'tf215': dict(zip(tf215_steps, _results(reference))),
    }
    # The directories handed over: each side continues the other's, then both continue their own (above).
    continued = {
        'compat': [
            _step('train', d['tf215_to_compat'], strategy='mirrored', steps=MORE),
            _step('train', d['dnn_to_compat'], program='dnn', strategy='one', steps=MORE),
            _step('evaluate', d['dnn_to_compat'], program='dnn', strategy='one', steps=2),
        ],
        'tf215': [_step('train', d['compat_to_tf215'], batch=2 * BATCH, steps=MORE)],
    }
    compat, reference = _both(continued['compat'], continued['tf215'])
    results['compat'].update(zip(('from_tf215', 'dnn_from_tf215', 'dnn_evaluate'), _results(compat)))
    results['tf215'].update(zip(('from_compat',), _results(reference)))
    return results


def _close(ours, theirs):
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_mirrored_over_two_cpus_trains_as_tf215_on_one_with_both_replicas_batches(runs):
    ours, theirs = runs['compat']['train'], runs['tf215']['train']
    assert len(ours['losses']) == len(theirs['losses']) == STEPS
    _close(ours['losses'], theirs['losses'])
    assert ours['losses'][-1] != ours['losses'][0]  # Real steps: the model learned.
    assert ours['variables'] == theirs['variables']  # One copy per variable, under its v1 name.
    assert 'hidden/kernel/Momentum' in ours['variables']


@pytest.mark.slow
def test_mirrored_evaluation_has_tf215s_metrics(runs):
    ours, theirs = runs['compat']['evaluate'], runs['tf215']['evaluate']
    assert sorted(ours) == sorted(theirs) == ['accuracy', 'global_step', 'loss', 'mean_logit']
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


@pytest.mark.slow
def test_mirrored_model_dir_handed_over_both_ways(runs):
    compat, tf215_results = runs['compat'], runs['tf215']
    # compat_mts's mirrored directory, continued by TF 2.15, as compat_mts continued it.
    _close(tf215_results['from_compat']['losses'][STEPS:], compat['more']['losses'][STEPS:])
    # TF 2.15's directory, continued by compat_mts on two replicas (both restored), as TF 2.15 continued it.
    _close(compat['from_tf215']['losses'][STEPS:], tf215_results['more']['losses'][STEPS:])
    assert len(compat['from_tf215']['losses']) == STEPS + MORE


@pytest.mark.slow
def test_one_device_strategy_equals_tf215s(runs):
    ours, theirs = runs['compat'], runs['tf215']
    _close(ours['one']['losses'], theirs['one']['losses'])
    assert ours['one']['variables'] == theirs['one']['variables']
    assert sorted(ours['one_evaluate']) == sorted(theirs['one_evaluate'])
    for key, value in theirs['one_evaluate'].items():
        assert ours['one_evaluate'][key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


@pytest.mark.slow
def test_premade_dnn_classifier_on_one_device_continues_tf215s_directory(runs):
    ours, theirs = runs['compat'], runs['tf215']
    _close(ours['dnn_from_tf215']['losses'][STEPS:], theirs['dnn_more']['losses'][STEPS:])
    assert len(theirs['dnn_more']['losses']) == STEPS + MORE
    assert ours['dnn_from_tf215']['variables'] == theirs['dnn_more']['variables']
    assert sorted(ours['dnn_evaluate']) == sorted(theirs['dnn_evaluate'])
    for key, value in theirs['dnn_evaluate'].items():
        assert ours['dnn_evaluate'][key] == pytest.approx(value, rel=1e-3, abs=1e-5), key


@pytest.mark.slow
def test_premade_keras_optimizer_over_two_replicas_trains_tf215s_variables(runs):
    # The replicas' gradients are summed, as Keras 2's optimizers did (the same step as one process on the doubled
    # batch: tests/test_estimator_multi_worker.py, on two workers).
    ours, theirs = runs['compat']['dnn_mirrored'], runs['tf215']['dnn']
    assert ours['variables'] == theirs['variables']
    assert len(ours['losses']) == STEPS and np.all(np.isfinite(ours['losses']))


# In this process (one CPU device): what RunConfig takes and refuses.


@pytest.mark.parametrize('argument', ['train_distribute', 'eval_distribute'])
def test_run_config_takes_mirrored_and_one_device_strategies(argument):
    for strategy in (tf.distribute.OneDeviceStrategy('/cpu:0'), tf.distribute.MirroredStrategy(['/cpu:0'])):
        config = estimator.RunConfig(**{argument: strategy})
        assert getattr(config, argument) is strategy
        # Shared, not copied, by replace() and the Estimator: a copy would number its collectives anew.
        assert getattr(config.replace(save_summary_steps=5), argument) is strategy
        model = estimator.Estimator(_model_fn, config=config)
        assert getattr(model.config, argument) is strategy
        assert model.config.session_config is not None  # The rest is copied as before.


@pytest.mark.parametrize('argument', ['train_distribute', 'eval_distribute'])
@pytest.mark.parametrize(
    'make',
    [tf.distribute.get_strategy, lambda: tf.distribute.experimental.CentralStorageStrategy(), lambda: 'mirrored'],
)
def test_run_config_refuses_other_strategies_naming_what_it_takes(argument, make):
    with pytest.raises(ValueError) as error:
        estimator.RunConfig(**{argument: make()})
    message = str(error.value)
    assert f'RunConfig({argument}=...)' in message
    assert 'tf.distribute.MirroredStrategy' in message and 'tf.distribute.OneDeviceStrategy' in message
    assert 'tf.distribute.MultiWorkerMirroredStrategy' in message
    assert 'migration_guide/distributed.md' in message


def _model_fn(features, labels, mode):
    weight = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.constant_initializer(0.2))
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.matmul(features, weight))
    train_op = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
    x = np.random.RandomState(1).normal(size=(12, 2)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x[:, :1] - x[:, 1:])).batch(3).repeat()


def test_one_device_and_one_replica_mirrored_train_as_without_a_strategy(tmp_path):
    values = {}
    for name, strategy in [
        ('none', None),
        ('one', tf.distribute.OneDeviceStrategy('/cpu:0')),
        ('mirrored', tf.distribute.MirroredStrategy(['/cpu:0'])),
    ]:
        config = estimator.RunConfig(model_dir=str(tmp_path / name), train_distribute=strategy)
        model = estimator.Estimator(_model_fn, config=config).train(_input_fn, steps=5)
        values[name] = {variable: model.get_variable_value(variable) for variable in model.get_variable_names()}
    assert sorted(values['one']) == sorted(values['mirrored']) == sorted(values['none'])
    assert values['none']['global_step'] == 5
    for name in values['none']:
        np.testing.assert_allclose(values['one'][name], values['none'][name], rtol=1e-6)
        np.testing.assert_allclose(values['mirrored'][name], values['none'][name], rtol=1e-6)


@pytest.mark.slow
def test_train_inside_a_strategy_scope_runs_unreplicated_as_in_tf215(runs):
    # v1's Estimator built its own graph, outside the caller's scope: the model_fn saw no strategy.
    ours, theirs = runs['compat']['in_scope'], runs['tf215']['in_scope']
    assert ours == theirs == {'replicas': [1], 'global_step': 2}


@pytest.mark.slow
def test_keras_layers_in_a_mirrored_model_fn_train_as_tf215_on_one_device(runs):
    # Keras 3 lists each replica's copy of a layer's weight in the graph's collections: saved once all the same.
    ours, theirs = runs['compat']['keras'], runs['tf215']['keras']
    _close(ours['losses'], theirs['losses'])
    assert ours['losses'][-1] != ours['losses'][0]
    assert ours['variables'] == theirs['variables']
    assert 'hidden/kernel' in ours['variables'] and not any('replica' in name for name in ours['variables'])
