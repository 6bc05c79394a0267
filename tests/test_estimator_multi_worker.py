"""`RunConfig(train_distribute=MultiWorkerMirroredStrategy)` on real loopback clusters of two trainer processes
(`tests/estimator_programs/multi_worker.py`, one process per task with its `TF_CONFIG`).

Three runs, as the restarts of one job would be: `worker` 0 and 1 train a custom `model_fn` (then evaluate it with
`eval_distribute`) and the premade `DNNClassifier` (through `train_and_evaluate`); one process trains both on the
doubled batch (each worker's `input_fn` shards the data by its `input_context`, so the two workers' batches of 4
are the one process's batches of 8; the DNN from the cluster's initial checkpoint); then the DNN's job restarts on
a `chief` and a `worker`, with the v1 spelling of the strategy, and resumes to more steps. TF 2.15 trains the same
DNN on the same cluster from the same initial checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pytest

from tests import tf215
from tests.support import TESTS_DIR, checkpoint_steps, events_files
from tests.test_distribute_cluster import worker_json_lines

pytestmark = pytest.mark.slow  # Every test reads runs of clusters of processes.

PROGRAM = os.path.join(TESTS_DIR, 'estimator_programs', 'multi_worker.py')
TIMEOUT_SECS = 300


def _spec(model_dir, **overrides) -> dict:
    spec = {'program': 'custom', 'batch': 4, 'max_steps': 5, 'entry': 'train', 'evaluate_steps': 0}
    spec.update(overrides, model_dir=str(model_dir))
    return spec


def _tasks(python, side, strategy, workers, specs, chief=False) -> list[list[dict]]:
    """Each task's results of `specs` (one process per task, `workers` tasks), by spec then task."""
    arguments = [PROGRAM, side, strategy, json.dumps(specs)]
    tasks = worker_json_lines(lambda index: [python, *arguments], workers, timeout=TIMEOUT_SECS, chief=chief)
    return [list(results) for results in zip(*tasks)]


def _start_from(model_dir, directory) -> None:
    """`directory` holds `model_dir`'s first checkpoint (step 0) alone: a training there starts from its values."""
    os.makedirs(directory)
    for name in os.listdir(model_dir):
        if name.startswith('model.ckpt-0.'):
            shutil.copy(os.path.join(model_dir, name), directory)
    with open(os.path.join(directory, 'checkpoint'), 'w') as state:
        state.write('model_checkpoint_path: "model.ckpt-0"\n')


DNN = {'program': 'dnn_classifier', 'entry': 'train_and_evaluate'}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Three runs, by spec: two workers (`worker` 0 and 1), one process, then the DNN's job restarted on a `chief`
    and a `worker` with the v1 spelling of the strategy."""
    root = tmp_path_factory.mktemp('multi_worker')
    found = {'root': root}
    cluster = [_spec(root / 'custom', evaluate_steps=2), _spec(root / 'dnn', **DNN)]
    found['custom'], found['dnn'] = _tasks(sys.executable, 'compat', 'mwms', 2, cluster)
    for name in ('custom', 'dnn'):
        found[name + '_steps'] = checkpoint_steps(root / name)
        found[name + '_events'] = events_files(str(root / name)) + events_files(str(root / name / 'eval'))
        found[name + '_files'] = os.listdir(root / name)
    _start_from(root / 'dnn', root / 'dnn_alone')
    _start_from(root / 'dnn', root / 'dnn_tf215')
    alone = [
        _spec(root / 'custom_alone', batch=8, evaluate_steps=2),
        _spec(root / 'dnn_alone', batch=8, program='dnn_classifier'),
    ]
    [found['custom_alone']], [found['dnn_alone']] = _tasks(sys.executable, 'compat', 'none', 1, alone)
    resumed = [
        _spec(root / 'dnn', program='dnn_classifier', max_steps=8, entry='train_with_listener'),
        _spec(root / 'dnn', program='dnn_classifier', max_steps=8, evaluate_steps=2),
    ]
    found['dnn_listener'], found['dnn_resumed'] = _tasks(sys.executable, 'compat', 'mwms_v1', 2, resumed, chief=True)
    found['dnn_resumed_steps'] = checkpoint_steps(root / 'dnn')
    return found


@pytest.fixture(scope='module')
def tf215_dnn(runs):
    """TF 2.15's `train_and_evaluate` of the same `DNNClassifier` on the same cluster, from the same checkpoint."""
    directory = runs['root'] / 'dnn_tf215'
    [tasks] = _tasks(tf215.python(), 'tf215', 'mwms', 2, [_spec(directory, **DNN)])
    return {'tasks': tasks, 'steps': checkpoint_steps(directory)}


