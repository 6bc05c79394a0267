"""`Estimator`: v1's `tf.estimator.Estimator` on the eager session — train, evaluate, predict, export.

v1's `Estimator.train` was a `MonitoredTrainingSession` loop around the graph a `model_fn` builds. Here each
call builds the graph of its mode with `compat_mts.wrap_graph` (the `input_fn`, then the `model_fn`, in v1's
order), runs it with compat_mts's session and hooks, and drops it when the call returns, as v1 dropped its
graph. The checkpoints in `model_dir` are v1 name-based, so a directory written by TF <= 2.15's Estimator
resumes here, and the other way round.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import os
import tempfile
import time
from typing import Any, Callable, Iterator

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.checkpoint_dir.directory import CheckpointDirectory
from compat_mts.core import global_step as global_step_lib
from compat_mts import legacy
from compat_mts.session import monitored_session
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.deploy import parameter_server
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.estimator import _cluster
from compat_mts.estimator import _distributed
from compat_mts.estimator import _evaluation
from compat_mts.estimator import _hooks
from compat_mts.estimator import _inputs
from compat_mts.estimator.export import _saved_model
from compat_mts.estimator.model_fn import LOSS_METRIC_KEY, EstimatorSpec, ModeKeys
from compat_mts.estimator.run_config import RunConfig, get_default_session_config
from compat_mts.hooks.checkpoint import CheckpointSaverHook, CheckpointSaverListener
from compat_mts.hooks.final_ops import FinalOpsHook
from compat_mts.hooks.logging import LoggingTensorHook
from compat_mts.hooks.nan import NanLossDuringTrainingError, NanTensorHook
from compat_mts.hooks.stop import StopAtStepHook
from compat_mts.legacy.checkpoints import CheckpointNames
from compat_mts.session.monitored_session import MonitoredSession
from compat_mts.session.session_creators import ChiefSessionCreator, WorkerSessionCreator
from compat_mts.session.training_session import MonitoredTrainingSession

_VALID_MODEL_FN_ARGS = {'features', 'labels', 'mode', 'params', 'self', 'config'}
_GLOBAL_STEP = tf.compat.v1.GraphKeys.GLOBAL_STEP
VocabInfo = tf.compat.v1.train.VocabInfo
_MODEL_DIR = ('the Estimator', 'model_dir', True)  # Who was given the checkpoint, as what; a directory.
_WARM_START_FROM = ('the Estimator', 'warm_start_from', False)
_EXPORT_SAVEDMODEL_WARNED = False  # v1's deprecation warning is printed once per process.


class WarmStartSettings(
    collections.namedtuple(
        'WarmStartSettings',
        ['ckpt_to_initialize_from', 'vars_to_warm_start', 'var_name_to_vocab_info', 'var_name_to_prev_var_name'],
    )
):
    """Settings for warm-starting an `Estimator` (v1's fields and defaults).

    The warm start is v1's `tf.compat.v1.train.warm_start`, run in the `model_fn`'s graph: it makes the
    variables' initializers read the checkpoint, so it applies when `model_dir` has no checkpoint yet.
    """

    def __new__(
        cls,
        ckpt_to_initialize_from,
        vars_to_warm_start='.*',
        var_name_to_vocab_info=None,
        var_name_to_prev_var_name=None,
    ):
        if not ckpt_to_initialize_from:
            raise ValueError('`ckpt_to_initialize_from` MUST be set in WarmStartSettings')
        return super().__new__(
            cls,
            ckpt_to_initialize_from,
            vars_to_warm_start,
            var_name_to_vocab_info or {},
            var_name_to_prev_var_name or {},
        )


class _Program:
    """What the graph of one mode holds for the loop that runs it."""

    def __init__(self, spec: EstimatorSpec, input_hooks: list, global_step, worker_input=None, **extras):
        self.spec = spec
        self.input_hooks = input_hooks
        self.global_step = global_step
        self.worker_input = worker_input  # On a parameter-server chief: what `feed_from_workers` takes, or None.
        for name, value in extras.items():
            setattr(self, name, value)


def _in_own_graph(method: Callable) -> Callable:
    """Runs an Estimator call outside the caller's `with tf.Graph().as_default():`, as v1's built its own graph.

    v1's `train`, `evaluate`, `predict` and `export_saved_model` opened a fresh `tf.Graph()` whatever the default
    graph was; compat_mts's build theirs in `wrap_graph` and run them eagerly, so a caller's graph would otherwise
    be taken for a v1 program's graph (its session adopting it, without the Estimator's global step).
    """

    @functools.wraps(method)
    def in_own_graph(self, *args, **kwargs):
        with global_step_lib.outside_graph_mode():
            return method(self, *args, **kwargs)

    return in_own_graph


def _in_own_graph_per_step(generator_fn: Callable) -> Callable:
    """`_in_own_graph` for a generator method: each step runs eagerly, the caller's code between them in its graph."""

    @functools.wraps(generator_fn)
    def in_own_graph(self, *args, **kwargs) -> Iterator:
        steps = generator_fn(self, *args, **kwargs)
        try:
            while True:
                with global_step_lib.outside_graph_mode():
                    try:
                        value = next(steps)
                    except StopIteration:
                        return
                yield value
        finally:
            with global_step_lib.outside_graph_mode():
                steps.close()

    return in_own_graph


