"""`LinearSDCA`: v1's `tf.estimator.experimental.LinearSDCA`, TF 2.15's SDCA training of the linear Estimators.

TF 2.15's `canned/linear_optimizer` on TensorFlow's own SDCA kernels, which TF 2.21 still has
(`tf.raw_ops.SdcaFprint`, `SdcaOptimizerV2`): each training step hashes the batch's example ids, looks up their
dual state in a dense hash table (`ShardedMutableHashTable-<i>-of-<n>` in the checkpoint, one per shard), runs
one pass of the solver over the batch into the "unshrunk" copies of the weights (`<weights>_unshrunk`), and
writes the state back; a chief hook then copies the unshrunk weights into the model's (shrunk by L1 over L2).
The variables, the table and the numbers are TF 2.15's, so a `model_dir` resumes on either side.
"""

from __future__ import annotations

import logging

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook

_LOSS_TYPES = ('logistic_loss', 'squared_loss')
_TABLE_NAME = 'ShardedMutableHashTable'
_STATE_DEFAULT = [0.0, 0.0, 0.0, 0.0]  # The dual, primal loss, dual loss and weight of an example not seen yet.


class LinearSDCA:
    """Stochastic dual coordinate ascent for `LinearClassifier` and `LinearRegressor` (TF 2.15's).

    Passed as their `optimizer`: binary classification (logistic loss) or one-dimensional regression (squared
    loss), `sparse_combiner='sum'`, `tf.feature_column` columns (numeric, bucketized, categorical, crossed,
    indicator). The `input_fn`'s features hold `example_id_column`, a string id per example, the key of the
    example's dual state across steps.

    Example:

    ```python
    sdca = compat_mts.estimator.experimental.LinearSDCA(
        example_id_column='example_id', symmetric_l2_regularization=2.0)
    classifier = compat_mts.estimator.LinearClassifier(
        [tf.feature_column.numeric_column('x')], optimizer=sdca)
    ```

    Args:
      example_id_column: the feature name of the example ids.
      num_loss_partitions: the number of workers training at once (sigma' of the distributed SDCA).
      num_table_shards: the number of shards of the example-state table (None: 1).
      symmetric_l1_regularization: the L1 strength, >= 0.
      symmetric_l2_regularization: the L2 strength, > 0 (typically > 1).
      adaptive: whether the solver samples examples adaptively.
    """

    def __init__(
        self,
        example_id_column: str,
        num_loss_partitions: int = 1,
        num_table_shards: int | None = None,
        symmetric_l1_regularization: float = 0.0,
        symmetric_l2_regularization: float = 1.0,
        adaptive: bool = False,
    ):
        self._example_id_column = example_id_column
        self._num_loss_partitions = num_loss_partitions
        self._num_table_shards = num_table_shards
        self._symmetric_l1_regularization = symmetric_l1_regularization
        self._symmetric_l2_regularization = symmetric_l2_regularization
        self._adaptive = adaptive

    def _check(self) -> None:
        """TF 2.15's checks of the regularization, made when the train step is built."""
        if self._symmetric_l2_regularization <= 0.0:
            raise ValueError('symmetric_l2_regularization should be positive.')
        if self._symmetric_l2_regularization <= 1.0:
            logging.getLogger('tensorflow').warning(
                'symmetric_l2_regularization for SDCA should typically be larger than for online optimization '
                'methods. Recommended value is of the order of the average L2 norm of the training examples.'
            )
        if self._symmetric_l1_regularization < 0.0:
            raise ValueError('symmetric_l1_regularization should be non-negative.')

    def train_step(self, features, labels, columns_to_variables: dict, bias, weight_column, loss_type: str):
        """The SDCA train op of a batch (it counts the global step) and the hook that updates the weights.

        Args:
          features: the features dict.
          labels: the labels, one per example.
          columns_to_variables: each feature column's weights variable (`linear_model`'s `cols_to_vars`).
          bias: the bias variable.
          weight_column: None, or the feature name (or numeric column) of the examples' weights.
          loss_type: 'logistic_loss' or 'squared_loss'.

        Returns:
          The train op and the chief's `SessionRunHook` that copies the solved weights into the model's.
        """
        self._check()
        if loss_type not in _LOSS_TYPES:
            raise ValueError('Unsupported loss_type: ', loss_type)
        batch_size = tf.compat.v1.shape(labels)[0]
        cache = tf_internals.feature_transformation_cache(features)
        sparse, sparse_weights, dense, dense_weights = [], [], [], []
        for column in sorted(columns_to_variables, key=lambda column: column.name):
            if len(columns_to_variables[column]) != 1:
                raise ValueError(
                    'LinearSDCA trains one weights variable per column; the %s %r has %d (an embedding column: '
                    'use an indicator column, or the Ftrl optimizer).'
                    % (type(column).__name__, column.name, len(columns_to_variables[column]))
                )
            (variable,) = columns_to_variables[column]
            if _is_categorical(column):  # A bucketized column too, as in TF 2.15: its buckets are its ids.
                sparse.append(_unique_ids(column.get_sparse_tensors(cache, None)))
                sparse_weights.append(variable)
            elif hasattr(column, 'get_dense_tensor'):
                if column.variable_shape.ndims != 1:
                    raise ValueError(
                        'Column %s has rank %d, larger than 1.' % (type(column).__name__, column.variable_shape.ndims)
                    )
                dense.append(column.get_dense_tensor(cache, None))
                dense_weights.append(variable)
            else:
                raise ValueError('LinearSDCA does not support column type %s.' % type(column).__name__)
        dense.append(tf.ones([batch_size, 1]))
        dense_weights.append(bias)
        if weight_column is None:
            example_weights = tf.ones([batch_size])
        else:
            key = weight_column if isinstance(weight_column, str) else weight_column.key
            example_weights = tf.reshape(features[key], shape=[-1])
        solver = _Solver(self, sparse, sparse_weights, dense, dense_weights, loss_type)
        train_op = solver.minimize(
            features[self._example_id_column],
            tf.cast(tf.reshape(labels, shape=[-1]), tf.float32),
            example_weights,
            tf.compat.v1.train.get_global_step(),
        )
        return train_op, _UpdateWeightsHook(solver.update_weights(train_op))


