"""Exports and serves the same Estimators under TF 2.15's `tf.estimator` or `compat_mts.estimator`.

`tests/test_estimator_serving.py` trains each case of `CASES` here with `compat_mts.estimator`, exports it with
each of its receivers and serves the exports; then one TF 2.15 child (`python serving_runner.py '<json>'`, the
results printed as one JSON line after `RESULTS:`) exports the same checkpoints with TF 2.15 and serves both its
own exports and compat_mts's with TF 2.15's `tf.saved_model.load`, and compat_mts's also as TF Serving does (a v1
session running the SignatureDefs' tensors). `estimator` is the module a function uses:
`tf.estimator` under TF 2.15, `compat_mts.estimator` here.

A case is a premade Estimator (each of the four families, binary and multi-class heads, with and without
`label_vocabulary`, and regressors) or a `model_fn` of its own with `export_outputs`; its receivers are among
`parsing` (`build_parsing_serving_input_receiver_fn`), `raw` (`build_raw_serving_input_receiver_fn`) and
`alternatives` (a `ServingInputReceiver` of serialized examples with `receiver_tensors_alternatives`).
"""

import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.protobuf import saved_model_pb2

CONFIG = {'tf_random_seed': 7}
ROWS = 8
VOCABULARY = {2: ['no', 'yes'], 3: ['red', 'green', 'blue']}
_ALL = ('parsing', 'raw', 'alternatives')

# name: (constructor, n_classes or None for a regressor, label_vocabulary?, receivers)
CASES = {
    'dnn_binary': ('DNNClassifier', 2, False, (*_ALL, 'supervised')),
    'dnn_multiclass_vocabulary': ('DNNClassifier', 3, True, _ALL),
    'dnn_regressor': ('DNNRegressor', None, False, (*_ALL, 'supervised')),
    'linear_binary_vocabulary': ('LinearClassifier', 2, True, ('parsing',)),
    'linear_multiclass': ('LinearClassifier', 3, False, ('parsing',)),
    'linear_regressor': ('LinearRegressor', None, False, ('parsing',)),
    'combined_binary': ('DNNLinearCombinedClassifier', 2, False, ('parsing',)),
    'combined_multiclass_vocabulary': ('DNNLinearCombinedClassifier', 3, True, ('parsing',)),
    'combined_regressor': ('DNNLinearCombinedRegressor', None, False, ('parsing',)),
    'baseline_binary': ('BaselineClassifier', 2, False, ('parsing',)),
    'baseline_multiclass': ('BaselineClassifier', 3, False, ('parsing',)),
    'baseline_regressor': ('BaselineRegressor', None, False, ('parsing',)),
    'model_fn': ('model_fn', None, False, _ALL),
}


def _columns():
    return [tf.feature_column.numeric_column('a'), tf.feature_column.numeric_column('b')]


def features() -> dict:
    """The features every case trains on and serves: two float columns of `ROWS` rows."""
    rng = np.random.default_rng(3)
    return {'a': rng.normal(size=ROWS).astype(np.float32), 'b': rng.normal(size=ROWS).astype(np.float32)}


def _labels(case: str):
    _, n_classes, vocabulary, _ = CASES[case]
    values = features()
    if n_classes is None:
        return (values['a'] * 2 + values['b']).astype(np.float32)
    ids = (values['a'] > 0).astype(np.int64) + ((values['b'] > 0.5) & (n_classes == 3)).astype(np.int64)
    return np.array([VOCABULARY[n_classes][i].encode() for i in ids], dtype=object) if vocabulary else ids


def serialized_examples() -> list:
    """`features()` as serialized `tf.Example`s, what TF Serving's clients send as `inputs` or `examples`."""
    values = features()
    return [
        tf.train.Example(
            features=tf.train.Features(
                feature={key: tf.train.Feature(float_list=tf.train.FloatList(value=[values[key][row]])) for key in 'ab'}
            )
        ).SerializeToString()
        for row in range(ROWS)
    ]


