"""`Estimator.export_saved_model` and the exporters: the PREDICT graph as a TF2 SavedModel, loaded back."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests.estimator_programs import linear
from tests.support import run_python

SERVING = estimator.export.build_raw_serving_input_receiver_fn({'x': tf.TensorSpec([None, 2], tf.float32)})


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp('trained')
    model = estimator.Estimator(linear.model_fn, model_dir=str(model_dir), params={})
    model.train(linear.input_fn(), max_steps=30)
    return str(model_dir)


def test_the_exported_saved_model_serves_what_predict_yields(trained, tmp_path):
    model = estimator.Estimator(linear.model_fn, model_dir=trained, params={})
    export_dir = model.export_saved_model(str(tmp_path), SERVING)
    assert isinstance(export_dir, bytes)  # As v1.
    assert os.path.dirname(export_dir) == os.fsencode(tmp_path) and os.path.basename(export_dir).isdigit()
    loaded = tf.saved_model.load(os.fsdecode(export_dir))
    serve = loaded.signatures['serving_default']
    assert list(serve.structured_input_signature[1]) == ['x']
    features = linear.data(6, seed=1)[0]
    outputs = serve(x=tf.constant(features))
    predictions = list(model.predict(linear.predict_input_fn()))
    np.testing.assert_allclose(outputs['y'].numpy(), [p['y'] for p in predictions], rtol=1e-6)
    np.testing.assert_allclose(outputs['twice'].numpy(), [p['twice'] for p in predictions], rtol=1e-6)


def test_export_outputs_become_classify_and_regress_signatures_taking_inputs(trained, tmp_path):
    """v1's rule (compared with TF 2.15 case by case in tests/test_estimator_serving.py): a classification or
    regression output makes a classify or regress signature on the one string receiver tensor, as `inputs`; on
    a receiver of float features it is left out."""

    def model_fn(features, mode):
        w = tf.compat.v1.get_variable('w', [2, 1])
        value = tf.matmul(features['x'], w)
        return estimator.EstimatorSpec(
            mode,
            predictions={'value': value},
            export_outputs={
                'serving_default': estimator.export.RegressionOutput(value),
                'scores': estimator.export.ClassificationOutput(scores=tf.nn.softmax(value)),
            },
        )

    model = estimator.Estimator(model_fn, model_dir=trained)
    parsing = estimator.export.build_parsing_serving_input_receiver_fn({'x': tf.io.FixedLenFeature([2], tf.float32)})
    export_dir = model.export_saved_model(str(tmp_path / 'parsing'), parsing, as_text=True)
    loaded = tf.saved_model.load(os.fsdecode(export_dir))
    assert sorted(loaded.signatures) == ['scores', 'serving_default']
    example = tf.train.Example(
        features=tf.train.Features(feature={'x': tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 1.0]))})
    )
    inputs = tf.constant([example.SerializeToString()])
    assert list(loaded.signatures['serving_default'](inputs=inputs)) == ['outputs']
    assert list(loaded.signatures['scores'](inputs=inputs)) == ['scores']
    w = tf.train.load_variable(trained, 'w')  # Restored from the checkpoint, not initialized.
    np.testing.assert_allclose(loaded.signatures['serving_default'](inputs=inputs)['outputs'].numpy(), [[w.sum()]])
    assert not tf.saved_model.load(os.fsdecode(model.export_saved_model(str(tmp_path / 'raw'), SERVING))).signatures


def test_a_sparse_receiver_tensor_is_refused_naming_it(trained, tmp_path):
    def receiver_fn():
        dense = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
        sparse = tf.compat.v1.sparse_placeholder(tf.float32, name='sparse_x')
        return estimator.export.ServingInputReceiver({'x': dense}, {'x': dense, 'sparse_x': sparse})

    model = estimator.Estimator(linear.model_fn, model_dir=trained, params={})
    with pytest.raises(NotImplementedError, match='dense tensors only; a receiver tensor is a SparseTensor'):
        model.export_saved_model(str(tmp_path), receiver_fn)


def test_export_needs_a_checkpoint_with_every_variable(trained, tmp_path):
    untrained = estimator.Estimator(linear.model_fn, model_dir=str(tmp_path / 'empty'), params={})
    with pytest.raises(ValueError, match="^Couldn't find trained model at "):
        untrained.export_saved_model(str(tmp_path), SERVING)
    with pytest.raises(ValueError, match='^An input_receiver_fn must be defined.$'):
        untrained.export_saved_model(str(tmp_path), None)

    def model_fn(features, mode):
        extra = tf.compat.v1.get_variable('not_trained', [1])
        return estimator.EstimatorSpec(mode, predictions=features['x'] + extra)

    with pytest.raises(ValueError, match=r'^Could not load all requested variables from checkpoint.[\s\S]*not_trained'):
        estimator.Estimator(model_fn, model_dir=trained).export_saved_model(str(tmp_path), SERVING)


def test_latest_exporter_exports_after_each_evaluation_and_keeps_the_latest(tmp_path):
    model = estimator.Estimator(
        linear.model_fn, params={}, config=estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=10)
    )
    exporter = estimator.LatestExporter('latest', SERVING, exports_to_keep=1)
    final = estimator.FinalExporter('final', SERVING)
    metrics, exports = estimator.train_and_evaluate(
        model,
        estimator.TrainSpec(linear.input_fn(), max_steps=20),
        estimator.EvalSpec(linear.input_fn(repeat=False), steps=None, throttle_secs=0, exporters=[exporter, final]),
    )
    assert metrics['global_step'] == 20
    latest_dir, final_dir = exports
    assert os.path.dirname(latest_dir) == os.fsencode(os.path.join(str(tmp_path), 'export', 'latest'))
    assert os.listdir(os.path.join(str(tmp_path), 'export', 'latest')) == [os.fsdecode(os.path.basename(latest_dir))]
    assert os.path.dirname(final_dir) == os.fsencode(os.path.join(str(tmp_path), 'export', 'final'))
    assert len(os.listdir(os.path.join(str(tmp_path), 'export', 'final'))) == 1


@pytest.mark.slow
def test_the_export_leaves_the_log_lines_single(tmp_path):
    """TensorFlow's SavedModel writer logs through absl, whose first line configures the root logger of a program
    that configured none; from then on every `tensorflow` line printed twice. pytest configures logging, so a
    fresh process is the program here."""
    result = run_python(
        'import sys, tensorflow as tf\n'
        'import compat_mts.estimator as estimator\n'
        'from tests.estimator_programs import linear\n'
        'tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)\n'
        'model = estimator.Estimator(linear.model_fn, model_dir=sys.argv[1], params={})\n'
        'model.train(linear.input_fn(), max_steps=2)\n'
        'serving = estimator.export.build_raw_serving_input_receiver_fn(\n'
        "    {'x': tf.TensorSpec([None, 2], tf.float32)})\n"
        'model.export_saved_model(sys.argv[2], serving)\n'
        "tf.compat.v1.logging.info('after the export')\n",
        str(tmp_path / 'model'),
        str(tmp_path / 'export'),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith('INFO:tensorflow:')]
    assert any(line.startswith('INFO:tensorflow:SavedModel written to') for line in lines), lines
    assert lines.count('INFO:tensorflow:after the export') == 1, lines
    assert not [a for a, b in zip(lines, lines[1:]) if a == b], lines  # A doubled line follows itself.


def test_export_savedmodel_is_v1s_alias_and_warns_once(trained, tmp_path, tf_logs, monkeypatch):
    from compat_mts.estimator import estimator as estimator_module

    monkeypatch.setattr(estimator_module, '_EXPORT_SAVEDMODEL_WARNED', False)  # As in a fresh process.
    model = estimator.Estimator(linear.model_fn, model_dir=trained, params={})
    first = model.export_savedmodel(str(tmp_path / 'first'), SERVING, strip_default_attrs=True)
    second = model.export_savedmodel(str(tmp_path / 'second'), SERVING)
    warnings = [message for message in tf_logs.messages() if 'export_savedmodel is deprecated' in message]
    assert len(warnings) == 1 and 'use `export_saved_model` instead' in warnings[0]
    features = tf.constant(linear.data(3, seed=1)[0])
    for export_dir in (first, second):
        serve = tf.saved_model.load(os.fsdecode(export_dir)).signatures['serving_default']
        np.testing.assert_allclose(
            serve(x=features)['y'].numpy(), [p['y'] for p in model.predict(linear.predict_input_fn(count=3))], rtol=1e-6
        )


_SERVE_IN_A_FRESH_PROCESS = """
import json, sys
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
serialized = [bytes.fromhex(example) for example in json.loads(sys.argv[2])]
serve = tf.saved_model.load(sys.argv[1]).signatures['predict']
print(json.dumps(serve(examples=tf.constant(serialized))['probabilities'].numpy().tolist()))
with open(sys.argv[1] + '/saved_model.pb', 'rb') as file:
    classify = saved_model_pb2.SavedModel.FromString(file.read()).meta_graphs[0].signature_def['classification']
