"""`CallbackHook`: Keras callbacks inside a session loop, as one SessionRunHook."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook

# Keras callbacks that use `self.model`, and those of them that also use `self.model.optimizer`.
_NEED_MODEL = (
    'BackupAndRestore',
    'EarlyStopping',
    'LearningRateScheduler',
    'ModelCheckpoint',
    'ReduceLROnPlateau',
    'SwapEMAWeights',
    'TensorBoard',
    'TerminateOnNaN',
)
_NEED_OPTIMIZER = ('LearningRateScheduler', 'ReduceLROnPlateau', 'SwapEMAWeights', 'TensorBoard')


def _implements(callback: Any, *methods: str) -> bool:
    """Whether `callback` overrides any of `methods` rather than inheriting Keras's no-op defaults."""
    return any(tf_internals.overrides_callback_method(callback, method) for method in methods)


def _keras_classes(names: Sequence[str]) -> tuple:
    return tuple(cls for cls in (getattr(tf.keras.callbacks, name, None) for name in names) if cls is not None)


def _check_callbacks(callbacks: Any) -> list:
    callback_class = tf.keras.callbacks.Callback
    if isinstance(callbacks, callback_class):
        raise TypeError('`callbacks` must be a list of Keras callbacks, got a single callback; wrap it in a list.')
    try:
        callbacks = list(callbacks)
    except TypeError:
        raise TypeError(f'`callbacks` must be a list of Keras callbacks, got {type(callbacks).__name__}.') from None
    for callback in callbacks:
        if not isinstance(callback, callback_class):
            raise TypeError(
                f'`callbacks` must hold {callback_class.__module__}.Callback instances (the callbacks of '
                f'the Keras that tf.keras is), got {type(callback).__name__}.'
            )
    return callbacks


def _check_model(model: Any, callbacks: list) -> None:
    if model is not None and not isinstance(model, tf.keras.Model):
        raise TypeError(f'`model` must be None or a tf.keras.Model, got {type(model).__name__}.')
    for callback in callbacks:
        name = type(callback).__name__
        if model is None and isinstance(callback, _keras_classes(_NEED_MODEL)):
            raise ValueError(
                f'`callbacks` holds {name}, which uses the model: pass it as CallbackHook(callbacks, model=model).'
            )
        if (
            model is not None
            and isinstance(callback, _keras_classes(_NEED_OPTIMIZER))
            and getattr(model, 'optimizer', None) is None
        ):
            raise ValueError(
                f'`callbacks` holds {name}, which uses `model.optimizer`, and the model has none. Give the '
                'model the optimizer the step uses: model.compile(optimizer=optimizer).'
            )


def _check_steps_per_epoch(steps_per_epoch: Any) -> None:
    validation.check_integer(steps_per_epoch, 'steps_per_epoch', accepted='None or a positive integer')
    if steps_per_epoch is not None and steps_per_epoch < 1:
        raise ValueError(f'`steps_per_epoch` must be None or a positive integer, got {steps_per_epoch!r}.')


def _logs_of(results: Any) -> dict:
    """The scalar values among a run's results, by name: the entries of the dicts the step returned (or
    of the dict of fetches), as Keras logs hold a step's metrics."""
    logs = {}

    def visit(value, key):
        if isinstance(value, dict):
            for inner_key, inner_value in value.items():
                visit(inner_value, inner_key)
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item, None)
        elif key is not None and isinstance(value, (np.ndarray, np.generic, int, float)):
            array = np.asarray(value)
            if array.size == 1 and array.dtype.kind in 'biuf':
                logs[str(key)] = array.reshape(())[()]

    visit(results, None)
    return logs


