"""The smaller `tf.estimator` names, under TF 2.15's `tf.estimator` or `compat_mts.estimator`: the same calls.

`tests/test_estimator_api.py` runs `results(...)` in a TF 2.15 child process (`python api_runner.py <root>`, the
results printed as one JSON line after `RESULTS:`) and in its own process: `classifier_parse_example_spec` and
`regressor_parse_example_spec`, `add_metrics` on a premade Estimator, `BestExporter` in `train_and_evaluate`,
`export.EvalOutput`, `experimental.build_raw_supervised_input_receiver_fn` and `experimental.call_logit_fn`,
with their errors.
"""

import json
import os
import sys

import numpy as np

from tests.estimator_programs.results import error_of, plain


def _spec(spec):
    """A parse spec as `{key: [kind, shape, dtype, default]}`."""
    found = {}
    for key, feature in spec.items():
        shape = list(getattr(feature, 'shape', None) or [])
        found[key] = [
            type(feature).__name__,
            shape,
            feature.dtype.name,
            plain(getattr(feature, 'default_value', None)),
        ]
    return found


def _parse_specs(tf, estimator):
    columns = [
        tf.feature_column.numeric_column('age'),
        tf.feature_column.categorical_column_with_vocabulary_list('color', ['red', 'blue']),
        tf.feature_column.bucketized_column(tf.feature_column.numeric_column('height', shape=(2,)), [1.0, 2.0]),
    ]
    weight = tf.feature_column.numeric_column('w', default_value=1.0)
    return {
        'classifier': _spec(estimator.classifier_parse_example_spec(columns, 'label')),
        'classifier_string_weight': _spec(
            estimator.classifier_parse_example_spec(
                columns, 'label', label_dtype=tf.string, label_default='x', weight_column='w'
            )
        ),
        'regressor': _spec(
            estimator.regressor_parse_example_spec(columns, 'y', label_dimension=3, weight_column=weight)
        ),
        'errors': [
            error_of(lambda: estimator.classifier_parse_example_spec(columns, 'age')),
            error_of(lambda: estimator.regressor_parse_example_spec(columns, 'y', weight_column='age')),
            error_of(lambda: estimator.regressor_parse_example_spec(columns, 'y', weight_column=columns[1])),
        ],
    }


def _data(tf):
    rng = np.random.default_rng(0)
    features = {'a': rng.normal(size=32).astype(np.float32), 'b': rng.normal(size=32).astype(np.float32)}
    labels = (features['a'] - 2 * features['b'] + 0.5).astype(np.float32)

    def input_fn(repeat):
        def make():
            dataset = tf.data.Dataset.from_tensor_slices((features, labels))
            return (dataset.repeat() if repeat else dataset).batch(8)

        return make

    return input_fn


def _add_metrics(tf, estimator, root):
    columns = [tf.feature_column.numeric_column('a'), tf.feature_column.numeric_column('b')]
    input_fn = _data(tf)
    regressor = estimator.LinearRegressor(columns, model_dir=os.path.join(root, 'add_metrics'))
    regressor.train(input_fn(True), steps=5)

    def metric_fn(labels, predictions, features, config):
        return {
            'mae': tf.compat.v1.metrics.mean_absolute_error(labels, predictions['predictions'][:, 0]),
            'label/mean': tf.compat.v1.metrics.mean(features['a']),  # Replaces the head's.
            'saves': tf.compat.v1.metrics.mean(tf.constant(float(config.save_summary_steps))),
        }

    extended = estimator.add_metrics(regressor, metric_fn)
    return {
        'evaluate': plain(extended.evaluate(input_fn(False))),
        'model_dir': extended.model_dir == regressor.model_dir,
        'error': error_of(lambda: estimator.add_metrics(regressor, lambda labels, mode: {})),
    }


