"""A tensorflow/models `samples/cookbook/regression/dnn_regression.py`-shaped premade-Estimator program, as
written for TensorFlow 1.x, on synthetic data: the input for `compat-mts upgrade --verify`.

As in that sample: numeric feature columns of an automobile table, a `tf.estimator.DNNRegressor(hidden_units=[20,
20])` trained with `train(input_fn, steps=...)` on a shuffled, repeated `tf.data` input and evaluated, its
average loss printed as the RMS error in thousands of dollars. The premade Estimator trains through its Keras
optimizer's `get_updates` (`tf.gradients`, then `apply_gradients`).

`python dnn_regression.py MODEL_DIR TRAIN_STEPS` (TensorFlow <= 2.15 with `tf.estimator`, or TensorFlow 1.x).
"""

import sys

import numpy as np
import tensorflow as tf

PRICE_NORM_FACTOR = 1000
FEATURES = ('curb-weight', 'highway-mpg', 'engine-size')


def automobile_data(size=160):
    """Three numeric columns and a price that depends on them, with noise (the sample's imports-85 table)."""
    rng = np.random.RandomState(0)
    columns = {name: rng.uniform(0.5, 1.5, size=size).astype(np.float32) for name in FEATURES}
    price = 10 * columns['curb-weight'] - 4 * columns['highway-mpg'] + 6 * columns['engine-size']
    price = price + 0.1 * rng.normal(size=size)
    return columns, (price * PRICE_NORM_FACTOR).astype(np.float32)


def main(model_dir, train_steps):
    features, price = automobile_data()
    labels = price / PRICE_NORM_FACTOR

    def input_train():
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        return dataset.shuffle(1000, seed=1).batch(32).repeat()

    def input_test():
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(64)

    feature_columns = [tf.feature_column.numeric_column(key=name) for name in FEATURES]
    model = tf.estimator.DNNRegressor(
        hidden_units=[20, 20],
        feature_columns=feature_columns,
        model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=42, save_checkpoints_steps=10))
    model.train(input_fn=input_train, steps=train_steps)
    eval_result = model.evaluate(input_fn=input_test)
    average_loss = eval_result['average_loss']
    print('\nRMS error for the test set: ${:.0f}'.format(PRICE_NORM_FACTOR * average_loss ** 0.5))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
