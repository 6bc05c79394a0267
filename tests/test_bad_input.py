"""Bad input, fast and in-process: each value is named with what is accepted, or does what it did in v1.

One table: the inputs of issue 20's third adversarial round (157 tried; those accepted silently or refused
with an unclear error), then the same classes of value (steps beyond the int64 global step, NUL bytes in
paths, NaN seconds, wrong types) on the other public arguments that take them. The v1 comparisons of
tests/test_validation.py run in a subprocess; this table needs none: where v1 accepted a value, its meaning is
checked on what the call returned and wrote.
"""

from __future__ import annotations

import json
import math
import os

import pytest
import tensorflow as tf

import compat_mts as mts
from tests import support


def _session_run(directory, steps: int = 3, hooks=(), **kwargs) -> int:
    """Runs `steps` steps (each records a `value` summary) in a MonitoredTrainingSession; returns the global step."""
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step():
        tf.summary.scalar('value', 1.0)
        return global_step.assign_add(1)

    with mts.MonitoredTrainingSession(checkpoint_dir=str(directory), hooks=list(hooks), **kwargs) as session:
        for _ in range(steps):
            session.run(step)
    return int(global_step.numpy())


def _feed(feed_dict):
    global_step = mts.get_or_create_global_step()
    step = tf.function(lambda: global_step.assign_add(1), autograph=False)
    with mts.MonitoredTrainingSession() as session:
        return session.run(step, feed_dict=feed_dict)


def _model_fn(features, labels, mode):
    del features, labels, mode


def _input_fn():
    return {'x': [[1.0]]}, [[1.0]]


