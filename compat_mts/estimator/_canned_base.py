"""What the premade Estimators share: the checks of their arguments and the head -> model_fn -> Estimator glue.

A premade Estimator (`dnn`, `linear`, `dnn_linear_combined`, `baseline`) is a head and one or two towers: each
tower builds its logits from the features as v1 graph code (the DNN under `dnn`, the linear model under
`linear`, the bias under `baseline`) and is trained by its own optimizer. `model_fn` sums the towers' logits and
hands them to the head with a train op function that applies each tower's optimizer to its variables; the first
tower's optimizer counts the global step, as in TF 2.15. So the checkpoint variables (optimizer slots included)
have TF 2.15's names and shapes, and a `model_dir` written by TF 2.15's premade Estimator resumes here, and the
other way round.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import program as program_lib
from compat_mts.estimator import _optimizers
from compat_mts.estimator import head as head_lib

SUM_OVER_BATCH_SIZE = 'sum_over_batch_size'


@functools.cache
def _column_bases() -> tuple[type, type]:
    """`tf.feature_column`'s `FeatureColumn` and `DenseColumn`, found from a public column's type, not imported.

    Made on first use: making a column logs TensorFlow's deprecation warning, which `import compat_mts.estimator`
    must not print.
    """
    with tf_internals.deprecations_silenced():  # The program's own first call is warned about, as in TF 2.15.
        bases = type(tf.feature_column.numeric_column('x')).__mro__
    return tuple(next(base for base in bases if base.__name__ == name) for name in ('FeatureColumn', 'DenseColumn'))


program_lib.PROGRAM.register(
    'estimator.column_bases',
    "tf.feature_column's two base classes, found once (TensorFlow's types, not a program's)",
    size=lambda: _column_bases.cache_info().currsize,
    kind='process',
)


_V1_COLUMN_ERROR = (  # TF 2.15's words.
    'Received a feature column from TensorFlow v1, but this is a TensorFlow v2 Estimator. Please either use v2 '
    'feature columns (accessible via tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 '
    'Estimator for use with v1 feature columns (accessible via tf.compat.v1.estimator.* and '
    'tf.compat.v1.feature_column.*, respectively.'
)


def _is_v1_column(column) -> bool:
    """Whether `column` is one of v1's `_FeatureColumn`s only (`shared_embedding_columns` in a graph)."""
    return any(base.__name__ == '_FeatureColumn' for base in type(column).__mro__)


def check_feature_columns(argument: str, feature_columns, dense: bool) -> list:
    """The columns as a list; a clear ValueError naming `argument` for anything else."""
    feature_column_type, dense_column_type = _column_bases()
    if isinstance(feature_columns, feature_column_type):
        feature_columns = [feature_columns]
    if feature_columns is None or isinstance(feature_columns, (str, bytes, dict)):
        raise ValueError(f'`{argument}` must be an iterable of `tf.feature_column` columns; got {feature_columns!r}.')
    try:
        feature_columns = list(feature_columns)
    except TypeError:
        raise ValueError(
            f'`{argument}` must be an iterable of `tf.feature_column` columns; got {feature_columns!r}.'
        ) from None
    if not feature_columns:
        raise ValueError(f'`{argument}` must hold at least one `tf.feature_column` column; got an empty list.')
    for column in feature_columns:
        if not isinstance(column, feature_column_type) and _is_v1_column(column):
            raise ValueError(_V1_COLUMN_ERROR)
        if not isinstance(column, feature_column_type):
            raise ValueError(
                f'`{argument}` must hold `tf.feature_column` columns (numeric_column, bucketized_column, ...); '
                f'got {column!r} of type {type(column).__name__}.'
            )
        if dense and not isinstance(column, dense_column_type):
            raise ValueError(
                f'`{argument}` of a DNN must hold dense columns; {column.name!r} is categorical. Wrap it in '
                'tf.feature_column.embedding_column or tf.feature_column.indicator_column.'
            )
    return feature_columns


def quiet(model_fn: Callable) -> Callable:
    """`model_fn` printing no deprecation warning of the v1 APIs it is built on (`input_layer`, `linear_model`,
    `tf.compat.v1.metrics`): TF 2.15 printed none for them either; a program sees those of its own calls."""

    def quiet_model_fn(features, labels, mode, config):
        with tf_internals.deprecations_silenced():
            return model_fn(features, labels, mode, config)

    return quiet_model_fn


