"""A BERT-style `TPUEstimator` classifier with `use_tpu=False`, shaped like BERT's `run_classifier.py`, tiny.

`model_fn_builder` and `input_fn_builder` are run_classifier.py's: the `input_fn` reads `params['batch_size']`,
the `model_fn` builds a one-layer transformer encoder with `tf.compat.v1.get_variable` (Keras 2's
`tf.compat.v1.layers` fail under Keras 3), warms it from `init_checkpoint` in a `scaffold_fn` with
`tf.compat.v1.train.init_from_checkpoint`, trains with a warmed-up, decayed Adam and clipped gradients and its
own global step increment, and evaluates with `eval_metrics=(metric_fn, [...])` of `tf.compat.v1.metrics`.
The data are synthetic token ids whose label is whether token 1 occurs more often than token 2.

The program is the same under TF 2.15 (`tf.compat.v1.estimator`) and here; only the import of `estimator`
differs, as a user's would. Run as a script it trains, evaluates and predicts and prints the results as JSON
(`tests/test_estimator_tpu.py` runs it under TF 2.15 to compare).
"""

import json
import sys

import numpy as np
import tensorflow as tf

if tf.__version__.startswith(('2.15', '2.14', '2.13')):
    from tensorflow.compat.v1 import estimator  # The v1 program.
else:
    from compat_mts import estimator  # The one edit: tf.estimator -> compat_mts.estimator.
tpu = estimator.tpu

VOCAB = 12
SEQ_LENGTH = 8
HIDDEN = 16
INTERMEDIATE = 32
NUM_LABELS = 2
TRAIN_BATCH = 8
EVAL_BATCH = 4
PREDICT_BATCH = 3
SEEN_BATCH_SIZES = []  # (mode, params['batch_size'] or None) of each input_fn and model_fn call.
LOSSES = []  # (global step before the step, loss) of every training step, from `RecordLossHook`.


def synthetic_examples(count: int, seed: int):
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(1, VOCAB, size=(count, SEQ_LENGTH)).astype(np.int32)
    input_mask = np.ones_like(input_ids)
    label_ids = (np.sum(input_ids == 1, axis=1) > np.sum(input_ids == 2, axis=1)).astype(np.int32)
    return {'input_ids': input_ids, 'input_mask': input_mask, 'label_ids': label_ids}


def input_fn_builder(examples, seq_length, is_training, drop_remainder):
    """run_classifier.py's: an `input_fn(params)` reading `params['batch_size']`."""

    def input_fn(params):
        batch_size = params['batch_size']
        SEEN_BATCH_SIZES.append(('input_fn', batch_size))
        d = tf.data.Dataset.from_tensor_slices(
            {
                'input_ids': tf.constant(examples['input_ids'], shape=[len(examples['label_ids']), seq_length]),
                'input_mask': tf.constant(examples['input_mask'], shape=[len(examples['label_ids']), seq_length]),
                'label_ids': tf.constant(examples['label_ids'], shape=[len(examples['label_ids'])]),
            }
        )
        if is_training:
            d = d.repeat()
        return d.batch(batch_size=batch_size, drop_remainder=drop_remainder)

    return input_fn


def _initializer():
    return tf.compat.v1.truncated_normal_initializer(stddev=0.02)


def _dense(inputs, units, name, activation=None):
    with tf.compat.v1.variable_scope(name):
        kernel = tf.compat.v1.get_variable('kernel', [inputs.shape[-1], units], initializer=_initializer())
        bias = tf.compat.v1.get_variable('bias', [units], initializer=tf.compat.v1.zeros_initializer())
        outputs = tf.matmul(inputs, kernel) + bias
        return activation(outputs) if activation else outputs


