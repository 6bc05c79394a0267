"""The premade Estimators of `compat_mts.estimator.canned`: TF 2.15's names, values, keys, signatures and checks.

The reference values were recorded with TF 2.15's `tf.estimator` (the venv of tests/tf215.py) by running the
same constructors on the same data (`_linear_data`, `_baseline_data`) for two steps and reading
`tf.train.list_variables`, `evaluate`, the first `predict` and the signatures of `export_saved_model`. The
linear and baseline models start from zeros, so their values are deterministic and compared here; the DNNs
start at random, so tests/test_estimator_premade.py compares them with a live TF 2.15 from a shared checkpoint.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator

_FTRL = [
    'training/Ftrl/beta',
    'training/Ftrl/decay',
    'training/Ftrl/l1_regularization_strength',
    'training/Ftrl/l2_regularization_strength',
    'training/Ftrl/learning_rate',
    'training/Ftrl/learning_rate_power',
]


def _linear_data():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(64, 2)).astype(np.float32)
    return {'a': features[:, 0], 'b': features[:, 1]}, rng.integers(0, 3, 64), features[:, 0] * 2 + 1


def _input_fn(features, labels, repeat=True):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        return (dataset.repeat() if repeat else dataset).batch(16)

    return input_fn


def _columns():
    return [tf.feature_column.numeric_column('a'), tf.feature_column.numeric_column('b')]


def _linear_weights(units):
    names = {}
    for name, shape in (('a/weights', [1, units]), ('b/weights', [1, units]), ('bias_weights', [units])):
        names['linear/linear_model/' + name] = shape
        names['training/Ftrl/linear/linear_model/' + name + '/accumulator'] = shape
        names['training/Ftrl/linear/linear_model/' + name + '/linear'] = shape
    return names


def _names(model_dir):
    return dict(tf.train.list_variables(model_dir))


def _signatures(model, tmp_path):
    spec = tf.feature_column.make_parse_example_spec(_columns())
    serving = estimator.export.build_parsing_serving_input_receiver_fn(spec)
    loaded = tf.saved_model.load(model.export_saved_model(str(tmp_path / 'export'), serving).decode())
    return {key: sorted(function.structured_outputs) for key, function in loaded.signatures.items()}


@pytest.mark.slow
def test_linear_classifier_trains_evaluates_and_exports_as_tf215(tmp_path):
    features, classes, _ = _linear_data()
    model = estimator.LinearClassifier(feature_columns=_columns(), model_dir=str(tmp_path / 'model'), n_classes=3)
    model.train(_input_fn(features, classes), steps=2)
    expected = {'global_step': [], **_linear_weights(3), **{name: [] for name in _FTRL}}
    assert _names(model.model_dir) == expected
    assert model.get_variable_value('training/Ftrl/learning_rate') == pytest.approx(0.2)
    metrics = model.evaluate(_input_fn(features, classes, repeat=False))
    assert metrics == pytest.approx(
        {'accuracy': 0.34375, 'average_loss': 1.0958924, 'loss': 1.0958924, 'global_step': 2}
    )
    first = next(iter(model.predict(lambda: tf.data.Dataset.from_tensor_slices(features).batch(4))))
    np.testing.assert_allclose(first['logits'], [-0.04863827, 0.02089247, 0.03470419], rtol=1e-5)
    np.testing.assert_allclose(first['probabilities'], [0.31656396, 0.33935818, 0.34407783], rtol=1e-5)
    assert first['class_ids'].tolist() == [2] and first['classes'].tolist() == [b'2']
    assert first['all_class_ids'].tolist() == [0, 1, 2] and first['all_classes'].tolist() == [b'0', b'1', b'2']
    assert _signatures(model, tmp_path) == {
        'predict': ['all_class_ids', 'all_classes', 'class_ids', 'classes', 'logits', 'probabilities'],
        'serving_default': ['classes', 'scores'],
        'classification': ['classes', 'scores'],
    }


@pytest.mark.slow
def test_linear_regressor_trains_evaluates_and_exports_as_tf215(tmp_path):
    features, _, targets = _linear_data()
    model = estimator.LinearRegressor(feature_columns=_columns(), model_dir=str(tmp_path / 'model'))
    model.train(_input_fn(features, targets), steps=2)
    assert _names(model.model_dir) == {'global_step': [], **_linear_weights(1), **{name: [] for name in _FTRL}}
    metrics = model.evaluate(_input_fn(features, targets, repeat=False))
    assert metrics == pytest.approx(
        {
            'average_loss': 2.627867,
            'label/mean': 0.97463334,
            'loss': 2.627867,
            'prediction/mean': 0.41104397,
            'global_step': 2,
        }
    )
    first = next(iter(model.predict(lambda: tf.data.Dataset.from_tensor_slices(features).batch(4))))
    np.testing.assert_allclose(first['predictions'], [0.3688781], rtol=1e-5)
    assert _signatures(model, tmp_path) == {
        'predict': ['predictions'],
        'serving_default': ['outputs'],
        'regression': ['outputs'],
    }


@pytest.mark.slow
def test_dnn_regressor_has_tf215s_variables_and_keys(tmp_path):
    features, _, targets = _linear_data()
    model = estimator.DNNRegressor(hidden_units=[4], feature_columns=_columns(), model_dir=str(tmp_path / 'model'))
    model.train(_input_fn(features, targets), steps=2)
    expected = {'global_step': [], 'training/Adagrad/decay': [], 'training/Adagrad/learning_rate': []}
    for name, shape in (
        ('hiddenlayer_0/bias', [4]),
        ('hiddenlayer_0/kernel', [2, 4]),
        ('logits/bias', [1]),
        ('logits/kernel', [4, 1]),
    ):
        expected['dnn/' + name] = shape
        expected['training/Adagrad/dnn/' + name + '/accumulator'] = shape
    assert _names(model.model_dir) == expected
    assert model.get_variable_value('training/Adagrad/learning_rate') == pytest.approx(0.001)
    metrics = model.evaluate(_input_fn(features, targets, repeat=False))
    assert sorted(metrics) == ['average_loss', 'global_step', 'label/mean', 'loss', 'prediction/mean']
    assert metrics['label/mean'] == pytest.approx(0.97463334, rel=1e-5)


def _baseline_data():
    return {'x': np.arange(32, dtype=np.float32)}, np.arange(32) % 3, np.arange(32, dtype=np.float32) * 0.5


@pytest.mark.slow
@pytest.mark.parametrize(
    'make, label_index, expected_metrics',
    [
        (
            lambda d: estimator.BaselineClassifier(model_dir=d, n_classes=3),
            1,
            {'accuracy': 0.34375, 'average_loss': 1.097848, 'loss': 1.097848, 'global_step': 2},
        ),
        (
            lambda d: estimator.BaselineRegressor(model_dir=d),
            2,
            {
                'average_loss': 73.76166,
                'label/mean': 7.75,
                'loss': 73.76166,
                'prediction/mean': 0.5078207,
                'global_step': 2,
            },
        ),
    ],
    ids=['BaselineClassifier', 'BaselineRegressor'],
)
def test_baselines_train_to_tf215s_values(tmp_path, make, label_index, expected_metrics):
    data = _baseline_data()
    model = make(str(tmp_path / 'model'))
    model.train(lambda: ({'x': tf.constant(data[0]['x'])}, tf.constant(data[label_index])), steps=2)
    units = 3 if label_index == 1 else 1
    expected = {'global_step': [], 'baseline/bias': [units], **{name: [] for name in _FTRL}}
    expected.update({f'training/Ftrl/baseline/bias/{slot}': [units] for slot in ('accumulator', 'linear')})
    assert _names(model.model_dir) == expected
    metrics = model.evaluate(lambda: ({'x': tf.constant(data[0]['x'])}, tf.constant(data[label_index])), steps=1)
    assert metrics == pytest.approx(expected_metrics, rel=1e-5)


@pytest.mark.slow
def test_binary_classifier_with_label_vocabulary_predicts_its_strings(tmp_path):
    features, classes, _ = _linear_data()
    labels = np.array(['no', 'yes'])[(classes > 0).astype(int)]
    model = estimator.DNNClassifier(
        hidden_units=[3], feature_columns=_columns(), label_vocabulary=['no', 'yes'], model_dir=str(tmp_path / 'm')
    )
    model.train(_input_fn(features, labels), steps=2)
    metrics = model.evaluate(_input_fn(features, labels, repeat=False))
    assert sorted(metrics) == sorted(
        [
            'accuracy',
            'accuracy_baseline',
            'auc',
            'auc_precision_recall',
            'average_loss',
            'global_step',
            'label/mean',
            'loss',
            'precision',
            'prediction/mean',
            'recall',
        ]
    )
    assert metrics['label/mean'] == pytest.approx(np.mean(classes > 0))
    assert metrics['accuracy_baseline'] == pytest.approx(max(np.mean(classes > 0), 1 - np.mean(classes > 0)))
    first = next(iter(model.predict(lambda: tf.data.Dataset.from_tensor_slices(features).batch(4))))
    assert sorted(first) == [
        'all_class_ids',
        'all_classes',
        'class_ids',
        'classes',
        'logistic',
        'logits',
        'probabilities',
    ]
    assert first['classes'][0] in (b'no', b'yes') and first['all_classes'].tolist() == [b'no', b'yes']
    assert _signatures(model, tmp_path) == {
        'predict': ['all_class_ids', 'all_classes', 'class_ids', 'classes', 'logistic', 'logits', 'probabilities'],
        'serving_default': ['classes', 'scores'],
        'classification': ['classes', 'scores'],
        'regression': ['outputs'],
    }


@pytest.mark.slow
def test_label_outside_the_vocabulary_fails_training_naming_label_vocabulary(tmp_path):
    features, classes, _ = _linear_data()
    labels = np.array(['no', 'yes', 'maybe'])[classes]
    model_dir = str(tmp_path / 'model')
    model = estimator.DNNClassifier(
        hidden_units=[3], feature_columns=_columns(), label_vocabulary=['no', 'yes'], model_dir=model_dir
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match='`label_vocabulary`'):
        model.train(_input_fn(features, labels), steps=2)
    assert tf.train.latest_checkpoint(model_dir) is None or _step_of(model_dir) == 0


def _step_of(model_dir):
    return int(tf.train.load_variable(model_dir, 'global_step'))


_NUMERIC = [tf.feature_column.numeric_column('a')]
_BAD_INPUTS = [
    (lambda d: estimator.DNNClassifier(hidden_units=[3], feature_columns=['a'], model_dir=d), '`feature_columns`'),
    (lambda d: estimator.DNNClassifier(hidden_units=[3], feature_columns='a', model_dir=d), '`feature_columns`'),
    (
        lambda d: estimator.DNNClassifier(
            hidden_units=[3], feature_columns=[tf.feature_column.categorical_column_with_identity('a', 3)], model_dir=d
        ),
        'embedding_column or tf.feature_column.indicator_column',
    ),
    (lambda d: estimator.LinearRegressor(feature_columns=[{'a': 1}], model_dir=d), '`feature_columns`'),
    (
        lambda d: estimator.DNNClassifier(hidden_units=[3], feature_columns=_NUMERIC, n_classes=1, model_dir=d),
        '`n_classes`',
    ),
    (lambda d: estimator.LinearClassifier(_NUMERIC, n_classes=0, model_dir=d), '`n_classes`'),
    (lambda d: estimator.BaselineClassifier(n_classes=1, model_dir=d), '`n_classes`'),
    (
        lambda d: estimator.DNNClassifier(
            hidden_units=[3], feature_columns=_NUMERIC, n_classes=3, label_vocabulary=['a', 'b'], model_dir=d
        ),
        '`label_vocabulary`',
    ),
    (lambda d: estimator.DNNClassifier(hidden_units=[], feature_columns=_NUMERIC, model_dir=d), '`hidden_units`'),
    (lambda d: estimator.DNNRegressor(hidden_units=[0], feature_columns=_NUMERIC, model_dir=d), '`hidden_units`'),
    (
        lambda d: estimator.DNNLinearCombinedClassifier(dnn_feature_columns=_NUMERIC, dnn_hidden_units=[], model_dir=d),
        'dnn_hidden_units',
    ),
    (lambda d: estimator.DNNClassifier([3], _NUMERIC, optimizer='Adadelta', model_dir=d), '`optimizer`'),
    (lambda d: estimator.LinearClassifier(_NUMERIC, optimizer='ftrl', model_dir=d), '`optimizer`'),
    (
        lambda d: estimator.DNNLinearCombinedRegressor(
            linear_feature_columns=_NUMERIC, linear_optimizer='Momentum', model_dir=d
        ),
        '`linear_optimizer`',
    ),
    (lambda d: estimator.DNNClassifier([3], _NUMERIC, loss_reduction='none', model_dir=d), 'loss_reduction'),
    (lambda d: estimator.DNNRegressor([3], _NUMERIC, label_dimension=0, model_dir=d), '`label_dimension`'),
]


@pytest.mark.parametrize('make, named', _BAD_INPUTS)
def test_bad_input_is_refused_naming_the_argument_before_model_dir_is_written(tmp_path, make, named):
    model_dir = tmp_path / 'model'
    with pytest.raises(ValueError, match=named.replace('(', r'\(').replace('.', r'\.')):
        make(str(model_dir))
    assert not os.path.exists(model_dir)


def test_names_not_provided_raise_attribute_error_naming_the_successor():
    with pytest.raises(AttributeError, match='pip install ydf; ydf.GradientBoostedTreesLearner'):
        estimator.BoostedTreesClassifier  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEstimator'"):
        estimator.NoSuchEstimator  # noqa: B018


@pytest.mark.slow
@pytest.mark.parametrize(
    'optimizer, scope, average_loss',
    [
        ('Adagrad', 'Adagrad', 1.8331869),
        ('Adam', 'Adam', 0.98894024),
        ('SGD', 'SGD', 0.08244462),
        ('RMSProp', 'RMSprop', 0.1366097),
        (lambda: tf.keras.optimizers.Adam(0.05), 'Adam', 3.165948),  # TF 2.15: tf.keras.optimizers.legacy.Adam.
    ],
    ids=['Adagrad', 'Adam', 'SGD', 'RMSProp', 'keras-Adam'],
)
def test_each_optimizer_trains_to_tf215s_loss_under_its_names(tmp_path, optimizer, scope, average_loss):
    features, _, targets = _linear_data()
    model = estimator.LinearRegressor(_columns(), model_dir=str(tmp_path / 'model'), optimizer=optimizer)
    model.train(_input_fn(features, targets), steps=5)
    assert model.evaluate(_input_fn(features, targets, repeat=False))['average_loss'] == pytest.approx(
        average_loss, rel=1e-4
    )
    hyperparameters = sorted(name for name in _names(model.model_dir) if name.count('/') == 2)
    assert hyperparameters[0] == 'linear/linear_model/bias_weights'
    assert all(name.startswith(f'training/{scope}/') for name in hyperparameters[1:])
    assert f'training/{scope}/learning_rate' in hyperparameters


def test_keras_optimizer_settings_not_built_are_refused_naming_the_argument(tmp_path):
    with pytest.raises(ValueError, match='`dnn_optimizer`: Adam with amsgrad=True is not supported'):
        estimator.DNNLinearCombinedClassifier(
            dnn_feature_columns=_columns(), dnn_hidden_units=[2], dnn_optimizer=tf.keras.optimizers.Adam(amsgrad=True)
        )
    assert not os.path.exists(tmp_path / 'model')


@pytest.mark.slow
def test_dnn_linear_combined_regressor_counts_steps_as_tf215(tmp_path):
    features, _, targets = _linear_data()
    linear_only = estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / 'linear'), linear_feature_columns=_columns()
    )
    linear_only.train(_input_fn(features, targets), steps=3)
    assert _names(linear_only.model_dir) == {'global_step': [], **_linear_weights(1), **{name: [] for name in _FTRL}}
    assert linear_only.get_variable_value('training/Ftrl/learning_rate') == pytest.approx(0.005)
    metrics = linear_only.evaluate(_input_fn(features, targets, repeat=False))
    assert metrics['average_loss'] == pytest.approx(4.3670406, rel=1e-5)

    both = estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / 'both'),
        linear_feature_columns=_columns()[:1],
        dnn_feature_columns=_columns(),
        dnn_hidden_units=[3],
    )
    both.train(_input_fn(features, targets), steps=3)
    names = _names(both.model_dir)
    assert names['training/Ftrl/iter'] == [] and both.get_variable_value('training/Ftrl/iter') == 3
    assert both.get_variable_value('global_step') == 3
    assert {'dnn/hiddenlayer_0/kernel', 'linear/linear_model/a/weights', 'training/Adagrad/learning_rate'} <= set(names)
    assert len(names) == 24  # As TF 2.15's checkpoint.


@pytest.mark.slow
def test_weights_sum_reduction_and_a_label_vocabulary_give_tf215s_values(tmp_path):
    features, classes, _ = _linear_data()
    features = dict(features, w=np.linspace(0.5, 2.0, 64).astype(np.float32))
    labels = np.array(['x', 'y', 'z'])[classes]
    model = estimator.LinearClassifier(
        _columns(),
        model_dir=str(tmp_path / 'model'),
        n_classes=3,
        weight_column='w',
        label_vocabulary=['x', 'y', 'z'],
        loss_reduction='sum',
    )
    model.train(_input_fn(features, labels), steps=4)
    metrics = model.evaluate(_input_fn(features, labels, repeat=False))
    assert metrics == pytest.approx(
        {'accuracy': 0.42380953, 'average_loss': 1.0516711, 'loss': 21.033422, 'global_step': 4}, rel=1e-5
    )
    first = next(iter(model.predict(lambda: tf.data.Dataset.from_tensor_slices(features).batch(4))))
    np.testing.assert_allclose(first['logits'], [-0.02667688, 0.05005413, -0.07851582], rtol=1e-5)
    assert first['classes'].tolist() == [b'y'] and first['all_classes'].tolist() == [b'x', b'y', b'z']