_ACCEPTED = 'accepted'
_NUL_PATH = 'never\0created'
# The bad inputs of issue 20's third adversarial round: (id, call(directory), then the error and the pattern of its
# message, or _ACCEPTED and a check of v1's meaning on what the call returned and the directory).
_ROUND_3 = [
    (
        'MonitoredTrainingSession-save_checkpoint_secs=-inf',
        lambda d: _session_run(d, save_checkpoint_secs=-math.inf),
        _ACCEPTED,
        lambda result, d: result == 3 and support.checkpoint_steps(str(d)) == [],  # 0 or less is off, as in v1.
    ),
    (
        'MonitoredTrainingSession-save_summaries_secs=inf',
        lambda d: _session_run(d, save_summaries_secs=math.inf),
        _ACCEPTED,
        lambda result, d: [step for step, _ in support.read_events(str(d))['value']] == [1],  # The first run's.
    ),
    (
        'MonitoredTrainingSession-stop_grace_period_secs=inf',
        lambda d: _session_run(d, stop_grace_period_secs=math.inf),
        _ACCEPTED,
        lambda result, d: result == 3,  # Waits until the threads end, which they do.
    ),
    (
        'CheckpointSaverHook-save_secs=inf',
        lambda d: _session_run(
            d, hooks=[mts.CheckpointSaverHook(str(d / 'own'), save_secs=math.inf)], save_checkpoint_secs=None
        ),
        _ACCEPTED,
        lambda result, d: support.checkpoint_steps(str(d / 'own')) == [0, 3],  # At creation and at the end.
    ),
    (
        'StopAtStepHook-last_step=10**30',
        lambda d: mts.StopAtStepHook(last_step=10**30),
        ValueError,
        r'`last_step` must be None or an integer within the range of the int64 global step \(at most 2\*\*63 - 1 = '
        r'9223372036854775807\), got 1000000000000000000000000000000',
    ),
    (
        'MonitoredTrainingSession-log_step_count_steps=10**30',
        lambda d: _session_run(d, log_step_count_steps=10**30),
        ValueError,
        '`log_step_count_steps` must be None, USE_DEFAULT or an integer number of steps .*int64.*got 10{30}',
    ),
    (
        'MonitoredTrainingSession-save_summaries_steps=10**30',
        lambda d: _session_run(d, save_summaries_steps=10**30),
        ValueError,
        '`save_summaries_steps` must be .*within the range of the int64 global step.*got 10{30}',
    ),
    (
        'MonitoredSession.run-feed_dict=5',
        lambda d: _feed(5),
        TypeError,
        r'`feed_dict` must be None or a dict of feeds: .*got 5 \(int\)',
    ),
    (
        "MonitoredSession.run-feed_dict={'unknown': 1}",
        lambda d: _feed({'unknown': 1}),
        TypeError,
        r"`feed_dict` does not fit the step `<lambda>`, whose keyword arguments are none: 'unknown' is not among them",
    ),
    (
        'MonitoredTrainingSession-checkpoint_dir-NUL',
        lambda d: mts.MonitoredTrainingSession(checkpoint_dir=_NUL_PATH),
        ValueError,
        r"`checkpoint_dir` must be None or a path .* without NUL bytes, got 'never\\x00created'",
    ),
    (
        'CheckpointSaverHook-checkpoint_dir-NUL',
        lambda d: mts.CheckpointSaverHook(_NUL_PATH, save_steps=1),
        ValueError,
        r"`checkpoint_dir` must be a directory path .* without NUL bytes, got 'never\\x00created'",
    ),
    (
        'StepCounterHook-every_n_secs=nan',
        lambda d: mts.StepCounterHook(every_n_secs=math.nan),
        ValueError,  # v1's message, then what it means here.
        r'^exactly one of every_n_steps and every_n_secs should be provided. \(Got every_n_steps=100 and '
        r'every_n_secs=nan; every_n_steps defaults to 100, so pass every_n_steps=None with every_n_secs.\)$',
    ),
    (
        "Estimator-'x'",
        lambda d: mts.estimator.Estimator('x', model_dir=str(d)),
        TypeError,
        r'`model_fn` must be a callable model_fn\(features, labels, mode, params, config\), got str',
    ),
    (
        'Estimator.train-input_fn=None',
        lambda d: mts.estimator.Estimator(_model_fn, model_dir=str(d / 'model')).train(input_fn=None, steps=1),
        TypeError,
        r'`input_fn` must be a callable input_fn\(mode, params, config\) returning \(features, labels\) or a '
        r'tf.data.Dataset, got NoneType',
    ),
    (
        'Estimator-model_dir=123',
        lambda d: mts.estimator.Estimator(_model_fn, model_dir=123),
        TypeError,
        r'`model_dir` must be a directory path \(str or os.PathLike.*got 123 \(int\)',
    ),
    (
        'Estimator.train-hooks=<one hook>',
        lambda d: mts.estimator.Estimator(_model_fn, model_dir=str(d / 'model')).train(
            _input_fn, hooks=mts.StopAtStepHook(last_step=1)
        ),
        TypeError,
        r'`hooks` must be a list of SessionRunHook instances, got a single hook; wrap it in a list: '
        r'\[StopAtStepHook\(\.\.\.\)\]',
    ),
    (
        'RunConfig-save_checkpoints_secs=inf',
        lambda d: mts.estimator.RunConfig(save_checkpoints_secs=math.inf),
        _ACCEPTED,
        lambda config, d: config.save_checkpoints_secs == math.inf and config.save_checkpoints_steps is None,
    ),
    (
        'RunConfig-model_dir=5',
        lambda d: mts.estimator.RunConfig(model_dir=5),
        TypeError,
        r'`model_dir` must be a directory path \(str or os.PathLike\), got 5 \(int\)',
    ),
    (
        'RunConfig.replace-model_dir=1',
        lambda d: mts.estimator.RunConfig().replace(model_dir=1),
        TypeError,
        r'`model_dir` must be a directory path \(str or os.PathLike\), got 1 \(int\)',
    ),
    (
        "EstimatorSpec-mode='bogus'",
        lambda d: mts.estimator.EstimatorSpec(mode='bogus', predictions={'y': tf.constant(1.0)}),
        ValueError,
        r"`mode` must be one of ModeKeys.TRAIN \('train'\), ModeKeys.EVAL \('eval'\) or ModeKeys.PREDICT "
        r"\('infer'\).*got 'bogus'",
    ),
    (
        'EvalSpec-throttle_secs=nan',
        lambda d: mts.estimator.EvalSpec(_input_fn, throttle_secs=math.nan),
        ValueError,
        r'`throttle_secs` must be a number of seconds \(inf evaluates after the first checkpoint of the training '
        r'and after the last step only\), got nan: NaN',
    ),
    (
        "RunConfig-save_checkpoints_steps='10'",
        lambda d: mts.estimator.RunConfig(save_checkpoints_steps='10'),
        TypeError,  # v1's class: it failed comparing '10' >= 0.
        r"`save_checkpoints_steps` must be None or a number of steps >= 0, got '10' \(str\)",
    ),
    # The same classes of value on the other public arguments.
    (
        'GlobalStepWaiterHook-wait_until_step=2**63',
        lambda d: mts.GlobalStepWaiterHook(wait_until_step=2**63),
        ValueError,
        '`wait_until_step` must be an integer within the range of the int64 global step.*got 9223372036854775808',
    ),
    (
        'LoggingTensorHook-every_n_iter=10**30',
        lambda d: mts.LoggingTensorHook(['loss'], every_n_iter=10**30),
        ValueError,
        '`every_n_iter` .*int64',
    ),
    (
        'CheckpointSaverHook-save_steps=-2**64',
        lambda d: mts.CheckpointSaverHook(str(d), save_steps=-(2**64)),
        ValueError,
        '`save_steps` .*int64',
    ),
    (
        'SecondOrStepTimer-every_steps=10**19',
        lambda d: mts.SecondOrStepTimer(every_steps=10**19),
        ValueError,
        '`every_steps` .*int64',
    ),
    ('StopAtStepHook-num_steps=10**30', lambda d: mts.StopAtStepHook(num_steps=10**30), ValueError, '`num_steps`'),
    ('ProfilerHook-save_steps=10**30', lambda d: mts.ProfilerHook(save_steps=10**30), ValueError, '`save_steps`'),
    (
        'ProfilerHook-output_dir-NUL',
        lambda d: mts.ProfilerHook(save_steps=1, output_dir=_NUL_PATH),
        ValueError,
        '`output_dir` .*without NUL bytes',
    ),
    (
        'SummarySaverHook-output_dir-NUL',
        lambda d: mts.SummarySaverHook(save_steps=1, summary_op='loss', output_dir=_NUL_PATH),
        ValueError,
        '`output_dir` .*without NUL bytes',
    ),
    (
        'StepCounterHook-output_dir-NUL-bytes',
        lambda d: mts.StepCounterHook(output_dir=_NUL_PATH.encode()),
        ValueError,
        r"`output_dir` .*without NUL bytes, got 'never\\x00created'",
    ),
    (
        'ChiefSessionCreator-checkpoint_filename_with_path-NUL',
        lambda d: mts.ChiefSessionCreator(checkpoint_filename_with_path=_NUL_PATH),
        ValueError,
        '`checkpoint_filename_with_path` .*without NUL bytes',
    ),
    (
        'WorkerSessionCreator-checkpoint_dir-NUL',
        lambda d: mts.WorkerSessionCreator(checkpoint_dir=_NUL_PATH),
        ValueError,
        '`checkpoint_dir` .*without NUL bytes',
    ),
    (
        'SingularMonitoredSession-checkpoint_dir-NUL',
        lambda d: mts.SingularMonitoredSession(checkpoint_dir=_NUL_PATH),
        ValueError,
        '`checkpoint_dir` .*without NUL bytes',
    ),
    (
        'RunConfig-model_dir-NUL',
        lambda d: mts.estimator.RunConfig(model_dir=_NUL_PATH),
        ValueError,
        '`model_dir` .*without NUL bytes',
    ),
    (
        'RunConfig-save_summary_steps=10**30',
        lambda d: mts.estimator.RunConfig(save_summary_steps=10**30),
        ValueError,
        '`save_summary_steps` must be a number of steps >= 0 within the range of the int64 global step',
    ),
    (
        'RunConfig-log_step_count_steps=inf',
        lambda d: mts.estimator.RunConfig(log_step_count_steps=math.inf),
        ValueError,
        '`log_step_count_steps` .*int64.*got inf',
    ),
    (
        "RunConfig-keep_checkpoint_max='5'",
        lambda d: mts.estimator.RunConfig(keep_checkpoint_max='5'),
        TypeError,
        r"`keep_checkpoint_max` must be None or a number of checkpoints >= 0, got '5' \(str\)",
    ),
    (
        'EvalSpec-start_delay_secs=nan',
        lambda d: mts.estimator.EvalSpec(_input_fn, start_delay_secs=math.nan),
        ValueError,
        '`start_delay_secs` must be a number of seconds .*got nan: NaN',
    ),
    (
        "TrainSpec-max_steps='5'",
        lambda d: mts.estimator.TrainSpec(_input_fn, max_steps='5'),
        TypeError,
        r"`max_steps` must be None or an integer number of steps > 0, got '5' \(str\)",
    ),
    (
        "Estimator.train-steps='5'",
        lambda d: mts.estimator.Estimator(_model_fn, model_dir=str(d / 'model')).train(_input_fn, steps='5'),
        TypeError,
        r"`steps` must be None or an integer number of steps > 0, got '5' \(str\)",
    ),
    (
        'repeat_steps-steps_per_run=2**31',
        lambda d: mts.repeat_steps(lambda: None, 2**31),
        ValueError,
        r'`steps_per_run` must be a positive integer of at most 2\*\*31 - 1',
    ),
    (
        'HooksCallback-hooks=<one hook>',
        lambda d: mts.keras.HooksCallback(mts.StopAtStepHook(last_step=1)),
        TypeError,
        r'`hooks` must be a list of SessionRunHook instances, got a single hook; wrap it in a list',
    ),
    (
        'RunConfig-tf_random_seed=10**30',
        lambda d: mts.estimator.RunConfig(tf_random_seed=10**30),
        ValueError,
        '`tf_random_seed` must be an integer that an int64 holds, got 10{30}',
    ),
    (
        'Estimator-warm_start_from-NUL',
        lambda d: mts.estimator.Estimator(_model_fn, model_dir=str(d / 'model'), warm_start_from=_NUL_PATH),
        ValueError,
        '`warm_start_from` .*without NUL bytes',
    ),
    (
        'Estimator.predict-checkpoint_path-NUL',
        lambda d: list(
            mts.estimator.Estimator(_model_fn, model_dir=str(d / 'model')).predict(_input_fn, checkpoint_path=_NUL_PATH)
        ),
        ValueError,
        '`checkpoint_path` .*without NUL bytes',
    ),
    (
        'CallbackHook-steps_per_epoch=10**30',
        lambda d: mts.keras.CallbackHook([], steps_per_epoch=10**30),
        ValueError,
        '`steps_per_epoch` .*int64',
    ),
]


