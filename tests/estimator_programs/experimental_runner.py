"""Early-stopping and in-memory-evaluation scenarios, under TF 2.15's `tf.estimator` or `compat_mts.estimator`.

`tests/test_estimator_experimental.py` runs `results(...)` in a TF 2.15 child process (`python
experimental_runner.py <root>`, the results printed as one JSON line after `RESULTS:`) and in its own process.
Every scenario trains a zero-initialized linear model by gradient descent on fixed data (so both sides have the
same losses), with an early-stopping hook reading the evaluations of `eval_dir()`; what is compared is the
global step training stopped at, the evaluations' history (`{step: {metric: value}}` of the eval events), the
checkpoint's variables and the errors.

An early-stopping hook fetches the global step in the run of the train op that increments it. TF 2.15's graph
orders neither before the other, so on its inter-op threads the hook mostly reads the step from before the
run and, on a loaded machine, sometimes the one after. A mix of the two within one training (the same step
read twice) makes the hook's timer skip a run and stop training one step late. The TF 2.15 child therefore
runs its sessions on one inter-op thread of their own (`ordered_session_config`): the read then comes in the same
order on every run, as in compat_mts, whose step reads the global step before the train op.
"""

import json
import os
import sys

import numpy as np

from tests.estimator_programs.results import error_of, plain

_RNG = np.random.default_rng(0)
FEATURES = _RNG.normal(size=(32, 2)).astype(np.float32)
LABELS = (FEATURES @ np.array([1.0, -2.0], np.float32) + 0.5).astype(np.float32)


def _history(tf, eval_dir):
    """`{step: {tag: value}}` of the scalar (`simple_value`) summaries of `eval_dir`'s events files."""
    found = {}
    for path in sorted(tf.io.gfile.glob(os.path.join(eval_dir, 'events.out.tfevents.*'))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField('simple_value'):
                    found.setdefault(str(event.step), {})[value.tag] = value.simple_value
    return found


def ordered_session_config(tf):
    """A session config whose sessions run their ops on one inter-op thread of their own."""
    config = tf.compat.v1.ConfigProto()
    config.session_inter_op_thread_pool.add(num_threads=1)
    return config


class _Program:
    session_config = None  # `ordered_session_config(tf)` in the TF 2.15 child (see the module docstring).

    def __init__(self, tf, estimator, model_dir, learning_rate, **config):
        self.tf = tf
        self.estimator = estimator

        def model_fn(features, labels, mode):
            w = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
            b = tf.compat.v1.get_variable('b', [1], initializer=tf.compat.v1.zeros_initializer())
            prediction = (tf.matmul(features['x'], w) + b)[:, 0]
            loss = tf.reduce_mean(tf.square(prediction - labels))
            train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step()
            )
            metrics = {
                'mae': tf.compat.v1.metrics.mean_absolute_error(labels, prediction),
                'score': tf.compat.v1.metrics.mean(-tf.square(prediction - labels)),
            }
            return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

        config = dict({'tf_random_seed': 1, 'log_step_count_steps': 1000}, **config)
        if self.session_config is not None:
            config['session_config'] = self.session_config
        self.model = estimator.Estimator(model_fn, model_dir=model_dir, config=estimator.RunConfig(**config))

    def train_input_fn(self):
        dataset = self.tf.data.Dataset.from_tensor_slices(({'x': FEATURES}, LABELS))
        return dataset.repeat().batch(8)

    def eval_input_fn(self):
        return self.tf.data.Dataset.from_tensor_slices(({'x': FEATURES}, LABELS)).batch(16)

    def outcome(self, name=None):
        variables = dict(self.tf.train.list_variables(self.model.model_dir))
        stop = 'signal_early_stopping/STOP'
        return {
            'global_step': plain(self.model.get_variable_value('global_step')),
            'history': _history(self.tf, self.model.eval_dir(name)),
            'variables': sorted(variables),
            'stop': plain(self.model.get_variable_value(stop)) if stop in variables else None,
        }


def _train_and_evaluate(tf, estimator, experimental, root, name, learning_rate, make_hook, max_steps=40):
    program = _Program(tf, estimator, os.path.join(root, name), learning_rate, save_checkpoints_steps=2)
    hook = make_hook(experimental, program.model)
    train_spec = estimator.TrainSpec(program.train_input_fn, max_steps=max_steps, hooks=[hook])
    eval_spec = estimator.EvalSpec(program.eval_input_fn, steps=None, throttle_secs=0)
    metrics, _ = estimator.train_and_evaluate(program.model, train_spec, eval_spec)
    return dict(program.outcome(), final_metrics=plain(metrics))


def _every_step(**kwargs):
    return dict(kwargs, run_every_secs=None, run_every_steps=1)


def _custom_predicate(tf, estimator, experimental, root):
    program = _Program(tf, estimator, os.path.join(root, 'custom'), 0.1)
    calls = []

    def should_stop():
        calls.append(len(calls))
        return len(calls) >= 3

    hook = experimental.make_early_stopping_hook(program.model, should_stop, run_every_secs=None, run_every_steps=1)
    program.model.train(program.train_input_fn, steps=20, hooks=[hook])
    return dict(program.outcome(), calls=len(calls))


