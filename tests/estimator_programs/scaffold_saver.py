"""A `model_fn` whose `EstimatorSpec` scaffold holds a v1 `tf.compat.v1.train.Saver`, which v1's Estimator saved with.

Two variables (`w`, `b`) and the global step; the Saver keeps 2 checkpoints and saves either `[w]` alone (`list`)
or every variable under other names (`dict`: `{'renamed': w, 'bias': b, 'step': global_step}`). Checkpoints are
saved every step; `train(steps=3)` runs twice, then `evaluate`, `predict` and `export_saved_model` restore. The
`list` Saver leaves `b` and the global step out, so in TF 2.15 the second `train` and `evaluate` fail to restore
(their error is kept).

`hours` saves every variable with `keep_checkpoint_every_n_hours` of a few microseconds (`config`: the
`RunConfig`'s, with no Saver in the scaffold), so that which checkpoints are kept beyond `max_to_keep` does not
depend on the machine's speed: every one saved after the Saver was made (steps are milliseconds apart), none of
an earlier `train` call's but the one it ended on, which v1 saved again at the next call's start. `train(steps=3)`
runs three times; the checkpoints on disk and in the state file are kept after each.
`estimator` is `tf.estimator` under TF 2.15 (run as a script: prints `RESULTS:` and the JSON), or
`compat_mts.estimator`.
"""

import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

_estimator = None
_MICROSECONDS_IN_HOURS = 1e-9  # 3.6 microseconds.


def input_fn():
    x = np.array([[1.0, 2.0], [3.0, 1.0], [0.5, 0.5], [2.0, 2.0]], np.float32)
    y = np.array([[1.0], [2.0], [0.0], [1.5]], np.float32)
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(2)


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.constant_initializer(0.5))
    b = tf.compat.v1.get_variable('b', [1], initializer=tf.compat.v1.constant_initializer(0.25))
    if params['form'] == 'dict':
        var_list = {'renamed': w, 'bias': b, 'step': tf.compat.v1.train.get_global_step()}
    else:
        var_list = [w] if params['form'] == 'list' else None
    hours = {'keep_checkpoint_every_n_hours': _MICROSECONDS_IN_HOURS} if params['form'] == 'hours' else {}
    scaffold = None  # `config`: the Estimator's own Saver.
    if params['form'] != 'config':
        scaffold = tf.compat.v1.train.Scaffold(saver=tf.compat.v1.train.Saver(var_list, max_to_keep=2, **hours))
    predictions = tf.matmul(features['x'], w) + b
    if mode == _estimator.ModeKeys.PREDICT:
        return _estimator.EstimatorSpec(mode, predictions={'y': predictions}, scaffold=scaffold)
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return _estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)


def _checkpoint_files(model_dir):
    # v1 wrote a `.meta` file beside each checkpoint; compat_mts writes none (see migration_guide/estimator.md).
    return sorted(name for name in os.listdir(model_dir) if name.startswith('model.ckpt') and name[-5:] != '.meta')


def _error(call):
    """The type of the error `call()` raises, and v1's parts of its message (the op names are graph-specific)."""
    try:
        call()
    except RuntimeError as error:  # What TF 2.15 raises: another error fails the comparison with its traceback.
        message = str(error)
        return [type(error).__name__, message.split('  Init op:')[0], message.split('error: ', 1)[-1].split('. ')[0]]
    return None


def _run(estimator, model_dir, form):
    model = estimator.Estimator(
        model_fn,
        model_dir=model_dir,
        params={'form': form},
        config=estimator.RunConfig(save_checkpoints_steps=1, log_step_count_steps=None),
    )
    results = {}
    model.train(input_fn, steps=3)
    results['first_files'] = _checkpoint_files(model_dir)
    results['first_variables'] = tf.train.list_variables(model_dir)
    if form == 'list':
        results['train_error'] = _error(lambda: model.train(input_fn, steps=3))
        results['evaluate_error'] = _error(lambda: model.evaluate(input_fn, steps=2))
        return results
    model.train(input_fn, steps=3)
    results['files'] = _checkpoint_files(model_dir)
    state = tf.train.get_checkpoint_state(model_dir)
    results['state'] = [os.path.basename(path) for path in state.all_model_checkpoint_paths]
    results['latest'] = os.path.basename(model.latest_checkpoint())
    results['variables'] = {
        name: np.asarray(tf.train.load_variable(model_dir, name)).round(5).tolist()
        for name, _ in tf.train.list_variables(model_dir)
    }
    results['evaluate'] = {key: round(float(value), 5) for key, value in model.evaluate(input_fn, steps=2).items()}
    predictions = model.predict(lambda: input_fn().take(1).map(lambda features, labels: features))
    results['predict'] = [round(float(p['y'][0]), 5) for p in predictions]

    def receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
        return estimator.export.ServingInputReceiver({'x': x}, {'x': x})

    exported = tf.saved_model.load(model.export_saved_model(os.path.join(model_dir, 'export'), receiver).decode())
    served = exported.signatures['serving_default'](x=tf.constant([[1.0, 2.0], [3.0, 1.0]]))
    results['served'] = np.asarray(served['y']).round(5).tolist()
    return results


def _steps_on_disk_and_listed(model_dir):
    on_disk = sorted({int(name.split('-')[1].split('.')[0]) for name in _checkpoint_files(model_dir)})
    listed = tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths
    return [on_disk, [int(path.rsplit('-', 1)[1]) for path in listed]]


def _run_hours(estimator, model_dir, form):
    config = {'keep_checkpoint_max': 2, 'keep_checkpoint_every_n_hours': _MICROSECONDS_IN_HOURS}
    model = estimator.Estimator(
        model_fn,
        model_dir=model_dir,
        params={'form': form},
        config=estimator.RunConfig(save_checkpoints_steps=1, log_step_count_steps=None, **config),
    )
    kept = []
    for _ in range(3):
        model.train(input_fn, steps=3)
        kept.append(_steps_on_disk_and_listed(model_dir))
    return kept


def main(estimator, model_dir):
    """Both Savers' runs, and the `keep_checkpoint_every_n_hours` ones, each in its own directory under `model_dir`."""
    global _estimator
    _estimator = estimator
    results = {form: _run(estimator, os.path.join(model_dir, form), form) for form in ('list', 'dict')}
    results.update({form: _run_hours(estimator, os.path.join(model_dir, form), form) for form in ('hours', 'config')})
    return results


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print('RESULTS:' + json.dumps(main(tf.estimator, sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())))
