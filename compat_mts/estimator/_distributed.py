"""`RunConfig(train_distribute=..., eval_distribute=...)`: the `model_fn` called once per replica, as v1 did.

v1's Estimator built its graph in the strategy's scope: the `input_fn`'s dataset gave each replica a batch of
its own (the replicas of a step take consecutive batches, so the `input_fn`'s batch size is the batch of one
replica), `call_for_each_replica` called the `model_fn` on each, the v1 optimizers divided the loss by the
replicas and all-reduced the gradients, and the loss reported was the replicas' mean. The same graph runs here
(`compat_mts.wrap_graph` keeps one variable per replica, checkpointed under the v1 name once); `MirroredStrategy`
on the devices of this process and `OneDeviceStrategy` are the strategies this covers, and
`MultiWorkerMirroredStrategy` (`TF_CONFIG`, one process per worker): every worker builds the same graph, its
`input_fn` called once per worker, the gradients all-reduced by the strategy's collectives, and the training
session is the cluster's (`compat_mts.deploy.deployment.MultiWorker`: the chief writes, every worker restores the
chief's checkpoint, all stop after the same run).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.deploy import distribute
from compat_mts.estimator import _inputs

GUIDE = 'migration_guide/distributed.md'
ACCEPTED = (
    'tf.distribute.MirroredStrategy (on the devices of this process), tf.distribute.OneDeviceStrategy, '
    'tf.distribute.MultiWorkerMirroredStrategy (one process per worker, TF_CONFIG) or, in train_distribute, '
    'tf.compat.v1.distribute.experimental.ParameterServerStrategy (a TF_CONFIG job with ps tasks)'
)


def _accepted_types() -> tuple:
    return (
        tf.distribute.MirroredStrategy,
        tf.distribute.OneDeviceStrategy,
        tf.compat.v1.distribute.MirroredStrategy,
        tf.compat.v1.distribute.OneDeviceStrategy,
    ) + distribute.MULTI_WORKER_STRATEGIES


def is_parameter_server(strategy: Any) -> bool:
    """Whether `strategy` is v1's `tf.compat.v1.distribute.experimental.ParameterServerStrategy`: the Estimator
    then trains on the job's parameter-server training, as without `train_distribute` (`estimator._cluster`)."""
    return isinstance(strategy, tf.compat.v1.distribute.experimental.ParameterServerStrategy)


def is_multi_worker(strategy: Any) -> bool:
    """Whether `strategy` is a `MultiWorkerMirroredStrategy` (either spelling), of one worker or several."""
    return isinstance(strategy, distribute.MULTI_WORKER_STRATEGIES)


def check_strategy(strategy: Any, argument: str) -> None:
    """Refuses a strategy compat_mts.estimator does not run, naming `argument`, what it takes and the guide.

    Raises:
      ValueError: another strategy (parameter servers, TPU, central storage), a MirroredStrategy over several
        workers, or not a strategy.
    """
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):  # TF 2.15's words.
        raise ValueError(
            'Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for parameter server '
            'strategy with estimator.'
        )
    if argument == 'train_distribute' and is_parameter_server(strategy):
        return
    if strategy is None or isinstance(strategy, _accepted_types()):
        if strategy is not None and not isinstance(
            strategy, (tf.distribute.OneDeviceStrategy,) + distribute.MULTI_WORKER_STRATEGIES
        ):
            hosts = {tf.DeviceSpec.from_string(device).job for device in strategy.extended.worker_devices}
            if hosts - {None, 'localhost'}:
                raise ValueError(
                    f'RunConfig({argument}=...) got a MirroredStrategy over several workers ({sorted(hosts)}); '
                    f'compat_mts.estimator takes {ACCEPTED}. A multi-worker program is a '
                    f'compat_mts.MonitoredTrainingSession loop under MultiWorkerMirroredStrategy ({GUIDE}).'
                )
        if strategy is not None and tf_internals.estimator_loss_scaling(strategy) is None:
            raise ValueError(
                f"RunConfig({argument}=...): this TensorFlow's strategy does not let v1 optimizers average the "
                "replicas' gradients as v1's Estimator did (or COMPAT_MTS_NO_PRIVATE_TF is set); run without "
                f'{argument}, or move the loop to compat_mts.MonitoredTrainingSession ({GUIDE}).'
            )
        return
    raise ValueError(
        f'RunConfig({argument}=...) takes {ACCEPTED}, got {type(strategy).__name__}. A parameter-server or TPU '
        f'program becomes a compat_mts.MonitoredTrainingSession loop under its strategy ({GUIDE}).'
    )