def _layer_norm(inputs, name):
    with tf.compat.v1.variable_scope(name):
        beta = tf.compat.v1.get_variable('beta', [HIDDEN], initializer=tf.compat.v1.zeros_initializer())
        gamma = tf.compat.v1.get_variable('gamma', [HIDDEN], initializer=tf.compat.v1.ones_initializer())
        mean, variance = tf.nn.moments(inputs, axes=[-1], keepdims=True)
        return (inputs - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta


def create_model(is_training, input_ids, input_mask, labels, num_labels):
    """A one-layer, one-head BERT encoder, its pooled output and run_classifier.py's classification layer."""
    del is_training  # No dropout in the tiny config.
    with tf.compat.v1.variable_scope('bert'):
        with tf.compat.v1.variable_scope('embeddings'):
            word_embeddings = tf.compat.v1.get_variable('word_embeddings', [VOCAB, HIDDEN], initializer=_initializer())
            positions = tf.compat.v1.get_variable(
                'position_embeddings', [SEQ_LENGTH, HIDDEN], initializer=_initializer()
            )
            embedded = tf.gather(word_embeddings, input_ids) + positions[tf.newaxis]
            embedded = _layer_norm(embedded, 'LayerNorm')
        with tf.compat.v1.variable_scope('encoder/layer_0'):
            flat = tf.reshape(embedded, [-1, HIDDEN])
            with tf.compat.v1.variable_scope('attention/self'):
                query = tf.reshape(_dense(flat, HIDDEN, 'query'), [-1, SEQ_LENGTH, HIDDEN])
                key = tf.reshape(_dense(flat, HIDDEN, 'key'), [-1, SEQ_LENGTH, HIDDEN])
                value = tf.reshape(_dense(flat, HIDDEN, 'value'), [-1, SEQ_LENGTH, HIDDEN])
                scores = tf.matmul(query, key, transpose_b=True) / np.sqrt(float(HIDDEN))
                mask = tf.cast(input_mask[:, tf.newaxis, :], tf.float32)
                scores += (1.0 - mask) * -10000.0
                context = tf.reshape(tf.matmul(tf.nn.softmax(scores), value), [-1, HIDDEN])
            attention = _layer_norm(
                _dense(context, HIDDEN, 'attention/output/dense') + flat, 'attention/output/LayerNorm'
            )
            intermediate = _dense(attention, INTERMEDIATE, 'intermediate/dense', activation=tf.nn.relu)
            layer = _layer_norm(_dense(intermediate, HIDDEN, 'output/dense') + attention, 'output/LayerNorm')
            sequence_output = tf.reshape(layer, [-1, SEQ_LENGTH, HIDDEN])
        with tf.compat.v1.variable_scope('pooler'):
            pooled_output = _dense(sequence_output[:, 0, :], HIDDEN, 'dense', activation=tf.tanh)

    output_weights = tf.compat.v1.get_variable('output_weights', [num_labels, HIDDEN], initializer=_initializer())
    output_bias = tf.compat.v1.get_variable('output_bias', [num_labels], initializer=tf.compat.v1.zeros_initializer())
    with tf.compat.v1.variable_scope('loss'):
        logits = tf.nn.bias_add(tf.matmul(pooled_output, output_weights, transpose_b=True), output_bias)
        probabilities = tf.nn.softmax(logits, axis=-1)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
        per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        loss = tf.reduce_mean(per_example_loss)
        return loss, per_example_loss, logits, probabilities


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
    """BERT's `modeling.get_assignment_map_from_checkpoint`: each variable of the checkpoint the graph also has."""
    names = {variable.name.split(':')[0] for variable in tvars}
    assignment_map = {name: name for name, _ in tf.train.list_variables(init_checkpoint) if name in names}
    return assignment_map, {name + ':0' for name in assignment_map}


def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps):
    """BERT's `optimization.create_optimizer`, with v1's Adam: linear warm-up and decay, clipping, own step."""
    global_step = tf.compat.v1.train.get_or_create_global_step()
    learning_rate = tf.compat.v1.train.polynomial_decay(
        tf.constant(init_lr, shape=[], dtype=tf.float32), global_step, num_train_steps, end_learning_rate=0.0, power=1.0
    )
    if num_warmup_steps:
        global_steps_float = tf.cast(tf.cast(global_step, tf.int32), tf.float32)
        warmup_learning_rate = init_lr * global_steps_float / float(num_warmup_steps)
        is_warmup = tf.cast(global_steps_float < float(num_warmup_steps), tf.float32)
        learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=learning_rate, epsilon=1e-6)
    tvars = tf.compat.v1.trainable_variables()
    grads = tf.gradients(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    train_op = optimizer.apply_gradients(zip(grads, tvars))
    new_global_step = global_step + 1
    return tf.group(train_op, [global_step.assign(new_global_step)])


class RecordLossHook(tf.compat.v1.train.SessionRunHook):
    """A user's v1 hook: records `(global step before the step, loss)` of every step in `LOSSES`."""

    def __init__(self, loss):
        self._loss = loss

    def begin(self):
        self._fetches = {'loss': self._loss, 'step': tf.compat.v1.train.get_global_step()}

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        LOSSES.append((int(run_values.results['step']), float(run_values.results['loss'])))


def model_fn_builder(num_labels, init_checkpoint, learning_rate, num_train_steps, num_warmup_steps, use_tpu):
    """run_classifier.py's: a `model_fn` returning a `TPUEstimatorSpec` for each mode."""

    def model_fn(features, labels, mode, params):
        SEEN_BATCH_SIZES.append((mode, params.get('batch_size')))
        input_ids = features['input_ids']
        input_mask = features['input_mask']
        label_ids = features['label_ids'] if mode != estimator.ModeKeys.PREDICT else None
        is_training = mode == estimator.ModeKeys.TRAIN
        if label_ids is None:
            label_ids = tf.zeros([tf.shape(input_ids)[0]], dtype=tf.int32)
        total_loss, per_example_loss, logits, probabilities = create_model(
            is_training, input_ids, input_mask, label_ids, num_labels
        )

        tvars = tf.compat.v1.trainable_variables()
        scaffold_fn = None
        if init_checkpoint:
            assignment_map, _ = get_assignment_map_from_checkpoint(tvars, init_checkpoint)

            def tpu_scaffold():
                tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
                return tf.compat.v1.train.Scaffold()

            scaffold_fn = tpu_scaffold

        if mode == estimator.ModeKeys.TRAIN:
            train_op = create_optimizer(total_loss, learning_rate, num_train_steps, num_warmup_steps)
            return tpu.TPUEstimatorSpec(
                mode=mode,
                loss=total_loss,
                train_op=train_op,
                scaffold_fn=scaffold_fn,
                training_hooks=[RecordLossHook(total_loss)],
            )
        if mode == estimator.ModeKeys.EVAL:

            def metric_fn(per_example_loss, label_ids, logits):
                predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
                accuracy = tf.compat.v1.metrics.accuracy(labels=label_ids, predictions=predictions)
                loss = tf.compat.v1.metrics.mean(values=per_example_loss)
                return {'eval_accuracy': accuracy, 'eval_loss': loss}

            return tpu.TPUEstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(metric_fn, [per_example_loss, label_ids, logits]),
                scaffold_fn=scaffold_fn,
            )
        return tpu.TPUEstimatorSpec(mode=mode, predictions={'probabilities': probabilities}, scaffold_fn=scaffold_fn)

    return model_fn


