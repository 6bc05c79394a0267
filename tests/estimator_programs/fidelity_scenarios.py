"""What real programs hit, run under TF 2.15's `tf.estimator` or `compat_mts.estimator`, for the same results.

`tests/test_estimator_fidelity.py` runs every scenario once in a TF 2.15 child (`python fidelity_scenarios.py
'<json list of names>' <directory>`, the results printed as one JSON line after `RESULTS:`) and the same
scenarios here with `compat_mts.estimator`; those needing Keras 2 (`tf.keras.optimizers.legacy`, `tf.keras`
metrics of Keras 2) run in a program with `TF_USE_LEGACY_KERAS=1` and tf-keras. A scenario takes the estimator
module and a fresh directory and returns plain values (numbers, strings, lists): weights after a few steps, the
metrics of an evaluation, the calls a hook got, an error's type and message. The data and models are small and
their variables start at zeros (linear models) or from a fixed seed, so both sides give the same numbers.
"""

import json
import os
import sys
import unittest.mock

import numpy as np
import tensorflow as tf

TF215 = tf.__version__.startswith('2.15')
FEATURES = np.array([[1.0], [2.0], [3.0], [5.0]], np.float32)
TARGETS = np.array([[1.0], [3.0], [2.0], [6.0]], np.float32)
INCOMES = np.array([['<=50K'], ['>50K'], ['<=50K'], ['>50K']])


def _columns():
    return [tf.feature_column.numeric_column('x')]


def _regression_input_fn():
    return tf.data.Dataset.from_tensor_slices(({'x': FEATURES}, TARGETS)).batch(4).repeat()


def _linear_weights(model):
    return [
        model.get_variable_value('linear/linear_model/x/weights').ravel().tolist(),
        model.get_variable_value('linear/linear_model/bias_weights').ravel().tolist(),
    ]


def _trained_linear(estimator, directory, optimizer, steps=3):
    model = estimator.LinearRegressor(_columns(), model_dir=directory, optimizer=optimizer)
    model.train(_regression_input_fn, steps=steps)
    return _linear_weights(model)


def _halving_sgd():
    """A Keras 2 optimizer of the program's own: SGD taking half of each gradient."""

    class HalvingSGD(tf.keras.optimizers.legacy.SGD):
        def _resource_apply_dense(self, grad, var, apply_state=None):
            return super()._resource_apply_dense(grad * 0.5, var, apply_state)

    return HalvingSGD(0.1)


def keras2_optimizers(estimator, directory):
    """Keras 2 optimizers, as TF 2.15 had them: a subclass, a zero learning rate, momentum, a callable."""
    legacy = tf.keras.optimizers.legacy
    optimizers = {
        'subclass': _halving_sgd(),
        'zero_rate': legacy.SGD(learning_rate=0.0),
        'nesterov': legacy.SGD(0.1, momentum=0.9, nesterov=True),
        'adam_callable': lambda: legacy.Adam(0.1),
    }
    return {
        name: _trained_linear(estimator, os.path.join(directory, name), optimizer)
        for name, optimizer in optimizers.items()
    }


def keras3_optimizers(estimator, directory):
    """Keras 3 optimizers here, TF 2.15's Keras 2 ones there (what TF 2.15 converted a new optimizer to)."""
    keras = tf.keras.optimizers.legacy if TF215 else tf.keras.optimizers
    optimizers = {
        'zero_rate': keras.SGD(learning_rate=0.0),
        'nesterov': keras.SGD(0.1, momentum=0.9, nesterov=True),
    }
    return {
        name: _trained_linear(estimator, os.path.join(directory, name), optimizer)
        for name, optimizer in optimizers.items()
    }


def same_kind_optimizers(estimator, directory):
    """Wide & deep with 'SGD' for both parts: the optimizers' variable names in the checkpoint."""
    age = tf.feature_column.numeric_column('age')
    model = estimator.DNNLinearCombinedClassifier(
        model_dir=directory,
        linear_feature_columns=[age],
        dnn_feature_columns=[age],
        dnn_hidden_units=[2],
        linear_optimizer='SGD',
        dnn_optimizer='SGD',
    )
    model.train(lambda: ({'age': tf.constant([[1.0], [2.0]])}, tf.constant([[0], [1]])), max_steps=1)
    return sorted(name for name in model.get_variable_names() if name.startswith('training/'))


