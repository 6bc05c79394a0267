"""`KMeans`: v1's `tf.compat.v1.estimator.experimental.KMeans` (TF 2.15's `KMeansClustering`), on the session.

The `model_fn` builds TensorFlow's own k-means graph (`clustering_ops.KMeans.training_graph`, through
`compat_mts._tf_internals`: its `clusters` variable, the `KmeansPlusPlusInitialization` and `NearestNeighbors`
kernels), as TF 2.15 did, so the checkpoint's variables, the centers, the losses and the predictions are TF
2.15's. Its two training hooks are TF 2.15's too: one runs the initialization of the centers after the session
is created (on the chief), one stops when the loss's relative change falls below `relative_tolerance`.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.estimator import export
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.model_fn import EstimatorSpec
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook


class _LossRelativeChangeHook(SessionRunHook):
    """Stops training when the loss changed by less than `tolerance` (relative to 1 + the previous loss)."""

    def __init__(self, loss, tolerance: float):
        self._loss = loss
        self._tolerance = tolerance
        self._previous = None

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        loss = run_values.results
        if self._previous and abs(loss - self._previous) / (1 + abs(self._previous)) < self._tolerance:
            run_context.request_stop()
        self._previous = loss


class _InitializeClustersHook(SessionRunHook):
    """Runs the centers' initialization after the session is created, on the chief, until it is done."""

    def __init__(self, init_op, is_initialized, is_chief: bool):
        self._init_op = init_op
        self._is_initialized = is_initialized
        self._is_chief = is_chief

    def after_create_session(self, session, coord):
        while not session.run(self._is_initialized):
            if not self._is_chief:
                raise RuntimeError(
                    'KMeans: the cluster centers are not initialized; the chief initializes them, a worker of a '
                    'cluster job does not (TF 2.15 waited for the chief of a ps job, which this session does not run).'
                )
            session.run(self._init_op)


def _points(features, feature_columns):
    """The input points: `input_layer` of the columns, or the features' columns concatenated in key order."""
    if not isinstance(features, dict):
        return features
    if feature_columns:
        return tf.compat.v1.feature_column.input_layer(features, feature_columns)
    return tf.concat([features[key] for key in sorted(features)], axis=1)


