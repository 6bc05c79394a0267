"""`RunConfig`, `EstimatorSpec`, `TrainSpec`/`EvalSpec` and the Estimator's configuration, with v1's messages."""

from __future__ import annotations

import json
import os

import pytest
import tensorflow as tf

import compat_mts
import compat_mts.estimator as estimator
from tests.estimator_programs import linear


def test_run_config_has_v1s_defaults():
    config = estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    assert (config.save_summary_steps, config.log_step_count_steps, config.keep_checkpoint_max) == (100, 100, 5)
    assert (config.model_dir, config.tf_random_seed, config.session_config) == (None, None, None)
    assert (config.is_chief, config.master, config.task_type, config.task_id) == (True, '', 'worker', 0)
    assert (config.num_ps_replicas, config.num_worker_replicas) == (0, 1)
    assert estimator.RunConfig(save_checkpoints_steps=10).save_checkpoints_secs is None
    assert estimator.RunConfig(save_checkpoints_secs=10).save_checkpoints_steps is None
    off = estimator.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
    assert (off.save_checkpoints_steps, off.save_checkpoints_secs) == (None, None)


def test_run_config_replace_clears_the_other_checkpoint_period():
    config = estimator.RunConfig().replace(save_checkpoints_steps=50)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (50, None)
    assert estimator.RunConfig().save_checkpoints_secs == 600  # The original is unchanged.
    with pytest.raises(ValueError, match='^Replacing is_chief is not supported. Allowed properties are'):
        config.replace(is_chief=False)


@pytest.mark.parametrize(
    'kwargs, message',
    [
        (
            {'save_checkpoints_steps': 1, 'save_checkpoints_secs': 1},
            '`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.',
        ),
        ({'model_dir': ''}, 'model_dir should be non-empty.'),
        ({'save_summary_steps': -1}, 'save_summary_steps should be >= 0'),
        ({'keep_checkpoint_max': -1}, 'keep_checkpoint_max should be >= 0'),
        ({'log_step_count_steps': 0}, 'log_step_count_steps should be > 0'),
        ({'tf_random_seed': 1.5}, 'tf_random_seed must be integer.'),
        ({'session_config': 'fast'}, 'session_config must be instance of ConfigProto'),
    ],
)
def test_run_config_rejects_bad_values_with_v1s_messages(kwargs, message):
    with pytest.raises(ValueError) as error:
        estimator.RunConfig(**kwargs)
    assert str(error.value) == message


def test_run_config_refuses_device_fn_and_reads_model_dir_from_tf_config(monkeypatch):
    with pytest.raises(NotImplementedError, match=r'RunConfig\(device_fn=...\) is not supported'):
        estimator.RunConfig(device_fn=lambda op: '/cpu:0')
    monkeypatch.setenv('TF_CONFIG', json.dumps({'model_dir': '/from/tf_config'}))
    assert estimator.RunConfig().model_dir == '/from/tf_config'


CLUSTER = {'chief': ['h:1'], 'worker': ['h:2', 'h:3'], 'ps': ['h:4']}


@pytest.mark.parametrize(
    'tf_config, message',
    [
        ('{"cluster": {"chief": ["h:1"]', r'^TF_CONFIG is not JSON \(Expecting'),
        ('[1, 2]', r'^TF_CONFIG must be a JSON object'),
        (json.dumps({'cluster': CLUSTER, 'task': {'type': 'trainer', 'index': 0}}), r"'trainer', which is not a job"),
        (json.dumps({'cluster': CLUSTER, 'task': {'type': 'worker', 'index': 2}}), r'worker:2, but its cluster has 2'),
        (json.dumps({'cluster': CLUSTER, 'task': {'type': 'worker', 'index': -1}}), r'must be >= 0, got -1'),
        (json.dumps({'cluster': CLUSTER, 'task': {'index': 0}}), r'its "task" must name a "type"'),
        (json.dumps({'cluster': CLUSTER, 'task': {'type': 'worker', 'index': 'one'}}), r'must be an integer'),
        (
            json.dumps({'cluster': {'worker': ['h:2'], 'ps': ['h:4']}, 'task': {'type': 'worker', 'index': 0}}),
            r'must have one "chief" node\. TF_CONFIG\'s cluster has the jobs \[\'ps\', \'worker\'\]',
        ),
        (
            json.dumps({'cluster': {'chief': ['h:1', 'h:5']}, 'task': {'type': 'chief', 'index': 0}}),
            r'must have only one "chief" node',
        ),
        (
            json.dumps({'cluster': {'master': ['h:1'], 'chief': ['h:2']}, 'task': {'type': 'master', 'index': 0}}),
            r'job `chief` is not supported',
        ),
        (
            json.dumps({'cluster': {'master': ['h:1'], 'worker': ['h:2']}, 'task': {'type': 'evaluator', 'index': 0}}),
            r'task_type `evaluator` is not supported',
        ),
    ],
)
def test_a_bad_tf_config_is_an_error_naming_tf_config_and_the_mistake(monkeypatch, tf_config, message):
    monkeypatch.setenv('TF_CONFIG', tf_config)
    with pytest.raises(ValueError, match=message) as error:
        estimator.RunConfig()
    assert 'TF_CONFIG' in str(error.value) or '`master`' in str(error.value)


