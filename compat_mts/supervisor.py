"""`Supervisor`: v1's `tf.compat.v1.train.Supervisor` on a compat_mts session, for programs such as ptb_word_lm.

v1's Supervisor gathered a graph's init, ready and summary ops and a `Saver`, made a session that restored the
latest checkpoint of `logdir` (or initialized), and ran three threads beside the program's loop: a checkpoint
every `save_model_secs`, the summary op every `save_summaries_secs` and the steps per second. It needs graph mode
(`RuntimeError: Supervisors are incompatible with eager execution` on TensorFlow 2).

Here the graph the program builds in its `with tf.Graph().as_default():` block is run by a `MonitoredSession`
(which adopts that graph, `compat_mts.legacy.graph`), and the three services are hooks of that session,
triggered after the program's own runs rather than on threads: `CheckpointSaverHook(save_secs=save_model_secs)`
without the save at the end (v1's Supervisor saved none), `SummarySaverHook(save_secs=save_summaries_secs)` on
the summary op, and `StepCounterHook(every_n_secs=save_summaries_secs)`. Each triggers at the first run, as each
of v1's threads ran once when it started. `saver` is a `SupervisorSaver`, whose `save(session, path,
global_step=...)` writes the files v1's `Saver.save` wrote, from the session's checkpoint.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

import tensorflow as tf

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import global_step as global_step_lib
from compat_mts import summary as summary_lib
from compat_mts.hooks import CheckpointSaverHook, StepCounterHook, SummarySaverHook
from compat_mts.session.monitored_session import MonitoredSession
from compat_mts.session.scaffold import Scaffold
from compat_mts.session.session_creators import ChiefSessionCreator, WorkerSessionCreator

__all__ = ['Supervisor', 'SupervisorSaver']

_EAGER_MESSAGE = (
    'compat_mts.Supervisor runs the graph the program builds: create it inside the '
    "program's 'with tf.Graph().as_default():' block, after the model, or pass graph= (the graph built)"
)


class _NoFinalSave(CheckpointSaverHook):
    """v1's Supervisor checkpoint thread: a save at the start and every `save_model_secs`, none at the end."""

    def end(self, session):
        for listener in self._listeners:
            listener.end(session, int(session.run(self._global_step)))
        if self._writes_files and not self._allow_other_writers:
            checkpoints.unlock_directory(self._checkpoint_dir)


class _StepCounter(StepCounterHook):
    """v1's Supervisor step-counter thread: `global_step/sec` every `save_summaries_secs`. The thread read the step
    on its clock, so the program's runs that do not train (an assign, an evaluation) are not a stuck step."""

    def begin(self):
        super().begin()
        self._warn_when_stuck = False


class SupervisorSaver:
    """`Supervisor.saver`: v1's `Saver.save(sess, save_path, global_step=...)` on a compat_mts session.

    It saves what the v1 `Saver` of the graph named (every global variable, under its v1 name, by default), as
    `<save_path>-<step>` with the `checkpoint` state file beside it, keeping `max_to_keep` of them.
    """

    def __init__(self, saver: tf.compat.v1.train.Saver, scaffold: Scaffold):
        self._saver = saver
        self._scaffold = scaffold
        self._managers: dict[str, tf.train.CheckpointManager] = {}

    @property
    def saver_def(self):
        """The v1 `Saver`'s `SaverDef`."""
        return self._saver.saver_def

    def save(self, sess: Any, save_path: str, global_step: Any = None) -> str:
        """Saves the variables and returns the checkpoint's path prefix, as v1's `Saver.save`.

        Args:
          sess: the session of `Supervisor.managed_session()` (or `prepare_or_wait_for_session()`).
          save_path: the prefix of the files (`<save_path>-<step>` with `global_step`).
          global_step: None, an int, or the global step tensor (`Supervisor.global_step`), read in `sess`.

        Raises:
          RuntimeError: no session of this Supervisor has been made yet.
        """
        checkpoint = self._scaffold.checkpoint
        if checkpoint is None:
            raise RuntimeError('Supervisor.saver.save() needs the session of managed_session() first')
        step = global_step if global_step is None or isinstance(global_step, int) else int(sess.run(global_step))
        directory, name = os.path.split(os.path.abspath(save_path))
        with global_step_lib.outside_graph_mode():  # Called in the program's graph block: the save is eager.
            if step is None:
                path = checkpoint.write(save_path)
                tf.compat.v1.train.update_checkpoint_state(directory, path)
                return path
            key = os.path.join(directory, name)
            if key not in self._managers:
                self._managers[key] = tf.train.CheckpointManager(
                    checkpoint, directory, max_to_keep=self.saver_def.max_to_keep, checkpoint_name=name
                )
            return checkpoints.save_numbered(self._managers[key], step)


