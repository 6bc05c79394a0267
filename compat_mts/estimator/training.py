"""`TrainSpec`, `EvalSpec` and `train_and_evaluate`: v1's train-then-evaluate loop, locally or per task of a job.

As in v1's local (non-distributed) mode, `train_and_evaluate` calls `Estimator.train` once, with a
checkpoint listener that evaluates (and runs the exporters) after each new checkpoint once at least
`throttle_secs` have passed since the last evaluation, and after the last step. In a `TF_CONFIG` cluster each
task does its part, as v1's `_TrainingExecutor` did: the chief and workers train (`estimator._cluster` says how
on TensorFlow 2), the ps tasks serve, the legacy `master` trains and evaluates after its checkpoints, and the
evaluator evaluates each new checkpoint in a process of its own until the global step reaches `max_steps`.
"""

from __future__ import annotations

import collections
import os
import time

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.core import validation
from compat_mts.estimator import _cluster, _distributed
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.export.exporter import Exporter
from compat_mts.hooks.checkpoint import CheckpointSaverListener
from compat_mts.hooks.timer import SecondOrStepTimer


def _validate_input_fn(input_fn) -> None:
    if not callable(input_fn):
        raise TypeError('`input_fn` must be callable, given: {}'.format(input_fn))


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError('All hooks must be `SessionRunHook` instances, given: {}'.format(hook))
    return hooks


def _validate_saving_listeners(saving_listeners) -> tuple:
    saving_listeners = tuple(saving_listeners or [])
    for listener in saving_listeners:
        if not isinstance(listener, (CheckpointSaverListener, tf.compat.v1.train.CheckpointSaverListener)):
            raise TypeError(
                'All saving_listeners must be `CheckpointSaverListener` instances, given: {}'.format(listener)
            )
    return saving_listeners


def _validate_exporters(exporters) -> tuple:
    if not exporters:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    names = []
    try:
        for exporter in exporters:
            if not isinstance(exporter, Exporter):
                raise TypeError
            if not exporter.name:
                raise ValueError(
                    'An Exporter cannot have a name that is `None` or empty. All exporter names: {}'.format(
                        [e.name for e in exporters]
                    )
                )
            if not isinstance(exporter.name, str):
                raise ValueError('An Exporter must have a string name. Given: {}'.format(type(exporter.name)))
            if exporter.name in names:
                raise ValueError(
                    '`exporters` must have unique names. Such a name cannot be `None`. All exporter names: {}'.format(
                        [e.name for e in exporters]
                    )
                )
            names.append(exporter.name)
    except TypeError:
        raise TypeError(
            '`exporters` must be an Exporter, an iterable of Exporter, or `None`, found %s.' % exporters
        ) from None
    return tuple(exporters)


class TrainSpec(collections.namedtuple('TrainSpec', ['input_fn', 'max_steps', 'hooks', 'saving_listeners'])):
    """The training part of `train_and_evaluate`: data, total steps, hooks, listeners (v1's checks)."""

    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        _validate_input_fn(input_fn)
        validation.check_integer(max_steps, 'max_steps', accepted='None or an integer number of steps > 0')
        if max_steps is not None and max_steps <= 0:
            raise ValueError('Must specify max_steps > 0, given: {}'.format(max_steps))
        return super().__new__(
            cls,
            input_fn=input_fn,
            max_steps=max_steps,
            hooks=_validate_hooks(hooks),
            saving_listeners=_validate_saving_listeners(saving_listeners),
        )