@pytest.mark.parametrize('call, expected, check', [row[1:] for row in _ROUND_3], ids=[row[0] for row in _ROUND_3])
def test_each_bad_input_is_named_or_does_what_it_did_in_v1(tmp_path, monkeypatch, call, expected, check):
    monkeypatch.chdir(tmp_path)
    mts.get_or_create_global_step()
    if expected is _ACCEPTED:
        assert check(call(tmp_path), tmp_path)
        return
    with pytest.raises(expected, match=check):
        call(tmp_path)
    assert not os.path.exists('never')  # Nothing was created at the part of a path before its NUL byte.
    assert not (tmp_path / 'model').exists()  # Nor by an Estimator refused before it trained.


def _model_fn_of_x(features, labels, mode):
    weight = tf.compat.v1.get_variable('weight', initializer=1.0)
    loss = tf.reduce_sum(weight * features['x'])
    return mts.estimator.EstimatorSpec(
        mode, loss=loss, train_op=tf.compat.v1.assign_add(tf.compat.v1.train.get_or_create_global_step(), 1)
    )


def _train_on(directory, input_fn, model_fn=_model_fn_of_x) -> int:
    """Trains one step; returns the global step of the last checkpoint."""
    estimator = mts.estimator.Estimator(model_fn, model_dir=str(directory / 'run'))
    estimator.train(input_fn, steps=1)
    return int(tf.train.load_variable(estimator.latest_checkpoint(), 'global_step'))


