"""Checkpoints of another program given to an Estimator through each of its arguments: what each call raises.

A model with the variable `w` ([2]) trains one step into `<root>/a`. Then models that do not fit it restore that
checkpoint: one whose variable is named `v` (`missing`) and one whose `w` is [3] (`shape`). Each of them gets it as
`evaluate`'s, `predict`'s and `export_saved_model`'s `checkpoint_path`, as `warm_start_from` (exported with no
checkpoint of its own, which restores the warm-start checkpoint), and in its `model_dir` (a copy of `<root>/a`);
the `missing` one also warm-starts its training from the directory `<root>/a`.
The results are `{scenario: [error class, message]}` (None when the call succeeded), `<root>` standing for the
directory, and under `not_found` the scenarios whose error a v1 program's `except tf.errors.NotFoundError:`
catches. `estimator` is `tf.estimator` under TF 2.15 (run as a script: prints `RESULTS:` and the JSON), or
`compat_mts.estimator`.
"""

import json
import os
import shutil
import sys
import tempfile

import tensorflow as tf

from tests.estimator_programs.results import error_of

_estimator = None


def input_fn():
    return tf.data.Dataset.from_tensors(({'x': [[1.0, 2.0]]}, [1.0])).repeat(2)


def predict_input_fn():
    return tf.data.Dataset.from_tensors({'x': [[1.0, 2.0]]})


def receiver():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
    return _estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def model_fn(features, labels, mode, params):
    weights = tf.compat.v1.get_variable(
        params['name'], [params['width']], initializer=tf.compat.v1.constant_initializer(0.5)
    )
    predictions = features['x'][:, 0] * weights[0]
    loss = None if labels is None else tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
    return _estimator.EstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        predictions={'y': predictions},
        export_outputs={'y': _estimator.export.PredictOutput({'y': predictions})},
    )


def _raised(call):
    """`error_of(call)`, and whether `except tf.errors.NotFoundError:`, v1 programs' guard of a restore, caught it."""
    caught = []

    def guarded():
        try:
            call()
        except tf.errors.NotFoundError:
            caught.append(True)
            raise

    return error_of(guarded), bool(caught)


def _model(root, directory, params, **kwargs):
    return _estimator.Estimator(
        model_fn, model_dir=os.path.join(root, directory), params=params, config=_estimator.RunConfig(), **kwargs
    )


def main(estimator, root):
    """The scenarios' errors; `root` is an empty directory."""
    global _estimator
    _estimator = estimator
    _model(root, 'a', {'name': 'w', 'width': 2}).train(input_fn, steps=1)
    checkpoint = os.path.join(root, 'a', 'model.ckpt-1')
    results = {}
    for kind, params in (('missing', {'name': 'v', 'width': 2}), ('shape', {'name': 'w', 'width': 3})):
        other = _model(root, f'{kind}_own', params)
        results[f'{kind}/evaluate'] = _raised(lambda: other.evaluate(input_fn, checkpoint_path=checkpoint))
        results[f'{kind}/predict'] = _raised(lambda: list(other.predict(predict_input_fn, checkpoint_path=checkpoint)))
        results[f'{kind}/export'] = _raised(
            lambda: other.export_saved_model(os.path.join(root, 'export'), receiver, checkpoint_path=checkpoint)
        )
        warm = _model(root, f'{kind}_warm', params, warm_start_from=checkpoint)
        results[f'{kind}/warm_start_export'] = _raised(
            lambda: warm.export_saved_model(os.path.join(root, 'export'), receiver)
        )
        if kind == 'missing':  # The directory given: TF 2.15 names it in its error.
            from_directory = _model(root, f'{kind}_warm_directory', params, warm_start_from=os.path.join(root, 'a'))
            results[f'{kind}/warm_start_train_from_directory'] = _raised(
                lambda: from_directory.train(input_fn, steps=1)
            )
        shutil.copytree(os.path.join(root, 'a'), os.path.join(root, f'{kind}_copy'))
        copied = _model(root, f'{kind}_copy', params)
        results[f'{kind}/model_dir_evaluate'] = _raised(lambda: copied.evaluate(input_fn))
        latest = copied.latest_checkpoint()  # What `train_and_evaluate` and the exporters pass.
        results[f'{kind}/model_dir_checkpoint_path'] = _raised(
            lambda: copied.evaluate(input_fn, checkpoint_path=latest)
        )
    plain = {
        scenario: None if error is None else [error[0], error[1].replace(root, '<root>')]
        for scenario, (error, _) in results.items()
    }
    plain['not_found'] = sorted(scenario for scenario, (_, caught) in results.items() if caught)
    return plain


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print('RESULTS:' + json.dumps(main(tf.estimator, sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())))
