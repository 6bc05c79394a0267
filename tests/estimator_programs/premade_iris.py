"""tensorflow/models' `premade_estimator.py` (iris, `DNNClassifier`), as a TF <= 2.15 program, on synthetic data.

The program of the TensorFlow guide "Premade Estimators": four numeric feature columns, `hidden_units=[10, 10]`,
`n_classes=3`, train, evaluate, predict. Only the data differ (synthetic, iris-shaped, so no download) and the
training input is not shuffled, so that two runs see the same batches. `estimator` is the module the program
imports: `tf.estimator` under TF 2.15, `compat_mts.estimator` here.
"""

import numpy as np
import tensorflow as tf

CSV_COLUMN_NAMES = ['SepalLength', 'SepalWidth', 'PetalLength', 'PetalWidth', 'Species']
SPECIES = ['Setosa', 'Versicolor', 'Virginica']
BATCH_SIZE = 100


def load_data(seed=0):
    """Iris-shaped synthetic data: `(train_x, train_y), (test_x, test_y)`, features as dicts of columns."""
    rng = np.random.default_rng(seed)
    centers = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]], np.float32)

    def split(count):
        labels = rng.integers(0, 3, size=count)
        features = centers[labels] + rng.normal(scale=0.4, size=(count, 4)).astype(np.float32)
        return {name: features[:, i].astype(np.float32) for i, name in enumerate(CSV_COLUMN_NAMES[:4])}, labels

    return split(120), split(30)


def train_input_fn(features, labels, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    return dataset.repeat().batch(batch_size)


def eval_input_fn(features, labels, batch_size):
    inputs = dict(features) if labels is None else (dict(features), labels)
    return tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)


def make_estimator(estimator, model_dir, config=None):
    (train_x, _), _ = load_data()
    my_feature_columns = [tf.feature_column.numeric_column(key=key) for key in train_x.keys()]
    return estimator.DNNClassifier(
        feature_columns=my_feature_columns, hidden_units=[10, 10], n_classes=3, model_dir=model_dir, config=config
    )


def train(classifier, steps):
    (train_x, train_y), _ = load_data()
    classifier.train(input_fn=lambda: train_input_fn(train_x, train_y, BATCH_SIZE), steps=steps)


def evaluate(classifier):
    _, (test_x, test_y) = load_data()
    return classifier.evaluate(input_fn=lambda: eval_input_fn(test_x, test_y, BATCH_SIZE))


def predict(classifier):
    _, (test_x, _) = load_data()
    predict_x = {key: values[:3] for key, values in test_x.items()}
    return list(classifier.predict(input_fn=lambda: eval_input_fn(predict_x, labels=None, batch_size=BATCH_SIZE)))


def main(estimator, model_dir, train_steps=1000):
    """The program's `main`: train, evaluate, then print the predictions, as premade_estimator.py does."""
    classifier = make_estimator(estimator, model_dir)
    train(classifier, train_steps)
    eval_result = evaluate(classifier)
    print('\nTest set accuracy: {accuracy:0.3f}\n'.format(**eval_result))
    for prediction in predict(classifier):
        class_id = prediction['class_ids'][0]
        probability = prediction['probabilities'][class_id]
        print('Prediction is "{}" ({:.1f}%)'.format(SPECIES[class_id], 100 * probability))
    return eval_result
