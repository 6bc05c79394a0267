"""`CheckpointSaverHook` and `CheckpointSaverListener`: numbered checkpoints on a timer, as v1 saved them."""

from __future__ import annotations

import os

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.checkpoint_dir.directory import CheckpointDirectory
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.scaffold import Scaffold, check_saver, check_scaffold, log_if_step_only
from compat_mts.session.session_run_hook import STALE_GLOBAL_STEP_REQUEST, SessionRunHook, StepsPerRunMixin


class CheckpointSaverListener(tf.compat.v1.train.CheckpointSaverListener):
    """Interface for listeners that act before and after each checkpoint save (v1's protocol).

    The four methods are v1's no-ops, inherited from `tf.compat.v1.train.CheckpointSaverListener`
    (so a listener written against either class works, and passes `isinstance` checks of both):
    `begin()`, `before_save(session, global_step_value)`, `after_save(session, global_step_value)`
    and `end(session, global_step_value)`. `session` is the raw session; `after_save` returning True
    asks the session to stop after this run.

    Example:

    ```python
    class Announce(compat_mts.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            print('saved', global_step_value)
    ```
    """


class CheckpointSaverHook(StepsPerRunMixin, SessionRunHook):
    """Saves checkpoints every `save_steps` steps or `save_secs` seconds, at creation and at the end.

    Files and numbering are v1's: `<checkpoint_dir>/model.ckpt-<global step>.index/.data-*`, the
    `checkpoint` state file (so `tf.train.latest_checkpoint` works), the last five kept. They are
    written by a `tf.train.CheckpointManager` over the session's `tf.train.Checkpoint` (the scaffold's,
    or `saver`), so they are object-based TF2 checkpoints; v1 differences: no `.meta` files, relative
    paths in the state file. A checkpoint is saved when the session is created (step 0 on a fresh
    start), whenever the timer triggers, and at `end()` unless that step was just saved.

    In a multi-worker cluster (see `compat_mts.deploy.distribute`) every worker runs the hook, because a save
    involves all of them: the chief writes into `checkpoint_dir`, the others into temporary directories
    they remove at once, and `save_secs` follows the chief's clock.

    After the first step of each session (eagerly the graph exists only once the step has been traced)
    the traced step's graph goes to TensorBoard, and with `save_graph_def=True` also to `graph.pbtxt`,
    as v1 wrote the default graph at session creation.

    Two processes saving into one directory would delete each other's checkpoints, so the hook holds a lock
    file there (`compat_mts.lock`, with its pid, host and a lease that a background thread renews) while the
    process runs, and a second live writer fails at `begin()` with `CheckpointDirectoryInUseError`; a lock left
    by a killed process, or whose lease ran out (a crashed host), is taken over with a warning.
    `allow_other_writers=True` (eager-only, keyword-only) shares the directory anyway.

    Args:
      checkpoint_dir: The directory to save into (and that the session restores from); `''` is the
        working directory, as in v1. A `CheckpointDirectory` (what `MonitoredTrainingSession` and the
        Estimator pass) is used as it is.
      save_secs: Save every `save_secs` seconds, or None.
      save_steps: Save every `save_steps` global steps, or None. Exactly one of the two is given.
      saver: What to save: a `tf.train.Checkpoint`, a `tf.train.CheckpointManager` (its own `max_to_keep`
        and file names; it must write to `checkpoint_dir`), a `tf.compat.v1.train.Saver` built in the
        graph code the session runs, or None for the scaffold's checkpoint.
      checkpoint_basename: The file name prefix, `'model.ckpt'` by default (files
        `<checkpoint_basename>-<step>.index/.data-*`).
      scaffold: A `Scaffold` whose checkpoint is saved, or None for the session's; not with `saver`.
      listeners: A list of `CheckpointSaverListener` instances called around each save, or None.
      save_graph_def: Also write the traced step's graph to `graph.pbtxt` (default True); TensorBoard
        gets the graph either way.
      allow_other_writers: Share `checkpoint_dir` with another live process that saves there (default
        False: the second one fails at `begin()`).

    Example: with `save_steps=10` and a stop at step 25, v1's checkpoints: at creation, each tenth step, the end.

    >>> import tempfile
    >>> import compat_mts
    >>> directory = tempfile.mkdtemp()
    >>> global_step = compat_mts.get_or_create_global_step()
    >>> hooks = [compat_mts.CheckpointSaverHook(directory, save_steps=10), compat_mts.StopAtStepHook(last_step=25)]
    >>> with compat_mts.MonitoredTrainingSession(hooks=hooks) as session:
    ...     while not session.should_stop():
    ...         _ = session.run(lambda: global_step.assign_add(1))
    >>> import os
    >>> import tensorflow as tf
    >>> [os.path.basename(path) for path in tf.train.get_checkpoint_state(directory).all_model_checkpoint_paths]
    ['model.ckpt-0', 'model.ckpt-10', 'model.ckpt-20', 'model.ckpt-25']

    Raises:
      ValueError: both `saver` and `scaffold`, or not exactly one of `save_steps` and `save_secs`
        (v1's messages), or `save_secs` is NaN (`inf` saves only when the session is created and at
        the end). `checkpoint_dir=''` is the working directory, as in v1.
      TypeError: `saver` is a `tf.compat.v1.train.Saver` built eagerly (use a `tf.train.Checkpoint`), a
        listener is not a `CheckpointSaverListener` instance, or another argument has the wrong type.
    """

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike | CheckpointDirectory,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver=None,
        checkpoint_basename: str = 'model.ckpt',
        scaffold: Scaffold | None = None,
        listeners=None,
        save_graph_def: bool = True,
        *,
        allow_other_writers: bool = False,
    ):
        logging.info('Create CheckpointSaverHook.')
        if saver is not None and scaffold is not None:
            raise ValueError('You cannot provide both saver and scaffold.')
        self._directory = CheckpointDirectory.of(checkpoint_dir)
        check_saver(saver)
        check_scaffold(scaffold)
        validation.check_integer(save_steps, 'save_steps')
        validation.check_seconds(
            save_secs, 'save_secs', infinity='saves only when the session is created and at the end'
        )
        validation.check_non_empty_string(checkpoint_basename, 'checkpoint_basename')
        validation.check_bool(save_graph_def, 'save_graph_def')
        self._listeners = validation.check_listeners(listeners)
        if isinstance(saver, tf.compat.v1.train.Saver):  # Built in the graph code: saved as a scaffold saves it.
            scaffold, saver = Scaffold(saver=saver), None
        self._checkpoint_dir = self._directory.path
        self._saver = saver
        self._scaffold = scaffold
        self._checkpoint_basename = checkpoint_basename
        self._save_path = os.path.join(self._checkpoint_dir, checkpoint_basename)
        self._save_graph_def = save_graph_def
        validation.check_bool(allow_other_writers, 'allow_other_writers')
        self._allow_other_writers = allow_other_writers
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._time_based = save_secs is not None
        # How far the step may have moved in a run before the global step is read to check the timer. v1 looked
        # 1e6 steps ahead, which reads it after every run; a run is one step (K under `repeat_steps`, which says
        # so), so a step-based timer reads it only on the runs that may save.
        self._default_scaffold: Scaffold | None = None
        self._manager: tf.train.CheckpointManager | None = None

    saves_checkpoints = True  # The capability the session asks for (see compat_mts.session.session_run_hook).

    def _set_default_scaffold(self, scaffold: Scaffold) -> None:
        """Sets what is saved when neither `saver` nor `scaffold` was given, from the next `begin()` on.

        v1 then saved the graph's `SAVERS` collection. Eagerly there is no graph, so whoever runs the
        hook says what the program's state is: `compat_mts.keras.HooksCallback` passes the model and its
        optimizer.
        """
        self._default_scaffold = scaffold

    @property
    def checkpoint_dir(self) -> str:
        """The directory the checkpoints are written to."""
        return self._checkpoint_dir

    @property
    def checkpoint(self) -> tf.train.Checkpoint:
        """The `tf.train.Checkpoint` this hook saves (global step included); available after `begin()`."""
        return self._get_manager().checkpoint

    def begin(self):
        self._manager = None  # Built at the first save: a new session may have a new global step.
        # In a multi-worker cluster every worker saves (see compat_mts.deploy.distribute); only the chief writes here.
        deployment = deployment_lib.current()  # The session's (ARCHITECTURE.md, "The deployment seam").
        self._cluster = deployment.cluster
        self._settle = deployment.settle
        self._writes_files = deployment.is_chief
        if self._writes_files:
            self._directory.make_writable(self._checkpoint_basename)
            # Before the session restores: the other writer may be mid-save. Once no one else saves there, a
            # save's `_temp` folder is a killed one's.
            if not self._allow_other_writers:
                self._directory.lock()
            self._summary_writer = summary_lib.summary_writer_for(self._checkpoint_dir)
        self._global_step = global_step_lib.require_global_step('CheckpointSaverHook')
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        global_step = int(session.run(self._global_step))
        # Inside `model.fit` (HooksCallback) there is no step graph to write.
        self._graph_pending = self._writes_files and getattr(session, 'has_step_graph', True)
        restored_path = getattr(session, 'restored_path', None)
        holds_restored = restored_path is not None and _same_path(restored_path, f'{self._save_path}-{global_step}')
        if self._cluster is not None:  # Every worker restored the chief's checkpoint; all skip its save or none.
            holds_restored = self._cluster.chief_decides(holds_restored)
        self._save(session, global_step, rewrite=not holds_restored)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return STALE_GLOBAL_STEP_REQUEST

    def after_run(self, run_context, run_values):
        if self._graph_pending:
            self._graph_pending = not self._write_graph(run_context.session)
        if self._cluster is not None and self._time_based:
            self._after_run_in_cluster(run_context)
        elif self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            self._settle()  # On a parameter-server chief: the steps scheduled have run, and are saved.
            global_step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    reads_clock_after_run = True  # `save_secs` is checked in after_run; before_run only asks for the stale step.

    def idle_until(self):
        """Idle until the timer may trigger (`compat_mts.session.session_run_hook.HookCapabilities`); every run in a
        cluster."""
        if self._graph_pending or (self._cluster is not None and self._time_based):
            return None
        return self._timer.next_trigger(self._steps_per_run)

    def _after_run_in_cluster(self, run_context) -> None:
        """A time-based timer reads each worker's clock, so every worker saves when the chief's triggers."""
        global_step = int(run_context.session.run(self._global_step))
        if self._cluster.chief_decides(self._timer.should_trigger_for_step(global_step)):
            self._timer.update_last_triggered_step(global_step)
            if self._save(run_context.session, global_step):
                run_context.request_stop()

    def end(self, session):
        last_step = (
            int(session.run(self._global_step))
            if session is not None
            else int(global_step_lib.read_value(self._global_step))
        )
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)
        if self._writes_files and not self._allow_other_writers:
            self._directory.unlock()

    def _write_graph(self, session) -> bool:
        """Writes the session's step graph; False while this session has run no step yet."""
        graph_def = fetches_lib.step_graph_def(getattr(session, 'fetch_state', None))
        if graph_def is None:
            return False
        if self._save_graph_def:
            tf.io.write_graph(graph_def, self._checkpoint_dir, 'graph.pbtxt', as_text=True)
        summary_lib.write_graph(self._summary_writer, graph_def)
        return True

    def _get_manager(self) -> tf.train.CheckpointManager:
        if self._manager is None:
            scaffold = self._scaffold or self._default_scaffold or Scaffold()
            saver = self._saver if self._saver is not None else scaffold.saver
            if isinstance(saver, tf.train.CheckpointManager):  # Its own max_to_keep and file name.
                self._check_manager_directory(saver)
                self._manager = saver
            else:
                checkpoint = self._saver
                if checkpoint is None:
                    checkpoint = scaffold.finalize().checkpoint
                    log_if_step_only(scaffold)
                elif getattr(checkpoint, global_step_lib.GLOBAL_STEP_NAME, None) is None:
                    setattr(checkpoint, global_step_lib.GLOBAL_STEP_NAME, self._global_step)
                self._manager = self._directory.manager(
                    checkpoint,
                    max_to_keep=scaffold.max_to_keep,
                    keep_checkpoint_every_n_hours=scaffold.keep_checkpoint_every_n_hours,
                    basename=self._checkpoint_basename,
                    writes_files=self._writes_files,
                )
        return self._manager

    def _check_manager_directory(self, manager: tf.train.CheckpointManager) -> None:
        if os.path.realpath(manager.directory) != os.path.realpath(self._checkpoint_dir):
            raise ValueError(
                f'The tf.train.CheckpointManager given as saver writes to {manager.directory!r}, but the '
                f'checkpoints of this session are restored from and saved to {self._checkpoint_dir!r} '
                '(checkpoint_dir). Create the manager on checkpoint_dir.'
            )
        if getattr(manager.checkpoint, global_step_lib.GLOBAL_STEP_NAME, None) is None:
            setattr(manager.checkpoint, global_step_lib.GLOBAL_STEP_NAME, self._global_step)

    def _save(self, session, step: int, rewrite: bool = True) -> bool:
        """Saves the checkpoint for `step`; returns True if a listener asked to stop.

        `rewrite=False` is the creation save of a session that has just restored that very checkpoint: its
        files are left as they are (v1 wrote the same values again), and the listeners are called as in v1.
        Variables that the first step creates, such as a Keras optimizer's slots, are restored from the files
        only when they are created, so writing before then would replace the last good checkpoint with one
        that lacks them; and in a multi-worker cluster the other workers may still be reading those files
        (they restore the checkpoint the chief announced), which an index rewritten in place would cut short.
        """
        logging.info('Calling checkpoint listeners before saving checkpoint %d...', step)
        for listener in self._listeners:
            listener.before_save(session, step)
        path = f'{self._save_path}-{step}'
        if self._writes_files:
            logging.info('Saving checkpoints for %d into %s.', step, self._save_path)
        if not rewrite:
            logging.debug('%s holds what this session restored; its files are kept as they are.', path)
            if self._writes_files:
                checkpoints.record_kept_checkpoint(self._get_manager(), path)
        elif self._writes_files:
            checkpoints.save_numbered(self._get_manager(), step)
        else:
            self._cluster.save_copy(self._get_manager().checkpoint, step, self._checkpoint_basename)
        logging.info('Calling checkpoint listeners after saving checkpoint %d...', step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logging.info('A CheckpointSaverListener requested that training be stopped. listener: %s', listener)
                should_stop = True
        return should_stop


def _same_path(first: str, second: str) -> bool:
    return os.path.normpath(os.path.abspath(first)) == os.path.normpath(os.path.abspath(second))