class Estimator:
    """Trains, evaluates, predicts with and exports a model given by a `model_fn`, eagerly (v1's API).

    `model_fn(features, labels, mode, params, config)` is v1 graph code: `tf.compat.v1.get_variable`,
    `tf.compat.v1.train.*Optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())`,
    `tf.compat.v1.summary.*`, `tf.compat.v1.metrics.*`; it returns a `compat_mts.estimator.EstimatorSpec`.
    `input_fn` returns a `tf.data.Dataset` of `(features, labels)` or the tuple itself. The signatures,
    defaults, messages, default hooks and `model_dir` layout are v1's (`model.ckpt-N`, `graph.pbtxt`, the
    events, `eval/` or `eval_<name>/`).

    Differences from v1 (migration_guide/estimator.md lists them):

    - no `.meta` files next to the checkpoints; `export_saved_model` writes a TF2 SavedModel;
    - the `model_fn` must not build Keras 2 `tf.compat.v1.layers` (they fail under Keras 3): write dense
      layers with `tf.compat.v1.get_variable` and `tf.matmul`;
    - `RunConfig(train_distribute=..., eval_distribute=...)` takes a `MirroredStrategy` over this process's
      devices, a `OneDeviceStrategy` (the `model_fn` called once per replica, as in v1) or a
      `MultiWorkerMirroredStrategy` on a `TF_CONFIG` cluster, where every worker process calls `train` (and
      `evaluate`) together and the chief writes (`train` on a cluster was `train_and_evaluate`'s alone in
      TF 2.15; here both work); it refuses other strategies, `device_fn` and other clusters.

    Example:

    ```python
    estimator = compat_mts.estimator.Estimator(model_fn, model_dir=directory)
    estimator.train(train_input_fn, max_steps=1000)
    metrics = estimator.evaluate(eval_input_fn)
    ```

    Args:
      model_fn: the model function (see above).
      model_dir: where checkpoints and events go; `config.model_dir` if None, else a temporary directory.
      config: a `compat_mts.estimator.RunConfig`.
      params: hyperparameters passed to `model_fn` (and `input_fn`) as `params`.
      warm_start_from: a checkpoint (directory or prefix) or a `WarmStartSettings`.

    Raises:
      ValueError: v1's messages: no `model_fn`, `model_fn` arguments that do not fit `params`, a `config`
        that is not a `RunConfig`, two different model directories, a subclass overriding a member.
    """

    def __init__(
        self,
        model_fn: Callable,
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        warm_start_from=None,
    ):
        _assert_members_are_not_overridden(Estimator, self)
        # A cluster's default session_config (TF 2.15's device filters) is a property only: not applied here.
        given = config is not None and not getattr(config, '_session_config_is_default', False)
        self._user_session_config = getattr(config, 'session_config', None) if given else None
        self._config = _config_with_model_dir(config, model_dir)
        self._model_dir = self._config.model_dir
        # Validated by `_config_with_model_dir` or `RunConfig`; the training session and its hooks get this one.
        self._checkpoint_directory = CheckpointDirectory(
            self._model_dir, argument='model_dir', owner='the Estimator', empty=None
        )
        self._session_config = self._config.session_config
        logging.info('Using config: %s', str(vars(self._config)))
        if model_fn is None:
            raise ValueError('model_fn must be provided to Estimator.')
        validation.check_callable(model_fn, 'model_fn', 'a callable model_fn(features, labels, mode, params, config)')
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = _get_default_warm_start_settings(warm_start_from)

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable:
        """The `model_fn` bound to `self.params`: `model_fn(features, labels, mode, config)`."""

        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    def get_variable_value(self, name: str) -> np.ndarray:
        """The value of the variable `name` in the latest checkpoint of `model_dir`.

        Raises:
          ValueError: `model_dir` has no checkpoint yet (v1's message).
        """
        return tf.train.load_variable(_checkpoint_available(self.model_dir), name)

    def get_variable_names(self) -> list[str]:
        """The names of the variables in the latest checkpoint of `model_dir`."""
        return [name for name, _ in tf.train.list_variables(_checkpoint_available(self.model_dir))]

    def latest_checkpoint(self) -> str | None:
        """The path of the latest checkpoint in `model_dir`, or None."""
        return checkpoints.latest_checkpoint(self.model_dir)

    def eval_dir(self, name: str | None = None) -> str:
        """Where `evaluate(name=name)` writes its events: `model_dir/eval` or `model_dir/eval_<name>`."""
        return os.path.join(self._model_dir, 'eval' if not name else 'eval_' + name)

    # Training.

    @_in_own_graph
    def train(
        self, input_fn, hooks=None, steps: int | None = None, max_steps: int | None = None, saving_listeners=None
    ) -> 'Estimator':
        """Trains the model on `input_fn`'s data (v1's arguments, defaults and stop rules).

        `steps` counts from the global step the call starts at (two `train(steps=10)` calls train 20 steps);
        `max_steps` is a total: when the latest checkpoint is already there, the call logs
        `Skipping training since max_steps has already saved.` and returns without building anything. The
        end of `input_fn`'s data ends training too. The hooks are v1's: yours, then
        `NanTensorHook(loss)`, `LoggingTensorHook({'loss', 'step'}, every_n_iter=log_step_count_steps)`,
        the spec's `training_hooks`; a `CheckpointSaverHook` (with `saving_listeners`) and the spec's
        `training_chief_hooks`; and the session's step counter and summary saver.

        In a `TF_CONFIG` cluster with ps tasks (and no `train_distribute`), the chief trains on the cluster
        (its steps run on the workers, its variables on the ps tasks) and a worker serves until training has
        ended (`compat_mts.estimator._cluster`); a ps task or the evaluator refuses, as in v1.

        Returns:
          `self`, for chaining.

        Raises:
          ValueError: a ps or evaluator task; both `steps` and `max_steps`, or either not positive (v1's
            messages); listeners without checkpoints.
          TypeError: a hook or listener of the wrong type (v1's messages).
        """
        if self._config.task_type in ('evaluator', 'ps'):
            raise ValueError(
                'Train has been called wrong configuration. Please use tf.estimator.train_and_evaluate which calls '
                'proper API according to given configuration. Current configuration: {}.'.format(self._config)
            )
        if steps is not None and max_steps is not None:
            raise ValueError('Can not provide both steps and max_steps.')
        validation.check_integer(steps, 'steps', accepted='None or an integer number of steps > 0')
        validation.check_integer(max_steps, 'max_steps', accepted='None or an integer number of steps > 0')
        if steps is not None and steps <= 0:
            raise ValueError('Must specify steps > 0, given: {}'.format(steps))
        if max_steps is not None and max_steps <= 0:
            raise ValueError('Must specify max_steps > 0, given: {}'.format(max_steps))
        cluster = _cluster.training_cluster(self._config)
        if cluster is not None and self._config.task_type == 'worker':  # The chief schedules the steps.
            if steps is not None:
                max_steps = _load_global_step_from_checkpoint_dir(self._model_dir) + steps
            _cluster.serve_until_trained(self._config, cluster, max_steps)
            return self
        if max_steps is not None:
            start_step = _load_global_step_from_checkpoint_dir(self._model_dir)
            if max_steps <= start_step:
                logging.info('Skipping training since max_steps has already saved.')
                return self
        hooks = _check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        saving_listeners = _check_listeners_type(saving_listeners)
        if cluster is not None:
            _cluster.join_as_chief(cluster, self._config)
        loss = self._train_model(input_fn, hooks, saving_listeners)
        logging.info('Loss for final step: %s.', loss)
        return self

    def _train_model(self, input_fn, hooks: list, saving_listeners: list):
        strategy = self._config.train_distribute
        if _distributed.is_parameter_server(strategy):  # The job's parameter-server training runs it.
            strategy = None
        if saving_listeners and self._config.cluster_spec and _distributed.is_multi_worker(strategy):
            raise ValueError('Saving listenor is not supported by the current Distribution Strategies.')  # v1's.

        on_cluster = strategy is None and parameter_server.current() is not None

        def build():
            if strategy is not None:
                with _distributed.scope(strategy):
                    return build_distributed()
            global_step = self._start_graph()
            tf_internals.get_or_create_global_step_read()  # In v1's graph too.
            worker_input = None
            if on_cluster:  # Each worker reads the input_fn's dataset of its own, as in v1.
                features, labels, input_hooks, worker_input = self._input_on_workers(input_fn)
            else:
                features, labels, input_hooks = self._input(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            # The early-stopping hooks' variable, which v1 made in their begin().
            for hook in [*hooks, *spec.training_hooks, *spec.training_chief_hooks]:
                if hasattr(hook, 'create_graph_variables'):
                    hook.create_graph_variables()
            if self._warm_start_settings:
                self._warm_start()
            if not any(
                summary.op.name == 'loss' for summary in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
            ):
                tf.compat.v1.summary.scalar('loss', spec.loss)
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, spec.loss)
            if on_cluster:  # The NaN check on the worker: a hook would wait for every step's loss.
                nan_check = tf.debugging.Assert(tf.logical_not(tf.reduce_any(tf.math.is_nan(spec.loss))), [_NAN_LOSS])
                spec = spec._replace(train_op=tf.group(spec.train_op, nan_check))
            return _Program(spec, input_hooks, global_step, worker_input)

        def build_distributed():  # v1's `_actual_train_model_distributed`.
            global_step = self._start_graph()
            features, labels, input_hooks = _distributed.replica_inputs(
                strategy, _distributed.call_input_fn(strategy, input_fn, ModeKeys.TRAIN, self.params, self.config)
            )
            tf.compat.v1.add_to_collection(tf_internals.GLOBAL_STEP_READ_KEY, strategy.extended.read_var(global_step))
            grouped = _distributed.call_model_fn(
                strategy, self._call_model_fn, features, labels, ModeKeys.TRAIN, self.config
            )
            loss = _distributed.reported_loss(strategy, grouped.loss)
            spec = EstimatorSpec(
                ModeKeys.TRAIN,
                loss=loss,
                train_op=strategy.group(grouped.train_op),
                training_hooks=_distributed.hooks_of_first_replica(strategy, grouped.training_hooks),
                training_chief_hooks=_distributed.hooks_of_first_replica(strategy, grouped.training_chief_hooks),
                scaffold=_distributed.first_replica(strategy, grouped.scaffold),
            )
            if self._warm_start_settings:
                self._warm_start()
            if not any(
                summary.op.name == 'loss' for summary in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
            ):
                tf.compat.v1.summary.scalar('loss', loss)
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, loss)
            return _Program(spec, input_hooks, _distributed.first_replica(strategy, global_step))

        with self._graph(build, on_cluster=on_cluster) as wrapped:
            program = wrapped.outputs
            if program.worker_input is not None:
                wrapped.feed_from_workers(*program.worker_input)
            spec = program.spec
            worker_hooks = list(program.input_hooks) + hooks + ([] if on_cluster else [NanTensorHook(spec.loss)])
            if self._config.log_step_count_steps is not None:
                worker_hooks.append(
                    LoggingTensorHook(
                        {'loss': spec.loss, 'step': program.global_step}, every_n_iter=self._config.log_step_count_steps
                    )
                )
            worker_hooks.extend(spec.training_hooks)
            chief_hooks = self._checkpoint_hooks(
                wrapped, spec.scaffold, worker_hooks + list(spec.training_chief_hooks), saving_listeners
            )
            with (
                _distributed.session_scope(strategy),
                MonitoredTrainingSession(
                    master=self._config.master,
                    is_chief=self._config.is_chief,
                    checkpoint_dir=self._checkpoint_directory,
                    scaffold=spec.scaffold,
                    hooks=worker_hooks,
                    chief_only_hooks=tuple(chief_hooks) + tuple(spec.training_chief_hooks),
                    save_checkpoint_secs=0,
                    save_summaries_steps=self._config.save_summary_steps,
                    config=self._user_session_config,
                    max_wait_secs=self._config.session_creation_timeout_secs,
                    log_step_count_steps=self._config.log_step_count_steps,
                ) as session,
            ):
                summary_lib.keep_writer_open(self._model_dir)  # One events file per model_dir, as v1's cache.
                loss = None
                any_step_done = False
                if on_cluster:
                    loss, any_step_done = _train_on_cluster(session, spec, self._config.log_step_count_steps)
                else:
                    while not session.should_stop():
                        _, loss = session.run([spec.train_op, spec.loss])
                        any_step_done = True
        if not any_step_done:
            logging.warning('Training with estimator made no steps. Perhaps input is empty or misspecified.')
        return loss

    def _checkpoint_hooks(self, wrapped, scaffold, hooks: list, saving_listeners: list) -> list:
        """v1's default `CheckpointSaverHook` (unless a hook is one), with the saving listeners on the first.

        It saves the scaffold's `tf.compat.v1.train.Saver` when the spec has one (its `var_list` under its names,
        its `max_to_keep`), as v1 did; else every global variable, keeping `keep_checkpoint_max`.
        """
        chief_hooks = []
        saver_hooks = [hook for hook in hooks if isinstance(hook, CheckpointSaverHook)]
        if (self._config.save_checkpoints_secs or self._config.save_checkpoints_steps) and not saver_hooks:
            if isinstance(scaffold.saver, tf.compat.v1.train.Saver):
                checkpoint = scaffold.finalize().checkpoint
                max_to_keep, every_n_hours = scaffold.max_to_keep, scaffold.keep_checkpoint_every_n_hours
            else:
                checkpoint = wrapped.checkpoint
                max_to_keep = self._config.keep_checkpoint_max or None
                every_n_hours = self._config.keep_checkpoint_every_n_hours
            manager = self._checkpoint_directory.manager(
                checkpoint,
                max_to_keep=max_to_keep,
                keep_checkpoint_every_n_hours=every_n_hours,
                writes_files=_distributed.writes_model_dir(self._config.train_distribute),
            )
            chief_hooks = [
                CheckpointSaverHook(
                    self._checkpoint_directory,
                    save_secs=self._config.save_checkpoints_secs,
                    save_steps=self._config.save_checkpoints_steps,
                    saver=manager,
                    save_graph_def=self._config.checkpoint_save_graph_def,
                )
            ]
            saver_hooks = chief_hooks
        if saving_listeners:
            if not saver_hooks:
                raise ValueError(
                    'There should be a CheckpointSaverHook to use saving_listeners. Please set one of the '
                    'RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.'
                )
            listeners = saver_hooks[0]._listeners  # v1 added them so too.
            listeners.extend(listener for listener in saving_listeners if listener not in listeners)
        return chief_hooks

    # Evaluation.

    @_in_own_graph
    def evaluate(
        self,
        input_fn,
        steps: int | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Evaluates the model on `input_fn`'s data: `steps` batches, or until the data ends (v1's loop).

        The metrics are the spec's `eval_metric_ops` and the mean `loss`: their update ops run once per batch,
        their values once after the last. The results, stamped with the evaluated checkpoint's global step,
        go to `eval_dir(name)` as one v1 summary (and the checkpoint's path as a `checkpoint_path` text
        summary). Without a checkpoint, the freshly initialized model is evaluated (with a log line).

        Returns:
          A dict of the metric values (NumPy scalars, as v1 returned them), with `loss` and `global_step`.

        Raises:
          ValueError: `steps` not positive, or a metric named `loss` or `global_step` (v1's messages).
          TypeError: a hook of the wrong type (v1's message).
        """
        return self._evaluate(input_fn, steps, hooks, checkpoint_path, name)

    def _evaluate(self, input_fn, steps, hooks, checkpoint_path, name, variable_values: dict | None = None) -> dict:
        """`evaluate`; or, given `variable_values` ({v1 name: value}), of those values rather than a checkpoint.

        With `variable_values` (`InMemoryEvaluatorHook`'s evaluations), the model's variables that are named
        there take those values once the session is created, as v1's hook assigned them.
        """
        hooks = _check_hooks_type(hooks)
        validation.check_integer(steps, 'steps', accepted='None or an integer number of steps > 0')
        stop_hook = None
        if steps is not None:
            if steps <= 0:
                raise ValueError('Must specify steps > 0, given: {}'.format(steps))
            stop_hook = _evaluation.StopAfterNEvalsHook(num_evals=steps)
            hooks.append(stop_hook)
        checkpoint_path = validation.optional_directory(checkpoint_path, 'checkpoint_path')
        checkpoint_from = self._checkpoint_from(checkpoint_path, 'evaluate')
        if not checkpoint_path and variable_values is None:
            latest = checkpoints.latest_checkpoint(self._model_dir)
            if not latest:
                logging.info(
                    'Could not find trained model in model_dir: {}, running initialization to evaluate.'.format(
                        self._model_dir
                    )
                )
            checkpoint_path = latest

        strategy = self._config.eval_distribute

        def build():
            if strategy is None:
                spec, global_step, input_hooks, eval_dict, update_op = build_model(None)
            else:
                with _distributed.scope(strategy):
                    spec, global_step, input_hooks, eval_dict, update_op = build_model(strategy)
            eval_ops, eval_step_value = _evaluation.eval_step_ops(update_op)  # Outside the scope, as in v1.
            return _Program(
                spec, input_hooks, global_step, eval_dict=eval_dict, eval_ops=eval_ops, eval_step_value=eval_step_value
            )

        def build_model(strategy):
            global_step = self._start_graph()
            if strategy is None:
                features, labels, input_hooks = self._input(input_fn, ModeKeys.EVAL)
                spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            else:  # v1's `_call_model_fn_eval_distributed`: the metrics' updates run on every replica.
                features, labels, input_hooks = _distributed.replica_inputs(
                    strategy, _distributed.call_input_fn(strategy, input_fn, ModeKeys.EVAL, self.params, self.config)
                )
                grouped = _distributed.call_model_fn(
                    strategy, self._call_model_fn, features, labels, ModeKeys.EVAL, self.config
                )
                spec = _distributed.GroupedSpec(
                    loss=grouped.loss,
                    eval_metric_ops=grouped.eval_metric_ops,
                    evaluation_hooks=_distributed.hooks_of_first_replica(strategy, grouped.evaluation_hooks),
                    scaffold=_distributed.first_replica(strategy, grouped.scaffold),
                )
            metric_ops = dict(spec.eval_metric_ops)
            if LOSS_METRIC_KEY in metric_ops:
                raise ValueError(
                    'Metric with name "%s" is not allowed, because Estimator ' % LOSS_METRIC_KEY
                    + 'already defines a default metric with the same name.'
                )
            if strategy is None:
                metric_ops[LOSS_METRIC_KEY] = tf.compat.v1.metrics.mean(spec.loss)
            else:
                metric_ops[LOSS_METRIC_KEY] = strategy.extended.call_for_each_replica(
                    tf.compat.v1.metrics.mean, args=(spec.loss,)
                )
            eval_dict = {name: metric_ops[name][0] for name in sorted(metric_ops)}
            if strategy is not None:  # A metric's value is one tensor, or the same value on every replica.
                eval_dict = {name: _distributed.first_replica(strategy, value) for name, value in eval_dict.items()}
            update_op = tf.group(
                *[
                    metric_ops[name][1] if strategy is None else strategy.group(metric_ops[name][1])
                    for name in sorted(metric_ops)
                ]
            )
            if not checkpoint_path and self._warm_start_settings:
                self._warm_start()
            if _GLOBAL_STEP in eval_dict:
                raise ValueError(
                    'Metric with name `global_step` is not allowed, because Estimator already defines '
                    'a default metric with the same name.'
                )
            if strategy is None:
                eval_dict[_GLOBAL_STEP] = global_step
                return spec, global_step, input_hooks, eval_dict, update_op
            eval_dict[_GLOBAL_STEP] = strategy.extended.read_var(global_step)
            return spec, _distributed.first_replica(strategy, global_step), input_hooks, eval_dict, update_op

        with self._graph(build, checkpoint_from=checkpoint_from) as wrapped:
            program = wrapped.outputs
            if stop_hook is not None:
                stop_hook.set_evals_completed_tensor(program.eval_step_value)
            final_ops_hook = FinalOpsHook(program.eval_dict)
            all_hooks = list(program.input_hooks) + hooks + list(program.spec.evaluation_hooks) + [final_ops_hook]
            if variable_values is not None:
                all_hooks.insert(0, _evaluation.AssignVariablesHook(wrapped, program.spec.scaffold, variable_values))
            logging.info('Starting evaluation at ' + time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime()))
            start = time.time()
            with _distributed.session_scope(strategy):
                creator = self._evaluation_session_creator(program.spec.scaffold, checkpoint_path)
                with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                    while not session.should_stop():
                        session.run(program.eval_ops)
            logging.info('Inference Time : {:0.5f}s'.format(time.time() - start))
            logging.info('Finished evaluation at ' + time.strftime('%Y-%m-%d-%H:%M:%S', time.localtime()))
            results = _evaluation.results_as_v1(final_ops_hook.final_ops_values)
            graph_def = wrapped.graph_def  # Made only for the directory's first events file.
        current_global_step = results[_GLOBAL_STEP]
        if not _distributed.writes_model_dir(strategy):
            return results  # The cluster's metrics, on every worker; the chief writes them.
        output_dir = self.eval_dir(name)
        _evaluation.write_dict_to_summary(output_dir, results, current_global_step, graph_def)
        if checkpoint_path:
            _evaluation.write_checkpoint_path_to_summary(output_dir, checkpoint_path, current_global_step, graph_def)
        return results

    def _evaluation_session_creator(self, scaffold, checkpoint_path: str | None):
        """The creator of `evaluate`'s session: it restores `checkpoint_path`, or initializes.

        In a multi-worker cluster (`eval_distribute`) the other workers restore what the chief restored, so
        that every worker evaluates the same checkpoint even when a newer one came in between.
        """
        if not _distributed.writes_model_dir(self._config.eval_distribute):
            return WorkerSessionCreator(
                scaffold=scaffold,
                master=self._config.evaluation_master,
                config=self._user_session_config,
                max_wait_secs=self._config.session_creation_timeout_secs,
            )
        return ChiefSessionCreator(
            scaffold=scaffold,
            checkpoint_filename_with_path=checkpoint_path,
            master=self._config.evaluation_master,
            config=self._user_session_config,
        )

    # Prediction.

    @_in_own_graph_per_step
    def predict(
        self,
        input_fn,
        predict_keys=None,
        hooks=None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator:
        """Yields the predictions of the model for `input_fn`'s features, until the data ends (v1's).

        A generator, as in v1: nothing runs before the first `next()`. With `yield_single_examples` each
        example's predictions are yielded (a dict if `predictions` is one), else each batch's.

        Raises:
          ValueError: `predict_keys` with non-dict predictions or matching none of them, or predictions of
            different batch lengths (v1's messages).
        """
        hooks = _check_hooks_type(hooks)
        checkpoint_path = validation.optional_directory(checkpoint_path, 'checkpoint_path')
        checkpoint_from = self._checkpoint_from(checkpoint_path, 'predict')
        if not checkpoint_path:
            checkpoint_path = checkpoints.latest_checkpoint(self._model_dir)
        if not checkpoint_path:
            logging.info(
                'Could not find trained model in model_dir: {}, running initialization to predict.'.format(
                    self._model_dir
                )
            )

        def build():
            global_step = self._start_graph()
            features, _, input_hooks = self._input(input_fn, ModeKeys.PREDICT)
            _inputs.warn_unless_from_dataset(features)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            if not checkpoint_path and self._warm_start_settings:
                self._warm_start()
            return _Program(spec, input_hooks, global_step, predictions=_extract_keys(spec.predictions, predict_keys))

        with self._graph(build, checkpoint_from=checkpoint_from) as wrapped:
            program = wrapped.outputs
            predictions = program.predictions
            all_hooks = list(program.input_hooks) + hooks + list(program.spec.prediction_hooks)
            creator = ChiefSessionCreator(
                scaffold=program.spec.scaffold,
                checkpoint_filename_with_path=checkpoint_path,
                master=self._config.master,
                config=self._user_session_config,
            )
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for index in range(_extract_batch_length(values)):
                            yield {key: value[index] for key, value in values.items()}

    # Export.

    @_in_own_graph
    def export_saved_model(
        self,
        export_dir_base,
        serving_input_receiver_fn,
        assets_extra=None,
        as_text=False,
        checkpoint_path=None,
        experimental_mode=ModeKeys.PREDICT,
    ) -> bytes:
        """Exports the PREDICT graph, with the checkpoint's values, as a TF2 SavedModel (v1's arguments).

        `serving_input_receiver_fn()` returns a `compat_mts.estimator.export.ServingInputReceiver`; the
        `model_fn` is built on its features in PREDICT mode and the checkpoint (the latest of `model_dir`
        by default) is restored into it. The SavedModel, written by `tf.saved_model.save` into
        `export_dir_base/<timestamp>`, has TF 2.15's signatures: one per `export_outputs` entry (and per
        receiver alternative) that TF Serving can serve, classify and regress ones taking the string receiver
        tensor as `inputs`, predict ones the receiver tensors by key; `tf.saved_model.load(path)` loads it.

        Returns:
          The export directory, as bytes (v1 returned bytes).

        Raises:
          ValueError: no `serving_input_receiver_fn`, no checkpoint, or a checkpoint that lacks variables of
            the graph (v1's messages).
          NotImplementedError: a mode other than PREDICT, or a graph holding resources other than variables
            (lookup tables), which a TF2 SavedModel of this graph cannot track.
        """
        if not serving_input_receiver_fn:
            raise ValueError('An input_receiver_fn must be defined.')
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError(
                'compat_mts.estimator exports the PREDICT graph only (a TF2 SavedModel of serving signatures); '
                f'got experimental_mode={experimental_mode!r}.'
            )
        checkpoint_from = self._checkpoint_from(checkpoint_path, 'export_saved_model')
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
        if not checkpoint_path:
            if not self._warm_start_settings:
                raise ValueError("Couldn't find trained model at {}.".format(self._model_dir))
            checkpoint_from = _WARM_START_FROM
            checkpoint_path = self._warm_start_settings.ckpt_to_initialize_from
            if tf.io.gfile.isdir(checkpoint_path):
                checkpoint_path = checkpoints.latest_checkpoint(checkpoint_path)

        def build():
            global_step = self._start_graph()
            receiver = serving_input_receiver_fn()
            spec = self._call_model_fn(
                receiver.features, getattr(receiver, 'labels', None), ModeKeys.PREDICT, self.config
            )
            return _Program(spec, [], global_step, receiver=receiver)

        with self._graph(build, checkpoint_from=checkpoint_from) as wrapped:
            scaffold = wrapped.outputs.spec.scaffold
            scaffold.check_restored_every_variable()  # The export restores through its Saver too.
            return _saved_model.export(
                wrapped,
                wrapped.outputs.receiver,
                wrapped.outputs.spec.export_outputs,
                checkpoint_path,
                export_dir_base,
                assets_extra=assets_extra,
                as_text=as_text,
                checkpoint=scaffold.checkpoint if isinstance(scaffold.saver, tf.compat.v1.train.Saver) else None,
            )

    def export_savedmodel(
        self,
        export_dir_base,
        serving_input_receiver_fn,
        assets_extra=None,
        as_text=False,
        checkpoint_path=None,
        strip_default_attrs=False,
    ) -> bytes:
        """v1's deprecated name of `export_saved_model` (PREDICT mode); warns once per process, as v1 did.

        `strip_default_attrs` is accepted: a TF2 SavedModel has no such choice.

        Returns:
          The export directory, as bytes.

        Raises:
          ValueError: as `export_saved_model`.
        """
        global _EXPORT_SAVEDMODEL_WARNED
        if not _EXPORT_SAVEDMODEL_WARNED:
            _EXPORT_SAVEDMODEL_WARNED = True
            logging.warning(
                'Estimator.export_savedmodel is deprecated and will be removed in a future version.\n'
                'Instructions for updating:\nThis function has been renamed, use `export_saved_model` instead.'
            )
        del strip_default_attrs
        return self.export_saved_model(
            export_dir_base,
            serving_input_receiver_fn,
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
        )

    # Building the graph of a mode.

    @contextlib.contextmanager
    def _graph(self, build_fn: Callable[[], _Program], on_cluster: bool = False, checkpoint_from=_MODEL_DIR):
        """The graph `build_fn` builds, wrapped; dropped afterwards, with the global step registered before.

        Only training runs on a parameter-server cluster (`on_cluster`); a chief's evaluation, prediction
        and export run in its own process, as v1's did in a local session (`evaluation_master` '').
        `checkpoint_from` is who was given the checkpoint the call restores, as what argument (`_checkpoint_from`):
        a `CheckpointMismatchError` names it.
        """
        previous = global_step_lib.registration()
        with contextlib.nullcontext() if on_cluster else deployment_lib.local():
            wrapped = legacy.wrap_graph(build_fn)
            try:
                with monitored_session.hooks_begin_in(wrapped):  # The hooks' begin() in the open graph, as in v1.
                    yield wrapped
            # A checkpoint of `evaluate`, `predict` or an export, read as a file (the training session's is named
            # by its `CheckpointDirectory`).
            except checkpoints.CheckpointMismatchError as error:
                owner, argument, directory = checkpoint_from
                raise error.naming(owner, argument, directory=directory) from None
            finally:
                legacy.forget_graph(wrapped)
                global_step_lib.restore_registration(previous)

    def _checkpoint_from(self, checkpoint_path: str | None, call: str) -> tuple[str, str, bool]:
        """Who was given `checkpoint_path`, the checkpoint `call` restores, as what argument, and whether that is a
        directory: `call`'s `checkpoint_path`, unless it is a checkpoint of `model_dir` (the latest, which
        `train_and_evaluate` and the exporters pass), or the Estimator's `warm_start_from` when it is that one."""
        if not checkpoint_path:
            return _MODEL_DIR
        directory = os.path.dirname(checkpoints.expand_directory(checkpoint_path))
        if os.path.realpath(directory) == os.path.realpath(checkpoints.expand_directory(self._model_dir)):
            return _MODEL_DIR
        return (f'Estimator.{call}', 'checkpoint_path', False)

    def _start_graph(self):
        """What v1 did first in each mode's graph: the random seed, then the global step."""
        tf.compat.v1.set_random_seed(self._config.tf_random_seed)
        global_step = tf.compat.v1.train.create_global_step()
        if not global_step.dtype.is_integer:
            raise AssertionError('The global step must be an integer variable.')
        return global_step

    def _input(self, input_fn, mode: str):
        return _inputs.parse_input_fn_result(_inputs.call_input_fn(input_fn, mode, self.params, self.config))

    def _input_on_workers(self, input_fn):
        """The training input of a parameter-server chief: placeholders fed from each worker's own dataset.

        Returns `(features, labels, input_hooks, worker_input)`: `worker_input` is the placeholders and the
        dataset function for `feed_from_workers`, or None for an `input_fn` that returns tensors, which stay in
        the graph (they run on the worker of each step).
        """
        result = _inputs.call_input_fn(input_fn, ModeKeys.TRAIN, self.params, self.config)
        if not isinstance(result, tf.data.Dataset):
            return (*_inputs.parse_input_fn_result(result), None)
        features, labels, placeholders = _inputs.placeholders_like(result)
        dataset_fn = lambda: _inputs.call_input_fn(input_fn, ModeKeys.TRAIN, self.params, self.config)  # noqa: E731
        return features, labels, [], (placeholders, dataset_fn)

    def _warm_start(self) -> None:
        logging.info('Warm-starting with WarmStartSettings: %s' % (self._warm_start_settings,))
        settings = self._warm_start_settings
        given = settings.ckpt_to_initialize_from
        if tf.io.gfile.isdir(given):  # Its state file read as the session reads it.
            latest = checkpoints.latest_checkpoint(given)
            if latest is not None:
                settings = settings._replace(ckpt_to_initialize_from=latest)
        try:
            tf.compat.v1.train.warm_start(*settings)
        except ValueError as error:  # "Tensor w is not found in <checkpoint> checkpoint {...}", naming what was given.
            resolved = settings.ckpt_to_initialize_from
            if resolved == given or f' in {resolved} checkpoint' not in str(error):
                raise
            raise ValueError(str(error).replace(f' in {resolved} checkpoint', f' in {given} checkpoint', 1)) from None

    def _call_model_fn(self, features, labels, mode: str, config: RunConfig) -> EstimatorSpec:
        """Calls `model_fn` with the arguments it names (v1's rules and messages)."""
        arguments = tf_internals.fn_args(self._model_fn)
        kwargs = {}
        if 'labels' in arguments:
            kwargs['labels'] = labels
        elif labels is not None:
            raise ValueError('model_fn does not take labels, but input_fn returns labels.')
        if 'mode' in arguments:
            kwargs['mode'] = mode
        if 'params' in arguments:
            kwargs['params'] = self.params
        if 'config' in arguments:
            kwargs['config'] = config
        logging.info('Calling model_fn.')
        try:
            spec = self._model_fn(features=features, **kwargs)
        except TypeError as error:
            explained = _inputs.explain_model_fn_error(features, error)
            if explained is None:
                raise
            raise explained from error
        logging.info('Done calling model_fn.')
        if not isinstance(spec, EstimatorSpec):
            raise ValueError('model_fn should return an EstimatorSpec.')
        return spec


_NAN_LOSS = 'compat_mts: NaN loss during training.'


def _train_on_cluster(session, spec: EstimatorSpec, log_step_count_steps: int | None) -> tuple[Any, bool]:
    """The training loop of a parameter-server chief: `(the last loss fetched, whether a step ran)`.

    A run that fetches nothing returns once its step is scheduled, which keeps every worker busy; the loss is
    fetched every `log_step_count_steps` runs (100 without), so "Loss for final step" is that run's. A NaN loss
    fails the step on its worker (the check is in the train op) and is raised here as v1's
    `NanLossDuringTrainingError`.
    """
    loss, runs, every = None, 0, log_step_count_steps or 100
    try:
        while not session.should_stop():
            if runs % every == 0:
                _, loss = session.run([spec.train_op, spec.loss])
            else:
                session.run(spec.train_op)
            runs += 1
    except tf.errors.InvalidArgumentError as error:
        if _NAN_LOSS not in (error.message or ''):
            raise
        raise NanLossDuringTrainingError from error
    return loss, runs > 0


def _assert_members_are_not_overridden(cls: type, obj: Any) -> None:
    if obj.__class__.__name__ == 'TPUEstimator':
        return  # v1's exception: the TPUEstimator overrides how input_fn and model_fn are called.
    allowed_overrides = {'model_fn', '_create_and_assert_global_step', '_export_all_saved_models', 'latest_checkpoint'}
    estimator_members = {member for member in dir(cls) if not member.startswith('__')}
    subclass_members = set(obj.__class__.__dict__)
    common = estimator_members & subclass_members - allowed_overrides
    overridden = [member for member in common if getattr(cls, member) != getattr(obj.__class__, member)]
    if overridden:
        raise ValueError(
            'Subclasses of Estimator cannot override members of Estimator. {} does override {}'.format(
                obj.__class__, overridden
            )
        )


def _config_with_model_dir(config: RunConfig | None, model_dir) -> RunConfig:
    """v1's resolution of `config` and `model_dir`: one of them, the same in both, or a temporary directory."""
    if config is None:
        config = RunConfig()
        logging.info('Using default config.')
    if not isinstance(config, RunConfig):
        raise ValueError('config must be an instance of `RunConfig`, but provided %s.' % config)
    if config.session_config is None:
        config = config.replace(session_config=get_default_session_config())
    if model_dir is not None:
        model_dir = validation.path(model_dir, 'model_dir', empty='a temporary directory, as in v1')
        if config.model_dir is not None and config.model_dir != model_dir:
            raise ValueError(
                '`model_dir` are set both in constructor and `RunConfig`, but with different values. In '
                "constructor: '{}', in `RunConfig`: '{}' ".format(model_dir, config.model_dir)
            )
    if model_dir:
        config = config.replace(model_dir=model_dir)
    elif config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        logging.warning('Using temporary folder as model directory: %s', model_dir)
        config = config.replace(model_dir=model_dir)
    return config


def _verify_model_fn_args(model_fn: Callable, params) -> None:
    arguments = set(tf_internals.fn_args(model_fn))
    if 'features' not in arguments:
        raise ValueError('model_fn (%s) must include features argument.' % model_fn)
    if params is not None and 'params' not in arguments:
        raise ValueError(
            'model_fn (%s) does not include params argument, but params (%s) is passed to Estimator.'
            % (model_fn, params)
        )
    if params is None and 'params' in arguments:
        logging.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not passed to Estimator.", model_fn
        )
    unexpected = list(arguments - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError('model_fn (%s) has following not expected args: %s' % (model_fn, unexpected))


def _get_default_warm_start_settings(warm_start_from) -> WarmStartSettings | None:
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        warm_start_from = validation.path(warm_start_from, 'warm_start_from')
        if tf.io.gfile.exists(os.path.join(warm_start_from, 'variables', 'variables.index')):
            logging.info('Warm-starting from a SavedModel')
            return WarmStartSettings(ckpt_to_initialize_from=os.path.join(warm_start_from, 'variables', 'variables'))
        return WarmStartSettings(ckpt_to_initialize_from=warm_start_from)
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    raise ValueError(
        'warm_start_from must be a string or a WarmStartSettings, instead got {}'.format(type(warm_start_from))
    )


def _checkpoint_available(model_dir: str) -> str:
    """The latest checkpoint of `model_dir`; v1's ValueError if there is none."""
    latest = checkpoints.latest_checkpoint(model_dir)
    if not latest:
        raise ValueError('Could not find trained model in model_dir: {}.'.format(model_dir))
    return latest


def _check_hooks_type(hooks) -> list:
    """The hooks as a list (v1's TypeError for a non-hook), v1 built-in hooks as their compat_mts twins."""
    hooks = validation.hook_list(hooks or None)
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError('Hooks must be a SessionRunHook, given: {}'.format(hook))
    return _hooks.as_compat_hooks(hooks)


def _check_listeners_type(saving_listeners) -> list:
    listeners = list(saving_listeners or [])
    for listener in listeners:
        if not isinstance(listener, (CheckpointSaverListener, tf.compat.v1.train.CheckpointSaverListener)):
            raise TypeError('saving_listeners must be a list of CheckpointSaverListener, given: {}'.format(listener))
    return listeners


def _load_global_step_from_checkpoint_dir(checkpoint_dir: str) -> int:
    """The global step of the latest checkpoint of `checkpoint_dir` (v1 or compat_mts format), or 0."""
    latest = checkpoints.latest_checkpoint(checkpoint_dir)
    if latest is None:
        return 0
    try:
        names = CheckpointNames(latest)
        if _GLOBAL_STEP not in names.keys:
            return 0
        return int(tf.train.load_checkpoint(latest).get_tensor(names.keys[_GLOBAL_STEP]))
    except (tf.errors.OpError, ValueError):
        return 0


def _extract_keys(predictions, predict_keys):
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError('predict_keys argument is not valid in case of non-dict predictions.')
    existing_keys = predictions.keys()
    predictions = {key: value for key, value in predictions.items() if key in predict_keys}
    if not predictions:
        raise ValueError('Expected to run at least one output from %s, provided %s.' % (existing_keys, predict_keys))
    return predictions


def _extract_batch_length(values: dict) -> int:
    batch_length = None
    for key, value in values.items():
        batch_length = batch_length or value.shape[0]
        if value.shape[0] != batch_length:
            raise ValueError(
                'Batch length of predictions should be same. %s has different batch length than others.' % key
            )
    return batch_length
