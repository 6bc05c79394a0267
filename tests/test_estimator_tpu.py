"""`compat_mts.estimator.tpu`: a BERT-style `TPUEstimator` program with `use_tpu=False`, as TF 2.15 ran it.

`tests/estimator_programs/bert_classifier.py` is the program (run_classifier.py's shape, tiny); the slow test
runs it under TF 2.15 too (`tests/tf215.py`) and compares.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from compat_mts.estimator import tpu
from tests import support
from tests import tf215
from tests.estimator_programs import bert_classifier

PROGRAM = os.path.join(support.TESTS_DIR, 'estimator_programs', 'bert_classifier.py')


@pytest.fixture(autouse=True)
def fresh_records():
    del bert_classifier.SEEN_BATCH_SIZES[:]
    del bert_classifier.LOSSES[:]


def _examples(count, seed, training=False):
    return bert_classifier.input_fn_builder(
        bert_classifier.synthetic_examples(count, seed), bert_classifier.SEQ_LENGTH, training, drop_remainder=training
    )


@pytest.mark.slow
def test_bert_classifier_trains_evaluates_and_predicts_with_batch_sizes_by_mode(tmp_path, tf_logs):
    results = bert_classifier.run(str(tmp_path), num_train_steps=6)
    assert [step for step, _ in results['losses']] == [0, 1, 2, 3, 4, 5]  # The user hook found the global step.
    assert all(np.isfinite(loss) for _, loss in results['losses'])
    assert sorted(results['metrics']) == ['eval_accuracy', 'eval_loss', 'global_step', 'loss']
    assert results['metrics']['global_step'] == 6
    assert results['metrics']['eval_loss'] == pytest.approx(results['metrics']['loss'])
    assert len(results['probabilities']) == 7 and all(len(row) == 2 for row in results['probabilities'])
    np.testing.assert_allclose(np.sum(results['probabilities'], axis=1), 1.0, rtol=1e-5)
    assert results['batch_sizes'] == [
        ('input_fn', 8),
        ('train', 8),
        ('input_fn', 4),
        ('eval', 4),
        ('input_fn', 3),
        ('infer', 3),
    ]
    assert 'output_weights/Adam' in results['variables'] and 'bert/pooler/dense/kernel' in results['variables']
    assert support.checkpoint_steps(str(tmp_path)) == [0, 3, 6]
    # TPUEstimator's logging, as v1's off the TPU: examples/sec every ceil(100 / iterations_per_loop) steps,
    # no `loss = ..., step = ...` lines and no `global_step/sec` of the Estimator's own step counter.
    messages = tf_logs.messages()
    assert not any(message.startswith('examples/sec: ') for message in messages)  # Every 50 steps: none in 6.
    assert not any(message.startswith('loss = ') for message in messages)
    assert 'Running train on CPU/GPU' in messages and 'Running infer on CPU/GPU' in messages


@pytest.mark.slow
def test_scaffold_fn_warms_the_model_from_init_checkpoint(tmp_path):
    pretrained = bert_classifier.build_estimator(str(tmp_path / 'pretrained'))
    pretrained.train(_examples(64, seed=1, training=True), max_steps=4)
    expected = pretrained.evaluate(_examples(12, seed=2))
    init_checkpoint = pretrained.latest_checkpoint()
    warmed = bert_classifier.build_estimator(str(tmp_path / 'fine_tuned'), init_checkpoint=init_checkpoint)
    before_training = warmed.evaluate(_examples(12, seed=2))  # No checkpoint yet: the initial, warmed model.
    assert before_training['global_step'] == 0
    assert before_training['eval_loss'] == pytest.approx(expected['eval_loss'], rel=1e-6)
    cold = bert_classifier.build_estimator(str(tmp_path / 'cold')).evaluate(_examples(12, seed=2))
    assert cold['eval_loss'] != pytest.approx(expected['eval_loss'], rel=1e-6)
    warmed.train(_examples(64, seed=1, training=True), max_steps=2)
    np.testing.assert_allclose(
        warmed.get_variable_value('bert/embeddings/word_embeddings'),
        pretrained.get_variable_value('bert/embeddings/word_embeddings'),
        atol=0.05,
    )


def _linear_model_fn(features, labels, mode, params):
    weights = tf.compat.v1.get_variable('w', [2, 1], initializer=tf.compat.v1.zeros_initializer())
    predictions = tf.matmul(features['x'], weights)
    if mode == estimator.ModeKeys.PREDICT:
        return tpu.TPUEstimatorSpec(mode, predictions={'y': predictions})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    # The host call's step is read before the step's increment: unordered, the two race in a graph's run (in
    # TF 2.15's `use_tpu=False` too, whose host call runs in the train op's run), and the step read may be the next.
    global_step = tf.reshape(tf.compat.v1.train.get_global_step(), [1])
    with tf.control_dependencies([global_step]):
        train_op = tf.compat.v1.train.GradientDescentOptimizer(1e-3).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )

    def metric_fn(labels, predictions):
        return {'mse': tf.compat.v1.metrics.mean_squared_error(labels, predictions)}

    def host_fn(global_step, loss):
        with tf.summary.create_file_writer(params['host_call_dir']).as_default():
            tf.summary.scalar('host_loss', loss[0], step=global_step[0])
            return tf.compat.v1.summary.all_v2_summary_ops()

    return tpu.TPUEstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        eval_metrics=(metric_fn, {'labels': labels, 'predictions': predictions}),
        host_call=(host_fn, [global_step, tf.reshape(loss, [1])]),
    )


def _linear_input_fn(params):
    features = np.arange(40, dtype=np.float32).reshape(20, 2)
    dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, features[:, :1]))
    return dataset.batch(params['batch_size'])


def _linear_estimator(model_dir, **tpu_config):
    config = tpu.RunConfig(model_dir=str(model_dir), log_step_count_steps=2, tpu_config=tpu.TPUConfig(**tpu_config))
    params = {'host_call_dir': str(model_dir / 'host_call')}
    return tpu.TPUEstimator(
        _linear_model_fn, config=config, params=params, use_tpu=False, train_batch_size=4, eval_batch_size=5
    )


def test_host_call_runs_every_step_and_eval_metrics_take_a_dict(tmp_path, tf_logs):
    model = _linear_estimator(tmp_path, iterations_per_loop=1)
    model.train(_linear_input_fn)  # 20 examples in batches of 4: five steps.
    host_loss = support.read_events(str(tmp_path / 'host_call'))['host_loss']
    assert [step for step, _ in host_loss] == [0, 1, 2, 3, 4]
    events = support.read_events(str(tmp_path))
    assert [step for step, _ in events['examples/sec']] == [3, 5]  # Every 2 steps, from the first's clock.
    assert 'global_step/sec' in events
    assert sum(message.startswith('examples/sec: ') for message in tf_logs.messages()) == 2
    metrics = model.evaluate(_linear_input_fn)  # Batches of 5.
    assert sorted(metrics) == ['global_step', 'loss', 'mse']
    assert metrics['mse'] == pytest.approx(metrics['loss'], rel=1e-6)


def test_iterations_per_loop_divides_the_logging_period(tmp_path, tf_logs):
    model = _linear_estimator(tmp_path, iterations_per_loop=2)  # log_step_count_steps=2: every step.
    model.train(_linear_input_fn)
    assert [step for step, _ in support.read_events(str(tmp_path))['examples/sec']] == [2, 3, 4, 5]


def test_export_saved_model_builds_the_cpu_graph_without_batch_size(tmp_path):
    seen = []

    def model_fn(features, labels, mode, params):
        seen.append((mode, params.get('batch_size'), params['use_tpu']))
        return _linear_model_fn(features, labels, mode, params)

    config = tpu.RunConfig(model_dir=str(tmp_path))
    params = {'host_call_dir': str(tmp_path / 'host_call')}
    model = tpu.TPUEstimator(model_fn, config=config, params=params, use_tpu=False, train_batch_size=4)
    model.train(_linear_input_fn, max_steps=2)
    receiver = estimator.export.build_raw_serving_input_receiver_fn({'x': tf.TensorSpec([None, 2], tf.float32)})
    path = model.export_saved_model(str(tmp_path / 'export'), receiver)
    assert seen == [('train', 4, False), ('infer', None, False)]
    loaded = tf.saved_model.load(path.decode())
    outputs = loaded.signatures['serving_default'](x=tf.constant([[1.0, 2.0]]))
    assert outputs['y'].shape == (1, 1)


def test_use_tpu_true_names_tpu_strategy_and_the_guide(tmp_path):
    config = tpu.RunConfig(model_dir=str(tmp_path))
    with pytest.raises(NotImplementedError, match=r'use_tpu=True.*TPUStrategy.*migration_guide/tpu\.md'):
        tpu.TPUEstimator(_linear_model_fn, config=config, train_batch_size=4)
    assert not os.listdir(tmp_path)


def test_bad_arguments_get_v1s_messages(tmp_path):
    with pytest.raises(ValueError, match='^`config` must be provided with type `tpu_config.RunConfig`$'):
        tpu.TPUEstimator(_linear_model_fn, config=estimator.RunConfig(model_dir=str(tmp_path)), use_tpu=False)
    config = tpu.RunConfig(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"\['batch_size', 'context'\] are reserved keys"):
        tpu.TPUEstimator(_linear_model_fn, config=config, params={'batch_size': 3}, use_tpu=False)
    with pytest.raises(ValueError, match='Invalid TPUConfig `iterations_per_loop` value'):
        tpu.TPUConfig(iterations_per_loop='ten')
    with pytest.raises(ValueError, match='^num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got 3$'):
        tpu.TPUConfig(num_cores_per_replica=3)
    with pytest.raises(ValueError, match='^Both master and cluster are set.$'):
        tpu.RunConfig(master='', cluster=tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec({})))
    model = tpu.TPUEstimator(_linear_model_fn, config=config, use_tpu=False, train_batch_size=4)
    with pytest.raises(ValueError, match=r'input_fn \(.*\) does not include params argument'):
        model.train(lambda: _linear_input_fn({'batch_size': 4}), max_steps=1)
    assert tpu.TPUConfig(iterations_per_loop='2m').iterations_per_loop == '2m'
    assert tpu.TPUConfig(per_host_input_for_training=False).per_host_input_for_training == (
        tpu.InputPipelineConfig.PER_SHARD_V1
    )
    replaced = config.replace(tpu_config=tpu.TPUConfig(iterations_per_loop=7), save_summary_steps=3)
    assert replaced.tpu_config.iterations_per_loop == 7 and replaced.save_summary_steps == 3
    assert tpu.RunConfig(master='grpc://localhost:1').evaluation_master == 'grpc://localhost:1'


@pytest.mark.slow
def test_the_program_matches_tf215s_tpu_estimator(tmp_path):
    """The same program, the same pretrained checkpoint: TF 2.15's TPUEstimator and this one.

    The first loss is equal (the same initial values); later ones are not compared: BERT's optimizer reads the
    global step for its learning rate in the run that increments it, with no order between the two, so which
    value TF 2.15's graph read is up to its executor (here the read comes first, in program order).
    """
    pretrained = bert_classifier.build_estimator(str(tmp_path / 'pretrained'))
    pretrained.train(_examples(64, seed=5, training=True), max_steps=2)
    init_checkpoint = pretrained.latest_checkpoint()
    reference = tf215.run(PROGRAM, str(tmp_path / 'tf215'), init_checkpoint)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = json.loads(reference.stdout.strip().splitlines()[-1])
    del bert_classifier.SEEN_BATCH_SIZES[:]
    results = json.loads(json.dumps(bert_classifier.run(str(tmp_path / 'here'), init_checkpoint)))
    assert sorted(results['metrics']) == sorted(expected['metrics'])
    assert results['metrics']['global_step'] == expected['metrics']['global_step']
    assert results['batch_sizes'] == expected['batch_sizes']
    assert results['variables'] == expected['variables']
    assert len(results['losses']) == len(expected['losses'])
    assert results['losses'][0][1] == pytest.approx(expected['losses'][0][1], rel=1e-5)
    assert np.array(results['probabilities']).shape == np.array(expected['probabilities']).shape