@contextlib.contextmanager
def scope(strategy: Any):
    """The strategy's scope, with the v1 optimizers dividing the loss by the replicas (v1's Estimator's)."""
    with strategy.scope(), tf_internals.estimator_loss_scaling(strategy):
        yield


def writes_model_dir(strategy: Any) -> bool:
    """Whether this process writes the checkpoints and events of `model_dir`: not the workers of a
    `MultiWorkerMirroredStrategy` other than its chief (`chief` 0, or `worker` 0 without a `chief` job)."""
    return not is_multi_worker(strategy) or bool(strategy.extended.should_checkpoint)


@contextlib.contextmanager
def session_scope(strategy: Any):
    """Where the Estimator's session runs: in a `MultiWorkerMirroredStrategy`'s scope, so that it is its cluster's.

    The session's deployment is then `compat_mts.deploy.deployment.MultiWorker`: the chief alone writes checkpoints
    and summaries, the other workers restore the checkpoint the chief restored, and all stop after the same run.
    Other strategies (and none) run the session outside any scope, as v1's Estimator on one machine did.
    """
    with strategy.scope() if is_multi_worker(strategy) else contextlib.nullcontext():
        yield


def call_input_fn(strategy: Any, input_fn, mode: str, params: dict, config) -> Any:
    """The `input_fn`'s result, called once in this process with the `input_context` v1's `make_input_fn_iterator`
    gave it (when it takes one): this worker's input pipeline among the cluster's."""
    workers, index = distribute.workers_and_index(strategy) if is_multi_worker(strategy) else (['localhost'], 0)
    context = tf.distribute.InputContext(
        num_input_pipelines=len(workers), input_pipeline_id=index, num_replicas_in_sync=strategy.num_replicas_in_sync
    )
    return _inputs.call_input_fn(input_fn, mode, params, config, input_context=context)


def replica_inputs(strategy: Any, result: Any) -> tuple[Any, Any, list]:
    """`(features, labels, input_hooks)` of an `input_fn`'s result, one batch per replica of this process (v1's).

    A dataset is read through one iterator, this process's replicas taking consecutive elements in one step as
    v1's `make_input_fn_iterator` gave them (each worker of a cluster reads its own `input_fn`'s dataset);
    features and labels come back as the strategy's per-replica values. A returned `(features, labels)` of
    tensors is every replica's, as v1 passed it.
    """
    hooks = []
    local_replicas = len(strategy.extended.worker_devices)
    if isinstance(result, tf.data.Dataset) or hasattr(result, 'make_initializable_iterator'):
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        hooks.append(_inputs.DatasetInitializerHook(iterator))
        elements = []
        for _ in range(local_replicas):
            with tf.control_dependencies(tf.nest.flatten(elements[-1]) if elements else []):
                elements.append(iterator.get_next())
    else:
        elements = [result] * local_replicas
    pairs = [_inputs.parse_iterator_result(element) for element in elements]
    has_labels = pairs[0][1] is not None

    def value_fn(context):
        # A worker's replicas are numbered on from the replicas of the workers before it.
        features, labels = pairs[context.replica_id_in_sync_group % local_replicas]
        return (features, labels) if has_labels else features

    values = tf_internals.distribute_values_from_function(strategy, value_fn)
    if has_labels:
        return values[0], values[1], hooks
    return values, None, hooks


def call_model_fn(strategy: Any, call: Callable, features: Any, labels: Any, mode: str, config: Any):
    """The grouped `EstimatorSpec` of `call` on each replica."""
    return strategy.extended.call_for_each_replica(call, args=(features, labels, mode, config))


def first_replica(strategy: Any, grouped: Any) -> Any:
    """What the first replica returned (its hooks, its scaffold), as v1 took them."""
    return strategy.experimental_local_results(grouped)[0]


def reported_loss(strategy: Any, grouped_loss: Any) -> tf.Tensor:
    """The loss v1's Estimator logged and returned: the replicas' mean when the optimizer averaged, else sum."""
    if tf_internals.loss_scaled_by_optimizer(tf.compat.v1.get_default_graph()):
        reduce_op = tf.compat.v1.distribute.get_loss_reduction()
    else:
        reduce_op = tf.distribute.ReduceOp.SUM
    return strategy.reduce(reduce_op, grouped_loss, axis=None)


def hooks_of_first_replica(strategy: Any, grouped_hooks) -> list:
    return [first_replica(strategy, hook) for hook in grouped_hooks]


@dataclasses.dataclass
class GroupedSpec:
    """What evaluation reads of the replicas' `EstimatorSpec`s: per-replica loss and metrics, the first's hooks."""

    loss: Any
    eval_metric_ops: dict
    evaluation_hooks: list
    scaffold: Any