def _model_fn(estimator):
    def model_fn(features, labels, mode):
        x = tf.concat([tf.reshape(features[key], [-1, 1]) for key in 'ab'], axis=1)
        w = tf.compat.v1.get_variable('w', [2, 2], initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
        logits = tf.matmul(x, w)
        probabilities = tf.nn.softmax(logits)
        value = tf.reduce_sum(logits, axis=1, keepdims=True)
        classes = tf.tile(tf.constant([['low', 'high']]), [tf.shape(x)[0], 1])
        predictions = {'probabilities': probabilities, 'value': value, 'class_ids': tf.argmax(logits, axis=1)}
        if mode == estimator.ModeKeys.PREDICT:
            export = estimator.export
            return estimator.EstimatorSpec(
                mode,
                predictions=predictions,
                export_outputs={
                    'serving_default': export.ClassificationOutput(scores=probabilities, classes=classes),
                    'scores_only': export.ClassificationOutput(scores=probabilities),
                    'classes_only': export.ClassificationOutput(classes=classes),
                    'value': export.RegressionOutput(value),
                    'double_value': export.RegressionOutput(tf.cast(value, tf.float64)),
                    'predict': export.PredictOutput(predictions),
                    'single': export.PredictOutput(value),
                },
            )
        loss = tf.reduce_mean(tf.square(value - tf.reshape(tf.cast(labels, tf.float32), [-1, 1])))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


def make_estimator(estimator, case: str, model_dir: str):
    """The Estimator of `case` on `model_dir`, seeded."""
    constructor, n_classes, vocabulary, _ = CASES[case]
    config = estimator.RunConfig(**CONFIG)
    if constructor == 'model_fn':
        return estimator.Estimator(_model_fn(estimator), model_dir=model_dir, config=config)
    arguments = {'model_dir': model_dir, 'config': config}
    if n_classes is not None:
        arguments['n_classes'] = n_classes
        if vocabulary:
            arguments['label_vocabulary'] = VOCABULARY[n_classes]
    if constructor.startswith('DNNLinearCombined'):
        arguments.update(linear_feature_columns=_columns(), dnn_feature_columns=_columns(), dnn_hidden_units=[3])
    elif constructor.startswith('DNN'):
        arguments.update(feature_columns=_columns(), hidden_units=[3])
    elif constructor.startswith('Linear'):
        arguments.update(feature_columns=_columns())
    return getattr(estimator, constructor)(**arguments)


def train(model, case: str) -> None:
    """Two steps on `features()` and the case's labels."""
    values, labels = features(), _labels(case)
    model.train(lambda: tf.data.Dataset.from_tensor_slices((values, labels)).repeat().batch(4), steps=2)


def predict(model) -> list:
    """`predict()` on `features()`, one dict per row."""
    values = features()
    return [_plain(row) for row in model.predict(lambda: tf.data.Dataset.from_tensor_slices(values).batch(4))]


def receiver_fn(estimator, kind: str):
    """The serving input receiver function of `kind` (`parsing`, `raw`, `alternatives` or `supervised`)."""
    spec = tf.feature_column.make_parse_example_spec(_columns())
    if kind == 'parsing':
        return estimator.export.build_parsing_serving_input_receiver_fn(spec)
    if kind == 'raw':
        return estimator.export.build_raw_serving_input_receiver_fn({key: tf.constant([0.0]) for key in 'ab'})
    if kind == 'supervised':  # Its `label` is a receiver tensor too, unused in PREDICT mode.
        return estimator.experimental.build_raw_supervised_input_receiver_fn(
            {key: tf.constant([0.0]) for key in 'ab'}, tf.constant([[0.0]])
        )

    def with_alternatives():
        serialized = tf.compat.v1.placeholder(tf.string, [None], name='serialized')
        parsed = tf.compat.v1.io.parse_example(serialized, spec)
        alternatives = {'features': dict(parsed), 'a_only': parsed['a'], 'serialized_again': serialized}
        return estimator.export.ServingInputReceiver(parsed, {'examples': serialized}, alternatives)

    return with_alternatives


def signature_defs(export_dir: str) -> dict:
    """The SignatureDefs of a SavedModel's `saved_model.pb` (or `.pbtxt`): method name, input and output keys,
    dtypes and shapes (`None` for an unknown rank), and the tensor names apart, by signature name."""
    saved_model = saved_model_pb2.SavedModel()
    binary = os.path.join(export_dir, 'saved_model.pb')
    if os.path.exists(binary):
        with open(binary, 'rb') as file:
            saved_model.ParseFromString(file.read())
    else:
        with open(os.path.join(export_dir, 'saved_model.pbtxt')) as file:
            text_format.Parse(file.read(), saved_model)
    (meta_graph,) = saved_model.meta_graphs

    def info(tensor_info):
        shape = tensor_info.tensor_shape
        return {
            'dtype': tf.dtypes.as_dtype(tensor_info.dtype).name if tensor_info.dtype else None,
            'shape': None if shape.unknown_rank else [dim.size for dim in shape.dim],
            'name': tensor_info.name,
        }

    return {
        name: {
            'method_name': signature.method_name,
            'inputs': {key: info(value) for key, value in signature.inputs.items()},
            'outputs': {key: info(value) for key, value in signature.outputs.items()},
        }
        for name, signature in meta_graph.signature_def.items()
    }


def _plain(value):
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (tf.Tensor, np.ndarray, np.generic)):
        value = np.asarray(value)
        if value.dtype == object:
            return [_plain(item) for item in value.tolist()]
        return value.tolist()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value.decode() if isinstance(value, bytes) else value


