"""`compat_mts.estimator.Estimator`: train, evaluate and predict with v1's arguments, defaults, files and lines."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts import _tf_internals as tf_internals
import compat_mts.estimator as estimator
from tests import support
from tests.estimator_programs import linear


def make_estimator(model_dir, params=None, **config):
    return estimator.Estimator(
        linear.model_fn, config=estimator.RunConfig(model_dir=str(model_dir), **config), params=params or {}
    )


def test_train_with_max_steps_writes_v1s_files_then_skips_once_there(tmp_path, tf_logs):
    model = make_estimator(tmp_path)
    assert model.train(linear.input_fn(), max_steps=5) is model
    # Checkpoints every 600 s by default: at the session's creation and at its end.
    assert support.checkpoint_steps(str(tmp_path)) == [0, 5]
    assert model.get_variable_value('global_step') == 5
    assert sorted(model.get_variable_names()) == ['b', 'global_step', 'w']
    assert model.latest_checkpoint() == os.path.join(str(tmp_path), 'model.ckpt-5')
    files = support.listed_files(str(tmp_path))
    assert 'graph.pbtxt' in files and 'checkpoint' in files
    assert support.read_events(str(tmp_path))['loss'][0][0] == 1  # Summaries every 100 steps: the first.
    assert any(message.startswith('Loss for final step: ') for message in tf_logs.messages())
    assert any(message.startswith('loss = ') and message.endswith(', step = 0') for message in tf_logs.messages())
    model.train(linear.input_fn(), max_steps=5)
    assert 'Skipping training since max_steps has already saved.' in tf_logs.messages()
    assert support.listed_files(str(tmp_path)) == files


def test_steps_count_from_where_each_call_starts(tmp_path):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(), steps=3)
    model.train(linear.input_fn(), steps=3)
    assert model.get_variable_value('global_step') == 6
    assert support.checkpoint_steps(str(tmp_path)) == [0, 3, 6]


def test_training_ends_with_the_data(tmp_path, tf_logs):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(repeat=False, batch=16, count=64))
    assert model.get_variable_value('global_step') == 4
    empty = make_estimator(tmp_path / 'empty')
    empty.train(linear.input_fn(repeat=False, count=0))
    assert 'Training with estimator made no steps. Perhaps input is empty or misspecified.' in tf_logs.messages()


def test_train_arguments_are_checked_with_v1s_messages(tmp_path):
    model = make_estimator(tmp_path)
    with pytest.raises(ValueError, match='^Can not provide both steps and max_steps.$'):
        model.train(linear.input_fn(), steps=1, max_steps=1)
    with pytest.raises(ValueError, match=r'^Must specify steps > 0, given: 0$'):
        model.train(linear.input_fn(), steps=0)
    with pytest.raises(ValueError, match=r'^Must specify max_steps > 0, given: -1$'):
        model.train(linear.input_fn(), max_steps=-1)
    with pytest.raises(TypeError, match='^Hooks must be a SessionRunHook, given: 3$'):
        model.train(linear.input_fn(), steps=1, hooks=[3])
    with pytest.raises(TypeError, match='^saving_listeners must be a list of CheckpointSaverListener'):
        model.train(linear.input_fn(), steps=1, saving_listeners=[object()])
    no_checkpoints = make_estimator(tmp_path / 'none', save_checkpoints_steps=None, save_checkpoints_secs=None)
    with pytest.raises(ValueError, match='^There should be a CheckpointSaverHook to use saving_listeners'):
        no_checkpoints.train(linear.input_fn(), steps=1, saving_listeners=[estimator.CheckpointSaverListener()])
    assert not os.path.exists(tmp_path / 'none' / 'checkpoint')


class CountingListener(tf.compat.v1.train.CheckpointSaverListener):
    def __init__(self):
        self.saved = []

    def after_save(self, session, global_step_value):
        self.saved.append(global_step_value)


class CountingHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_listeners_chief_hooks_and_the_scaffold_of_the_spec_are_honoured(tmp_path):
    chief_hook, listener, initialized = CountingHook(), CountingListener(), []

    def scaffold():
        bias = [v for v in tf.compat.v1.global_variables() if v.op.name == 'b'][0]
        assign = bias.assign([3.0])
        return tf.compat.v1.train.Scaffold(init_fn=lambda scaffold, session: initialized.append(session.run(assign)))

    params = {'hooks': lambda loss: {'training_chief_hooks': [chief_hook]}, 'scaffold': scaffold}
    model = make_estimator(tmp_path, params, save_checkpoints_steps=2)
    model.train(linear.input_fn(), max_steps=5, saving_listeners=[listener])
    assert chief_hook.runs == 5
    assert listener.saved == [0, 2, 4, 5]
    assert len(initialized) == 1 and initialized[0] == pytest.approx([3.0])
    model.train(linear.input_fn(), max_steps=6)  # Restored: init_fn does not run.
    assert len(initialized) == 1


def test_keep_checkpoint_max_rotates_the_checkpoints(tmp_path):
    model = make_estimator(tmp_path, save_checkpoints_steps=1, keep_checkpoint_max=2)
    model.train(linear.input_fn(), max_steps=4)
    assert support.checkpoint_steps(str(tmp_path)) == [3, 4]


def test_v1_built_in_hooks_of_the_spec_run_as_compat_mts_hooks(tmp_path, tf_logs):
    def hooks(loss):
        return {
            'training_hooks': [
                tf.compat.v1.train.StopAtStepHook(num_steps=3),
                tf.compat.v1.train.NanTensorHook(loss),
                tf.compat.v1.train.LoggingTensorHook([loss], every_n_iter=1, at_end=True),
            ]
        }

    model = make_estimator(tmp_path, {'hooks': hooks})
    model.train(linear.input_fn())
    assert model.get_variable_value('global_step') == 3
    logged = [message for message in tf_logs.messages() if message.startswith('Tensor("')]
    assert len(logged) == 4  # Three runs, and at the end.

    def refused(loss):
        return {'training_hooks': [tf.compat.v1.train.CheckpointSaverHook(str(tmp_path), save_steps=1)]}

    with pytest.raises(TypeError, match='Use compat_mts.CheckpointSaverHook instead'):
        make_estimator(tmp_path / 'refused', {'hooks': refused}).train(linear.input_fn(), steps=1)


def test_each_call_forgets_its_graph_and_global_step(tmp_path):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(), steps=1)
    assert mts.get_global_step() is None
    model.evaluate(linear.input_fn(repeat=False))
    assert mts.get_global_step() is None
    from compat_mts.core import fetch as fetches

    assert fetches.graph_runners() == []


def test_calls_inside_a_programs_own_graph_build_their_own_and_leave_it_untouched(tmp_path):
    # v1 opened a fresh `tf.Graph()` in each call, whatever the default graph: the results are those of the
    # same calls outside the block, and the caller's graph gets no op.
    def run(model_dir):
        model = make_estimator(model_dir, tf_random_seed=3)
        model.train(linear.input_fn(), steps=2)
        metrics = model.evaluate(linear.input_fn(repeat=False))
        predictions = []
        for example in model.predict(linear.predict_input_fn()):
            predictions.append((example['y'], tf.executing_eagerly()))
        return metrics, predictions

    expected_metrics, expected_predictions = run(tmp_path / 'outside')
    graph = tf.Graph()
    with graph.as_default():
        metrics, predictions = run(tmp_path / 'inside')
        assert tf.compat.v1.get_default_graph() is graph
    assert graph.get_operations() == []
    assert metrics == expected_metrics
    assert [y for y, _ in predictions] == [y for y, _ in expected_predictions]
    assert not any(eagerly for _, eagerly in predictions)  # The caller's code between the steps: in its graph.
    assert support.checkpoint_steps(str(tmp_path / 'inside')) == [0, 2]


def test_evaluate_runs_steps_batches_and_writes_eval_name(tmp_path, tf_logs):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(), max_steps=20)
    results = model.evaluate(linear.input_fn(), steps=2, name='training_data')
    assert sorted(results) == ['global_step', 'loss', 'mae']
    assert results['global_step'] == 20 and isinstance(results['loss'], np.float32)
    assert 'Evaluation [1/2]' in tf_logs.messages() and 'Evaluation [2/2]' in tf_logs.messages()
    assert model.eval_dir('training_data') == os.path.join(str(tmp_path), 'eval_training_data')
    events = support.read_events(model.eval_dir('training_data'))
    assert events['loss'] == [(20, pytest.approx(float(results['loss'])))]
    assert events['mae'] == [(20, pytest.approx(float(results['mae'])))]
    assert (
        'Saving dict for global step 20: global_step = 20, loss = %s, mae = %s' % (results['loss'], results['mae'])
    ) in tf_logs.messages()


def test_evaluate_without_a_checkpoint_evaluates_the_initial_model(tmp_path, tf_logs):
    model = make_estimator(tmp_path)
    results = model.evaluate(linear.input_fn(repeat=False))
    assert results['global_step'] == 0
    features, labels = linear.data()
    assert results['loss'] == pytest.approx(np.mean(np.square(labels)), rel=1e-5)  # All weights are zero.
    assert any(message.startswith('Could not find trained model in model_dir') for message in tf_logs.messages())
    assert 'checkpoint_path' not in support.value_kinds(model.eval_dir())


def test_evaluate_refuses_metrics_named_like_the_estimators(tmp_path):
    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features['x'])
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={'loss': tf.compat.v1.metrics.mean(loss)})

    model = estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match='^Metric with name "loss" is not allowed, because Estimator already'):
        model.evaluate(linear.input_fn(repeat=False))
    with pytest.raises(ValueError, match=r'^Must specify steps > 0, given: 0$'):
        model.evaluate(linear.input_fn(), steps=0)


def test_predict_yields_examples_or_batches_until_the_data_ends(tmp_path):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(), max_steps=30)
    features = linear.data(6, seed=1)[0]
    w, b = model.get_variable_value('w'), model.get_variable_value('b')
    expected = (features @ w + b)[:, 0]
    examples = list(model.predict(linear.predict_input_fn()))
    assert len(examples) == 6 and sorted(examples[0]) == ['twice', 'y']
    np.testing.assert_allclose([example['y'] for example in examples], expected, rtol=1e-5)
    only_y = list(model.predict(linear.predict_input_fn(), predict_keys=['y']))
    assert sorted(only_y[0]) == ['y']
    batches = list(model.predict(linear.predict_input_fn(), yield_single_examples=False))
    assert [len(batch['y']) for batch in batches] == [4, 2]
    with pytest.raises(ValueError, match='^Expected to run at least one output from'):
        next(model.predict(linear.predict_input_fn(), predict_keys=['nothing']))
    assert mts.get_global_step() is None


def test_warm_start_from_initializes_from_another_model_dir(tmp_path):
    trained = make_estimator(tmp_path / 'trained')
    trained.train(linear.input_fn(), max_steps=20)
    warm = estimator.Estimator(
        linear.model_fn, model_dir=str(tmp_path / 'warm'), params={}, warm_start_from=str(tmp_path / 'trained')
    )
    # Evaluating without a checkpoint of its own, the warm-started model has the trained weights.
    assert warm.evaluate(linear.input_fn(repeat=False))['loss'] == pytest.approx(
        trained.evaluate(linear.input_fn(repeat=False))['loss'], rel=1e-5
    )
    warm.train(linear.input_fn(), steps=1)
    np.testing.assert_allclose(warm.get_variable_value('w'), trained.get_variable_value('w'), atol=0.1)


def test_model_fn_and_its_results_are_checked_with_v1s_messages(tmp_path):
    with pytest.raises(ValueError, match='^model_fn must be provided to Estimator.$'):
        estimator.Estimator(None)
    with pytest.raises(ValueError, match=r'must include features argument.$'):
        estimator.Estimator(lambda x, labels: None)
    with pytest.raises(ValueError, match=r'does not include params argument, but params \(\{'):
        estimator.Estimator(lambda features, labels: None, params={'a': 1})
    with pytest.raises(ValueError, match=r"has following not expected args: \['extra'\]$"):
        estimator.Estimator(lambda features, labels, extra: None)
    no_labels = estimator.Estimator(lambda features, mode: None, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match='^model_fn does not take labels, but input_fn returns labels.$'):
        no_labels.train(linear.input_fn(), steps=1)
    not_a_spec = estimator.Estimator(lambda features, labels: {}, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match='^model_fn should return an EstimatorSpec.$'):
        not_a_spec.train(linear.input_fn(), steps=1)
    assert mts.get_global_step() is None


def test_input_fn_may_return_tensors_and_gets_mode_params_and_config(tmp_path):
    seen = []

    def input_fn(mode, params, config):
        seen.append((mode, params['learning_rate'], config.model_dir))
        features, labels = linear.data(32)
        dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, labels)).batch(8)
        return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

    model = make_estimator(tmp_path, {'learning_rate': 0.1})
    model.train(input_fn)
    assert model.get_variable_value('global_step') == 4  # The tensors end with the data, too.
    first = model.evaluate(input_fn, checkpoint_path=os.path.join(str(tmp_path), 'model.ckpt-0'))
    assert first['global_step'] == 0
    assert seen == [('train', 0.1, str(tmp_path)), ('eval', 0.1, str(tmp_path))]


@pytest.mark.parametrize('damage', ['binary_garbage', 'text_garbage', 'empty'])
def test_an_unreadable_state_file_is_read_from_the_checkpoints_on_disk_by_every_estimator_call(
    tmp_path, tf_logs, damage
):
    model = make_estimator(tmp_path / 'model')
    model.train(linear.input_fn(), max_steps=3)
    state = tmp_path / 'model' / 'checkpoint'
    garbage = {'binary_garbage': bytes(range(256)), 'text_garbage': b'not a checkpoint state\n', 'empty': b''}
    state.write_bytes(garbage[damage])
    assert model.latest_checkpoint() == str(tmp_path / 'model' / 'model.ckpt-3')
    assert model.get_variable_value('global_step') == 3 and 'w' in model.get_variable_names()
    assert model.evaluate(linear.input_fn(), steps=1)['global_step'] == 3
    assert len(list(model.predict(linear.predict_input_fn()))) == 6
    state.write_bytes(garbage[damage])
    warm = estimator.Estimator(
        linear.model_fn, model_dir=str(tmp_path / 'warm'), params={}, warm_start_from=str(tmp_path / 'model')
    )
    np.testing.assert_array_equal(
        list(warm.predict(linear.predict_input_fn()))[0]['y'], list(model.predict(linear.predict_input_fn()))[0]['y']
    )
    state.write_bytes(garbage[damage])
    model.train(linear.input_fn(), max_steps=5)  # Resumes at 3, and writes a readable state file again.
    assert support.checkpoint_steps(str(tmp_path / 'model')) == [0, 3, 5]
    assert tf.train.latest_checkpoint(str(tmp_path / 'model')) == str(tmp_path / 'model' / 'model.ckpt-5')
    assert any('no readable `checkpoint` state file' in message for message in tf_logs.messages())


def test_a_flipped_byte_in_the_newest_data_file_falls_back_to_the_previous_checkpoint(tmp_path, tf_logs):
    model = make_estimator(tmp_path)
    model.train(linear.input_fn(), max_steps=3)
    data = tmp_path / 'model.ckpt-3.data-00000-of-00001'
    content = bytearray(data.read_bytes())
    weights = tf.train.load_checkpoint(str(tmp_path / 'model.ckpt-3')).get_tensor('w').tobytes()
    content[content.find(weights)] ^= 0x01
    data.write_bytes(bytes(content))
    model.train(linear.input_fn(), max_steps=5)
    assert any(
        m.startswith('Could not restore checkpoint') and 'model.ckpt-3.data-00000-of-00001' in m
        for m in tf_logs.messages()
    )
    assert 'Restoring parameters from %s' % (tmp_path / 'model.ckpt-0') in tf_logs.messages()
    assert model.get_variable_value('global_step') == 5
    with pytest.raises(tf.errors.DataLossError, match='model.ckpt-3.data-00000-of-00001 of the checkpoint'):
        model.evaluate(linear.input_fn(), steps=1, checkpoint_path=str(tmp_path / 'model.ckpt-3'))


class _OfficialExamplesPerSecondHook(tf.compat.v1.train.SessionRunHook):
    """tensorflow/models `official/r1/utils/logs/hooks.py`'s hook, cut to what it does with the global step."""

    def __init__(self):
        self.steps = []

    def begin(self):
        self._global_step_tensor = tf.compat.v1.train.get_global_step()
        if self._global_step_tensor is None:
            raise RuntimeError('Global step should be created to use StepCounterHook.')
        self.graph_ops = len(tf.compat.v1.get_default_graph().get_operations())

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        self.steps.append(int(run_values.results))