def _is_categorical(column) -> bool:
    """Whether `column` is a v2 `CategoricalColumn` (from its classes' names: the class is not public)."""
    return any(base.__name__ == 'CategoricalColumn' for base in type(column).__mro__)


def _unique_ids(id_weight_pair):
    """A sparse column's (example, id, weight) triples, negative ids dropped and repeated ids summed (TF 2.15's)."""
    ids = id_weight_pair.id_tensor
    if id_weight_pair.weight_tensor is not None:
        weights = id_weight_pair.weight_tensor.values
    else:
        weights = tf.ones([tf.compat.v1.shape(ids.indices)[0]], tf.float32)
    example_ids = tf.reshape(ids.indices[:, 0], [-1])
    flat_ids = tf.cast(tf.reshape(ids.values, [-1]), tf.int64)
    valid = tf.math.greater_equal(flat_ids, 0)
    flat_ids = tf.compat.v1.boolean_mask(flat_ids, valid)
    example_ids = tf.compat.v1.boolean_mask(example_ids, valid)
    weights = tf.compat.v1.boolean_mask(weights, valid)
    projection = tf.math.reduce_max(flat_ids) + 1
    unique, index = tf.unique(projection * example_ids + flat_ids)
    count = tf.compat.v1.shape(unique)[0]
    examples = tf.math.unsorted_segment_min(example_ids, index, count)
    weights = tf.reshape(tf.math.unsorted_segment_sum(weights, index, count), [-1])
    return examples, unique - projection * examples, weights