class EvalSpec(
    collections.namedtuple(
        'EvalSpec', ['input_fn', 'steps', 'name', 'hooks', 'exporters', 'start_delay_secs', 'throttle_secs']
    )
):
    """The evaluation part of `train_and_evaluate` (v1's fields, defaults and checks).

    `start_delay_secs` concerned v1's separate evaluator task; in one process it is unused, as in v1's
    local mode.
    """

    def __new__(
        cls, input_fn, steps=100, name=None, hooks=None, exporters=None, start_delay_secs=120, throttle_secs=600
    ):
        _validate_input_fn(input_fn)
        validation.check_integer(steps, 'steps', accepted='None or an integer number of steps > 0')
        if steps is not None and steps <= 0:
            raise ValueError('Must specify steps > 0, given: {}'.format(steps))
        if name is not None and not isinstance(name, str):
            raise TypeError('`name` must be string, given: {}'.format(name))
        hooks = _validate_hooks(hooks)
        exporters = _validate_exporters(exporters)
        validation.check_seconds(
            start_delay_secs, 'start_delay_secs', optional=False, infinity='is unused in one process, as in v1'
        )
        validation.check_seconds(
            throttle_secs,
            'throttle_secs',
            optional=False,
            infinity='evaluates after the first checkpoint of the training and after the last step only',
        )
        if start_delay_secs < 0:
            raise ValueError('Must specify start_delay_secs >= 0, given: {}'.format(start_delay_secs))
        if throttle_secs < 0:
            raise ValueError('Must specify throttle_secs >= 0, given: {}'.format(throttle_secs))
        return super().__new__(
            cls,
            input_fn=input_fn,
            steps=steps,
            name=name,
            hooks=hooks,
            exporters=exporters,
            start_delay_secs=start_delay_secs,
            throttle_secs=throttle_secs,
        )


class _Evaluator:
    """Evaluates the latest checkpoint (unless it was evaluated already) and runs the exporters."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_training_steps):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_checkpoint_path = None
        self._last_warning_time = 0.0

    def evaluate_and_export(self):
        """`(metrics or None, export results)`: None when there is no new checkpoint to evaluate."""
        latest = self._estimator.latest_checkpoint()
        if not latest:
            self._warn('Estimator is not trained yet. Will start an evaluation when a checkpoint is ready.')
            return None, []
        if latest == self._previous_checkpoint_path:
            self._warn(
                'No new checkpoint ready for evaluation. Skip the current evaluation pass as evaluation '
                'results are expected to be same for the same checkpoint.'
            )
            return None, []
        try:
            metrics = self._estimator.evaluate(
                input_fn=self._eval_spec.input_fn,
                steps=self._eval_spec.steps,
                name=self._eval_spec.name,
                checkpoint_path=latest,
                hooks=self._eval_spec.hooks,
            )
        except tf.errors.NotFoundError:
            if tf.io.gfile.exists(latest + '.index'):
                raise
            # A separate evaluator slower than the chief's saves: `keep_checkpoint_max` removed the checkpoint
            # before it was read (v1's evaluator failed there). The next pass takes the newest one.
            logging.warning('The checkpoint %s was removed before it could be evaluated; skipping it.', latest)
            return None, []
        is_the_final_export = (
            metrics[tf.compat.v1.GraphKeys.GLOBAL_STEP] >= self._max_training_steps
            if self._max_training_steps
            else False
        )
        export_dir_base = os.path.join(self._estimator.model_dir, 'export')
        export_results = [
            exporter.export(
                estimator=self._estimator,
                export_path=os.path.join(export_dir_base, exporter.name),
                checkpoint_path=latest,
                eval_result=metrics,
                is_the_final_export=is_the_final_export,
            )
            for exporter in self._eval_spec.exporters
        ]
        self._previous_checkpoint_path = latest
        self._last_warning_time = 0.0
        return metrics, export_results

    def _warn(self, message: str) -> None:
        """Logs `message` at most every 10 minutes, as v1's evaluator did while it waited."""
        if time.time() - self._last_warning_time > 600:
            logging.warning(message)
            self._last_warning_time = time.time()


class _NewCheckpointListenerForEvaluate(CheckpointSaverListener):
    """Evaluates after each checkpoint save, at most every `eval_throttle_secs`, and after the last step."""

    def __init__(self, evaluator: _Evaluator, eval_throttle_secs):
        self._evaluator = evaluator
        self._eval_throttle_secs = eval_throttle_secs
        self.eval_result, self.export_results = None, None

    def begin(self):
        self._timer = SecondOrStepTimer(every_secs=self._eval_throttle_secs)
        self._is_first_run = True

    def after_save(self, session, global_step_value):
        if self._is_first_run:  # The checkpoint of the session's creation: nothing new was trained.
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            logging.info(
                'Skip the current checkpoint eval due to throttle secs ({} secs).'.format(self._eval_throttle_secs)
            )

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        metrics, export_results = self._evaluator.evaluate_and_export()
        if metrics is None:
            raise RuntimeError('There was no new checkpoint after the training.')
        self.eval_result, self.export_results = metrics, export_results