def test_a_user_hooks_begin_finds_the_global_step_in_the_model_fns_graph(tmp_path):
    model = make_estimator(tmp_path)
    hook = _OfficialExamplesPerSecondHook()
    model.train(linear.input_fn(), max_steps=3, hooks=[hook])
    assert hook.steps == [0, 1, 2]
    assert hook.graph_ops > 10  # The model_fn's graph was the default graph, as in v1.
    evaluation_hook = _OfficialExamplesPerSecondHook()
    model.evaluate(linear.input_fn(repeat=False), hooks=[evaluation_hook])
    assert evaluation_hook.steps == [3] * 4  # 64 examples in batches of 16.
    prediction_hook = _OfficialExamplesPerSecondHook()
    assert len(list(model.predict(linear.predict_input_fn(), hooks=[prediction_hook]))) == 6
    assert prediction_hook.steps == [3] * 2
    assert mts.get_global_step() is None  # The graph's step was the hooks' only; the process has none.


def test_repeated_train_and_evaluate_calls_write_one_events_file_per_directory(tmp_path):
    model = make_estimator(tmp_path, save_summary_steps=1)
    model.train(linear.input_fn(), steps=2)
    model.evaluate(linear.input_fn(repeat=False))
    model.train(linear.input_fn(), steps=2)
    model.evaluate(linear.input_fn(repeat=False))
    model.train(linear.input_fn(), steps=2)
    assert len([name for name in os.listdir(tmp_path) if name.startswith('events.out.tfevents')]) == 1
    assert len([name for name in os.listdir(tmp_path / 'eval') if name.startswith('events.out.tfevents')]) == 1
    assert [step for step, _ in support.read_events(str(tmp_path))['loss']] == [1, 2, 3, 4, 5, 6]
    assert [step for step, _ in support.read_events(str(tmp_path / 'eval'))['loss']] == [2, 4]


