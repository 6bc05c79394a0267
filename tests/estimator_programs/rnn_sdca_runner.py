"""The RNN Estimators and the SDCA linear ones, under TF 2.15's `tf.estimator` or `compat_mts.estimator`.

`tests/test_estimator_rnn_sdca.py` runs `results(...)` in a TF 2.15 child process (`python rnn_sdca_runner.py
<root>`, the results printed as one JSON line after `RESULTS:`) and then in its own process, which reads the
child's checkpoints from `<root>` (`reference_root`): an RNN starts at random, so each side trains on from TF
2.15's checkpoint (the same weights train to the same weights, predictions and metrics) and the variables'
names and shapes are those of the checkpoint it wrote. SDCA starts at zero: it is compared from its own start,
and by training on from TF 2.15's checkpoint (its example-state tables included).
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

from tests.estimator_programs.results import error_of, plain

_BATCH = 4
_TOKENS = [[1, 2, 0], [3, 0, 0], [4, 1, 2], [2, 2, 0]]
_LENGTHS = [2, 1, 3, 2]
_NUMBERS = np.random.default_rng(0).normal(size=[_BATCH, 3]).astype(np.float32)
_CONTEXT = np.array([[0.5], [-1.0], [2.0], [0.0]], np.float32)


def _sequence_features(tf):
    indices = [[row, step] for row, length in enumerate(_LENGTHS) for step in range(length)]
    tokens = [_TOKENS[row][step] for row, step in indices]
    numbers = [_NUMBERS[row][step] for row, step in indices]
    shape = [_BATCH, 3]
    return {
        'tokens': tf.sparse.SparseTensor(indices, np.array(tokens, np.int64), shape),
        'x': tf.sparse.SparseTensor(indices, np.array(numbers, np.float32), shape),
        'c': tf.constant(_CONTEXT),
    }


def _rnn_input_fn(tf, labels):
    def input_fn():
        return tf.data.Dataset.from_tensors((_sequence_features(tf), tf.constant(labels))).repeat()

    return input_fn


def _variables(tf, model_dir):
    return [[name, shape] for name, shape in tf.train.list_variables(model_dir)]


def _trained_on(tf, make, reference_dir, root, labels, steps):
    """A copy of TF 2.15's `reference_dir` trained `steps` more: its variables, weights, predictions, metrics."""
    model_dir = tempfile.mkdtemp(dir=root)
    shutil.rmtree(model_dir)
    shutil.copytree(reference_dir, model_dir)
    model = make(model_dir)
    model.train(_rnn_input_fn(tf, labels), steps=steps)
    predictions = list(model.predict(lambda: tf.data.Dataset.from_tensors(_sequence_features(tf))))
    metrics = model.evaluate(_rnn_input_fn(tf, labels), steps=1)
    weights = {name: model.get_variable_value(name) for name, _ in tf.train.list_variables(model_dir)}
    return {
        'variables': _variables(tf, model_dir),  # Of the checkpoint this side wrote last.
        'weights': {name: value for name, value in weights.items() if not name.startswith('global_step')},
        'predictions': [{key: value for key, value in p.items()} for p in predictions],
        'metrics': metrics,
    }


def _rnn(tf, estimator, root, reference_root):
    experimental = estimator.experimental
    tokens = tf.feature_column.sequence_categorical_column_with_identity('tokens', num_buckets=5)
    sequence_columns = [tf.feature_column.embedding_column(tokens, 3), tf.feature_column.sequence_numeric_column('x')]
    context_columns = [tf.feature_column.numeric_column('c')]
    class_labels = np.array([[0], [2], [1], [2]], np.int64)
    values = np.array([[0.5], [-1.0], [1.5], [0.0]], np.float32)
    scenarios = {
        'lstm_classifier': (
            lambda model_dir: experimental.RNNClassifier(
                sequence_columns, context_columns, units=[4, 2], cell_type='lstm', n_classes=3, model_dir=model_dir
            ),
            class_labels,
        ),
        'gru_regression': (
            lambda model_dir: experimental.RNNEstimator(
                estimator.RegressionHead(),
                sequence_columns,
                units=3,
                cell_type='gru',
                model_dir=model_dir,
                optimizer='SGD',
            ),
            values,
        ),
    }
    results = {}
    for name, (make, labels) in scenarios.items():
        if reference_root == root:  # TF 2.15's side: the checkpoint both sides train on from.
            make(os.path.join(root, name)).train(_rnn_input_fn(tf, labels), steps=2)
        trained = _trained_on(tf, make, os.path.join(reference_root, name), root, labels, 2)
        results[name] = {'variables': trained.pop('variables'), 'trained_on': trained}
    bad_cell = experimental.RNNClassifier(sequence_columns, units=[2], cell_type='cell')
    default_cell_of_int = experimental.RNNClassifier(sequence_columns, units=2)
    results['errors'] = [
        error_of(lambda: experimental.RNNClassifier(sequence_columns, units=[2], rnn_cell_fn=lambda: None)),
        error_of(lambda: bad_cell.train(_rnn_input_fn(tf, class_labels), steps=1)),
        error_of(lambda: default_cell_of_int.train(_rnn_input_fn(tf, class_labels), steps=1)),
        error_of(
            lambda: experimental.RNNClassifier(sequence_columns, units=[3], optimizer='Nadam').train(
                _rnn_input_fn(tf, class_labels), steps=1
            )
        ),
        error_of(
            lambda: experimental.RNNClassifier(sequence_columns, units=[3], optimizer=3.0).train(
                _rnn_input_fn(tf, class_labels), steps=1
            )
        ),
    ]
    return plain(results)