def train_and_evaluate(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec):
    """Trains `estimator` and evaluates it after its checkpoints: locally, or this task's part of a job.

    Without a cluster in `TF_CONFIG`: training runs once, to `train_spec.max_steps`; an evaluation of
    `eval_spec` follows each checkpoint save (`RunConfig.save_checkpoints_steps`/`_secs`) when
    `eval_spec.throttle_secs` have passed since the last one, and the last step's checkpoint is always
    evaluated. In a cluster, per `RunConfig.task_type` (v1's `_TrainingExecutor`):

    - `chief`: trains, with `train_spec.saving_listeners`; with ps tasks, on the cluster (its variables on the
      ps tasks, its steps on the workers);
    - `worker`: with ps tasks, serves the chief's steps until training has ended; without, trains as v1;
    - `ps`: serves until training has ended, then returns (v1's joined forever);
    - `master` (legacy): trains like the chief, and evaluates after its checkpoints as in local mode;
    - with a multi-worker `train_distribute` (`MultiWorkerMirroredStrategy`), every chief and worker task
      trains together, synchronously, and the chief writes;
    - `evaluator` (index 0 only): waits `eval_spec.start_delay_secs`, then evaluates each new checkpoint at most
      every `eval_spec.throttle_secs` and runs the exporters, until an evaluation's global step reaches
      `train_spec.max_steps` (forever without one).

    A task that watches the ps tasks (workers, ps, the evaluator) raises `LostTaskError` when one stops
    answering before training has ended, so the job fails instead of hanging.

    Returns:
      Locally, `(metrics of the last evaluation, export results of the exporters)`; None in a cluster, as v1.

    Raises:
      TypeError: an argument of the wrong type (v1's messages).
      ValueError: an evaluator with an index other than 0, or a task type v1 did not run (v1's messages).
    """
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError('`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {}'.format(type(eval_spec)))
    if not isinstance(estimator, Estimator):
        raise TypeError('`estimator` must have type `tf.estimator.Estimator`. Got: {}'.format(type(estimator)))
    if not isinstance(train_spec, TrainSpec):
        raise TypeError('`train_spec` must have type `tf.estimator.TrainSpec`. Got: {}'.format(type(train_spec)))
    config = estimator.config
    if config.task_type == 'evaluator' and config.task_id > 0:
        raise ValueError(
            'For distributed training, there can only be one `evaluator` task (with task id 0).  Given task id '
            '{}'.format(config.task_id)
        )
    if config.task_type != 'evaluator' and _train_multi_worker(estimator, train_spec):
        return None  # TF 2.15's distribute coordinator returned nothing.
    if not config.cluster_spec and config.task_type != 'evaluator':
        logging.info('Running training and evaluation locally (non-distributed).')
        return _train_evaluating_after_checkpoints(estimator, train_spec, eval_spec)
    if config.task_type == 'local':
        raise ValueError(
            '`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and `task` properties in TF_CONFIG '
            'absent triggers train and evaluate `Estimator` locally (non-distributed).'
        )
    tasks = {
        'chief': lambda: _train(estimator, train_spec, train_spec.saving_listeners),
        'worker': lambda: _train(estimator, train_spec, ()),
        'master': lambda: _train_evaluating_after_checkpoints(estimator, train_spec, eval_spec),
        'ps': lambda: _serve(estimator, train_spec),
        'evaluator': lambda: _evaluate_continuously(estimator, train_spec, eval_spec),
    }
    if config.task_type not in tasks:
        raise ValueError(
            'Task type {} is not supported. Supported task types are {}'.format(config.task_type, sorted(tasks))
        )
    tasks[config.task_type]()
    return None


def _train(estimator: Estimator, train_spec: TrainSpec, saving_listeners) -> None:
    estimator.train(
        input_fn=train_spec.input_fn,
        max_steps=train_spec.max_steps,
        hooks=list(train_spec.hooks),
        saving_listeners=saving_listeners,
    )