with tf.Graph().as_default(), tf.compat.v1.Session() as session:  # TF Serving's way: the init op fills the tables.
    tf.compat.v1.saved_model.load(session, ['serve'], sys.argv[1])
    scores = session.run(classify.outputs['scores'].name, {classify.inputs['inputs'].name: serialized})
print(json.dumps(scores.tolist()))
"""


def _example(color, city, size) -> bytes:
    feature = {
        'color': tf.train.Feature(bytes_list=tf.train.BytesList(value=[color.encode()])),
        'city': tf.train.Feature(bytes_list=tf.train.BytesList(value=[city.encode()])),
        'size': tf.train.Feature(float_list=tf.train.FloatList(value=[size])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.mark.slow
def test_a_premade_model_on_vocabulary_columns_serves_what_predict_yields_without_its_vocabulary_file(tmp_path):
    """Vocabulary columns (a list with an out-of-vocabulary bucket, a file) hold lookup tables: the export saves
    their keys and values, so the SavedModel serves in another process, the vocabulary file gone: loaded by
    `tf.saved_model.load`, and by a v1 session whose init op fills the tables (as TF Serving loads it)."""
    vocabulary_file = tmp_path / 'cities.txt'
    vocabulary_file.write_text('paris\nlima\noslo\n')
    color = tf.feature_column.categorical_column_with_vocabulary_list(
        'color', ['red', 'green', 'blue'], num_oov_buckets=1
    )
    city = tf.feature_column.categorical_column_with_vocabulary_file('city', str(vocabulary_file), default_value=0)
    size = tf.feature_column.numeric_column('size')
    model = estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=[color, city],
        dnn_feature_columns=[
            tf.feature_column.indicator_column(color),
            tf.feature_column.embedding_column(city, 2),
            size,
        ],
        dnn_hidden_units=[4],
        model_dir=str(tmp_path / 'model'),
        config=estimator.RunConfig(tf_random_seed=7),  # Unseeded, the hidden units may start dead.
    )
    colors, cities = ['red', 'green', 'blue', 'grey'], ['paris', 'lima', 'oslo', 'rome']  # grey, rome: unknown.
    rows = [(colors[i % 4], cities[(i // 2) % 4], float(i % 5)) for i in range(16)]

    def features():
        return {
            'color': np.array([row[0] for row in rows]),
            'city': np.array([row[1] for row in rows]),
            'size': np.array([row[2] for row in rows], np.float32),
        }

    labels = np.array([int(row[0] in ('red', 'grey')) for row in rows])
    model.train(lambda: tf.data.Dataset.from_tensor_slices((features(), labels)).repeat().batch(8), steps=20)
    predicted = [
        p['probabilities'] for p in model.predict(lambda: tf.data.Dataset.from_tensor_slices(features()).batch(8))
    ]
    spec = tf.feature_column.make_parse_example_spec([color, city, size])
    export_dir = model.export_saved_model(
        str(tmp_path / 'export'), estimator.export.build_parsing_serving_input_receiver_fn(spec)
    )
    vocabulary_file.unlink()
    examples = [_example(*row).hex() for row in rows]
    result = run_python(_SERVE_IN_A_FRESH_PROCESS, os.fsdecode(export_dir), json.dumps(examples))
    assert result.returncode == 0, result.stderr[-3000:]
    served, classified = [json.loads(line) for line in result.stdout.splitlines()[-2:]]
    np.testing.assert_allclose(served, predicted, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(classified, predicted, rtol=1e-5, atol=1e-6)
    assert len({tuple(np.round(p, 6)) for p in predicted}) > 4, f'the inputs change the predictions: {predicted}'