_RUN_CONFIG_NUMBERS = [
    ('save_checkpoints_secs', r'a number of seconds >= 0'),
    ('save_checkpoints_steps', r'a number of steps >= 0'),
    ('save_summary_steps', r'a number of steps >= 0'),
    ('keep_checkpoint_max', r'a number of checkpoints >= 0'),
    ('keep_checkpoint_every_n_hours', r'a number of hours > 0'),
    ('log_step_count_steps', r'a number of steps > 0'),
    ('session_creation_timeout_secs', r'a number of seconds > 0'),
]
# Issue 32's bad inputs that were still accepted, or refused in words that named nothing: (id, call(directory),
# error, pattern of its message).
_ROUND_4 = [
    *[
        (
            f'RunConfig-{name}=nan',
            lambda d, name=name: mts.estimator.RunConfig(**{name: math.nan}),
            ValueError,
            rf'^`{name}` must be None or {accepted}.*, got nan: NaN is not a number\.$',
        )
        for name, accepted in _RUN_CONFIG_NUMBERS
    ],
    *[
        (
            f'LatestExporter-exports_to_keep={value}',
            lambda d, value=value: mts.estimator.LatestExporter('latest', lambda: None, exports_to_keep=value),
            TypeError,
            rf'^`exports_to_keep` must be None or a positive integer, got {value} \(float\)\.$',
        )
        for value in (math.nan, 2.5)
    ],
    (
        'Estimator.train-input_fn-returns-5',
        lambda d: _train_on(d, lambda: 5),
        TypeError,
        r'^`input_fn` must return features \(a tensor or a dict of name -> tensor\), a \(features, labels\) tuple '
        r'of them, or a tf.data.Dataset of either; it returned the features 5 \(int\), on which the model_fn '
        r"failed: 'int' object is not subscriptable$",
    ),
    (
        'Estimator.train-input_fn-returns-(5, labels)',
        lambda d: _train_on(d, lambda: (5.0, [[1.0]])),
        TypeError,
        r"it returned the features 5.0 \(float\), on which the model_fn failed: 'float' object is not subscriptable$",
    ),
    (
        'MonitoredTrainingSession.run-feed_dict={tensor.ref(): 2}',
        lambda d: _feed({tf.constant([1.0], name='x').ref(): 2}),
        TypeError,
        r'^`feed_dict` cannot feed <tf.Tensor: .*> \(given as .ref\(\)\): an eager tensor or variable holds its '
        r'value and is not fed\. `feed_dict` keys must be strings, the keyword arguments of the step callable '
        r"\(feed_dict=\{'x': batch\}",
    ),
    (
        'MonitoredTrainingSession.run-feed_dict={variable.ref(): 2}',
        lambda d: _feed({tf.Variable(1.0).ref(): 2}),
        TypeError,
        r'^`feed_dict` cannot feed <tf.Variable .*> \(given as .ref\(\)\)',
    ),
]


