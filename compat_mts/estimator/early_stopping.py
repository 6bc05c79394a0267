"""Early stopping of an Estimator's training on its evaluations: v1's `tf.estimator.experimental` stop hooks.

`stop_if_higher_hook`, `stop_if_lower_hook`, `stop_if_no_increase_hook` and `stop_if_no_decrease_hook` read the
evaluation events that `evaluate` (and so `train_and_evaluate`) wrote to `estimator.eval_dir()`, every
`run_every_secs` seconds or `run_every_steps` steps of training, and stop the training when the metric has
crossed a threshold or not improved for a number of steps; `make_early_stopping_hook` does so on any predicate.
Their arguments, defaults, rules and log lines are v1's, so on the same evaluation history training stops at
the step TF 2.15 stopped at, in `train` and in `train_and_evaluate`. As in v1 the hook also sets the boolean
variable `signal_early_stopping/STOP`, which the Estimator adds to the training graph (so the checkpoints hold
it, as TF 2.15's did, and a TF 2.15 program with the same hook resumes them).

What differs: the Estimator here runs in one process, as the chief, so the hooks of v1's other workers
(`_CheckForStoppingHook`, and the multi-worker hook of a `MultiWorkerMirroredStrategy`) are not needed. Under
`RunConfig(train_distribute=...)` v1 took every strategy for a multi-worker one, so `run_every_secs` is refused
there with v1's message, and `run_every_steps` gives the chief's hook, without the `STOP` variable.
`make_stop_at_checkpoint_step_hook` is a `StopAtStepHook` (v1's hook for the chief).
"""

from __future__ import annotations

import collections
import numbers
import operator
import os
from typing import Callable

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.estimator.estimator import Estimator
from compat_mts.hooks.stop import StopAtStepHook
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook
from compat_mts.core import validation

__all__ = [
    'make_early_stopping_hook',
    'make_stop_at_checkpoint_step_hook',
    'read_eval_metrics',
    'stop_if_higher_hook',
    'stop_if_lower_hook',
    'stop_if_no_decrease_hook',
    'stop_if_no_increase_hook',
]

_EVENT_FILE_GLOB_PATTERN = 'events.out.tfevents.*'
STOP_VARIABLE_SCOPE = 'signal_early_stopping'


class _StopOnPredicateHook(SessionRunHook):
    """Requests a stop when `should_stop_fn()` is true, asked every `run_every_secs` or `run_every_steps`."""

    def __init__(self, should_stop_fn: Callable[[], bool], run_every_secs=60, run_every_steps=None):
        if not callable(should_stop_fn):
            raise TypeError('`should_stop_fn` must be callable.')
        self._should_stop_fn = should_stop_fn
        self._timer = SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)
        self._global_step_tensor = None
        self._stop_op = None

    def create_graph_variables(self) -> None:
        """Adds v1's `signal_early_stopping/STOP` and the op that sets it to the graph being built."""
        with tf.compat.v1.variable_scope(STOP_VARIABLE_SCOPE, values=[], reuse=tf.compat.v1.AUTO_REUSE):
            stop_var = tf.compat.v1.get_variable(
                name='STOP',
                shape=[],
                dtype=tf.bool,
                initializer=tf.compat.v1.initializers.constant(False),
                collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
                trainable=False,
            )
        self._stop_op = tf.compat.v1.assign(stop_var, True)

    def begin(self):
        self._global_step_tensor = tf.compat.v1.train.get_global_step()
        if self._stop_op is not None and self._stop_op.graph is not tf.compat.v1.get_default_graph():
            self._stop_op = None  # Made in the graph of an earlier call.

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        global_step = run_values.results
        if self._timer.should_trigger_for_step(global_step):
            self._timer.update_last_triggered_step(global_step)
            if self._should_stop_fn():
                logging.info('Requesting early stopping at global step %d', global_step)
                if self._stop_op is not None:
                    run_context.session.run(self._stop_op)
                run_context.request_stop()