_SDCA_ROWS = 6
_SDCA_FEATURES = {
    'example_id': np.array([b'e%d' % row for row in range(_SDCA_ROWS)]),
    'a': np.array([[0.5], [-1.0], [2.0], [0.0], [1.5], [-0.5]], np.float32),
    'v': np.random.default_rng(1).normal(size=[_SDCA_ROWS, 2]).astype(np.float32),
    'cat': np.array([[0], [1], [2], [1], [0], [2]], np.int64),
    'w': np.array([[1.0], [2.0], [1.0], [0.5], [1.0], [1.0]], np.float32),
}
_SDCA_CLASSES = np.array([[1], [0], [1], [0], [1], [0]], np.int64)
_SDCA_VALUES = np.array([[1.0], [-2.0], [3.0], [0.5], [2.0], [-1.0]], np.float32)


def _sdca_input_fn(tf, labels, with_labels=True, batch=3):
    def input_fn():
        if not with_labels:
            return tf.data.Dataset.from_tensor_slices(_SDCA_FEATURES).batch(batch)
        return tf.data.Dataset.from_tensor_slices((_SDCA_FEATURES, labels)).batch(batch).repeat()

    return input_fn


def _sdca_run(tf, model, labels, steps):
    # One example a step: TF's SDCA kernel solves a batch's examples on parallel threads, each updating the
    # shared weights as it goes, so a larger batch trains to other last digits from run to run.
    model.train(_sdca_input_fn(tf, labels, batch=1), steps=steps)
    predictions = list(model.predict(_sdca_input_fn(tf, labels, with_labels=False)))
    names = [name for name, _ in tf.train.list_variables(model.model_dir)]
    tables = sorted({name.rsplit('-', 1)[0] for name in names if 'HashTable' in name})
    return {
        'variables': _variables(tf, model.model_dir),
        'weights': {
            name: model.get_variable_value(name)
            for name in names
            if 'global_step' not in name and 'HashTable' not in name
        },
        'tables': [_table_rows(model, table) for table in tables],
        'predictions': [{key: value for key, value in p.items()} for p in predictions],
        'metrics': model.evaluate(_sdca_input_fn(tf, labels), steps=2),
    }


def _table_rows(model, table):
    """The example states a hash table of the checkpoint holds, in key order (its empty buckets left out)."""
    keys, values = model.get_variable_value(table + '-keys'), model.get_variable_value(table + '-values')
    used = ~((keys == 0).all(axis=1) | (keys == 1).all(axis=1))
    order = np.lexsort(keys[used].T[::-1])
    return [keys[used][order].tolist(), values[used][order].tolist()]


def _sdca(tf, estimator, root, reference_root):
    columns = [
        tf.feature_column.numeric_column('a'),
        tf.feature_column.numeric_column('v', shape=[2]),
        tf.feature_column.categorical_column_with_identity('cat', 3),
    ]
    sdca = estimator.experimental.LinearSDCA

    def classifier(model_dir):
        optimizer = sdca('example_id', symmetric_l1_regularization=0.05, symmetric_l2_regularization=2.0)
        return estimator.LinearClassifier(columns, model_dir=model_dir, weight_column='w', optimizer=optimizer)

    def regressor(model_dir):
        optimizer = sdca('example_id', num_table_shards=2)
        return estimator.LinearRegressor(columns, model_dir=model_dir, optimizer=optimizer)

    results = {}
    for name, make, labels in (('classifier', classifier, _SDCA_CLASSES), ('regressor', regressor, _SDCA_VALUES)):
        results[name] = _sdca_run(tf, make(os.path.join(root, name)), labels, 7)
        resumed_dir = tempfile.mkdtemp(dir=root)
        shutil.rmtree(resumed_dir)
        shutil.copytree(os.path.join(reference_root, name), resumed_dir)
        results[name]['resumed'] = _sdca_run(tf, make(resumed_dir), labels, 3)
    optimizer = sdca('example_id')
    results['errors'] = [
        error_of(lambda: estimator.LinearClassifier(columns, n_classes=3, optimizer=optimizer)),
        error_of(lambda: estimator.LinearClassifier(columns, optimizer=optimizer, sparse_combiner='mean')),
        error_of(lambda: estimator.LinearRegressor(columns, label_dimension=2, optimizer=optimizer)),
        error_of(
            lambda: estimator.LinearRegressor(
                columns, optimizer=sdca('example_id', symmetric_l2_regularization=0.0)
            ).train(_sdca_input_fn(tf, _SDCA_VALUES), steps=1)
        ),
    ]
    return plain(results)


def results(tf, estimator, root, reference_root=None):
    """Every scenario's result (see the module docstring), as plain JSON values."""
    reference_root = reference_root or root
    return {'rnn': _rnn(tf, estimator, root, reference_root), 'sdca': _sdca(tf, estimator, root, reference_root)}


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    print('RESULTS:' + json.dumps(results(tf, tf.estimator, sys.argv[1])))
