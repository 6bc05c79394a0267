"""`NanTensorHook` and `NanLossDuringTrainingError`: stop (or fail) when the loss becomes NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook

_FAILURE_MESSAGE = 'Model diverged with loss = NaN.'


class NanLossDuringTrainingError(tf.compat.v1.train.NanLossDuringTrainingError):
    """Raised by `NanTensorHook(fail_on_nan_loss=True)`; `str()` is v1's "NaN loss during training.".

    A subclass of v1's `tf.compat.v1.train.NanLossDuringTrainingError` (itself a `RuntimeError`), so a
    v1 program's `except tf.compat.v1.train.NanLossDuringTrainingError:` catches it unchanged.
    """

    def __str__(self) -> str:
        return 'NaN loss during training.'


class NanTensorHook(SessionRunHook):
    """Monitors the loss and stops training, or fails, when it is NaN (v1's arguments, messages, order).

    The loss is fetched on every run, from the same execution as the step. Eagerly it is a name of the
    step's output (`'loss'`, a key of the dict the step returns), a `tf.Variable`, a callable evaluated
    after the step, or a tensor of a `wrap_graph` graph. As in v1 it must be a scalar (`np.isnan` decides).

    - `fail_on_nan_loss=True`: logs the error "Model diverged with loss = NaN." and raises
      `NanLossDuringTrainingError` out of `run()`; under `with`, `end()` hooks are not called (v1).
    - `fail_on_nan_loss=False`: logs the same text as a warning and requests a stop; that `run()` still
      returns its values.

    With `compat_mts.repeat_steps`, the loss checked is the last of the run's K steps (a NaN earlier in
    the run shows there, since NaN weights stay NaN).

    Args:
      loss_tensor: The loss to check after every run: a name of the step's output (`'loss'`), a
        `tf.Variable`, a callable evaluated after the step, or a tensor of a `wrap_graph` graph.
      fail_on_nan_loss: True (the default) raises `NanLossDuringTrainingError` at a NaN loss; False logs a
        warning and requests a stop instead.

    Example:

    ```python
    hook = compat_mts.NanTensorHook('loss', fail_on_nan_loss=False)
    ```

    Raises:
      TypeError: `loss_tensor` is not a fetch (name, variable, tensor, callable) or `fail_on_nan_loss`
        is not a bool.
    """

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True):
        validation.check_fetch(loss_tensor, 'loss_tensor')
        validation.check_bool(fail_on_nan_loss, 'fail_on_nan_loss')
        self._request = SessionRunArgs(loss_tensor)  # Immutable: one serves every run.
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return self._request

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            if self._fail_on_nan_loss:
                logging.error(_FAILURE_MESSAGE)
                raise NanLossDuringTrainingError
            logging.warning(_FAILURE_MESSAGE)
            run_context.request_stop()