def _after_an_evaluation(tf, estimator, experimental, root):
    """An evaluation at step 5, then a `train` whose hook (run_every_secs=60, v1's default) reads it at once."""
    program = _Program(tf, estimator, os.path.join(root, 'after_evaluation'), 0.1)
    never = experimental.make_early_stopping_hook(program.model, lambda: False)
    program.model.train(program.train_input_fn, steps=5, hooks=[never])
    program.model.evaluate(program.eval_input_fn)
    hook = experimental.stop_if_lower_hook(program.model, 'loss', 1e9)
    program.model.train(program.train_input_fn, steps=20, hooks=[hook])
    return program.outcome()


def _hook_of_the_model_fn(tf, estimator, experimental, root):
    """An early-stopping hook among the `EstimatorSpec`'s `training_hooks`, stopping at the first step it asks."""
    program = _Program(tf, estimator, os.path.join(root, 'spec_hook'), 0.1)
    model = program.model

    def model_fn(features, labels, mode):
        spec = model.model_fn(features, labels, mode, model.config)
        hook = experimental.make_early_stopping_hook(model, lambda: True, run_every_secs=None, run_every_steps=1)
        return spec._replace(training_hooks=[hook])

    program.model = estimator.Estimator(model_fn, model_dir=model.model_dir)
    program.model.train(program.train_input_fn, steps=10)
    return program.outcome()


def _resume_without_the_stop_variable(tf, estimator, experimental, root):
    """A `model_dir` trained without an early-stopping hook, trained on with one."""
    program = _Program(tf, estimator, os.path.join(root, 'without_stop_variable'), 0.1)
    program.model.train(program.train_input_fn, steps=2)
    hook = experimental.make_early_stopping_hook(program.model, lambda: True)
    error = error_of(lambda: program.model.train(program.train_input_fn, steps=5, hooks=[hook]))
    return {'error': error and error[0], 'global_step': plain(program.model.get_variable_value('global_step'))}


def _stop_at_checkpoint_step(tf, estimator, experimental, root):
    program = _Program(tf, estimator, os.path.join(root, 'checkpoint_step'), 0.1)
    program.model.train(
        program.train_input_fn, hooks=[experimental.make_stop_at_checkpoint_step_hook(program.model, 7)]
    )
    return program.outcome()


def _in_memory(tf, estimator, experimental, root):
    program = _Program(tf, estimator, os.path.join(root, 'in_memory'), 0.1)
    program.model.train(program.train_input_fn, steps=3)
    evaluator = experimental.InMemoryEvaluatorHook(program.model, program.eval_input_fn, name='memory', every_n_iter=3)
    program.model.train(program.train_input_fn, steps=4, hooks=[evaluator])
    stopped = _Program(tf, estimator, os.path.join(root, 'in_memory_stop'), 1.02)
    evaluator = experimental.InMemoryEvaluatorHook(stopped.model, stopped.eval_input_fn, steps=1, every_n_iter=2)
    stop = experimental.stop_if_no_decrease_hook(stopped.model, 'loss', 3, run_every_secs=None, run_every_steps=1)
    stopped.model.train(stopped.train_input_fn, steps=30, hooks=[evaluator, stop])
    return {'every_3': program.outcome('memory'), 'with_stop': stopped.outcome()}


def _errors(tf, estimator, experimental, root):
    model = _Program(tf, estimator, os.path.join(root, 'errors'), 0.1).model
    strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
    distributed = _Program(tf, estimator, os.path.join(root, 'errors'), 0.1, train_distribute=strategy).model
    return [
        error_of(lambda: experimental.make_early_stopping_hook(distributed, lambda: False)),
        error_of(lambda: experimental.make_early_stopping_hook(object(), lambda: False)),
        error_of(lambda: experimental.make_early_stopping_hook(model, lambda: False, run_every_steps=3)),
        error_of(lambda: experimental.make_early_stopping_hook(model, 'not callable')),
        error_of(lambda: experimental.InMemoryEvaluatorHook(model, lambda: None, every_n_iter=0)),
    ]


def results(tf, estimator, root):
    """Every scenario's result (see the module docstring), as plain JSON values."""
    experimental = estimator.experimental
    tae = lambda *args, **kwargs: _train_and_evaluate(tf, estimator, experimental, root, *args, **kwargs)  # noqa: E731
    return {
        'no_decrease': tae('no_decrease', 1.02, lambda e, m: e.stop_if_no_decrease_hook(m, 'loss', 4, **_every_step())),
        'no_increase': tae(
            'no_increase', 1.02, lambda e, m: e.stop_if_no_increase_hook(m, 'score', 6, **_every_step(min_steps=3))
        ),
        'lower': tae('lower', 0.1, lambda e, m: e.stop_if_lower_hook(m, 'loss', 0.5, **_every_step())),
        'higher': tae('higher', 1.02, lambda e, m: e.stop_if_higher_hook(m, 'mae', 3.0, **_every_step())),
        'custom': _custom_predicate(tf, estimator, experimental, root),
        'after_evaluation': _after_an_evaluation(tf, estimator, experimental, root),
        'spec_hook': _hook_of_the_model_fn(tf, estimator, experimental, root),
        'without_stop_variable': _resume_without_the_stop_variable(tf, estimator, experimental, root),
        'checkpoint_step': _stop_at_checkpoint_step(tf, estimator, experimental, root),
        'in_memory': _in_memory(tf, estimator, experimental, root),
        'errors': _errors(tf, estimator, experimental, root),
    }


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    _Program.session_config = ordered_session_config(tf)
    print('RESULTS:' + json.dumps(results(tf, tf.estimator, sys.argv[1])))