class CallbackHook(SessionRunHook):
    """Runs Keras callbacks inside a `MonitoredSession` loop: each run is one of their batches.

    The other way round from `HooksCallback`: a program that keeps its session loop (stage 2) can already
    use Keras callbacks (`EarlyStopping`, `CSVLogger`, `TensorBoard`, `TerminateOnNaN`, its own), before
    the loop becomes `model.fit`. The callbacks get:

    - `on_train_begin` when the session is created, `on_train_end(logs)` at its end (`end()`);
    - `on_train_batch_begin(batch)` / `on_train_batch_end(batch, logs)` around each run, where `logs` are
      the step's scalar outputs (the dict it returns, e.g. `{'loss': ...}`), read from the same run;
    - with `steps_per_epoch`, epochs counted by the global step: `on_epoch_begin(epoch)` before the first
      run of an epoch, `on_epoch_end(epoch, logs)` after the run that completes it (the logs of that run,
      where `fit` would report averages), and at the end for an epoch the session did not finish, as
      `fit` does when it stops early. `batch` is then the step within the epoch, else the run count.

    When a callback sets `model.stop_training` (EarlyStopping, TerminateOnNaN), the hook requests a stop.

    The step's outputs are fetched, and converted to NumPy, only when some callback reads batch or epoch
    logs (overrides a batch-end or epoch-end method), and the batch methods are called only when some
    callback overrides them. Callbacks are dispatched through Keras's own `CallbackList`.

    Example:

    ```python
    hooks = [compat_mts.keras.CallbackHook(
        [keras.callbacks.EarlyStopping(monitor='loss', patience=2), keras.callbacks.CSVLogger(path)],
        model=model, steps_per_epoch=100)]
    ```

    Args:
      callbacks: Keras callbacks (of the Keras that `tf.keras` is).
      model: the Keras model the session trains; callbacks that use the model need it.
      steps_per_epoch: the epoch length in global steps, for the callbacks' epoch methods; None: no epochs.

    Raises:
      TypeError: `callbacks` is not a list of Keras callbacks, `model` is not a Keras model, or
        `steps_per_epoch` is not an integer.
      ValueError: a callback that needs the model (EarlyStopping, TensorBoard, ...) without `model`, one
        that needs the optimizer (ReduceLROnPlateau, ...) with a model that has none, or
        `steps_per_epoch < 1`.
      RuntimeError: at `begin()`, `steps_per_epoch` without a global step (v1's message).
    """

    def __init__(self, callbacks: Sequence, model=None, *, steps_per_epoch: int | None = None):
        self._callbacks = _check_callbacks(callbacks)
        _check_model(model, self._callbacks)
        _check_steps_per_epoch(steps_per_epoch)
        self._model = model
        self._steps_per_epoch = steps_per_epoch
        self._calls_batch_begin = any(
            _implements(callback, 'on_batch_begin', 'on_train_batch_begin') for callback in self._callbacks
        )
        self._calls_batch_end = any(
            _implements(callback, 'on_batch_end', 'on_train_batch_end') for callback in self._callbacks
        )
        reads_epoch_logs = steps_per_epoch is not None and any(
            _implements(callback, 'on_epoch_end') for callback in self._callbacks
        )
        self._fetches_logs = self._calls_batch_end or reads_epoch_logs

    def begin(self):
        self._global_step = None
        if self._steps_per_epoch is not None:
            self._global_step = global_step_lib.require_global_step('CallbackHook')
        self._callback_list = tf.keras.callbacks.CallbackList(
            self._callbacks,
            add_history=False,
            add_progbar=False,
            model=self._model,
            verbose=1,
            epochs=None,
            steps=self._steps_per_epoch,
        )
        self._started = False

    def after_create_session(self, session, coord):
        if self._started:  # A session re-created after a preemption continues the same training.
            return
        self._started = True
        self._runs = 0
        self._epoch = None
        self._logs = None
        if self._model is not None:
            self._model.stop_training = False
        self._callback_list.on_train_begin()

    def before_run(self, run_context):
        self._batch = self._runs
        if self._steps_per_epoch is not None:
            step = int(run_context.session.run(self._global_step))
            epoch, self._batch = divmod(step, self._steps_per_epoch)
            if self._epoch is None:
                self._epoch = epoch
                self._callback_list.on_epoch_begin(epoch)
        if self._calls_batch_begin:
            self._callback_list.on_train_batch_begin(self._batch)
        if self._fetches_logs:
            return SessionRunArgs(run_context.original_args.fetches)
        return None

    def after_run(self, run_context, run_values):
        self._runs += 1
        if self._fetches_logs:
            self._logs = _logs_of(run_values.results)
        if self._calls_batch_end:
            self._callback_list.on_train_batch_end(self._batch, self._logs)
        if self._epoch is not None:
            step = int(run_context.session.run(self._global_step))
            if step >= (self._epoch + 1) * self._steps_per_epoch:
                self._end_epoch()
        if self._model is not None and self._model.stop_training:
            run_context.request_stop()

    def _end_epoch(self) -> None:
        epoch, self._epoch = self._epoch, None
        self._callback_list.on_epoch_end(epoch, dict(self._logs or {}))

    def end(self, session):
        if self._epoch is not None:
            self._end_epoch()
        self._callback_list.on_train_end(self._logs)