def _serve(estimator: Estimator, train_spec: TrainSpec) -> None:
    cluster = _cluster.training_cluster(estimator.config)
    if cluster is None:
        raise ValueError(
            'A ps task serves the variables of parameter-server training, and this job has no ps part: '
            f'RunConfig(train_distribute={estimator.config.train_distribute!r}) distributes its training.'
        )
    _cluster.serve_until_trained(estimator.config, cluster, train_spec.max_steps)


def _train_evaluating_after_checkpoints(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec):
    """v1's local mode (and its `master`): one `train`, evaluating after each new checkpoint."""
    config = estimator.config
    logging.info(
        'Start train and evaluate loop. The evaluate will happen after every checkpoint. Checkpoint '
        'frequency is determined based on RunConfig arguments: save_checkpoints_steps {} or '
        'save_checkpoints_secs {}.'.format(config.save_checkpoints_steps, config.save_checkpoints_secs)
    )
    evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
    listener = _NewCheckpointListenerForEvaluate(evaluator, eval_spec.throttle_secs)
    _train(estimator, train_spec, train_spec.saving_listeners + (listener,))
    return listener.eval_result, listener.export_results


def _evaluate_continuously(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """The evaluator's loop (v1's `_start_continuous_evaluation`), watching the ps tasks of `TF_CONFIG`."""
    watch = _cluster.ClusterWatch(validation.read_tf_config().get('cluster') or {})
    max_steps = train_spec.max_steps
    if eval_spec.start_delay_secs:
        logging.info('Waiting %f secs before starting eval.', eval_spec.start_delay_secs)
        _wait(eval_spec.start_delay_secs, watch, estimator.model_dir, max_steps)
    evaluator = _Evaluator(estimator, eval_spec, max_steps)
    while True:
        start = time.time()
        metrics, _ = evaluator.evaluate_and_export()
        global_step = metrics.get(tf.compat.v1.GraphKeys.GLOBAL_STEP) if metrics else None
        if global_step and max_steps and global_step >= max_steps:
            logging.info('Exiting evaluation, global_step=%s >= train max_steps=%s', global_step, max_steps)
            return
        remaining = eval_spec.throttle_secs - (time.time() - start)
        if remaining > 0:
            logging.info('Waiting %f secs before starting next eval run.', remaining)
        elif eval_spec.throttle_secs == 0 and metrics is None:
            logging.warning(
                'EvalSpec.throttle_secs is set as 0. This might overload the job before finding (next) new '
                'checkpoint. Please consider to increase it.'
            )
        _wait(max(remaining, _cluster.POLL_SECS if metrics is None else 0.0), watch, estimator.model_dir, max_steps)


def _wait(seconds: float, watch: _cluster.ClusterWatch, model_dir: str, max_steps) -> None:
    """Sleeps `seconds`, raising `LostTaskError` as soon as `watch` finds a ps task lost before training ended."""
    deadline = time.monotonic() + seconds
    while True:
        _cluster.raise_if_lost(watch, model_dir, max_steps)
        left = deadline - time.monotonic()
        if left <= 0:
            return
        _cluster.sleep(min(left, _cluster.POLL_SECS))


def _train_multi_worker(estimator: Estimator, train_spec: TrainSpec) -> bool:
    """A trainer task's `train_and_evaluate` under `RunConfig(train_distribute=MultiWorkerMirroredStrategy)` on a
    `TF_CONFIG` cluster, as TF 2.15's distribute coordinator ran it (independent workers); False elsewhere.

    Every chief and worker task calls `estimator.train(input_fn, max_steps, hooks)` of `train_spec` (without its
    saving listeners, as TF 2.15), together: the strategy all-reduces their gradients and the chief writes the
    checkpoints and summaries. Nothing is evaluated in these tasks: that is the evaluator's.

    Returns:
      Whether this task trained (the cluster is one of a multi-worker `train_distribute`).
    """
    config = estimator.config
    if not (config.cluster_spec and _distributed.is_multi_worker(config.train_distribute)):
        return False
    logging.info(
        'Running `train_and_evaluate` on the %s cluster, as task %s %d.',
        type(config.train_distribute).__name__,
        config.task_type,
        config.task_id,
    )
    estimator.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps, hooks=list(train_spec.hooks))
    return True