def _assert_same_variables(ours: dict, theirs: dict, rtol: float = 0.0) -> None:
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=rtol, atol=1e-7 if rtol else 0, err_msg=name)


def _properties(tasks: list[dict]) -> list[tuple]:
    return [
        (task['task'], task['is_chief'], task['global_id_in_cluster'], task['num_worker_replicas']) for task in tasks
    ]


def test_each_task_has_its_cluster_properties_and_the_chief_is_worker_0_without_a_chief_job(runs):
    assert _properties(runs['custom']) == [(['worker', 0], True, 0, 2), (['worker', 1], False, 1, 2)]
    assert _properties(runs['dnn_resumed']) == [(['chief', 0], True, 0, 2), (['worker', 0], False, 1, 2)]
    assert sorted(runs['dnn_resumed'][0]['cluster_spec']) == ['chief', 'worker']


def test_the_chief_alone_writes_checkpoints_at_the_saving_steps_and_the_events(runs):
    assert runs['custom_steps'] == runs['dnn_steps'] == [0, 2, 4, 5]  # save_checkpoints_steps=2, and the last.
    # One events file of training (and one of the evaluation), from the chief: the other worker writes none.
    assert [os.path.basename(os.path.dirname(path)) for path in runs['custom_events']] == ['custom', 'eval']
    assert [os.path.basename(os.path.dirname(path)) for path in runs['dnn_events']] == ['dnn']
    for files in (runs['custom_files'], runs['dnn_files']):
        assert not [name for name in files if name.startswith('tmp')], files  # TF 2.15 left tmp_worker_N here.
    assert runs['custom'][0]['last_loss'] is not None


def test_the_workers_end_training_with_equal_variables(runs):
    for name in ('custom', 'dnn', 'dnn_resumed'):
        first, second = runs[name]
        assert first['variables'], name
        _assert_same_variables(first['variables'], second['variables'])


def test_two_workers_train_a_custom_model_fn_as_one_process_on_the_doubled_batch(runs):
    alone = runs['custom_alone']
    _assert_same_variables(runs['custom'][0]['variables'], alone['variables'], rtol=1e-5)
    assert runs['custom'][0]['last_loss'] == pytest.approx(alone['last_loss'], rel=1e-5)


def test_two_workers_train_the_premade_dnn_classifier_as_one_process_on_the_doubled_batch(runs):
    alone = runs['dnn_alone']
    _assert_same_variables(runs['dnn'][0]['variables'], alone['variables'], rtol=1e-5)


def test_evaluate_with_eval_distribute_gives_every_worker_the_metrics_of_both_workers_data(runs):
    alone = runs['custom_alone']
    first, second = runs['custom']
    assert first['metrics'] == second['metrics']
    assert sorted(first['metrics']) == sorted(alone['metrics']) == ['accuracy', 'global_step', 'loss']
    for key, value in alone['metrics'].items():
        assert first['metrics'][key] == pytest.approx(value, rel=1e-5), key


def test_a_restarted_cluster_resumes_from_the_chiefs_checkpoint(runs):
    chief, worker = runs['dnn_resumed']
    assert chief['metrics']['global_step'] == worker['metrics']['global_step'] == 8
    assert chief['metrics'] == worker['metrics']
    assert runs['dnn_resumed_steps'][-2:] == [7, 8]  # Every 2 steps from the restored 5, and the last.
    assert chief['variables'] != runs['dnn'][0]['variables']


def test_tf215_trains_the_same_premade_cluster_to_the_same_variables_and_checkpoints(runs, tf215_dnn):
    ours, theirs = runs['dnn'], tf215_dnn['tasks']
    assert tf215_dnn['steps'] == runs['dnn_steps']
    _assert_same_variables(ours[0]['variables'], theirs[0]['variables'], rtol=1e-5)
    _assert_same_variables(theirs[0]['variables'], theirs[1]['variables'])
    assert ours[0]['last_loss'] == pytest.approx(theirs[0]['last_loss'], rel=1e-5)


def test_saving_listeners_are_refused_on_a_cluster_with_tf215s_message(runs):
    # TF 2.15's message (estimator.py, _train_with_estimator_spec_distributed), typo included.
    expected = 'Saving listenor is not supported by the current Distribution Strategies.'
    assert [task['error'] for task in runs['dnn_listener']] == [expected, expected]