def test_train_refuses_on_a_ps_or_evaluator_task_as_v1(monkeypatch, tmp_path):
    for task in ({'type': 'ps', 'index': 0}, {'type': 'evaluator', 'index': 0}):
        monkeypatch.setenv('TF_CONFIG', json.dumps({'cluster': CLUSTER, 'task': task}))
        model = estimator.Estimator(linear.model_fn, model_dir=str(tmp_path), params={})
        with pytest.raises(ValueError, match='^Train has been called wrong configuration'):
            model.train(lambda: ({'x': [[1.0]]}, [[1.0]]), steps=1)
    assert not os.listdir(tmp_path)


def test_estimator_resolves_model_dir_and_config_as_v1(tmp_path, tf_logs):
    model = estimator.Estimator(linear.model_fn, params={})
    assert os.path.isdir(model.model_dir)
    assert any(message.startswith('Using temporary folder as model directory: ') for message in tf_logs.messages())
    assert model.config.session_config.allow_soft_placement  # v1's default session config.
    same = estimator.Estimator(
        linear.model_fn, model_dir=tmp_path, params={}, config=estimator.RunConfig(model_dir=str(tmp_path))
    )
    assert same.model_dir == str(tmp_path) and same.config.model_dir == str(tmp_path)
    with pytest.raises(ValueError, match='^`model_dir` are set both in constructor and `RunConfig`, but with'):
        estimator.Estimator(
            linear.model_fn,
            model_dir=str(tmp_path / 'a'),
            params={},
            config=estimator.RunConfig(model_dir=str(tmp_path / 'b')),
        )
    with pytest.raises(ValueError, match='^config must be an instance of `RunConfig`, but provided'):
        estimator.Estimator(linear.model_fn, params={}, config=tf.compat.v1.ConfigProto())
    assert model.params == {} and model.params is not model.params


def test_estimator_members_cannot_be_overridden():
    class Overriding(estimator.Estimator):
        def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
            return self

    with pytest.raises(
        ValueError,
        match=r'^Subclasses of Estimator cannot override members of Estimator. .* '
        r"does override \['train'\]$",
    ):
        Overriding(linear.model_fn, params={})


def test_estimator_spec_checks_each_mode_with_v1s_messages():
    with tf.Graph().as_default():
        loss = tf.constant([2.0])
        train_op = tf.no_op()
        with pytest.raises(ValueError, match='^Missing train_op.$'):
            estimator.EstimatorSpec(estimator.ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match='^Missing loss.$'):
            estimator.EstimatorSpec(estimator.ModeKeys.EVAL)
        with pytest.raises(ValueError, match='^Missing predictions.$'):
            estimator.EstimatorSpec(estimator.ModeKeys.PREDICT)
        with pytest.raises(ValueError, match='^Loss must be scalar, given: '):
            estimator.EstimatorSpec(estimator.ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
        spec = estimator.EstimatorSpec(estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op)
        assert spec.loss.shape == [] and spec.predictions == {} and spec.eval_metric_ops == {}
        assert isinstance(spec.scaffold, compat_mts.Scaffold) and spec.training_hooks == ()
        with pytest.raises(TypeError, match='^All hooks must be SessionRunHook instances, given: 1$'):
            estimator.EstimatorSpec(estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op, training_hooks=[1])
        with pytest.raises(TypeError, match=r'^Values of eval_metric_ops must be \(metric_value, update_op\)'):
            estimator.EstimatorSpec(estimator.ModeKeys.EVAL, loss=loss, eval_metric_ops={'a': loss})
        with pytest.raises(TypeError, match='^scaffold must be tf.train.Scaffold. Given: 3$'):
            estimator.EstimatorSpec(estimator.ModeKeys.EVAL, loss=loss, scaffold=3)
        with pytest.raises(ValueError, match='^mode of EstimatorSpec cannot be changed.$'):
            spec._replace(mode=estimator.ModeKeys.EVAL)
        predict = estimator.EstimatorSpec(estimator.ModeKeys.PREDICT, predictions={'y': loss})
        assert sorted(predict.export_outputs) == ['serving_default']
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='^loss with "Const:0" must be from the default graph.'):
            estimator.EstimatorSpec(estimator.ModeKeys.EVAL, loss=loss)