def _adam_model_fn(features, labels, mode):
    weights = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features['x'], weights)[:, 0] - labels))
    train_op = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss, tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_evaluate_and_resume_print_no_lines_v1_never_printed(tmp_path, tf_logs):
    model = estimator.Estimator(_adam_model_fn, config=estimator.RunConfig(model_dir=str(tmp_path)))
    model.train(linear.input_fn(), steps=2)
    model.train(linear.input_fn(), steps=2)  # Resumes: the creation save finds the restored checkpoint.
    model.evaluate(linear.input_fn(repeat=False))  # The evaluation graph has no Adam slots.
    unprinted = ('have no object of the program yet', 'holds what this session restored')
    assert not [message for message in tf_logs.messages() if any(text in message for text in unprinted)]
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.DEBUG)
    model.train(linear.input_fn(), steps=1)
    assert any('holds what this session restored' in message for message in tf_logs.messages(logging.DEBUG))


def _keras_model_fn(features, labels, mode):
    """Keras 3 layers in a model_fn, without TF_USE_LEGACY_KERAS: each mode's graph names them alike, as v1."""
    hidden = tf.keras.layers.Dense(4, activation='relu')(features['x'])
    prediction = tf.keras.layers.Dense(1)(hidden)[:, 0]
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions={'y': prediction})
    loss = tf.reduce_mean(tf.square(prediction - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_keras_layers_in_a_model_fn_train_evaluate_predict_and_resume(tmp_path):
    before = tf.keras.layers.Dense(1).name
    model = estimator.Estimator(_keras_model_fn, model_dir=str(tmp_path))
    model.train(linear.input_fn(), steps=3)
    names = sorted(model.get_variable_names())
    assert len(names) == 5 and names[:2] == ['dense/bias', 'dense/kernel']  # Each mode's graph names them so.
    first = model.evaluate(linear.input_fn(repeat=False))
    assert first['global_step'] == 3 and np.isfinite(first['loss'])
    model.train(linear.input_fn(), steps=20)
    assert model.evaluate(linear.input_fn(repeat=False))['loss'] < first['loss']
    assert len(list(model.predict(linear.predict_input_fn()))) == 6
    if tf_internals.PRIVATE_TF:  # The process's own Keras names go on counting from where they were.
        after = tf.keras.layers.Dense(1).name
        assert _keras_count(after) == _keras_count(before) + 1


def _keras_count(name: str) -> int:
    return int(name.rpartition('_')[2]) if '_' in name else 0
