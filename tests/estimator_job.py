"""A distributed Estimator job's program, as a job manager starts it once per task with its own TF_CONFIG.

    python estimator_job.py compat_mts|tf215 premade|custom|tpu MODEL_DIR MAX_STEPS

Shaped like the public census trainers: `train_and_evaluate` with a `FinalExporter`, the same program on every
task (chief, workers, ps, evaluator). `tf215` runs it on TensorFlow 2.15's own `tf.estimator` (the reference),
`compat_mts` on compat_mts.estimator. Each batch the input pipeline reads prints `input batch` on the stderr of
the process that reads it, so a test sees which task read the input. The last line on stdout is a JSON line:
what the task did.
"""

import json
import os
import sys

IMPLEMENTATION, KIND, MODEL_DIR, MAX_STEPS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if IMPLEMENTATION == 'compat_mts':
    import compat_mts  # noqa: F401  (before TensorFlow: its quiet start)
    import tensorflow as tf

    estimator = compat_mts.estimator
    tpu = compat_mts.estimator.tpu
else:
    import tensorflow as tf

    estimator = tf.estimator
    tpu = tf.compat.v1.estimator.tpu

tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
COLUMNS = [tf.feature_column.numeric_column('a'), tf.feature_column.numeric_column('b')]
THROTTLE_SECS = float(os.environ.get('JOB_THROTTLE_SECS', '1'))
SAVE_STEPS = int(os.environ.get('JOB_SAVE_STEPS', '20'))  # benchmarks/estimator_cluster.py sets these two.
BATCH_SIZE = int(os.environ.get('JOB_BATCH_SIZE', '16'))
MARK_BATCHES = os.environ.get('JOB_MARK_BATCHES', '1') == '1'
# `ps`: RunConfig(train_distribute=tf.compat.v1.distribute.experimental.ParameterServerStrategy()), as TF 2.15 took.
TRAIN_DISTRIBUTE = os.environ.get('JOB_TRAIN_DISTRIBUTE', '')


def input_fn(examples: int = 256, repeat: bool = True, batch_size: int = BATCH_SIZE):
    def read(params=None):
        del params
        values = tf.random.stateless_uniform([examples, 2], seed=[1, 2])
        labels = tf.cast(values[:, :1] + values[:, 1:] > 1.0, tf.int32)
        dataset = tf.data.Dataset.from_tensor_slices(({'a': values[:, :1], 'b': values[:, 1:]}, labels))
        dataset = (dataset.repeat() if repeat else dataset).batch(batch_size, drop_remainder=KIND == 'tpu')

        def mark(features, label):
            tf.print('input batch', output_stream=sys.stderr)
            return features, label

        return dataset.map(mark) if repeat and MARK_BATCHES else dataset

    return read


def model_fn(features, labels, mode, params):
    del params
    net = tf.compat.v1.feature_column.input_layer(features, COLUMNS)
    kernel = tf.compat.v1.get_variable('logits/kernel', [2, 2], initializer=tf.compat.v1.glorot_uniform_initializer())
    bias = tf.compat.v1.get_variable('logits/bias', [2], initializer=tf.compat.v1.zeros_initializer())
    logits = tf.matmul(net, kernel) + bias
    predictions = {'class_ids': tf.argmax(logits, 1)}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(
            mode, predictions=predictions, export_outputs={'predict': estimator.export.PredictOutput(predictions)}
        )
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    accuracy = tf.compat.v1.metrics.accuracy(labels, predictions['class_ids'])
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={'accuracy': accuracy})


def tpu_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    return tpu.TPUEstimatorSpec(
        mode,
        loss=spec.loss,
        train_op=spec.train_op,
        predictions=spec.predictions if mode == estimator.ModeKeys.PREDICT else None,
        export_outputs=spec.export_outputs or None,
    )


def make_estimator():
    checkpoints = dict(save_checkpoints_steps=SAVE_STEPS, tf_random_seed=1, log_step_count_steps=20)
    if TRAIN_DISTRIBUTE == 'ps':
        checkpoints['train_distribute'] = tf.compat.v1.distribute.experimental.ParameterServerStrategy()
    if KIND == 'premade':
        config = estimator.RunConfig(model_dir=MODEL_DIR, **checkpoints)
        return estimator.DNNClassifier(hidden_units=[8], feature_columns=COLUMNS, config=config)
    if KIND == 'custom':
        return estimator.Estimator(model_fn, config=estimator.RunConfig(model_dir=MODEL_DIR, **checkpoints))
    config = tpu.RunConfig(model_dir=MODEL_DIR, **checkpoints)
    return tpu.TPUEstimator(
        tpu_model_fn, config=config, use_tpu=False, train_batch_size=BATCH_SIZE, eval_batch_size=BATCH_SIZE
    )


def main():
    model = make_estimator()
    serving_input_fn = estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(COLUMNS)
    )
    train_spec = estimator.TrainSpec(input_fn(), max_steps=MAX_STEPS)
    eval_spec = estimator.EvalSpec(
        input_fn(64, repeat=False),
        steps=None,
        start_delay_secs=0,
        throttle_secs=THROTTLE_SECS,
        exporters=[estimator.FinalExporter('final', serving_input_fn)],
    )
    config = model.config
    properties = {
        'task_type': config.task_type,
        'task_id': config.task_id,
        'is_chief': config.is_chief,
        'num_ps_replicas': config.num_ps_replicas,
        'num_worker_replicas': config.num_worker_replicas,
    }
    print('serving', flush=True)  # The task's configuration is read: its server binds next.
    result = estimator.train_and_evaluate(model, train_spec, eval_spec)
    print(json.dumps({'event': 'done', 'result': repr(result), **properties}), flush=True)


if __name__ == '__main__':
    main()