def boolean_labels(estimator, directory):
    """The census input_fn's labels, `tf.equal(income, '>50K')`, in a binary classifier: trained, evaluated."""

    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(({'x': FEATURES}, INCOMES)).batch(4)
        return dataset.map(lambda features, income: (features, tf.equal(income, '>50K')))

    model = estimator.LinearClassifier(_columns(), model_dir=directory)
    model.train(lambda: input_fn().repeat(), steps=3)
    metrics = model.evaluate(input_fn)
    return {key: float(value) for key, value in metrics.items()}


def _error(call):
    try:
        call()
    except Exception as error:  # The scenario's result is the error a program gets.
        return [type(error).__name__, str(error)]
    return None


def v1_feature_column(estimator, directory):
    """A `tf.compat.v1.feature_column` column in a premade Estimator of TF 2: the error."""

    def build_and_train():
        with tf.Graph().as_default():  # v1's shared embedding columns are made in a graph only.
            identities = [tf.feature_column.categorical_column_with_identity(key, 3) for key in ('a', 'b')]
            columns = tf.compat.v1.feature_column.shared_embedding_columns(identities, 2)
        model = estimator.DNNClassifier(hidden_units=[2], feature_columns=columns, model_dir=directory)
        model.train(lambda: ({'a': tf.constant([[1]]), 'b': tf.constant([[2]])}, tf.constant([[1]])), steps=1)

    return _error(build_and_train)


def keras_metric(estimator, directory):
    """A Keras metric object as an `eval_metric_ops` value, updated in the model_fn."""

    def model_fn(features, labels, mode):
        weight = tf.compat.v1.get_variable('w', [1, 1], initializer=tf.compat.v1.ones_initializer())
        predictions = tf.matmul(features['x'], weight)
        loss = tf.reduce_mean(tf.square(predictions - labels))
        train_op = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
        mean = tf.keras.metrics.Mean()
        mean.update_state(predictions)
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={'mean': mean})

    model = estimator.Estimator(model_fn, model_dir=directory)
    model.train(_regression_input_fn, steps=1)
    metrics = model.evaluate(lambda: _regression_input_fn().take(2))
    return {key: float(value) for key, value in metrics.items()}


def model_fn_without_mode(estimator, directory):
    """A `model_fn(features)` that returns `EstimatorSpec(mode=None, ...)`: trained."""

    def model_fn(features):
        weight = tf.compat.v1.get_variable('w', [1, 1], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features['x'], weight) - 1.0))
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.01)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator.EstimatorSpec(mode=None, loss=loss, train_op=train_op)

    model = estimator.Estimator(model_fn, model_dir=directory)
    model.train(lambda: tf.data.Dataset.from_tensor_slices({'x': FEATURES}).batch(4).repeat(), steps=2)
    return [int(model.get_variable_value('global_step')), model.get_variable_value('w').ravel().tolist()]


def hooks_without_methods_in_their_class(estimator, directory):
    """A `MagicMock(wraps=SessionRunHook(), spec=SessionRunHook)` hook: what it was called with."""
    hook = unittest.mock.MagicMock(
        wraps=tf.compat.v1.train.SessionRunHook(), spec=tf.compat.v1.train.SessionRunHook
    )
    model = estimator.LinearRegressor(_columns(), model_dir=directory)
    model.train(_regression_input_fn, steps=2, hooks=[hook])
    return {name: getattr(hook, name).call_count for name in sorted(('begin', 'after_create_session', 'before_run',
                                                                        'after_run', 'end'))}


def logging_tensor_hook_by_name(estimator, directory):
    """`LoggingTensorHook` on tensors of the premade head, named as TF 2.15 named them, in `train(hooks=...)`."""
    logged = []
    names = {
        'sum': 'head/losses/weighted_loss/Sum',
        'loss': 'head/losses/weighted_loss/value:0',
        'unweighted': 'head/losses/mean_squared_error/Mul',
        'labels': 'head/losses/labels',
    }
    hook = tf.compat.v1.train.LoggingTensorHook(
        names, every_n_iter=1, formatter=lambda values: logged.append({k: np.asarray(v).tolist() for k, v in
                                                                       values.items()}) or ''
    )
    model = estimator.LinearRegressor(_columns(), model_dir=directory)
    model.train(_regression_input_fn, steps=2, hooks=[hook])
    return logged