def build_estimator(
    model_dir, init_checkpoint=None, num_train_steps=6, use_tpu=False, save_checkpoints_steps=3, iterations_per_loop=2
):
    """run_classifier.py's `main`: the `RunConfig`, the `TPUConfig` and the `TPUEstimator`."""
    run_config = tpu.RunConfig(
        cluster=None,
        master=None,
        model_dir=model_dir,
        save_checkpoints_steps=save_checkpoints_steps,
        tf_random_seed=11,
        tpu_config=tpu.TPUConfig(
            iterations_per_loop=iterations_per_loop, num_shards=8, per_host_input_for_training=True
        ),
    )
    model_fn = model_fn_builder(
        num_labels=NUM_LABELS,
        init_checkpoint=init_checkpoint,
        learning_rate=5e-3,
        num_train_steps=num_train_steps,
        num_warmup_steps=2,
        use_tpu=use_tpu,
    )
    return tpu.TPUEstimator(
        use_tpu=use_tpu,
        model_fn=model_fn,
        config=run_config,
        train_batch_size=TRAIN_BATCH,
        eval_batch_size=EVAL_BATCH,
        predict_batch_size=PREDICT_BATCH,
    )


def run(model_dir, init_checkpoint=None, num_train_steps=6):
    """Trains `num_train_steps`, evaluates and predicts; returns the losses, metrics and probabilities."""
    del LOSSES[:]
    estimator = build_estimator(model_dir, init_checkpoint, num_train_steps)
    train = input_fn_builder(synthetic_examples(64, seed=1), SEQ_LENGTH, is_training=True, drop_remainder=True)
    estimator.train(input_fn=train, max_steps=num_train_steps)
    evaluation = input_fn_builder(synthetic_examples(12, seed=2), SEQ_LENGTH, is_training=False, drop_remainder=True)
    metrics = estimator.evaluate(input_fn=evaluation, steps=None)
    prediction = input_fn_builder(synthetic_examples(7, seed=3), SEQ_LENGTH, is_training=False, drop_remainder=False)
    probabilities = [result['probabilities'].tolist() for result in estimator.predict(input_fn=prediction)]
    return {
        'losses': list(LOSSES),
        'metrics': {key: float(value) for key, value in metrics.items()},
        'probabilities': probabilities,
        'batch_sizes': list(SEEN_BATCH_SIZES),
        'variables': sorted(estimator.get_variable_names()),
    }


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print(json.dumps(run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
