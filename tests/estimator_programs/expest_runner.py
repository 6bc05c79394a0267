"""The experimental builders and Estimators, under TF 2.15's `tf.compat.v1.estimator` or `compat_mts.estimator`.

`tests/test_estimator_expest.py` runs `results(...)` in a TF 2.15 child process (`python expest_runner.py <root>`,
the results printed as one JSON line after `RESULTS:`) and then in its own process, which reads the child's
checkpoints from `<root>` (`reference_root`): a network that starts at random is compared from TF 2.15's
trained checkpoint (the same weights predict the same logits), its variables' names and shapes from its own.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

from tests.estimator_programs.results import error_of, plain

_RNG = np.random.default_rng(0)
FEATURES = {'a': _RNG.normal(size=16).astype(np.float32), 'b': _RNG.normal(size=16).astype(np.float32)}
LABELS = (FEATURES['a'] - 2 * FEATURES['b'] > 0).astype(np.float32)


def _builders_model_fn(tf, estimator):
    experimental = estimator.experimental
    columns = [tf.feature_column.numeric_column('a'), tf.feature_column.numeric_column('b')]

    def model_fn(features, labels, mode, config):
        dnn = experimental.dnn_logit_fn_builder(1, [3, 2], columns, tf.nn.relu, None, None, True)
        linear = experimental.linear_logit_fn_builder(1, columns)
        logits = experimental.call_logit_fn(dnn, features, mode, None, config) + linear(features)
        predictions = {'logits': logits}
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels[:, tf.newaxis], logits=logits))
        step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, tf.compat.v1.train.get_global_step())
        train_op = tf.group(step, *tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=predictions)

    return model_fn


def _input_fn(tf, with_labels=True):
    def input_fn():
        data = (FEATURES, LABELS) if with_labels else FEATURES
        return tf.data.Dataset.from_tensor_slices(data).batch(8)

    return input_fn


def _variables(tf, model_dir):
    return [[name, shape] for name, shape in tf.train.list_variables(model_dir)]


def _builders(tf, estimator, root, reference_root):
    """The builders' variables after 2 steps, and the logits predicted from TF 2.15's checkpoint."""
    model_dir = os.path.join(root, 'builders')
    model = estimator.Estimator(_builders_model_fn(tf, estimator), model_dir=model_dir)
    model.train(_input_fn(tf), steps=2)
    predict_dir = tempfile.mkdtemp(dir=root)
    shutil.rmtree(predict_dir)
    shutil.copytree(os.path.join(reference_root, 'builders'), predict_dir)
    from_reference = estimator.Estimator(_builders_model_fn(tf, estimator), model_dir=predict_dir)
    logits = [p['logits'] for p in from_reference.predict(_input_fn(tf, with_labels=False))]
    experimental = estimator.experimental
    columns = [tf.feature_column.numeric_column('a')]
    return {
        'variables': _variables(tf, model_dir),
        'logits': plain(np.array(logits).ravel()),
        'errors': [
            error_of(lambda: experimental.dnn_logit_fn_builder('1', [3], columns, tf.nn.relu, None, None, False)),
            error_of(lambda: experimental.linear_logit_fn_builder(2.0, columns)),
        ],
    }


POINTS = np.random.default_rng(1).uniform(0, 10, [40, 2]).astype(np.float32)


def _kmeans(tf, estimator, root, name, steps, **kwargs):
    """A seeded `KMeans`: its variables, centers, score, indices, distances and the step training stopped at."""
    model = estimator.experimental.KMeans(3, model_dir=os.path.join(root, name), seed=3, **kwargs)
    model.train(lambda: tf.data.Dataset.from_tensor_slices(POINTS).batch(20).repeat(), steps=steps)
    points = lambda: tf.data.Dataset.from_tensor_slices(POINTS).batch(40)  # noqa: E731
    return plain(
        {
            'variables': _variables(tf, model.model_dir),
            'step': model.get_variable_value('global_step'),
            'centers': model.cluster_centers(),
            'score': model.score(points),
            'indices': list(model.predict_cluster_index(points)),
            'distances': list(model.transform(points))[:5],
        }
    )


def _kmeans_scenarios(tf, estimator, root):
    kmeans = estimator.experimental.KMeans
    return {
        'full_batch_kmeans_plus_plus': _kmeans(
            tf, estimator, root, 'full', 4, use_mini_batch=False, initial_clusters=kmeans.KMEANS_PLUS_PLUS_INIT
        ),
        'full_batch_random_cosine': _kmeans(
            tf, estimator, root, 'cosine', 4, use_mini_batch=False, distance_metric=kmeans.COSINE_DISTANCE
        ),
        'mini_batch': _kmeans(tf, estimator, root, 'mini', 4),
        'relative_tolerance': _kmeans(
            tf,
            estimator,
            root,
            'tolerance',
            50,
            use_mini_batch=False,
            initial_clusters=POINTS[:3],
            relative_tolerance=1e-3,
        ),
        'errors': [
            error_of(lambda: kmeans(3, initial_clusters='first')),
            error_of(lambda: kmeans(3, distance_metric='manhattan')),
        ],
        'constants': [
            kmeans.SQUARED_EUCLIDEAN_DISTANCE,
            kmeans.COSINE_DISTANCE,
            kmeans.RANDOM_INIT,
            kmeans.KMEANS_PLUS_PLUS_INIT,
            kmeans.SCORE,
            kmeans.CLUSTER_INDEX,
            kmeans.ALL_DISTANCES,
            kmeans.CLUSTER_CENTERS_VAR_NAME,
        ],
    }


def _tpu_embedding(tf, estimator, root):
    """`EmbeddingConfigSpec` in a `TPUEstimator(use_tpu=False)`: its fields, the variables, the errors."""
    tpu = estimator.tpu
    parameters = getattr(getattr(tf.compat.v1.tpu.experimental, 'AdagradParameters', None), '__call__', None)
    parameters = parameters(0.1) if parameters else 'adagrad'  # TF 2.21 has no AdagradParameters.
    ids = tf.feature_column.categorical_column_with_identity('id', 5)
    column = tf.compat.v1.tpu.experimental.embedding_column(ids, 2)
    spec = tpu.experimental.EmbeddingConfigSpec(feature_columns=[column], optimization_parameters=parameters)

    def model_fn(features, labels, mode, params):
        weights = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.ones_initializer())
        logits = tf.matmul(tf.compat.v1.feature_column.input_layer(features, [column]), weights)
        loss = tf.reduce_mean(tf.square(logits[:, 0] - labels))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, tf.compat.v1.train.get_global_step())
        return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        data = ({'id': np.arange(8, dtype=np.int64) % 5}, np.arange(8, dtype=np.float32))
        return tf.data.Dataset.from_tensor_slices(data).batch(params['batch_size'], drop_remainder=True)

    config = tpu.RunConfig(model_dir=os.path.join(root, 'tpu'))
    model = tpu.TPUEstimator(model_fn, config=config, use_tpu=False, train_batch_size=4, embedding_config_spec=spec)
    model.train(input_fn, steps=2)
    mod = spec._replace(partition_strategy='mod')
    return {
        'fields': list(spec._fields),
        'split': [len(spec.feature_columns), spec.tensor_core_feature_columns, spec.partition_strategy],
        'variables': [name for name, _ in tf.train.list_variables(model.model_dir)],
        'errors': [
            error_of(lambda: tpu.experimental.EmbeddingConfigSpec()),
            error_of(lambda: tpu.experimental.EmbeddingConfigSpec([column], parameters, partition_strategy='x')),
            error_of(lambda: tpu.TPUEstimator(model_fn, config=config, use_tpu=False, embedding_config_spec=mod)),
        ],
    }


def results(tf, estimator, root, reference_root=None):
    """Every scenario's result (see the module docstring), as plain JSON values."""
    reference_root = reference_root or root
    return {
        'builders': _builders(tf, estimator, root, reference_root),
        'kmeans': _kmeans_scenarios(tf, estimator, root),
        'tpu_embedding': _tpu_embedding(tf, estimator, root),
    }


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    print('RESULTS:' + json.dumps(results(tf, tf.compat.v1.estimator, sys.argv[1])))