def _best_exporter(tf, estimator, root):
    input_fn = _data(tf)
    exported = []

    class RecordingExporter(estimator.BestExporter):
        def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
            result = super().export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)
            exported.append([int(eval_result['global_step']), result is not None])
            return result

    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
        prediction = tf.matmul(tf.stack([features['a'], features['b']], axis=1), w)[:, 0]
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.EstimatorSpec(mode, predictions={'y': prediction})
        loss = tf.reduce_mean(tf.square(prediction - labels))
        step = tf.compat.v1.train.get_global_step()
        rate = tf.compat.v1.train.piecewise_constant(step, [4], [0.1, 1.2])  # Learns, then diverges.
        train_op = tf.compat.v1.train.GradientDescentOptimizer(rate).minimize(loss, global_step=step)
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = estimator.RunConfig(save_checkpoints_steps=2, log_step_count_steps=1000)
    model = estimator.Estimator(model_fn, model_dir=os.path.join(root, 'best'), config=config)
    with tf.Graph().as_default():  # TF 2.15's receiver takes placeholders, made in a graph of their own.
        serving = estimator.export.build_raw_serving_input_receiver_fn(
            {'a': tf.compat.v1.placeholder(tf.float32, [None]), 'b': tf.compat.v1.placeholder(tf.float32, [None])}
        )
    exporter = RecordingExporter(serving_input_receiver_fn=serving, exports_to_keep=2)
    train_spec = estimator.TrainSpec(input_fn(True), max_steps=8)
    eval_spec = estimator.EvalSpec(input_fn(False), exporters=exporter, throttle_secs=0)
    estimator.train_and_evaluate(model, train_spec, eval_spec)
    export_dir = os.path.join(model.model_dir, 'export', 'best_exporter')
    return {
        'exported': exported,
        'kept': len(tf.io.gfile.listdir(export_dir)),
        'errors': [
            error_of(lambda: estimator.BestExporter(compare_fn=None)),
            error_of(lambda: estimator.BestExporter(compare_fn=lambda best_eval_result: True)),
            error_of(lambda: estimator.BestExporter(compare_fn=lambda best_eval_result, current_eval_result, x: 1)),
            error_of(lambda: estimator.BestExporter(exports_to_keep=0)),
        ],
    }


def _graph_names(tf, estimator):
    """EvalOutput's keys, the supervised receiver's tensors and call_logit_fn's checks, in a v1 graph."""
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        prediction = tf.constant([1.0, 2.0])
        metric = tf.compat.v1.metrics.mean(prediction)
        outputs = estimator.export.EvalOutput(
            loss={'loss': loss, 'other': loss},
            predictions={'y': prediction},
            metrics={'mean': metric, ('a', 'b'): metric},
        )
        lone = estimator.export.EvalOutput(loss=loss, predictions=prediction, metrics=metric)
        keys = {
            'dict': [sorted(outputs.loss), sorted(outputs.predictions), sorted(outputs.metrics)],
            'lone': [sorted(lone.loss), sorted(lone.predictions), sorted(lone.metrics)],
        }
        errors = [
            error_of(lambda: estimator.export.EvalOutput(loss={1: loss})),
            error_of(lambda: estimator.export.EvalOutput(predictions={'y': 3})),
            error_of(lambda: estimator.export.EvalOutput(metrics={'m': (3, metric[1])})),
            error_of(lambda: estimator.export.EvalOutput(metrics={'m': (metric[0], 3)})),
        ]
        build = estimator.experimental.build_raw_supervised_input_receiver_fn
        features = {'x': tf.compat.v1.placeholder(tf.float32, [7, 3]), 'n': tf.compat.v1.placeholder(tf.int64, [7])}
        receiver = build(features, tf.compat.v1.placeholder(tf.int32, [7, 1]), default_batch_size=5)()
        lone_receiver = build(prediction, {'t': prediction})()
        describe = lambda tensors: {  # noqa: E731
            key: [value.op.type, value.shape.as_list(), value.dtype.name] for key, value in tensors.items()
        }
        receivers = {
            'features': describe(receiver.features),
            'labels': [receiver.labels.shape.as_list(), receiver.labels.dtype.name],
            'receiver_tensors': describe(receiver.receiver_tensors),
            'lone': sorted(lone_receiver.receiver_tensors),
            'overlap': error_of(lambda: build({'x': prediction}, {'x': prediction})),
        }
        call = estimator.experimental.call_logit_fn
        logits = call(
            lambda features, mode, params: features['x'] * params['k'], {'x': loss}, 'train', {'k': 2.0}, None
        )
        logit_fn = {
            'dict': sorted(call(lambda features: {'a': features['x']}, {'x': loss}, 'eval', None, None)),
            'error': error_of(lambda: call(lambda features: [features['x']], {'x': loss}, 'eval', None, None)),
        }
        with tf.compat.v1.Session() as session:
            logit_fn['value'] = plain(session.run(logits))
    return {'eval_output': keys, 'eval_output_errors': errors, 'receivers': receivers, 'call_logit_fn': logit_fn}


def results(tf, estimator, root):
    """Every scenario's result (see the module docstring), as plain JSON values."""
    return {
        'parse_specs': _parse_specs(tf, estimator),
        'add_metrics': _add_metrics(tf, estimator, root),
        'best_exporter': _best_exporter(tf, estimator, root),
        'graph_names': _graph_names(tf, estimator),
    }


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    print('RESULTS:' + json.dumps(results(tf, tf.estimator, sys.argv[1])))
