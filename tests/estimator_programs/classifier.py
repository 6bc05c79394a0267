"""A custom-`model_fn` Estimator classifier, as a TF <= 2.15 program wrote it, on synthetic data.

The graph code is the same on both sides of `tests/test_estimator_v1.py`: the real v1 graph mode
(`v1_estimator.py`, which runs it the way v1's Estimator did) and `compat_mts.estimator`. Dense layers are
written with `tf.compat.v1.get_variable` and `tf.matmul`, because Keras 2's `tf.compat.v1.layers` fail under
Keras 3. The hooks are v1's own (`tf.compat.v1.train.LoggingTensorHook`) and a user hook that records the
loss of every step in `LOSSES`.
"""

import numpy as np
import tensorflow as tf

FEATURES = 4
CLASSES = 3
HIDDEN = 16
SEED = 7
TRAIN_BATCH = 32
EVAL_BATCH = 50
LOSSES = []  # (global step before the step, loss) of every training step, from `RecordLossHook`.


def _data(count: int, seed: int):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.0, size=(CLASSES, FEATURES))
    labels = rng.integers(0, CLASSES, size=count)
    features = centers[labels] + rng.normal(size=(count, FEATURES))
    return features.astype(np.float32), labels.astype(np.int32)


def train_input_fn():
    features, labels = _data(256, seed=1)
    dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, labels))
    return dataset.shuffle(256, seed=3).repeat().batch(TRAIN_BATCH)


def eval_input_fn():
    features, labels = _data(150, seed=2)
    return tf.data.Dataset.from_tensor_slices(({'x': features}, labels)).batch(EVAL_BATCH)


def predict_input_fn():
    features, _ = _data(10, seed=4)
    return tf.data.Dataset.from_tensor_slices({'x': features}).batch(4)


def _dense(inputs, units, name, activation=None):
    with tf.compat.v1.variable_scope(name):
        kernel = tf.compat.v1.get_variable(
            'kernel', [inputs.shape[-1], units], initializer=tf.compat.v1.glorot_uniform_initializer()
        )
        bias = tf.compat.v1.get_variable('bias', [units], initializer=tf.compat.v1.zeros_initializer())
        outputs = tf.matmul(inputs, kernel) + bias
        return activation(outputs) if activation else outputs


class RecordLossHook(tf.compat.v1.train.SessionRunHook):
    """A user's v1 hook: records `(global step before the step, loss)` of every step."""

    def __init__(self, loss, global_step):
        self._fetches = {'loss': loss, 'step': global_step}

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        LOSSES.append((int(run_values.results['step']), float(run_values.results['loss'])))


def make_model_fn(estimator):
    """The program's `model_fn`, written against `estimator`: `tf.estimator` before, `compat_mts.estimator` now.

    (The v1 side of the tests has no `tf.estimator` in TF 2.21; `v1_estimator` stands in for its
    `EstimatorSpec` and `ModeKeys`.)
    """

    def model_fn(features, labels, mode, params):
        hidden = _dense(features['x'], params['hidden'], 'hidden', activation=tf.nn.relu)
        logits = _dense(hidden, CLASSES, 'logits')
        class_ids = tf.argmax(logits, axis=1)
        predictions = {'class_ids': class_ids, 'probabilities': tf.nn.softmax(logits)}
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=class_ids, name='acc_op')
        tf.compat.v1.summary.scalar('accuracy', accuracy[1])
        tf.compat.v1.summary.histogram('hidden_kernel', tf.compat.v1.trainable_variables()[0])
        if mode == estimator.ModeKeys.EVAL:
            max_probability = tf.reduce_max(predictions['probabilities'], axis=1)
            metrics = {'accuracy': accuracy, 'mean_max_probability': tf.compat.v1.metrics.mean(max_probability)}
            return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
        global_step = tf.compat.v1.train.get_global_step()
        optimizer = tf.compat.v1.train.AdamOptimizer(params['learning_rate'])
        train_op = optimizer.minimize(loss, global_step=global_step)
        hooks = [
            tf.compat.v1.train.LoggingTensorHook({'accuracy': accuracy[1], 'loss': loss}, every_n_iter=10),
            RecordLossHook(loss, global_step),
        ]
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)

    return model_fn


PARAMS = {'hidden': HIDDEN, 'learning_rate': 0.05}
RUN_CONFIG = {
    'tf_random_seed': SEED,
    'save_checkpoints_steps': 20,
    'save_summary_steps': 10,
    'log_step_count_steps': 20,
}


def main(estimator, model_dir, max_steps, evaluate_after_save=True):
    """The program as a user wrote it against `tf.estimator`; `estimator` is `compat_mts.estimator` now.

    Trains to `max_steps`, with `train_and_evaluate` (evaluating after every checkpoint) when
    `evaluate_after_save`, else with `Estimator.train`. Returns the losses `RecordLossHook` saw and what
    `train_and_evaluate` returned.
    """
    LOSSES.clear()
    config = estimator.RunConfig(model_dir=model_dir, **RUN_CONFIG)
    model = estimator.Estimator(make_model_fn(estimator), config=config, params=PARAMS)
    if evaluate_after_save:
        train_spec = estimator.TrainSpec(train_input_fn, max_steps=max_steps)
        eval_spec = estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0)
        metrics, export_results = estimator.train_and_evaluate(model, train_spec, eval_spec)
    else:
        model.train(train_input_fn, max_steps=max_steps)
        metrics, export_results = None, None
    return {
        'steps': [step for step, _ in LOSSES],
        'losses': [loss for _, loss in LOSSES],
        'metrics': metrics,
        'export_results': export_results,
    }
