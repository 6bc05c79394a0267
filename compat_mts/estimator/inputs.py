"""`compat_mts.estimator.inputs`: v1's `tf.compat.v1.estimator.inputs`, input functions of NumPy arrays and DataFrames.

`numpy_input_fn` and `pandas_input_fn` return an `input_fn` that v1 built on queues and queue runners, which
TensorFlow 2 cannot run eagerly. Here the same rows come from a `tf.data` pipeline read through a one-shot
iterator, so the `input_fn` works wherever v1's did: as any Estimator's `input_fn` (`train`, `evaluate`,
`predict`, `train_and_evaluate`), and in v1 graph code run by `compat_mts.MonitoredTrainingSession` (inside
`with tf.Graph().as_default():` or a `compat_mts.wrap_graph` build function). What is kept of v1:

- the rows are read epoch after epoch without a break, so a batch may hold the end of one epoch and the start
  of the next, and the last batch holds what is left: `num_epochs * len(x)` rows in all, then
  `OutOfRangeError`, which ends an Estimator's `train`, `evaluate` or `predict` (with `num_epochs=None` the
  rows repeat forever and every batch, statically too, has `batch_size` rows, as v1's `dequeue_many`);
- `shuffle=False` yields the rows in order, the values v1 yielded; `shuffle` must be given as a bool;
- `num_threads` reader threads each read `num_epochs` epochs in v1, so `num_threads * num_epochs` epochs are
  read here too (with v1's warnings);
- features are a dict of the columns (a lone array is returned as one tensor), targets a tensor or a dict of the
  target columns; the dtypes are the arrays'; v1's errors for bad arrays, keys and lengths.

What differs: `shuffle=True` mixes the rows in a `tf.data` shuffle buffer of `queue_capacity` rows, seeded by
the graph's seed (`RunConfig(tf_random_seed=...)`), where v1 dequeued at random from a `RandomShuffleQueue` of
that capacity that reader threads filled from a random starting row (an unseeded Python `random`, so v1's
order could not be repeated even with a seed): each row is read `num_epochs` times in both, batches have the
same sizes, but the order is not v1's. The arrays are constants of the graph (v1 fed them), so they must fit
the 2 GB limit of a graph. No queue-fullness summary is written. Called eagerly, the `input_fn` raises, as
v1's did.
"""

from __future__ import annotations

import collections
import uuid
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.core import validation

__all__ = ['numpy_input_fn', 'pandas_input_fn']

_TARGET_KEY = '__target_key__'


def _check_arguments(shuffle: Any, batch_size, num_epochs, queue_capacity, num_threads, capacity_may_be_none) -> None:
    """v1's check of `shuffle`; the counts positive integers (`num_epochs`, and maybe `queue_capacity`, or None)."""
    if not isinstance(shuffle, bool):
        raise ValueError(
            'shuffle must be provided and explicitly set as boolean '
            '(it is recommended to set it as True for training); got {}'.format(shuffle)
        )
    counts = {
        'batch_size': (batch_size, False),
        'num_epochs': (num_epochs, True),
        'queue_capacity': (queue_capacity, capacity_may_be_none),
        'num_threads': (num_threads, False),
    }
    for argument, (value, optional) in counts.items():
        accepted = ('None or ' if optional else '') + 'an integer > 0'
        validation.check_integer(value, argument, optional=optional, accepted=accepted)
        if value is not None and value <= 0:
            raise ValueError(f'`{argument}` must be {accepted}, got {value!r}.')


def _epochs_read(num_epochs: int | None, num_threads: int, shuffle: bool) -> int | None:
    """How many epochs v1's reader threads read (each its own `num_epochs`), with v1's warnings."""
    if num_threads > 1 and num_epochs is not None:
        logging.warn(
            'enqueue_data was called with num_epochs and num_threads > 1. num_epochs is applied per thread, so '
            'this will produce more epochs than you probably intend. If you want to limit epochs, use one thread.'
        )
    if shuffle and num_threads > 1 and num_epochs is not None:
        logging.warn(
            'enqueue_data was called with shuffle=True, num_threads > 1, and num_epochs. This will create '
            'multiple threads, all reading the array/dataframe in order adding to the same shuffling queue; '
            'the results will likely not be sufficiently shuffled.'
        )
    if not shuffle and num_threads > 1:
        logging.warn(
            'enqueue_data was called with shuffle=False and num_threads > 1. This will create multiple threads, '
            'all reading the array/dataframe in order. If you want examples read in order, use one thread; if '
            'you want multiple threads, enable shuffling.'
        )
    return None if num_epochs is None else num_epochs * num_threads