def signature_arguments(inputs: dict) -> dict:
    """What a client sends to a signature whose SignatureDef has `inputs`: serialized examples to a string input
    (`inputs`, `examples`...), and the feature columns by name (a lone float `input` is `a`; a supervised
    receiver's `label`, zeros), shaped as the SignatureDef says (`[-1]` raw, `[-1, 1]` parsed)."""
    values, arguments = features(), {}
    for key, info in inputs.items():
        if info['dtype'] == 'string':
            arguments[key] = tf.constant(serialized_examples())
        elif key == 'label':
            arguments[key] = tf.zeros([len(values['a'])] + [1] * (len(info['shape']) - 1), info['dtype'])
        else:
            arguments[key] = tf.reshape(values['a' if key == 'input' else key], [-1] + [1] * (len(info['shape']) - 1))
    return arguments


def serve(export_dir: str) -> dict:
    """Loads the SavedModel with `tf.saved_model.load` and calls every signature as a client would, by the input
    keys of its SignatureDef."""
    loaded = tf.saved_model.load(export_dir)
    definitions = signature_defs(export_dir)
    return {
        name: _plain(function(**signature_arguments(definitions[name]['inputs'])))
        for name, function in loaded.signatures.items()
    }


def session_serve(export_dir: str) -> dict:
    """Serves the SavedModel as TF Serving does: loaded into a v1 `Session` by `tf.compat.v1.saved_model.load`
    (which runs its init op), each signature run by the tensor names of its SignatureDef."""
    definitions = {name: value for name, value in signature_defs(export_dir).items() if value['method_name']}
    feeds = {name: signature_arguments(value['inputs']) for name, value in definitions.items()}
    served = {}
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        tf.compat.v1.saved_model.load(session, ['serve'], export_dir)
        for name, definition in definitions.items():
            fetches = {key: info['name'] for key, info in definition['outputs'].items()}
            feed_dict = {definition['inputs'][key]['name']: value.numpy() for key, value in feeds[name].items()}
            served[name] = _plain(session.run(fetches, feed_dict=feed_dict))
    return served


class _Report(logging.Handler):
    """The export's report of its signatures, as logged: which each method got, which were left out and why."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith(('Signatures ', "'", 'Export includes')):
            self.lines.append(message)


def export(estimator, case: str, model_dir: str, export_base: str) -> dict:
    """Exports the case's checkpoint with each of its receivers; returns the export directories and the log's
    signature reports, by receiver."""
    model = make_estimator(estimator, case, model_dir)
    logger, verbosity = logging.getLogger('tensorflow'), tf.compat.v1.logging.get_verbosity()
    exports = {}
    for kind in CASES[case][3]:
        report = _Report()
        logger.addHandler(report)
        tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
        try:
            directory = model.export_saved_model(os.path.join(export_base, kind), receiver_fn(estimator, kind))
        finally:
            logger.removeHandler(report)
            tf.compat.v1.logging.set_verbosity(verbosity)
        exports[kind] = {'directory': directory.decode(), 'report': report.lines}
    return exports


# The export `saved_model_cli show --all` is compared on (TF 2.15's tool): one, as each run starts TensorFlow.
SHOWN = ('dnn_binary', 'supervised')


def saved_model_cli_show(export_dir: str) -> list[str]:
    """What this TensorFlow's `saved_model_cli show --all` prints of the signatures of `export_dir`, without
    the tensor names (each graph's own), TF2's `__saved_model_init_op` (the SavedModel's initializer, not a
    signature), the ops and the concrete functions (how each TensorFlow saves, not what a client sees)."""
    command = [os.path.join(os.path.dirname(sys.executable), 'saved_model_cli'), 'show', '--dir', export_dir, '--all']
    shown = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600).stdout
    shown = shown.split('\nConcrete Functions:')[0]
    shown = re.sub(r"signature_def\['__saved_model_init_op'\]:.*?Method name is: *\n", '', shown, flags=re.S)
    return [
        line
        for line in shown.splitlines()
        if line.strip() and not line.strip().startswith(('name: ', 'The MetaGraph with tag set'))
    ]


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    results = {}
    jobs = json.loads(sys.argv[1])
    for case, job in jobs.items():
        results[case] = {
            kind: {
                'signature_defs': signature_defs(exported['directory']),
                'report': exported['report'],
                'served': serve(exported['directory']),
                'compat_served': serve(job['compat_exports'][kind]),
                'compat_session_served': session_serve(job['compat_exports'][kind]),
                'directory': exported['directory'],
            }
            for kind, exported in export(tf.estimator, case, job['model_dir'], job['export_base']).items()
        }
    case, kind = SHOWN
    results['saved_model_cli'] = {
        'tf215': saved_model_cli_show(results[case][kind]['directory']),
        'compat': saved_model_cli_show(jobs[case]['compat_exports'][kind]),
    }
    print('RESULTS:' + json.dumps(results))