def make_early_stopping_hook(
    estimator: Estimator,
    should_stop_fn: Callable[[], bool],
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> SessionRunHook:
    """A hook that stops training when `should_stop_fn()` returns True (v1's arguments and errors).

    Example:

    ```python
    hook = compat_mts.estimator.experimental.make_early_stopping_hook(
        estimator, should_stop_fn=lambda: ..., run_every_secs=None, run_every_steps=100)
    estimator.train(input_fn, hooks=[hook])
    ```

    Args:
      estimator: the `compat_mts.estimator.Estimator` being trained.
      should_stop_fn: a function without arguments returning a bool.
      run_every_secs: call `should_stop_fn` at most this often, in seconds (60: v1's default); or None.
      run_every_steps: call it every this many steps instead (then `run_every_secs=None`).

    Returns:
      A `SessionRunHook` for `train(hooks=...)` or `TrainSpec(hooks=...)`.

    Raises:
      TypeError: `estimator` is not an Estimator, or `should_stop_fn` is not callable (v1's messages).
      ValueError: both `run_every_secs` and `run_every_steps` are set, or `run_every_secs` under
        `train_distribute` (v1's messages).
    """
    if not isinstance(estimator, Estimator):
        raise TypeError('`estimator` must have type `tf.estimator.Estimator`. Got: {}'.format(type(estimator)))
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError('Only one of `run_every_secs` and `run_every_steps` must be set.')
    if estimator.config.train_distribute and run_every_secs:
        raise ValueError('run_every_secs should not be set when using MultiWorkerMirroredStrategy.')
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def read_eval_metrics(eval_dir: str) -> collections.OrderedDict:
    """`{global step: {metric: value}}` of the scalar summaries in `eval_dir`'s events files, by step (v1's).

    A damaged events file is read up to the damage, with v1's warning.
    """
    metrics_by_step = collections.defaultdict(dict)
    for event in _summaries(eval_dir):
        if not event.HasField('summary'):
            continue
        metrics = {value.tag: value.simple_value for value in event.summary.value if value.HasField('simple_value')}
        if metrics:
            metrics_by_step[event.step].update(metrics)
    return collections.OrderedDict(sorted(metrics_by_step.items(), key=lambda item: item[0]))


def _summaries(eval_dir: str):
    if not tf.io.gfile.exists(eval_dir):
        return
    for event_file in tf.io.gfile.glob(os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN)):
        try:
            yield from tf.compat.v1.train.summary_iterator(event_file)
        except tf.errors.DataLossError as error:
            logging.warning(
                'Skipping rest of the file due to encountering data corruption error; file path: %s; original '
                'error raised by `tf.train.summary_iterator`: %s',
                event_file,
                error,
            )


def _check_metric_arguments(metric_name, steps: dict) -> None:
    validation.check_non_empty_string(metric_name, 'metric_name')
    for argument, value in steps.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f'`{argument}` must be a number of steps, got {value!r} ({type(value).__name__}).')


def _stop_if_threshold_crossed_hook(
    estimator, metric_name, threshold, higher_is_better, eval_dir, min_steps, run_every_secs, run_every_steps
):
    _check_metric_arguments(metric_name, {'min_steps': min_steps})
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    is_lhs_better = operator.gt if higher_is_better else operator.lt
    greater_or_lesser = 'greater than' if higher_is_better else 'less than'

    def stop_if_threshold_crossed_fn():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = metrics[metric_name]
            if is_lhs_better(value, threshold):
                logging.info(
                    'At step %s, metric "%s" has value %s which is %s the configured threshold (%s) for early '
                    'stopping.',
                    step,
                    metric_name,
                    value,
                    greater_or_lesser,
                    threshold,
                )
                return True
        return False

    return make_early_stopping_hook(estimator, stop_if_threshold_crossed_fn, run_every_secs, run_every_steps)


def _stop_if_no_metric_improvement_hook(
    estimator,
    metric_name,
    max_steps: tuple[str, float],
    higher_is_better,
    eval_dir,
    min_steps,
    run_every_secs,
    run_every_steps,
):
    steps_argument, max_steps_without_improvement = max_steps
    _check_metric_arguments(metric_name, {'min_steps': min_steps, steps_argument: max_steps_without_improvement})
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    is_lhs_better = operator.gt if higher_is_better else operator.lt
    increase_or_decrease = 'increase' if higher_is_better else 'decrease'

    def stop_if_no_metric_improvement_fn():
        best_value = best_step = None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = metrics[metric_name]
            if best_value is None or is_lhs_better(value, best_value):
                best_value, best_step = value, step
            if step - best_step >= max_steps_without_improvement:
                logging.info(
                    'No %s in metric "%s" for %s steps, which is greater than or equal to max steps (%s) '
                    'configured for early stopping.',
                    increase_or_decrease,
                    metric_name,
                    step - best_step,
                    max_steps_without_improvement,
                )
                return True
        return False

    return make_early_stopping_hook(estimator, stop_if_no_metric_improvement_fn, run_every_secs, run_every_steps)