class KMeans(Estimator):
    """An Estimator for k-means clustering, v1's `tf.compat.v1.estimator.experimental.KMeans` (TF 2.15's).

    Each training step is one (mini-batch or full-batch) iteration of Lloyd's algorithm; the loss is the sum of
    the squared (or cosine) distances of the batch's points to their nearest center, the evaluation metric
    `score` its mean over the batches, the predictions `all_distances` and `cluster_index` (also the export
    signatures, `serving_default` the index). The centers are the variable `clusters`.

    Example:

    ```python
    points = np.random.default_rng(0).uniform(0, 10, [100, 2]).astype(np.float32)
    kmeans = compat_mts.estimator.experimental.KMeans(num_clusters=3, use_mini_batch=False, seed=1)
    kmeans.train(lambda: tf.data.Dataset.from_tensors(points), steps=5)
    kmeans.cluster_centers()
    ```

    Args:
      num_clusters: the number of centers (an int, or a scalar int tensor).
      model_dir: where checkpoints and events go.
      initial_clusters: `RANDOM_INIT`, `KMEANS_PLUS_PLUS_INIT`, an array of initial centers, or a callable
        `f(inputs, k)` returning up to `k` centers of a batch.
      distance_metric: `SQUARED_EUCLIDEAN_DISTANCE` or `COSINE_DISTANCE`.
      seed: the random seed of the initialization.
      use_mini_batch: False for full-batch k-means (each `input_fn` batch is the whole data; deterministic).
      mini_batch_steps_per_iteration: steps between updates of the centers, with `use_mini_batch`. In
        mini-batch mode TensorFlow's graph reads and updates the centers without an order between the two (its
        code comments on the race): on a loaded machine the centers can differ from run to run.
      kmeans_plus_plus_num_retries: additional points kmeans++ draws before choosing each center.
      relative_tolerance: None, or stop training when the loss's relative change is below it.
      config: a `compat_mts.estimator.RunConfig`.
      feature_columns: None (every feature, in key order), or the columns `input_layer` reads the points with.

    Raises:
      ValueError: an unknown `initial_clusters` string or `distance_metric` (TF 2.15's messages).
      RuntimeError: this TensorFlow lacks the k-means graph (`compat_mts._tf_internals.clustering_ops`).
    """

    SQUARED_EUCLIDEAN_DISTANCE = 'squared_euclidean'
    COSINE_DISTANCE = 'cosine'
    RANDOM_INIT = 'random'
    KMEANS_PLUS_PLUS_INIT = 'kmeans_plus_plus'
    SCORE = 'score'
    CLUSTER_INDEX = 'cluster_index'
    ALL_DISTANCES = 'all_distances'
    CLUSTER_CENTERS_VAR_NAME = 'clusters'

    def __init__(
        self,
        num_clusters,
        model_dir: str | None = None,
        initial_clusters=RANDOM_INIT,
        distance_metric: str = SQUARED_EUCLIDEAN_DISTANCE,
        seed: int | None = None,
        use_mini_batch: bool = True,
        mini_batch_steps_per_iteration: int = 1,
        kmeans_plus_plus_num_retries: int = 2,
        relative_tolerance: float | None = None,
        config=None,
        feature_columns=None,
    ):
        if isinstance(initial_clusters, str) and initial_clusters not in (self.RANDOM_INIT, self.KMEANS_PLUS_PLUS_INIT):
            raise ValueError("Unsupported initialization algorithm '%s'" % initial_clusters)
        if distance_metric not in (self.SQUARED_EUCLIDEAN_DISTANCE, self.COSINE_DISTANCE):
            raise ValueError("Unsupported distance metric '%s'" % distance_metric)
        clustering_ops = tf_internals.clustering_ops()
        self._distance_metric = distance_metric

        def model_fn(features, mode, config):
            points = _points(features, feature_columns)
            all_distances, cluster_index, losses, is_initialized, init_op, training_op = clustering_ops.KMeans(
                inputs=points,
                num_clusters=num_clusters,
                initial_clusters=initial_clusters,
                distance_metric=distance_metric,
                use_mini_batch=use_mini_batch,
                mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
                random_seed=seed,
                kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries,
            ).training_graph()
            loss = tf.math.reduce_sum(losses)
            tf.compat.v1.summary.scalar('loss/raw', loss)
            increment = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
            with tf.control_dependencies([training_op, increment]):
                train_op = tf.identity(loss)
            hooks = [_InitializeClustersHook(init_op, is_initialized, config.is_chief)]
            if relative_tolerance is not None:
                hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))
            return EstimatorSpec(
                mode=mode,
                predictions={self.ALL_DISTANCES: all_distances[0], self.CLUSTER_INDEX: cluster_index[0]},
                loss=loss,
                train_op=train_op,
                eval_metric_ops={self.SCORE: tf.compat.v1.metrics.mean(loss)},
                training_hooks=hooks,
                export_outputs={
                    self.ALL_DISTANCES: export.PredictOutput(all_distances[0]),
                    self.CLUSTER_INDEX: export.PredictOutput(cluster_index[0]),
                    tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: export.PredictOutput(cluster_index[0]),
                },
            )

        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

    def _predict_one_key(self, input_fn: Callable, key: str) -> Iterator:
        for result in self.predict(input_fn=input_fn, predict_keys=[key]):
            yield result[key]

    def predict_cluster_index(self, input_fn: Callable) -> Iterator:
        """Yields the index of the nearest center of each input point."""
        yield from self._predict_one_key(input_fn, self.CLUSTER_INDEX)

    def score(self, input_fn: Callable) -> float:
        """The sum of the distances of the first batch's points to their nearest centers (v1's; not sklearn's)."""
        return self.evaluate(input_fn=input_fn, steps=1)[self.SCORE]

    def transform(self, input_fn: Callable) -> Iterator:
        """Yields each point's distances to every center (Euclidean for `SQUARED_EUCLIDEAN_DISTANCE`, as v1)."""
        for distances in self._predict_one_key(input_fn, self.ALL_DISTANCES):
            yield np.sqrt(distances) if self._distance_metric == self.SQUARED_EUCLIDEAN_DISTANCE else distances

    def cluster_centers(self) -> np.ndarray:
        """The cluster centers of the latest checkpoint."""
        return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)
