"""`FinalOpsHook`: evaluates values once, when the session ends, and keeps them."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunHook


class FinalOpsHook(SessionRunHook):
    """Evaluates `final_ops` in `end()` and keeps the result in `final_ops_values` (None until then).

    `final_ops` is one fetch or a list/tuple/dict of them, returned in the same structure: eagerly a
    `tf.Variable` (read at the end), a callable run then (the eager form of a v1 metric's `value_op`,
    e.g. `metric.result`), a registered variable's name, or a `wrap_graph` tensor. No step runs in
    `end()`, so names of step outputs are unknown there (the `KeyError` lists what is available).
    String keys of `final_ops_feed_dict` are keyword arguments of the callables. As in v1, an
    `OutOfRangeError` or `StopIteration` from the final ops is logged with v1's warning (they should
    not read the input) and re-raised.

    Args:
      final_ops: A fetch, or a list, tuple or dict of fetches, evaluated in `end()`: `tf.Variable`s,
        callables, names of registered variables or `wrap_graph` tensors.
      final_ops_feed_dict: A feed for them, or None: string keys are keyword arguments of the callables,
        placeholders of a `wrap_graph` graph are fed as in v1.

    Example:

    ```python
    accuracy = tf.keras.metrics.Mean()
    hook = compat_mts.FinalOpsHook({'accuracy': accuracy.result})
    # ... after the session closed: hook.final_ops_values['accuracy']
    ```

    Raises:
      TypeError: `final_ops` holds something that is not a fetch, or `final_ops_feed_dict` is not a dict.
    """

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None):
        validation.check_fetch(final_ops, 'final_ops', nested=True)
        validation.check_optional_dict(final_ops_feed_dict, 'final_ops_feed_dict')
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self) -> Any:
        """The values of `final_ops` at the last `end()`, as NumPy in their structure; None before."""
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
        except (tf.errors.OutOfRangeError, StopIteration):
            logging.warning(
                'An OutOfRangeError or StopIteration exception is raised by the code in FinalOpsHook. '
                'This typically means the Ops running by the FinalOpsHook have a dependency back to some '
                'input source, which should not happen. For example, for metrics in '
                'tf.estimator.Estimator, all metrics functions return two Ops: `value_op` and  '
                '`update_op`. Estimator.evaluate calls the `update_op` for each batch of the data in '
                'input source and, once it is exhausted, it call the `value_op` to get the metric values. '
                'The `value_op` here should have dependency back to variables reading only, rather than '
                'reading another batch from input. Otherwise, the `value_op`, executed by `FinalOpsHook`, '
                'triggers another data reading, which ends OutOfRangeError/StopIteration. Please fix that.'
            )
            raise