def classification_head(n_classes, weight_column, label_vocabulary, loss_reduction) -> head_lib.Head:
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f'`n_classes` must be an integer >= 2 (2 for a binary classifier); got {n_classes!r}.')
    if label_vocabulary is not None:
        if not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(
                'label_vocabulary should be a list or a tuple. Given type: {}'.format(type(label_vocabulary))
            )
        if len(label_vocabulary) != n_classes or len(set(label_vocabulary)) != n_classes:
            raise ValueError(
                f'`label_vocabulary` must hold `n_classes` ({n_classes}) distinct strings; got {label_vocabulary!r}.'
            )
    if n_classes == 2:
        return head_lib.BinaryClassHead(weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    return head_lib.MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def regression_head(label_dimension, weight_column, loss_reduction) -> head_lib.RegressionHead:
    if isinstance(label_dimension, bool) or not isinstance(label_dimension, int) or label_dimension < 1:
        raise ValueError(f'`label_dimension` must be a positive integer; got {label_dimension!r}.')
    return head_lib.RegressionHead(label_dimension, weight_column, loss_reduction)


def check_features(features) -> dict:
    if not isinstance(features, dict):
        raise ValueError('features should be a dictionary of `Tensor`s. Given type: {}'.format(type(features)))
    return features


def _check_column_keys(features: dict, feature_columns) -> None:
    """Raises TF 2.15's ValueError, naming also the keys the input_fn yields and the column, for a missing key."""
    for column in feature_columns or ():
        for key in tf.compat.v1.feature_column.make_parse_example_spec([column]):
            if key not in features:
                raise ValueError(
                    f'Feature {key} is not in features dictionary. The input_fn yields the features '
                    f'{sorted(features)}; the feature column {column.name!r} ({type(column).__name__}) reads '
                    f'{key!r}.'
                )


def root_summaries(logits, tag: str) -> None:
    """TF 2.15's per-layer summaries: `<tag>/fraction_of_zero_values` and the `<tag>/activation` histogram."""
    with tf.compat.v1.get_default_graph().name_scope(None):
        tf.compat.v1.summary.scalar(f'{tag}/fraction_of_zero_values', tf.math.zero_fraction(logits))
        tf.compat.v1.summary.histogram(f'{tag}/activation', logits)


@dataclasses.dataclass(frozen=True)
class Tower:
    """One part of a premade model: what builds its logits, and the optimizer that trains it.

    Attributes:
      build: `build(features, mode, units)` returns the logits (`units` per example), the variables the
        optimizer trains and the update ops to run with it (batch normalization's moving averages).
      optimizer: what `_optimizers.apply_gradients` takes (a name, an optimizer, a callable).
      learning_rate: the learning rate of an optimizer given by name; None for that optimizer's default.
      feature_columns: the columns whose keys the features must hold.
    """

    build: Callable[[dict, str, int], tuple]
    optimizer: Any
    learning_rate: float | None = None
    feature_columns: tuple = ()


def model_fn(head, towers: list[Tower]) -> Callable:
    """The `model_fn` of a premade Estimator: the towers' logits summed, then `head`'s spec of the mode.

    The first tower's optimizer counts the global step; another one counts its own steps
    (`training/Ftrl/iter` beside a DNN), as in TF 2.15.
    """

    def premade_model_fn(features, labels, mode, config):
        del config  # Unused, as in TF 2.15.
        features = check_features(features)
        for tower in towers:
            _check_column_keys(features, tower.feature_columns)
        built = [tower.build(features, mode, head.logits_dimension) for tower in towers]
        logits = built[0][0]
        for tower_logits, _, _ in built[1:]:
            logits = logits + tower_logits

        def train_op_fn(loss):
            global_step = tf.compat.v1.train.get_global_step()
            loss = _optimizers.scaled_for_replicas(loss, head.loss_reduction)
            train_ops = []  # In TF 2.15's `training` scope, which the head opened.
            for index, (tower, (_, variables, update_ops)) in enumerate(zip(towers, built)):
                step = global_step if index == 0 else None
                train_ops.append(
                    _optimizers.apply_gradients(tower.optimizer, tower.learning_rate, loss, variables, step)
                )
                train_ops.extend(update_ops)
            return tf.group(*train_ops)

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn=train_op_fn)

    return quiet(premade_model_fn)