class _Solver:
    """TF 2.15's `_SDCAModel` as the Estimator used it: the unshrunk weights, the state table, the two steps."""

    def __init__(self, options: LinearSDCA, sparse, sparse_weights, dense, dense_weights, loss_type: str):
        self._options = options
        self._sparse = sparse
        self._dense = dense
        self._loss_type = loss_type
        self._weights = [*sparse_weights, *dense_weights]
        self._unshrunk = [_unshrunk_copy(variable) for variable in self._weights]
        shards = options._num_table_shards or 1
        with tf.compat.v1.name_scope(None, 'sharded_mutable_hash_table'):
            self._tables = [
                tf.lookup.experimental.DenseHashTable(
                    tf.int64,
                    tf.float32,
                    default_value=_STATE_DEFAULT,
                    empty_key=[0, 0],
                    deleted_key=[1, 1],
                    name='%s-%d-of-%d' % (_TABLE_NAME, shard + 1, shards),
                )
                for shard in range(shards)
            ]
        tf.compat.v1.summary.scalar('approximate_duality_gap', self._approximate_duality_gap())
        tf.compat.v1.summary.scalar('examples_seen', tf.math.add_n([table.size() for table in self._tables]))

    def _shard_of(self, keys):
        return tf.cast(tf.math.floormod(tf.math.abs(tf.reshape(keys[:, :1], [-1])), len(self._tables)), tf.int32)

    def _lookup(self, keys):
        if len(self._tables) == 1:
            return self._tables[0].lookup(keys)
        shards = self._shard_of(keys)
        key_shards = tf.dynamic_partition(keys, shards, len(self._tables))
        values = [table.lookup(shard_keys) for table, shard_keys in zip(self._tables, key_shards)]
        positions = tf.dynamic_partition(tf.range(tf.compat.v1.shape(keys)[0]), shards, len(self._tables))
        return tf.dynamic_stitch(positions, values)

    def _insert(self, keys, values):
        if len(self._tables) == 1:
            return self._tables[0].insert(keys, values)
        shards = self._shard_of(keys)
        key_shards = tf.dynamic_partition(keys, shards, len(self._tables))
        value_shards = tf.dynamic_partition(values, shards, len(self._tables))
        return tf.group(*[table.insert(k, v) for table, k, v in zip(self._tables, key_shards, value_shards)])

    def _regularization_sums(self):
        absolute, squares = [], []
        for variable in self._weights:
            weights = tf.cast(tf.convert_to_tensor(variable), tf.float64)
            absolute.append(tf.math.reduce_sum(tf.math.abs(weights)))
            squares.append(tf.math.reduce_sum(tf.math.square(weights)))
        return tf.math.add_n(absolute), tf.math.add_n(squares)

    def _approximate_duality_gap(self):
        with tf.name_scope('sdca/approximate_duality_gap'):
            sums = []
            for table in self._tables:
                _, values = table.export()
                with tf.control_dependencies(sums):
                    sums.append(tf.math.reduce_sum(tf.cast(values, tf.float64), 0))
            summed = tf.math.add_n(sums)
            absolute, squares = self._regularization_sums()
            l1_loss = self._options._symmetric_l1_regularization * absolute
            l2_loss = self._options._symmetric_l2_regularization * squares / 2.0
            return (summed[1] + summed[2] + l1_loss + 2.0 * l2_loss) / summed[3]

    def minimize(self, example_ids, labels, example_weights, global_step):
        """One pass of the solver over the batch into the unshrunk weights and the state table; counts the step."""
        with tf.name_scope('sdca/minimize'):
            keys = tf.raw_ops.SdcaFprint(input=tf.convert_to_tensor(example_ids))
            state = self._lookup(keys)
            sparse_count = len(self._sparse)
            unshrunk_sparse, unshrunk_dense = self._unshrunk[:sparse_count], self._unshrunk[sparse_count:]
            indices = [tf.cast(tf.unique(tf.cast(ids, tf.int32))[0], tf.int64) for _, ids, _ in self._sparse]
            gathered = [tf.compat.v1.gather(tf.convert_to_tensor(w), i) for w, i in zip(unshrunk_sparse, indices)]
            options = self._options
            state_update, sparse_updates, dense_updates = tf.raw_ops.SdcaOptimizerV2(
                sparse_example_indices=[examples for examples, _, _ in self._sparse],
                sparse_feature_indices=[ids for _, ids, _ in self._sparse],
                sparse_feature_values=[values for _, _, values in self._sparse],
                dense_features=self._dense,
                example_weights=example_weights,
                example_labels=labels,
                sparse_indices=indices,
                sparse_weights=gathered,
                dense_weights=[tf.convert_to_tensor(w) for w in unshrunk_dense],
                example_state_data=state,
                loss_type=self._loss_type,
                l1=options._symmetric_l1_regularization,
                l2=options._symmetric_l2_regularization,
                num_loss_partitions=options._num_loss_partitions,
                num_inner_iterations=1,
                adaptive=options._adaptive,
            )
            with tf.control_dependencies([state_update]):
                updates = [self._insert(keys, state_update)]
                for variable, ids, update in zip(unshrunk_sparse, indices, sparse_updates):
                    updates.append(tf.compat.v1.scatter_add(variable, ids, update))
                for variable, update in zip(unshrunk_dense, dense_updates):
                    updates.append(tf.compat.v1.assign_add(variable, update))
            with tf.control_dependencies(updates):
                return tf.compat.v1.assign_add(global_step, 1).op

    def update_weights(self, train_op):
        """The model's weights set to the unshrunk ones after `train_op`, shrunk by L1/L2 when L1 > 0."""
        with tf.control_dependencies([train_op]):
            updates = [variable.assign(unshrunk) for variable, unshrunk in zip(self._weights, self._unshrunk)]
        l1 = self._options._symmetric_l1_regularization
        if l1 <= 0:
            return tf.group(*updates)
        shrinkage = l1 / self._options._symmetric_l2_regularization
        with tf.control_dependencies(updates):
            shrunk = [
                variable.assign(tf.math.sign(variable) * tf.math.maximum(0.0, tf.math.abs(variable) - shrinkage))
                for variable in self._weights
            ]
        return tf.group(*shrunk)


def _unshrunk_copy(variable):
    """`<variable>_unshrunk`, zeros of its shape: what the solver updates (TF 2.15's slot)."""
    with tf.compat.v1.get_default_graph().name_scope(None), tf.compat.v1.device(variable.device):
        return tf.Variable(tf.zeros(variable.shape, tf.float32), name=variable.op.name + '_unshrunk')


class _UpdateWeightsHook(SessionRunHook):
    """Runs the update of the model's weights with each training step (TF 2.15's `_SDCAUpdateWeightsHook`).

    TF 2.15's hook built the update in `begin`; it is built with the train op here, the same ops.
    """

    def __init__(self, update_op):
        self._update_op = update_op

    def before_run(self, run_context):
        return SessionRunArgs(self._update_op)