_METRIC_HOOK_ARGUMENTS = """

    Args:
      estimator: the `compat_mts.estimator.Estimator` being trained.
      metric_name: the metric of the evaluations to track: `'loss'`, `'accuracy'`, ...
      {what}
      eval_dir: the directory of the evaluations' events; `estimator.eval_dir()` if None.
      min_steps: evaluations of global steps below this are not looked at.
      run_every_secs: read the evaluations at most this often, in seconds (60: v1's default); or None.
      run_every_steps: read them every this many steps instead (then `run_every_secs=None`).

    Returns:
      A `SessionRunHook` for `train(hooks=...)` or `TrainSpec(hooks=...)`.

    Raises:
      TypeError, ValueError: v1's errors of `make_early_stopping_hook`; `metric_name` not a string, or a
        number of steps that is not a number. A `metric_name` the evaluations lack is a `KeyError` when
        they are read, as in v1.
"""


def _documented(summary: str, what: str):
    """Gives a metric hook its docstring: `summary`, the arguments the four share, and its own (`what`)."""

    def document(function):
        function.__doc__ = summary + _METRIC_HOOK_ARGUMENTS.format(what=what)
        return function

    return document


@_documented(
    "Stops training once an evaluation's `metric_name` is above `threshold` (v1's hook).\n\n"
    "    `stop_if_higher_hook(estimator, 'accuracy', 0.9)` stops once an evaluation reached 90%.",
    'threshold: the value the metric must exceed.',
)
def stop_if_higher_hook(
    estimator: Estimator,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> SessionRunHook:
    return _stop_if_threshold_crossed_hook(
        estimator, metric_name, threshold, True, eval_dir, min_steps, run_every_secs, run_every_steps
    )


@_documented(
    "Stops training once an evaluation's `metric_name` is below `threshold` (v1's hook).\n\n"
    "    `stop_if_lower_hook(estimator, 'loss', 100)` stops once an evaluation's loss is below 100.",
    'threshold: the value the metric must fall below.',
)
def stop_if_lower_hook(
    estimator: Estimator,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> SessionRunHook:
    return _stop_if_threshold_crossed_hook(
        estimator, metric_name, threshold, False, eval_dir, min_steps, run_every_secs, run_every_steps
    )


@_documented(
    "Stops training when `metric_name` has not increased for `max_steps_without_increase` steps (v1's hook).\n\n"
    '    It stops once an evaluation comes that many global steps or more after the best (highest) one so far.',
    'max_steps_without_increase: the global steps the metric may go without increasing.',
)
def stop_if_no_increase_hook(
    estimator: Estimator,
    metric_name: str,
    max_steps_without_increase: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> SessionRunHook:
    max_steps = ('max_steps_without_increase', max_steps_without_increase)
    return _stop_if_no_metric_improvement_hook(
        estimator, metric_name, max_steps, True, eval_dir, min_steps, run_every_secs, run_every_steps
    )


@_documented(
    "Stops training when `metric_name` has not decreased for `max_steps_without_decrease` steps (v1's hook).\n\n"
    '    It stops once an evaluation comes that many global steps or more after the best (lowest) one so far.',
    'max_steps_without_decrease: the global steps the metric may go without decreasing.',
)
def stop_if_no_decrease_hook(
    estimator: Estimator,
    metric_name: str,
    max_steps_without_decrease: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> SessionRunHook:
    max_steps = ('max_steps_without_decrease', max_steps_without_decrease)
    return _stop_if_no_metric_improvement_hook(
        estimator, metric_name, max_steps, False, eval_dir, min_steps, run_every_secs, run_every_steps
    )


def make_stop_at_checkpoint_step_hook(estimator: Estimator, last_step: int, wait_after_file_check_secs: float = 30):
    """v1's hook that stops training at `last_step`: for the chief (the one process here), a `StopAtStepHook`.

    Args:
      estimator: the `compat_mts.estimator.Estimator` being trained.
      last_step: the global step to stop after.
      wait_after_file_check_secs: how long v1's non-chief workers waited between reads of the checkpoint;
        not used by the chief.

    Returns:
      `StopAtStepHook(last_step=last_step)`.
    """
    del estimator, wait_after_file_check_secs  # The chief's hook: v1's used neither.
    return StopAtStepHook(last_step=last_step)
