"""The `tf.compat.v1.train` built-in hooks of an Estimator program, as their compat_mts twins.

A `model_fn` is v1 graph code, and v1 code builds `tf.compat.v1.train.LoggingTensorHook({'loss': loss}, ...)`.
Those hooks need a `tf.compat.v1.Session`; compat_mts re-implements them with the same arguments. Each v1
hook is rebuilt from the arguments it keeps, so an Estimator program runs with its hooks unchanged. Built-in
hooks not listed here are left as they are, and the session refuses them naming the compat_mts class to use;
so are all but `FeedFnHook` when the hooks' private attributes cannot be read (`compat_mts._tf_internals`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.hooks.feed_fn import FeedFnHook
from compat_mts.hooks.final_ops import FinalOpsHook
from compat_mts.hooks.logging import LoggingTensorHook
from compat_mts.hooks.nan import NanTensorHook
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.hooks.stop import StopAtStepHook
from compat_mts.hooks.summary import SummarySaverHook
from compat_mts.hooks.waiter import GlobalStepWaiterHook

v1_hooks = tf.compat.v1.train


def _timer_arguments(timer: Any) -> tuple[Any, Any]:
    """(every_secs, every_steps) of a v1 timer; (None, None) for the timer of an `at_end`-only hook."""
    return tf_internals.private_attributes(timer, '_every_secs', '_every_steps', default=None) or (None, None)


def _logging_tensor_hook(hook: Any, timer, tensors, tag_order, at_end, formatter) -> LoggingTensorHook:
    every_secs, every_steps = _timer_arguments(timer)
    if all(tag is value for tag, value in tensors.items()):  # v1 keeps a list as {item: item}.
        tensors = list(tag_order)
    return LoggingTensorHook(
        tensors, every_n_iter=every_steps, every_n_secs=every_secs, at_end=at_end, formatter=formatter
    )


def _step_counter_hook(hook: Any, summary_writer, timer, output_dir) -> Any:
    if summary_writer is not None:
        return hook  # A v1 FileWriter: refused by the session, which names compat_mts.StepCounterHook.
    every_secs, every_steps = _timer_arguments(timer)
    return StepCounterHook(every_n_steps=every_steps, every_n_secs=every_secs, output_dir=output_dir)


def _summary_saver_hook(hook: Any, summary_writer, summary_op, timer, output_dir) -> Any:
    if summary_writer is not None or summary_op is None:
        return hook  # A v1 writer or scaffold: refused by the session, which names compat_mts.SummarySaverHook.
    every_secs, every_steps = _timer_arguments(timer)
    return SummarySaverHook(save_steps=every_steps, save_secs=every_secs, output_dir=output_dir, summary_op=summary_op)


# Each v1 hook class: how its twin is built, from which of the hook's private attributes (its constructor's
# arguments, which it keeps no public copy of). Without them the hook is left as it is, and refused.
_TWINS: dict[type, tuple[Callable[..., Any], tuple[str, ...]]] = {
    v1_hooks.LoggingTensorHook: (
        _logging_tensor_hook,
        ('_timer', '_tensors', '_tag_order', '_log_at_end', '_formatter'),
    ),
    v1_hooks.StopAtStepHook: (
        lambda hook, num_steps, last_step: StopAtStepHook(num_steps=num_steps, last_step=last_step),
        ('_num_steps', '_last_step'),
    ),
    v1_hooks.NanTensorHook: (
        lambda hook, loss, fail: NanTensorHook(loss, fail_on_nan_loss=fail),
        ('_loss_tensor', '_fail_on_nan_loss'),
    ),
    v1_hooks.StepCounterHook: (_step_counter_hook, ('_summary_writer', '_timer', '_output_dir')),
    v1_hooks.SummarySaverHook: (_summary_saver_hook, ('_summary_writer', '_summary_op', '_timer', '_output_dir')),
    v1_hooks.FinalOpsHook: (
        lambda hook, final_ops, feed_dict: FinalOpsHook(final_ops, feed_dict),
        ('_final_ops', '_final_ops_feed_dict'),
    ),
    v1_hooks.FeedFnHook: (lambda hook: FeedFnHook(hook.feed_fn), ()),
    v1_hooks.GlobalStepWaiterHook: (
        lambda hook, wait_until_step: GlobalStepWaiterHook(wait_until_step),
        ('_wait_until_step',),
    ),
}


def as_compat_hook(hook: tf.compat.v1.train.SessionRunHook) -> tf.compat.v1.train.SessionRunHook:
    """The compat_mts twin of a v1 built-in hook; any other hook as it is."""
    twin = _TWINS.get(type(hook))
    if twin is None:
        return hook
    build, names = twin
    arguments = tf_internals.private_attributes(hook, *names) if names else ()
    return hook if arguments is None else build(hook, *arguments)


def as_compat_hooks(hooks: Iterable[Any]) -> list:
    return [as_compat_hook(hook) for hook in hooks]