class _EventWriter:
    """`Supervisor.summary_writer`: `add_summary(summary, global_step)` of v1's `FileWriter`, into `logdir`."""

    def __init__(self, logdir: str):
        with global_step_lib.outside_graph_mode():
            self._writer = summary_lib.summary_writer_for(logdir)
        self._logdir = logdir

    def add_summary(self, summary, global_step: int | None = None) -> None:
        serialized = summary if isinstance(summary, bytes) else summary.SerializeToString()
        with global_step_lib.outside_graph_mode():
            summary_lib.write_serialized(self._writer, serialized, int(global_step or 0))

    def flush(self) -> None:
        with global_step_lib.outside_graph_mode():
            summary_lib.flush(self._writer, self._logdir)

    def close(self) -> None:
        self.flush()


class Supervisor:
    """v1's `tf.compat.v1.train.Supervisor`, eagerly: the same arguments, session and services.

    ```python
    with tf.Graph().as_default():
        ...  # the model, its train_op and the global step
        sv = compat_mts.Supervisor(logdir=logdir)
        with sv.managed_session() as session:
            while not sv.should_stop():
                session.run(train_op)
    ```

    Args:
      graph: the graph the program built; None: the default graph (the `with tf.Graph().as_default():` block's).
      ready_op, ready_for_local_init_op, init_op, init_feed_dict, local_init_op: as `Scaffold`'s (USE_DEFAULT:
        its defaults, v1's).
      is_chief: the chief restores or initializes and runs the services; another task waits for it.
      logdir: where checkpoints and summaries go, and the latest checkpoint is restored from; None: neither.
      summary_op: the summary tensor of the summary service (USE_DEFAULT: `merge_all()`; None: no service).
      saver: the graph's v1 `Saver` (USE_DEFAULT: one over every global variable; None: no checkpoints).
      global_step: the global step tensor (USE_DEFAULT: the graph's).
      save_summaries_secs: seconds between summaries and the steps-per-second lines (0 or None: none).
      save_model_secs: seconds between checkpoints (0 or None: none).
      recovery_wait_secs: kept for v1's signature; a non-chief waits through `WorkerSessionCreator`.
      stop_grace_secs: how long `stop()` waits for the threads started by `loop()`.
      checkpoint_basename: the checkpoints' file name in `logdir`.
      session_manager: not supported (v1's SessionManager makes tf.Sessions); must be None.
      summary_writer: USE_DEFAULT: a writer into `logdir` (None without one).
      init_fn: called as `init_fn(session)` after `init_op`, when nothing was restored.
      local_init_run_options: not used: eager runs take no RunOptions.

    Raises:
      RuntimeError: no graph is being built (see the module docstring).
      ValueError: `session_manager` given.
    """

    USE_DEFAULT = 0

    def __init__(
        self,
        graph: tf.Graph | None = None,
        ready_op: Any = USE_DEFAULT,
        ready_for_local_init_op: Any = USE_DEFAULT,
        is_chief: bool = True,
        init_op: Any = USE_DEFAULT,
        init_feed_dict: dict | None = None,
        local_init_op: Any = USE_DEFAULT,
        logdir: str | None = None,
        summary_op: Any = USE_DEFAULT,
        saver: Any = USE_DEFAULT,
        global_step: Any = USE_DEFAULT,
        save_summaries_secs: float | None = 120,
        save_model_secs: float | None = 600,
        recovery_wait_secs: float = 30,
        stop_grace_secs: float = 120,
        checkpoint_basename: str = 'model.ckpt',
        session_manager: Any = None,
        summary_writer: Any = USE_DEFAULT,
        init_fn: Callable[[Any], None] | None = None,
        local_init_run_options: Any = None,
    ):
        del recovery_wait_secs, local_init_run_options
        if session_manager is not None:
            raise ValueError('session_manager: compat_mts.Supervisor makes its own session; pass None')
        if graph is None:
            if tf.executing_eagerly():
                raise RuntimeError(_EAGER_MESSAGE)
            graph = tf.compat.v1.get_default_graph()
        self._graph = graph
        with graph.as_default():
            self._global_step = tf.compat.v1.train.get_global_step() if global_step is self.USE_DEFAULT else global_step
            if saver is self.USE_DEFAULT:
                savers = graph.get_collection(tf.compat.v1.GraphKeys.SAVERS)
                saver = savers[0] if savers else tf.compat.v1.train.Saver()
            if summary_op is self.USE_DEFAULT:
                summary_op = tf.compat.v1.summary.merge_all()
        self._v1_saver = saver
        self._summary_op = summary_op
        self._is_chief = is_chief
        self._logdir = logdir
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._checkpoint_basename = checkpoint_basename
        self._init_fn = init_fn
        self._init_feed_dict = init_feed_dict
        self._ops = {
            'init_op': init_op,
            'ready_op': ready_op,
            'ready_for_local_init_op': ready_for_local_init_op,
            'local_init_op': local_init_op,
        }
        self._scaffold = Scaffold(
            init_feed_dict=init_feed_dict,
            init_fn=(lambda scaffold, session: init_fn(session)) if init_fn else None,
            summary_op=summary_op,
            saver=saver,
            **{name: None if op is self.USE_DEFAULT else op for name, op in self._ops.items()},
        )
        self._saver = SupervisorSaver(saver, self._scaffold) if saver is not None else None
        if summary_writer is self.USE_DEFAULT:
            summary_writer = _EventWriter(logdir) if logdir and is_chief else None
        self._summary_writer = summary_writer
        self._coord = tf.train.Coordinator()
        self._threads: list = []
        self._session: MonitoredSession | None = None

    # v1's properties.
    @property
    def is_chief(self) -> bool:
        """Whether this task is the chief."""
        return self._is_chief

    @property
    def logdir(self) -> str | None:
        """Where checkpoints and summaries go."""
        return self._logdir

    @property
    def save_model_secs(self) -> float | None:
        """Seconds between the checkpoint service's saves."""
        return self._save_model_secs

    @property
    def save_summaries_secs(self) -> float | None:
        """Seconds between the summary service's summaries."""
        return self._save_summaries_secs

    @property
    def saver(self) -> SupervisorSaver | None:
        """The `SupervisorSaver` of the graph's v1 Saver (None: no checkpoints)."""
        return self._saver

    @property
    def global_step(self) -> Any:
        """The graph's global step tensor (None when it has none)."""
        return self._global_step

    @property
    def summary_writer(self) -> Any:
        """The writer into `logdir` that `summary_computed` writes to."""
        return self._summary_writer

    @property
    def summary_op(self) -> Any:
        """The summary tensor of the summary service."""
        return self._summary_op

    @property
    def init_op(self) -> Any:
        """The init op given (USE_DEFAULT: the scaffold's)."""
        return self._ops['init_op']

    @property
    def ready_op(self) -> Any:
        """The ready op given (USE_DEFAULT: the scaffold's)."""
        return self._ops['ready_op']

    @property
    def ready_for_local_init_op(self) -> Any:
        """The ready-for-local-init op given (USE_DEFAULT: the scaffold's)."""
        return self._ops['ready_for_local_init_op']

    @property
    def local_init_op(self) -> Any:
        """The local init op given (USE_DEFAULT: the scaffold's)."""
        return self._ops['local_init_op']

    @property
    def init_feed_dict(self) -> dict | None:
        """The feeds of the init op."""
        return self._init_feed_dict

    @property
    def init_fn(self) -> Callable | None:
        """Called as `init_fn(session)` when nothing was restored."""
        return self._init_fn

    @property
    def coord(self) -> tf.train.Coordinator:
        """The coordinator of `should_stop`, `request_stop` and the threads of `loop`."""
        return self._coord

    def _hooks(self) -> list:
        if not (self._is_chief and self._logdir):
            return []
        hooks = []
        if self._saver is not None and self._save_model_secs:
            hooks.append(
                _NoFinalSave(
                    self._logdir,
                    save_secs=self._save_model_secs,
                    checkpoint_basename=self._checkpoint_basename,
                    scaffold=self._scaffold,
                )
            )
        if self._save_summaries_secs:
            if self._summary_op is not None:
                hooks.append(
                    SummarySaverHook(
                        save_secs=self._save_summaries_secs, output_dir=self._logdir, summary_op=self._summary_op
                    )
                )
            if self._global_step is not None:
                hooks.append(
                    _StepCounter(every_n_steps=None, every_n_secs=self._save_summaries_secs, output_dir=self._logdir)
                )
        return hooks

    def prepare_or_wait_for_session(
        self,
        master: str = '',
        config: Any = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        start_standard_services: bool = True,
    ) -> MonitoredSession:
        """The session: the chief restores the latest checkpoint of `logdir` (or initializes) and starts the
        services; another task waits for the chief. Its `run(fetches, feed_dict)` is v1's.

        Args:
          master: '' or a `grpc://` target, as a compat_mts session's.
          config: a `ConfigProto`, as a compat_mts session's.
          wait_for_checkpoint: kept for v1's signature.
          max_wait_secs: how long a non-chief waits for the chief.
          start_standard_services: whether the checkpoint, summary and step-counter services run.
        """
        del wait_for_checkpoint
        if self._is_chief:
            creator = ChiefSessionCreator(
                self._scaffold, master, config, checkpoint_dir=self._logdir if self._saver is not None else None
            )
        else:
            creator = WorkerSessionCreator(self._scaffold, master, config, max_wait_secs=max_wait_secs)
        hooks = self._hooks() if start_standard_services else []
        self._session = MonitoredSession(creator, hooks, stop_grace_period_secs=self._stop_grace_secs)
        return self._session

    @contextlib.contextmanager
    def managed_session(
        self,
        master: str = '',
        config: Any = None,
        start_standard_services: bool = True,
        close_summary_writer: bool = True,
    ) -> Iterator[MonitoredSession]:
        """`prepare_or_wait_for_session()` as a context: an exception in the block stops the Supervisor (an
        `OutOfRangeError` quietly, as v1), and `stop()` and the session's close follow."""
        session = None
        try:
            session = self.prepare_or_wait_for_session(master, config, start_standard_services=start_standard_services)
            yield session
        except Exception as error:  # noqa: BLE001 - v1's: the coordinator keeps it, stop() raises it.
            self.request_stop(error)
        finally:
            self.stop(close_summary_writer=close_summary_writer)

    def should_stop(self) -> bool:
        """Whether a stop was requested (`request_stop`, a thread's error)."""
        return self._coord.should_stop()

    def request_stop(self, ex: BaseException | None = None) -> None:
        """Requests the stop; `ex` (not an `OutOfRangeError`) is raised again by `stop()`."""
        self._coord.request_stop(ex)

    def stop(self, threads: list | None = None, close_summary_writer: bool = True, ignore_live_threads: bool = False):
        """Stops the threads of `loop()` (and `threads`), closes the session (its services end) and the writer,
        and raises the exception a `request_stop(ex)` gave."""
        self._coord.request_stop()
        try:
            self._coord.join(
                self._threads + list(threads or ()),
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            self._threads = []
            session, self._session = self._session, None
            if session is not None:
                session.close()
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.close()

    def loop(
        self, timer_interval_secs: float, target: Callable, args: tuple | None = None, kwargs: dict | None = None
    ) -> tf.compat.v1.train.LooperThread:
        """Starts a thread that calls `target(*args, **kwargs)` every `timer_interval_secs` until the stop."""
        thread = tf.compat.v1.train.LooperThread(
            self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs
        )
        thread.start()
        self._threads.append(thread)
        return thread

    def summary_computed(self, sess: Any, summary: Any, global_step: int | None = None) -> None:
        """Writes a summary the program computed (`session.run(summary_op)`) at `global_step` (default: the
        session's global step).

        Raises:
          RuntimeError: the Supervisor has no summary writer (no `logdir`, or not the chief).
        """
        if self._summary_writer is None:
            raise RuntimeError('Writing a summary requires a summary writer.')
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self._summary_writer.add_summary(summary, global_step)
