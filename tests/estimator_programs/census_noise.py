"""A census-shaped wide & deep program, for what it prints: run under TF 2.15's `tf.estimator` or compat_mts's.

`tests/test_estimator_fidelity.py` runs it in a TF 2.15 child and in a program of compat_mts and compares the
deprecation warnings each printed (the lines `From <file>:<line>: ...`): the program's own calls are warned
about on both sides; compat_mts's own calls into v1 APIs are not.
"""

import sys

import numpy as np
import tensorflow as tf

if tf.__version__.startswith('2.15'):
    estimator = tf.estimator
else:
    import compat_mts.estimator as estimator


def input_fn():
    features = {'age': np.array([[30.0], [50.0], [40.0]], np.float32), 'job': np.array([['a'], ['b'], ['a']])}
    return tf.data.Dataset.from_tensor_slices((features, np.array([['<=50K'], ['>50K'], ['>50K']]))).batch(3).map(
        lambda features, income: (features, tf.equal(income, '>50K'))
    )


age = tf.feature_column.numeric_column('age')
job = tf.feature_column.categorical_column_with_vocabulary_list('job', ['a', 'b'])
model = estimator.DNNLinearCombinedClassifier(
    model_dir=sys.argv[1],
    linear_feature_columns=[age, job],
    dnn_feature_columns=[age, tf.feature_column.indicator_column(job)],
    dnn_hidden_units=[2],
)
model.train(input_fn, steps=2)
model.evaluate(input_fn)
print('predictions:', len(list(model.predict(input_fn))))
