"""`HooksCallback`: SessionRunHooks inside `model.fit`, as one Keras callback."""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import program as program_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.core.fetch import STALE_GLOBAL_STEP
from compat_mts.session.hook_driver import HookDriver
from compat_mts.keras import _model
from compat_mts.session.scaffold import Scaffold
from compat_mts.session.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    checkpoint_saving_hooks,
    last_step_hooks,
    nearest_last_step,
)

_NO_CALLER_FETCHES = SessionRunArgs(None)
_STOP_GRACE_PERIOD_SECS = 120  # v1's default `stop_grace_period_secs`.
_NO_FEEDS = 'inside model.fit there is no step to feed; feed the data through the dataset given to fit.'


class _FitSetUp:
    """What a `fit` with hooks set up in the process, which its end undoes: the summary defaults, the registered
    global step (the one before it is put back) and the coordinator. `begun_in` is the frame that called
    `on_train_begin` (Keras's callback list of that `fit`), which tells the callbacks of one `fit` from a later one.
    """

    def __init__(self, begun_in):
        self.begun_in = begun_in
        self.ended = False  # Its `on_train_end` ran: undone once those begun after it in its `fit` ended too.
        self.previous_registration = global_step_lib.registration()
        self.summaries = summary_lib.SessionSummaries()
        self.coord: tf.train.Coordinator | None = None

    def undo(self) -> None:
        self.begun_in = None  # The frame holds that `fit`'s callbacks and model.
        try:
            if self.coord is not None:
                self.coord.request_stop()
                self.coord.join(stop_grace_period_secs=_STOP_GRACE_PERIOD_SECS, ignore_live_threads=True)
        finally:
            self.summaries.deactivate()
            self.summaries.release()
            global_step_lib.restore_registration(self.previous_registration)


# The set-ups of the `fit`s under way or that raised (Keras calls no `on_train_end` then), oldest first: the next
# `fit` of any `HooksCallback` undoes those of earlier fits, newest first, so that each puts back the step it found.
_unfinished: list[_FitSetUp] = program_lib.PROGRAM.table(
    'keras.unfinished_fits',
    [],
    'what the HooksCallback fits that raised left set up (summary defaults, global step), for the next fit to undo',
    'process',
)


def _undo_unfinished_fits(begun_in) -> None:
    """Undoes the set-ups of the `fit`s that raised: those not begun in `begun_in`, the current `fit`'s."""
    for set_up in reversed([set_up for set_up in _unfinished if set_up.begun_in is not begun_in]):
        _unfinished.remove(set_up)
        set_up.undo()


class FitSession:
    """What hooks get as "the session" inside `model.fit`: `run(fetches)` without hooks, on the last batch.

    A fetch is what it is in a session (`compat_mts.core.fetch`), except that a string name is looked up
    first in the logs of the last batch (`'loss'`), then among the model's variables
    (`'sequential/dense/kernel'`), then among the registered variables (`'global_step'`).
    `STALE_GLOBAL_STEP` is the step before the current execution.
    """

    graph = None
    has_step_graph = False  # The fit loop's step is Keras's: the hooks write no `graph.pbtxt` or graph events.

    def __init__(self, variables: dict[str, tf.Variable]):
        self._variables = variables
        self.logs: dict = {}
        self.stale_step: int | None = None
        self.ran_callable = False  # Whether a hook ran a callable (which may move the global step) since reset.

    def run(self, fetches: Any, feed_dict: dict | None = None, options=None, run_metadata=None) -> Any:
        """Returns the values of `fetches` (same structure, NumPy values).

        Raises:
          ValueError: `feed_dict` is given: inside `model.fit` there is no step callable to feed.
          KeyError: a name is neither a log, a model variable nor a registered variable.
        """
        del options, run_metadata
        if feed_dict:
            raise ValueError(
                f'Inside model.fit there is no step to feed, so hooks cannot feed {sorted(map(str, feed_dict))}; '
                'feed the data through the dataset given to fit, or keep the hook in a session loop.'
            )
        if isinstance(fetches, (list, tuple, dict)):
            return tf.nest.map_structure(self._resolve, fetches)
        return self._resolve(fetches)

    def _resolve(self, fetch: Any) -> Any:
        if fetch is STALE_GLOBAL_STEP:
            return self.stale_step
        if isinstance(fetch, str):
            name = global_step_lib.op_name(fetch)
            if name in self.logs:
                return _log_value(self.logs[name])
            if name in self._variables:
                return global_step_lib.read_value(self._variables[name])
            try:
                return fetches_lib.run_fetches(fetch)  # A registered variable (a fit runs no legacy graph).
            except KeyError:
                raise KeyError(
                    f'Fetch name {fetch!r} is neither a log of the batch, a variable of the model nor a '
                    f'registered variable. Logs: {sorted(self.logs)}. Model variables: {sorted(self._variables)}. '
                    f'Global step: {global_step_lib.GLOBAL_STEP_NAME!r}.'
                ) from None
        if not isinstance(fetch, (tf.Variable, tf.Tensor)) and fetch is not None:
            self.ran_callable = True
        return fetches_lib.run_fetches(fetch)