@pytest.mark.parametrize('call, expected, check', [row[1:] for row in _ROUND_4], ids=[row[0] for row in _ROUND_4])
def test_each_bad_input_of_round_4_names_the_argument_and_what_is_accepted(tmp_path, call, expected, check):
    with pytest.raises(expected, match=check):
        call(tmp_path)
    assert not support.checkpoint_steps(str(tmp_path / 'run'))  # Refused before it trained.


def test_an_input_fn_returning_a_python_number_trains_a_model_fn_that_takes_it_as_in_v1(tmp_path):
    def model_fn(features, labels, mode):
        weight = tf.compat.v1.get_variable('weight', initializer=1.0)
        return mts.estimator.EstimatorSpec(
            mode,
            loss=weight * features,
            train_op=tf.compat.v1.assign_add(tf.compat.v1.train.get_or_create_global_step(), 1),
        )

    assert _train_on(tmp_path, lambda: 5.0, model_fn) == 1


def test_a_session_refuses_a_tf_config_task_past_the_end_of_its_job(monkeypatch, tmp_path):
    """A task index out of range used to train alone, silently; the Estimator's RunConfig refuses it too."""
    cluster = {'chief': ['localhost:1'], 'worker': ['localhost:2']}
    monkeypatch.setenv('TF_CONFIG', json.dumps({'cluster': cluster, 'task': {'type': 'worker', 'index': 3}}))
    with pytest.raises(ValueError, match=r'^TF_CONFIG names the task worker:3, but its cluster has 1 worker task'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))
    monkeypatch.setenv('TF_CONFIG', '{"cluster": ')
    with pytest.raises(ValueError, match=r'^TF_CONFIG is not JSON'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))
    assert not os.listdir(tmp_path)