def _batches(columns: list, batch_size: int, epochs: int | None, shuffle: bool, buffer_size: int) -> list:
    """The next batch of `columns` (arrays of one length), read `epochs` times as one stream (see the docstring).

    Raises:
      RuntimeError: called eagerly (v1's queues needed a graph too).
    """
    if tf.executing_eagerly():
        raise RuntimeError(
            "The input_fn of numpy_input_fn/pandas_input_fn builds graph tensors, as v1's did: pass it to an "
            'Estimator, or call it inside `with tf.Graph().as_default():` or a compat_mts.wrap_graph build '
            'function. Eagerly, use tf.data.Dataset.from_tensor_slices(...).batch(...) instead.'
        )
    dataset = tf.data.Dataset.from_tensor_slices(tuple(columns)).repeat(epochs)
    if shuffle:
        dataset = dataset.shuffle(buffer_size)  # The graph's seed, as v1's RandomShuffleQueue had.
    dataset = dataset.batch(batch_size, drop_remainder=epochs is None)
    return list(tf.compat.v1.data.make_one_shot_iterator(dataset).get_next())


def _sorted_dict(values: dict) -> collections.OrderedDict:
    return collections.OrderedDict(sorted(values.items(), key=lambda item: item[0]))


def _features_of(x: Any) -> collections.OrderedDict:
    if isinstance(x, dict):
        if not x:
            raise ValueError('x cannot be an empty dict')
        return _sorted_dict(x)
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError('x cannot be an empty array')
        return collections.OrderedDict({'__direct_np_input__': x})
    raise TypeError('x must be a dict or array; got {}'.format(type(x).__name__))


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Callable[[], Any]:
    """An `input_fn` that feeds a dict of NumPy arrays (or one array) and targets to a model, as v1's.

    The module docstring says what is v1's and what differs (the order under `shuffle=True`).

    Example:

    ```python
    input_fn = compat_mts.estimator.inputs.numpy_input_fn(
        {'age': np.arange(4.0)}, np.arange(4), batch_size=2, num_epochs=1, shuffle=False)
    estimator.train(input_fn)  # two steps, then the data ends
    ```

    Args:
      x: a NumPy array (one feature, returned as a tensor) or a dict of arrays of one length.
      y: an array or a dict of arrays (keys other than `x`'s), or None for no targets.
      batch_size: rows per batch.
      num_epochs: how many times the rows are read (per thread, as in v1); None repeats forever.
      shuffle: whether to mix the rows (must be given, as a bool).
      queue_capacity: the rows a shuffle mixes among (v1's queue capacity).
      num_threads: v1's reader threads; each reads `num_epochs` epochs.

    Returns:
      `input_fn()` returning `features`, or `(features, targets)` when `y` is given.

    Raises:
      ValueError: `shuffle` not a bool (v1's message), or a count that is not a positive integer (at once);
        an empty dict or array, keys in both `x` and `y`, or arrays of different lengths (v1's messages,
        when `input_fn` is called).
      TypeError: `x` is not a dict or an array (when `input_fn` is called).
    """
    _check_arguments(shuffle, batch_size, num_epochs, queue_capacity, num_threads, capacity_may_be_none=False)

    def input_fn():
        columns = _features_of(x)
        feature_keys = list(columns)
        if y is None:
            target_keys = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError('y cannot be empty dict, use None instead.')
            targets = _sorted_dict(y)
            target_keys = list(targets)
            duplicate_keys = set(feature_keys) & set(target_keys)
            if duplicate_keys:
                raise ValueError(
                    '{} duplicate keys are found in both x and y: {}'.format(len(duplicate_keys), duplicate_keys)
                )
            columns.update(targets)
        else:
            target_keys = _TARGET_KEY
            while target_keys in columns:
                target_keys += '_n'
            columns[target_keys] = y
        if len({value.shape[0] for value in columns.values()}) != 1:
            if target_keys is None:
                shape_of_y = None
            elif isinstance(target_keys, str):
                shape_of_y = y.shape
            else:
                shape_of_y = {key: columns[key].shape for key in target_keys}
            raise ValueError(
                'Length of tensors in x and y is mismatched. All elements in x and y must have the same length.\n'
                'Shapes in x: {}\nShapes in y: {}\n'.format(
                    {key: columns[key].shape for key in feature_keys}, shape_of_y
                )
            )
        epochs = _epochs_read(num_epochs, num_threads, shuffle)
        batch = _batches(list(columns.values()), batch_size, epochs, shuffle, queue_capacity)
        features = batch[0] if isinstance(x, np.ndarray) else dict(zip(feature_keys, batch[: len(feature_keys)]))
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[-1]
        return features, dict(zip(target_keys, batch[-len(target_keys) :]))

    return input_fn


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int | None = 1000,
    num_threads: int = 1,
    target_column: str = 'target',
) -> Callable[[], Any]:
    """An `input_fn` that feeds a pandas `DataFrame` (and a target `Series` or `DataFrame`) to a model, as v1's.

    The features are a dict of `x`'s columns; the index is not fed. The module docstring says what is v1's and
    what differs (the order under `shuffle=True`).

    Args:
      x: a pandas `DataFrame`.
      y: a `Series` (the target tensor) or a `DataFrame` (a dict of target tensors), with `x`'s index; or None.
      batch_size: rows per batch.
      num_epochs: how many times the rows are read (per thread, as in v1); None repeats forever.
      shuffle: whether to mix the rows (must be given, as a bool).
      queue_capacity: the rows a shuffle mixes among; None: `4 * len(x)` with `shuffle`, else `len(x)` (v1's).
      num_threads: v1's reader threads; each reads `num_epochs` epochs.
      target_column: the name `y` takes among the columns while it is read (not used for a `DataFrame` `y`).

    Returns:
      `input_fn()` returning the features dict, or `(features, target)` when `y` is given.

    Raises:
      TypeError: pandas is not installed, or `target_column` is not a string (v1's messages).
      ValueError: `shuffle` not a bool, `x` already has a column `target_column`, the indexes of `x` and `y`
        differ (v1's messages), or a count that is not a positive integer.
    """
    pandas = _pandas()
    if pandas is None:
        raise TypeError('pandas_input_fn should not be called without pandas installed')
    _check_arguments(shuffle, batch_size, num_epochs, queue_capacity, num_threads, capacity_may_be_none=True)
    if not isinstance(target_column, str):
        raise TypeError('target_column must be a string type')
    x = x.copy()
    target_keys: Any = None
    if y is not None:
        if target_column in x:
            raise ValueError(
                'Cannot use name %s for target column: DataFrame already has a column with that name: %s'
                % (target_column, x.columns)
            )
        if not np.array_equal(x.index, y.index):
            raise ValueError(
                'Index for x and y are mismatched.\nIndex for x: %s\nIndex for y: %s\n' % (x.index, y.index)
            )
        if isinstance(y, pandas.DataFrame):
            target_keys = []
            for column in list(y):
                unique = column + '_' + str(uuid.uuid4()) if column in x else column
                target_keys.append((column, unique))
            x[[unique for _, unique in target_keys]] = y
        else:
            target_keys = target_column
            x[target_column] = y
    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)

    def input_fn():
        epochs = _epochs_read(num_epochs, num_threads, shuffle)
        batch = _batches([x[column].to_numpy() for column in x.columns], batch_size, epochs, shuffle, queue_capacity)
        features = dict(zip(list(x.columns), batch))
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, features.pop(target_keys)
        return features, {column: features.pop(unique) for column, unique in target_keys}

    return input_fn