def _log_value(value: Any) -> Any:
    """A log value as NumPy. Keras 3 hands logs over as Python floats made from float32 metrics; they go
    back to float32 (exactly), so hooks print `loss = 0.25` as v1 did, not `0.25000000372529`."""
    if isinstance(value, float):
        single = np.float32(value)
        return single if float(single) == value else np.float64(value)
    return fetches_lib.to_numpy(value)


class HooksCallback(tf.keras.callbacks.Callback):
    """Runs SessionRunHooks inside `model.fit`: the fit loop plays the part of the session.

    Stage 3 of a migration: the `while not session.should_stop()` loop becomes `model.fit`, and the hooks
    of the session go into one callback, unchanged. The hook protocol maps onto the fit loop as follows:

    - `begin()` and `after_create_session(session, coord)` at `on_train_begin`; in between, the latest
      checkpoint of a `CheckpointSaverHook`'s directory is restored (model weights, optimizer slots and
      `iterations`), so a second `fit` resumes where the first stopped;
    - `before_run`/`after_run` around each execution of the train function (each batch, or each
      `steps_per_execution` batches), `end(session)` at `on_train_end`;
    - `run_context.request_stop()` sets `model.stop_training`;
    - the global step is `model.optimizer.iterations`, registered under the name `global_step` while
      `fit` runs (so `StepCounterHook` writes `global_step/sec`), and the previous registration is put back
      at `on_train_end`;
    - fetches are what they are in a session; a name resolves to the batch logs (`'loss'`), then to the
      model's variables, then to the registered ones (see `FitSession`);
    - `CheckpointSaverHook` without `saver` or `scaffold` saves `tf.train.Checkpoint(model=model,
      optimizer=model.optimizer)` plus the global step, as `model.ckpt-<iterations>`: the layout of a
      stage 2 session that used the same `Scaffold(saver=...)`, so each stage resumes the other's
      checkpoints;
    - `SummarySaverHook` records the `tf.summary` calls of the model's train step on its trigger steps
      (the train function is traced again at `on_train_begin`, under the hook's writer).

    With `steps_per_execution=K`, the hooks run once per execution, learn K (`set_steps_per_run`, as v1's
    Estimator told them) and see the global step jump by K; an execution that would pass a
    `StopAtStepHook`'s `last_step` is shortened to stop exactly there.

    Keras decides per callback whether its batch methods need calling: tf-keras skips the batch hooks
    (and their log conversion) when no callback implements them, and Keras 3 keeps its asynchronous
    batch-end dispatch (on backends that have it) when none overrides them. So this callback overrides
    them only when a hook needs them (overrides `before_run` or `after_run`): a hook set that does nothing
    per batch costs nothing per batch. The global step before an execution (`STALE_GLOBAL_STEP`) is read
    from the host at the first batch of each epoch, after a hook has run a callable, and before every
    execution of `steps_per_execution > 1` steps; otherwise it is the previous one plus one, because an
    execution of one step moves `iterations` by one. A read between two steps costs a tiny model's step
    several percent (benchmarks/RESULTS_keras.md). Something other than the train function that moves
    `iterations` in the middle of an epoch (another callback, at a batch) is seen at the next epoch.
    The built-in periodic hooks say on which batch their timers may next trigger (`idle_until`, see
    `compat_mts.session.session_run_hook.HookCapabilities`), and the callback's `HookDriver` calls them only then: on
    the other batches, v1's default hooks cost a comparison of the step and the clock. A hook of the program's own is
    called on every batch.

    Differences from a session, because Keras decides: `end()` is not called when `fit` raises (Keras
    calls no `on_train_end` then, as v1's `with` block skipped `end()`); a `feed_dict` from a hook
    raises; `graph.pbtxt` is not written.

    Example:

    ```python
    model.fit(dataset, epochs=10, steps_per_epoch=100, callbacks=[compat_mts.keras.HooksCallback([
        compat_mts.StopAtStepHook(last_step=1000),
        compat_mts.CheckpointSaverHook(checkpoint_dir, save_steps=100)])])
    ```

    Args:
      hooks: the `SessionRunHook`s (compat_mts hooks, or the user's own `tf.compat.v1.train.SessionRunHook`
        subclasses).

    Raises:
      TypeError: `hooks` is not a list of SessionRunHooks, or holds a graph-mode `tf.compat.v1.train`
        hook (the message names the compat_mts replacement).
      ValueError: at `on_train_begin`, when the model has no optimizer.
    """

    _supports_tf_logs = True  # tf-keras: hand the logs over as tensors; only what a hook fetches is converted.

    def __init__(self, hooks: Sequence):
        super().__init__()
        self._hooks = validation.check_hooks(hooks, 'hooks')
        self._driver = HookDriver(self._hooks, scheduled=True)
        self._stop_hooks = last_step_hooks(self._hooks)
        self._checkpoint_hooks = checkpoint_saving_hooks(self._hooks)
        if self._driver.run_hooks:
            # Bound on the instance, so that Keras's `is_default` checks see batch methods only when a hook
            # needs them.
            self.on_train_batch_begin = self._before_run
            self.on_train_batch_end = self._after_run
        self._session: FitSession | None = None
        self._next_stale_step: int | None = None

    def on_train_begin(self, logs=None):
        if not self._hooks:
            return
        begun_in = inspect.currentframe().f_back  # Keras's callback list of this `fit`.
        _undo_unfinished_fits(begun_in)  # Those of a `fit` that raised: Keras called no `on_train_end` then.
        model = self.model
        if getattr(model, 'optimizer', None) is None:
            raise ValueError(
                "HooksCallback needs the model's optimizer: its `iterations` is the global step the hooks "
                'count. Compile the model with an optimizer: model.compile(optimizer=..., loss=...).'
            )
        _model.build_optimizer(model)
        self._set_up = _FitSetUp(begun_in)
        step = global_step_lib.set_global_step(model.optimizer.iterations, name=global_step_lib.GLOBAL_STEP_NAME)
        try:
            self._begin(model, step)
        except BaseException:  # Leave the process as fit found it: no summary defaults, no step registered.
            self._set_up.undo()
            raise

    def _begin(self, model, step: tf.Variable) -> None:
        """`begin()`, restore, `after_create_session()`: what a session does when it is created."""
        self._read_step = global_step_lib.step_reader(step)
        self._steps_per_execution = _model.steps_per_execution(model)
        self._execution = _model.ExecutionLength(model)
        # Also 1: a CheckpointSaverHook then re-reads the step only when it may save.
        self._driver.set_steps_per_run(self._steps_per_execution)
        state = Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=model.optimizer))
        for hook in self._checkpoint_hooks:
            hook._set_default_scaffold(state)
        session = FitSession(_model.variables_by_name(model))
        self._run_metadata = tf.compat.v1.RunMetadata()
        summaries = self._set_up.summaries
        with summaries.collecting():
            self._driver.begin()
        self._restore_latest_checkpoint()
        summaries.activate()
        if summaries.recorders:
            model.make_train_function(force=True)  # Traced anew, under the recorders' writers.
        self._set_up.coord = tf.train.Coordinator(clean_stop_exception_types=[])
        self._driver.after_create_session(session, self._set_up.coord)  # The schedule starts afresh.
        self._session = session
        _unfinished.append(self._set_up)  # Until on_train_end: a `fit` that raises calls none.

    def on_epoch_begin(self, epoch, logs=None):
        self._next_stale_step = None  # Read at the first batch: the last epoch's data may have run out mid-step.

    def _restore_latest_checkpoint(self) -> None:
        """Restores the newest checkpoint of the first `CheckpointSaverHook` directory that has one."""
        for hook in self._checkpoint_hooks:
            if checkpoints.restore_latest(hook.checkpoint, hook.checkpoint_dir) is not None:
                return

    def _before_run(self, batch, logs=None):
        del batch, logs
        session = self._session
        step = self._next_stale_step
        if step is None or session.ran_callable:
            session.ran_callable = False
            step = self._read_step()
        session.stale_step = step
        self._shorten_execution_to_last_step(step)
        if not self._driver.select(step):  # No hook acts on this batch (see HookSchedule).
            self._context = None
            return
        self._context = SessionRunContext(original_args=_NO_CALLER_FETCHES, session=session)
        self._driver.before_run(self._context, None, None, refuse_feeds=_NO_FEEDS)

    def _shorten_execution_to_last_step(self, step: int) -> None:
        if self._steps_per_execution == 1:
            return
        last_step = nearest_last_step(self._stop_hooks)
        steps_left = last_step - step if last_step is not None else self._steps_per_execution
        if 0 < steps_left < self._steps_per_execution:
            self._execution.shorten(steps_left)

    def _after_run(self, batch, logs=None):
        del batch
        session = self._session
        session.logs = logs or {}
        if self._steps_per_execution != 1:
            self._execution.restore()
        stale = session.stale_step
        # An execution of one step moves the global step by one; the next batch's stale step needs no read.
        self._next_stale_step = stale + 1 if self._steps_per_execution == 1 else None
        driver = self._driver
        late = driver.late()
        if late:  # Time-based hooks whose time came during the batch: their before_run only asks for the stale step.
            if self._context is None:
                self._context = SessionRunContext(original_args=_NO_CALLER_FETCHES, session=session)
            driver.before_run_late(self._context, late, refuse_feeds=_NO_FEEDS)
        context = self._context
        if context is None:
            return
        results = [
            None if fetches is None else stale if fetches is STALE_GLOBAL_STEP else session.run(fetches)
            for fetches in driver.requests
        ]
        driver.after_run(context, results, self._run_metadata)
        if context.stop_requested:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self._session is None:
            return
        session, self._session = self._session, None
        if logs:
            session.logs = logs
        try:
            self._driver.end(session)  # v1 called `end` at a clean close only: a `fit` that raised gets none.
        finally:
            # Undone in the reverse order of their set-ups, each putting back what it found: Keras ends the
            # callbacks of a `fit` in the order it began them.
            self._set_up.ended = True
            while _unfinished and _unfinished[-1].ended:
                _unfinished.pop().undo()
