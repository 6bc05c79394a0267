"""The `tf.compat.v1.train` built-in hooks of an Estimator program, as their compat_mts twins.

A `model_fn` is v1 graph code, and v1 code builds `tf.compat.v1.train.LoggingTensorHook({'loss': loss}, ...)`.
Those hooks need a `tf.compat.v1.Session`; compat_mts re-implements them with the same arguments. Each v1
hook is rebuilt from the arguments it keeps, so an Estimator program runs with its hooks unchanged. Built-in
hooks not listed here are left as they are, and the session refuses them naming the compat_mts class to use.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import tensorflow as tf
from tensorflow.python.training import basic_session_run_hooks as v1_hooks

from compat_mts.hooks.feed_fn import FeedFnHook
from compat_mts.hooks.final_ops import FinalOpsHook
from compat_mts.hooks.logging import LoggingTensorHook
from compat_mts.hooks.nan import NanTensorHook
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.hooks.stop import StopAtStepHook
from compat_mts.hooks.summary import SummarySaverHook
from compat_mts.hooks.waiter import GlobalStepWaiterHook


def _timer_arguments(timer: Any) -> tuple[Any, Any]:
    """(every_secs, every_steps) of a v1 timer; (None, None) for the timer of an `at_end`-only hook."""
    return getattr(timer, '_every_secs', None), getattr(timer, '_every_steps', None)


def _logging_tensor_hook(hook: Any) -> LoggingTensorHook:
    every_secs, every_steps = _timer_arguments(hook._timer)  # pylint: disable=protected-access
    tensors = hook._tensors  # pylint: disable=protected-access
    if all(tag is value for tag, value in tensors.items()):  # v1 keeps a list as {item: item}.
        tensors = list(hook._tag_order)  # pylint: disable=protected-access
    return LoggingTensorHook(
        tensors, every_n_iter=every_steps, every_n_secs=every_secs, at_end=hook._log_at_end, formatter=hook._formatter
    )  # pylint: disable=protected-access


def _step_counter_hook(hook: Any) -> Any:
    if hook._summary_writer is not None:  # pylint: disable=protected-access
        return hook  # A v1 FileWriter: refused by the session, which names compat_mts.StepCounterHook.
    every_secs, every_steps = _timer_arguments(hook._timer)  # pylint: disable=protected-access
    return StepCounterHook(every_n_steps=every_steps, every_n_secs=every_secs, output_dir=hook._output_dir)  # pylint: disable=protected-access


def _summary_saver_hook(hook: Any) -> Any:
    if hook._summary_writer is not None or hook._summary_op is None:  # pylint: disable=protected-access
        return hook  # A v1 writer or scaffold: refused by the session, which names compat_mts.SummarySaverHook.
    every_secs, every_steps = _timer_arguments(hook._timer)  # pylint: disable=protected-access
    return SummarySaverHook(
        save_steps=every_steps, save_secs=every_secs, output_dir=hook._output_dir, summary_op=hook._summary_op
    )  # pylint: disable=protected-access


# pylint: disable=protected-access
_TWINS: dict[type, Callable[[Any], Any]] = {
    v1_hooks.LoggingTensorHook: _logging_tensor_hook,
    v1_hooks.StopAtStepHook: lambda hook: StopAtStepHook(num_steps=hook._num_steps, last_step=hook._last_step),
    v1_hooks.NanTensorHook: lambda hook: NanTensorHook(hook._loss_tensor, fail_on_nan_loss=hook._fail_on_nan_loss),
    v1_hooks.StepCounterHook: _step_counter_hook,
    v1_hooks.SummarySaverHook: _summary_saver_hook,
    v1_hooks.FinalOpsHook: lambda hook: FinalOpsHook(hook._final_ops, hook._final_ops_feed_dict),
    v1_hooks.FeedFnHook: lambda hook: FeedFnHook(hook.feed_fn),
    v1_hooks.GlobalStepWaiterHook: lambda hook: GlobalStepWaiterHook(hook._wait_until_step),
}
# pylint: enable=protected-access


def as_compat_hook(hook: tf.compat.v1.train.SessionRunHook) -> tf.compat.v1.train.SessionRunHook:
    """The compat_mts twin of a v1 built-in hook; any other hook as it is."""
    twin = _TWINS.get(type(hook))
    return hook if twin is None else twin(hook)


def as_compat_hooks(hooks: Iterable[Any]) -> list:
    return [as_compat_hook(hook) for hook in hooks]
