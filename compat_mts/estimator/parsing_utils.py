"""`classifier_parse_example_spec` and `regressor_parse_example_spec`: v1's `tf.io.parse_example` specs.

The feature columns' spec (`tf.compat.v1.feature_column.make_parse_example_spec`, which takes v1 and v2
columns) with the label's and the weight's, as v1's premade Estimators read them from `tf.Example`s.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ['classifier_parse_example_spec', 'regressor_parse_example_spec']


def _add_label_and_weight(parsing_spec: dict, label_key: str, label_spec, weight_column) -> dict:
    if label_key in parsing_spec:
        raise ValueError(
            'label should not be used as feature. label_key: {}, features: {}'.format(label_key, parsing_spec.keys())
        )
    parsing_spec[label_key] = label_spec
    if weight_column is None:
        return parsing_spec
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column)
    # The class of `tf.feature_column.numeric_column`, from a column made here: made at import, it would log
    # TensorFlow's deprecation warning on `import compat_mts.estimator`.
    if not isinstance(weight_column, type(tf.feature_column.numeric_column('_'))):
        raise ValueError(
            'weight_column should be an instance of tf.feature_column.numeric_column. Given type: {} value: {}'.format(
                type(weight_column), weight_column
            )
        )
    if weight_column.key in parsing_spec:
        raise ValueError(
            'weight_column should not be used as feature. weight_column: {}, features: {}'.format(
                weight_column.key, parsing_spec.keys()
            )
        )
    parsing_spec.update(weight_column.parse_example_spec)
    return parsing_spec


def classifier_parse_example_spec(
    feature_columns, label_key: str, label_dtype=tf.int64, label_default=None, weight_column=None
) -> dict:
    """The `tf.io.parse_example` spec of a classifier's features, label and weight (v1's).

    Example:

    ```python
    spec = compat_mts.estimator.classifier_parse_example_spec(
        [tf.feature_column.numeric_column('age')], label_key='label', label_dtype=tf.string)
    # {'age': FixedLenFeature((1,), tf.float32), 'label': FixedLenFeature((1,), tf.string)}
    ```

    Args:
      feature_columns: the model's feature columns.
      label_key: the label's key in the `tf.Example`s.
      label_dtype: the label's dtype (`tf.int64` class ids, or `tf.string` with a `label_vocabulary`).
      label_default: the label's default when an example lacks it; None: required.
      weight_column: the weight's key or `tf.feature_column.numeric_column`, or None.

    Returns:
      A dict of keys to `tf.io.FixedLenFeature` or `tf.io.VarLenFeature`; the label is `FixedLenFeature((1,))`.

    Raises:
      ValueError: the label or the weight is also a feature, or `weight_column` is not a numeric column
        (v1's messages).
    """
    parsing_spec = tf.compat.v1.feature_column.make_parse_example_spec(feature_columns)
    label_spec = tf.io.FixedLenFeature((1,), label_dtype, label_default)
    return _add_label_and_weight(parsing_spec, label_key, label_spec, weight_column)


def regressor_parse_example_spec(
    feature_columns, label_key: str, label_dtype=tf.float32, label_default=None, label_dimension=1, weight_column=None
) -> dict:
    """The `tf.io.parse_example` spec of a regressor's features, label and weight (v1's).

    Args:
      feature_columns: the model's feature columns.
      label_key: the label's key in the `tf.Example`s.
      label_dtype: the label's dtype.
      label_default: the label's default when an example lacks it; None: required.
      label_dimension: the label's length (`FixedLenFeature((label_dimension,))`).
      weight_column: the weight's key or `tf.feature_column.numeric_column`, or None.

    Returns:
      A dict of keys to `tf.io.FixedLenFeature` or `tf.io.VarLenFeature`.

    Raises:
      ValueError: the label or the weight is also a feature, or `weight_column` is not a numeric column
        (v1's messages).
    """
    parsing_spec = tf.compat.v1.feature_column.make_parse_example_spec(feature_columns)
    label_spec = tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default)
    return _add_label_and_weight(parsing_spec, label_key, label_spec, weight_column)