def unknown_tensor_name(estimator, directory):
    """`LoggingTensorHook` on a name no op of the graph has: the error."""
    hook = tf.compat.v1.train.LoggingTensorHook({'x': 'head/no_such_op'}, every_n_iter=1)
    model = estimator.LinearRegressor(_columns(), model_dir=directory)
    return _error(lambda: model.train(_regression_input_fn, steps=1, hooks=[hook]))


def missing_feature_key(estimator, directory):
    """A feature column whose key the input_fn does not yield, in a linear and a DNN model: the errors."""
    job = tf.feature_column.categorical_column_with_vocabulary_list('job', ['a', 'b'])
    models = [
        estimator.LinearClassifier([job], model_dir=os.path.join(directory, 'linear')),
        estimator.DNNClassifier(
            [2], [tf.feature_column.indicator_column(job)], model_dir=os.path.join(directory, 'dnn')
        ),
    ]
    input_fn = lambda: tf.data.Dataset.from_tensor_slices(({'x': FEATURES}, INCOMES == '>50K')).batch(4)  # noqa: E731
    return [_error(lambda: model.train(input_fn, steps=1)) for model in models]


# The ops of each premade head a program may name (hooks, `get_tensor_by_name`), in TF 2.15's names.
HEAD_OPS = {
    'binary': [
        'head/losses/labels',
        'head/losses/logistic_loss',
        'head/losses/weighted_loss/Mul',
        'head/losses/weighted_loss/Sum',
        'head/losses/weighted_loss/value',
        'head/predictions/logistic',
        'head/predictions/two_class_logits',
        'head/predictions/probabilities',
        'head/predictions/class_ids',
        'head/predictions/str_classes',
    ],
    'multi_class': [
        'head/losses/labels',
        'head/losses/sparse_softmax_cross_entropy_loss/xentropy/xentropy',
        'head/losses/weighted_loss/Mul',
        'head/losses/weighted_loss/Sum',
        'head/losses/weighted_loss/value',
        'head/predictions/probabilities',
        'head/predictions/class_ids',
        'head/predictions/str_classes',
    ],
    'regression': [
        'head/losses/labels',
        'head/losses/mean_squared_error/SquaredDifference',
        'head/losses/weighted_loss/Mul',
        'head/losses/weighted_loss/Sum',
        'head/losses/weighted_loss/value',
    ],
}


def head_op_names(estimator, directory):
    """Which of `HEAD_OPS` each premade Estimator's training graph has (a kind of head per Estimator)."""
    del directory  # Only graphs are built.
    columns = _columns()
    makers = {
        'binary': [
            lambda: estimator.LinearClassifier(columns),
            lambda: estimator.DNNClassifier([2], columns),
            lambda: estimator.DNNLinearCombinedClassifier(linear_feature_columns=columns),
            lambda: estimator.BaselineClassifier(),
        ],
        'multi_class': [lambda: estimator.DNNClassifier([2], columns, n_classes=3)],
        'regression': [
            lambda: estimator.LinearRegressor(columns),
            lambda: estimator.DNNRegressor([2], columns),
            lambda: estimator.BaselineRegressor(),
        ],
    }
    found = {}
    for kind, kind_makers in makers.items():
        for index, make in enumerate(kind_makers):
            model = make()
            graph = tf.Graph()
            with graph.as_default():
                tf.compat.v1.train.get_or_create_global_step()
                labels = tf.constant([[0], [1]]) if kind != 'regression' else tf.constant([[1.0], [2.0]])
                model.model_fn({'x': tf.constant([[1.0], [2.0]])}, labels, 'train', model.config)
            names = {op.name for op in graph.get_operations()}
            found[f'{kind}/{index}'] = [name in names for name in HEAD_OPS[kind]]
    return found


SCENARIOS = {
    function.__name__: function
    for function in (
        keras2_optimizers,
        keras3_optimizers,
        same_kind_optimizers,
        boolean_labels,
        v1_feature_column,
        keras_metric,
        model_fn_without_mode,
        hooks_without_methods_in_their_class,
        logging_tensor_hook_by_name,
        unknown_tensor_name,
        missing_feature_key,
        head_op_names,
    )
}


def run(estimator, names, directory):
    """The results of the scenarios `names`, each in a directory of its own under `directory`."""
    return {name: SCENARIOS[name](estimator, os.path.join(directory, name)) for name in names}


if __name__ == '__main__':
    if TF215:
        module = tf.estimator
    else:
        import compat_mts.estimator as module
    print('RESULTS:' + json.dumps(run(module, json.loads(sys.argv[1]), sys.argv[2])))