def test_an_estimator_spec_made_eagerly_is_not_checked_against_a_graph_as_tf215():
    """TF 2.15 checked the default graph only when not executing eagerly: a `model_fn` called eagerly (its
    own test suite calls `estimator.model_fn(...)` so) returns its spec."""
    loss, values = tf.constant(0.5), tf.constant([[1.0], [2.0]])
    spec = estimator.EstimatorSpec(
        estimator.ModeKeys.EVAL, loss=loss, predictions={'y': values}, eval_metric_ops={'m': (loss, values)}
    )
    assert float(spec.loss) == 0.5 and spec.predictions['y'] is values
    assert estimator.EstimatorSpec(estimator.ModeKeys.PREDICT, predictions=values).predictions is values


def test_mode_keys_are_v1s_strings():
    assert (estimator.ModeKeys.TRAIN, estimator.ModeKeys.EVAL, estimator.ModeKeys.PREDICT) == ('train', 'eval', 'infer')


def test_train_and_eval_specs_check_with_v1s_messages():
    train_spec = estimator.TrainSpec(linear.input_fn(), max_steps=10)
    assert (train_spec.max_steps, train_spec.hooks, train_spec.saving_listeners) == (10, (), ())
    eval_spec = estimator.EvalSpec(linear.input_fn())
    assert (eval_spec.steps, eval_spec.name, eval_spec.start_delay_secs, eval_spec.throttle_secs) == (
        100,
        None,
        120,
        600,
    )
    with pytest.raises(TypeError, match='^`input_fn` must be callable, given: 3$'):
        estimator.TrainSpec(3)
    with pytest.raises(ValueError, match=r'^Must specify max_steps > 0, given: 0$'):
        estimator.TrainSpec(linear.input_fn(), max_steps=0)
    with pytest.raises(ValueError, match=r'^Must specify throttle_secs >= 0, given: -1$'):
        estimator.EvalSpec(linear.input_fn(), throttle_secs=-1)
    with pytest.raises(TypeError, match='^`exporters` must be an Exporter, an iterable of Exporter, or `None`'):
        estimator.EvalSpec(linear.input_fn(), exporters=[1])
    with pytest.raises(TypeError, match='^`eval_spec` must have type `tf.estimator.EvalSpec`.'):
        estimator.train_and_evaluate(estimator.Estimator(linear.model_fn, params={}), train_spec, None)


def test_names_tf_estimator_had_and_compat_mts_lacks_name_their_successor():
    with pytest.raises(AttributeError, match=r'compat_mts.estimator.BoostedTreesRegressor is not provided'):
        estimator.BoostedTreesRegressor
    assert estimator.LinearRegressor.__module__ == 'compat_mts.estimator.linear'
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        estimator.Nothing


def test_the_package_is_a_lazy_submodule_of_compat_mts():
    assert compat_mts.estimator is estimator
    assert 'estimator' in compat_mts.__all__
    assert estimator.LoggingTensorHook is compat_mts.LoggingTensorHook


def test_v1_built_in_hooks_become_their_compat_mts_twins_with_the_same_arguments():
    from compat_mts.estimator import _hooks

    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        v1 = tf.compat.v1.train
        twins = _hooks.as_compat_hooks(
            [
                v1.LoggingTensorHook({'loss': loss}, every_n_secs=5),
                v1.StopAtStepHook(last_step=7),
                v1.NanTensorHook(loss, fail_on_nan_loss=False),
                v1.StepCounterHook(every_n_steps=3),
                v1.SummarySaverHook(save_steps=4, summary_op=tf.compat.v1.summary.scalar('s', loss)),
                v1.FinalOpsHook({'loss': loss}),
                v1.FeedFnHook(dict),
                v1.GlobalStepWaiterHook(9),
            ]
        )
    assert [type(twin) for twin in twins] == [
        compat_mts.LoggingTensorHook,
        compat_mts.StopAtStepHook,
        compat_mts.NanTensorHook,
        compat_mts.StepCounterHook,
        compat_mts.SummarySaverHook,
        compat_mts.FinalOpsHook,
        compat_mts.FeedFnHook,
        compat_mts.GlobalStepWaiterHook,
    ]
    logging_hook, stop, nan, counter, saver, final_ops, feed, waiter = twins
    assert logging_hook._timer._every_secs == 5 and logging_hook._tags == ['loss']
    assert stop.last_step == 7 and nan._fail_on_nan_loss is False
    assert counter._timer._every_steps == 3 and saver._timer._every_steps == 4
    assert final_ops._final_ops == {'loss': loss} and feed.feed_fn is dict
    assert waiter._wait_until_step == 9
    user_hook = tf.compat.v1.train.SessionRunHook()
    assert _hooks.as_compat_hook(user_hook) is user_hook
