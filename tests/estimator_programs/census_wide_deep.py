"""A census-style wide & deep `DNNLinearCombinedClassifier` program, as TF <= 2.15 wrote it, on synthetic data.

The shape of tensorflow/models' `official/r1/wide_deep` census model: the wide part has categorical columns
(vocabulary list, hash bucket), a bucketized column and crossed columns; the deep part numeric, indicator and
embedding columns. The data are synthetic census-like rows, not shuffled, so two runs see the same batches.
`estimator` is `tf.estimator` under TF 2.15, `compat_mts.estimator` here.
"""

import numpy as np
import tensorflow as tf

EDUCATION = ['Bachelors', 'HS-grad', 'Masters', 'Doctorate', 'Some-college']
RELATIONSHIP = ['Husband', 'Wife', 'Own-child', 'Unmarried']
OCCUPATIONS = ['Tech-support', 'Craft-repair', 'Sales', 'Exec-managerial', 'Prof-specialty', 'Farming-fishing']
BATCH_SIZE = 40


def load_data(count, seed):
    rng = np.random.default_rng(seed)
    features = {
        'age': rng.integers(17, 90, count).astype(np.float32),
        'hours_per_week': rng.normal(40, 10, count).astype(np.float32),
        'education': rng.choice(EDUCATION, count),
        'relationship': rng.choice(RELATIONSHIP, count),
        'occupation': rng.choice(OCCUPATIONS, count),
    }
    score = (features['age'] - 40) / 15 + (features['hours_per_week'] - 40) / 10
    score += np.isin(features['education'], ['Masters', 'Doctorate']) * 1.5
    labels = (score + rng.normal(size=count) > 0.5).astype(np.int64)
    return features, labels


def build_model_columns():
    age = tf.feature_column.numeric_column('age')
    hours_per_week = tf.feature_column.numeric_column('hours_per_week')
    education = tf.feature_column.categorical_column_with_vocabulary_list('education', EDUCATION)
    relationship = tf.feature_column.categorical_column_with_vocabulary_list('relationship', RELATIONSHIP)
    occupation = tf.feature_column.categorical_column_with_hash_bucket('occupation', hash_bucket_size=50)
    age_buckets = tf.feature_column.bucketized_column(age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55, 60, 65])
    base_columns = [education, relationship, occupation, age_buckets]
    crossed_columns = [
        tf.feature_column.crossed_column(['education', 'occupation'], hash_bucket_size=100),
        tf.feature_column.crossed_column([age_buckets, 'education', 'occupation'], hash_bucket_size=100),
    ]
    wide_columns = base_columns + crossed_columns
    deep_columns = [
        age,
        hours_per_week,
        tf.feature_column.indicator_column(education),
        tf.feature_column.indicator_column(relationship),
        tf.feature_column.embedding_column(occupation, dimension=8),
    ]
    return wide_columns, deep_columns


def input_fn(features, labels, repeat):
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    return (dataset.repeat() if repeat else dataset).batch(BATCH_SIZE)


def make_estimator(estimator, model_dir, config=None):
    wide_columns, deep_columns = build_model_columns()
    return estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir,
        linear_feature_columns=wide_columns,
        dnn_feature_columns=deep_columns,
        dnn_hidden_units=[100, 75, 50, 25],
        config=config,
    )


def train(model, steps):
    features, labels = load_data(400, seed=1)
    model.train(input_fn=lambda: input_fn(features, labels, repeat=True), steps=steps)


def evaluate(model):
    features, labels = load_data(200, seed=2)
    return model.evaluate(input_fn=lambda: input_fn(features, labels, repeat=False))


def predict(model):
    features, _ = load_data(5, seed=3)
    return list(model.predict(input_fn=lambda: tf.data.Dataset.from_tensor_slices(features).batch(BATCH_SIZE)))


def main(estimator, model_dir, train_steps=200):
    model = make_estimator(estimator, model_dir)
    train(model, train_steps)
    results = evaluate(model)
    for key in sorted(results):
        print('%s: %s' % (key, results[key]))
    return results
