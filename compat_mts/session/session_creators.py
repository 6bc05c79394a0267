"""Session creators: how a `MonitoredSession` gets the raw session it runs on, v1's restore-or-initialize.

`ChiefSessionCreator` restores the latest checkpoint or initializes (`init_op`, `init_fn`, and on a
re-creation without checkpoints the in-memory snapshot of the first values); `WorkerSessionCreator` waits
for the chief. Both return a `RawSession`, whose `run(fetches, feed_dict=None)` follows the eager fetch model
without hooks: what hooks, `run_step_fn` and `raw_session()` get as "the session".
"""

from __future__ import annotations

import os
import time
from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.checkpoint_dir.directory import CheckpointDirectory
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.deploy import distribute
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import validation
from compat_mts.session.scaffold import Scaffold, check_scaffold, log_if_step_only

_WORKER_POLL_SECS = 0.5


class RawSession:
    """What hooks, `run_step_fn` and `raw_session()` get as "the session": runs fetches without hooks.

    `run(fetches, feed_dict=None, options=None, run_metadata=None)` follows the eager fetch model of
    `compat_mts.core.fetch`; `options` and `run_metadata` are accepted for v1 signatures and unused.
    `fetch_state` is the session's own `compat_mts.core.fetch.SessionState`, which the `MonitoredSession`
    running on it shares.
    """

    graph = None

    def __init__(self, scaffold: Scaffold, checkpoint_dir: str | None = None):
        self.scaffold = scaffold
        self.fetch_state = fetches_lib.SessionState()
        self.checkpoint_dir = checkpoint_dir
        self.restored_path: str | None = None
        self.device: str | None = None  # Where the session's steps run: the task of a `grpc://` master.
        self._closed = False

    def run(self, fetches: Any, feed_dict: dict | None = None, options=None, run_metadata=None) -> Any:
        del options, run_metadata
        if self._closed:
            raise RuntimeError('Attempted to use a closed Session.')
        with global_step_lib.outside_graph_mode():  # A hook's, or the program's, inside its own graph.
            return fetches_lib.run_fetches(fetches, feed_dict, self.fetch_state)

    def close(self) -> None:
        self._closed = True


def _run_init_callable(op: Any, session: RawSession, feed_dict: dict | None) -> None:
    if op is not None:
        session.run(op, feed_dict=feed_dict)


def _check_ready(op: Any, session: RawSession, message: str) -> None:
    if op is None:
        return
    not_ready = session.run(op)
    if not_ready is not None and len(not_ready):
        raise RuntimeError(f'{message} {not_ready!r}')


class SessionCreator(tf.compat.v1.train.SessionCreator):
    """A factory for the sessions a `MonitoredSession` runs on (v1's abstract base).

    `create_session()` returns a session whose `run(fetches, feed_dict=None)` and `close()` follow the
    eager fetch model: what `ChiefSessionCreator` and `WorkerSessionCreator` return. v1 returned a
    `tf.compat.v1.Session`; eagerly there is none, so a creator of its own typically wraps one of those
    two. It subclasses `tf.compat.v1.train.SessionCreator`; a `MonitoredSession` accepts a subclass of
    either.

    Example:

    ```python
    class LoggingCreator(compat_mts.SessionCreator):
        def __init__(self, **kwargs):
            self._chief = compat_mts.ChiefSessionCreator(**kwargs)

        def create_session(self):
            print('creating a session')
            return self._chief.create_session()
    ```
    """


class ChiefSessionCreator(SessionCreator):
    """Creates the chief's session: restore the latest checkpoint, else initialize (`init_op`, `init_fn`).

    Arguments are v1's. `master` and `config` are applied process-wide (see `compat_mts.deploy.distribute`).
    As in v1, `checkpoint_dir=''` and `checkpoint_filename_with_path=''` mean None. A `checkpoint_dir` that is a
    `CheckpointDirectory` (what `MonitoredTrainingSession` passes) is used as it is.
    """

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = '',
        config=None,
        checkpoint_dir: str | os.PathLike | CheckpointDirectory | None = None,
        checkpoint_filename_with_path: str | None = None,
    ):
        check_scaffold(scaffold)
        distribute.check_master(master)
        distribute.check_config(config)
        distribute.check_not_between_graph(master)
        directory = CheckpointDirectory.optional(checkpoint_dir)
        checkpoint_filename_with_path = validation.optional_directory(
            checkpoint_filename_with_path, 'checkpoint_filename_with_path'
        )
        if directory and checkpoint_filename_with_path:
            raise ValueError('Can not provide both checkpoint_dir and checkpoint_filename_with_path.')
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._directory = directory
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._snapshot: checkpoints.Snapshot | None = None

    def create_session(self) -> RawSession:
        distribute.apply_config(self._config)
        device = distribute.connect(self._master)
        scaffold = self._scaffold.finalize()
        cluster = deployment_lib.current().cluster  # The session's, when it creates this one.
        if cluster is not None:
            cluster.prepare(scaffold.checkpoint)
        session = RawSession(scaffold, self._directory.path if self._directory else None)
        session.device = device
        session.restored_path = self._restore(scaffold)
        if session.restored_path is None:
            if self._snapshot is not None:
                self._snapshot.restore()
            else:
                self._initialize(scaffold, session)
                # A cluster never recovers in-process (see compat_mts.deploy.distribute), and the in-memory snapshot
                # of a remote master's variables would land in the server's memory, not this process's.
                if cluster is None and device is None:
                    self._snapshot = checkpoints.Snapshot(scaffold.checkpoint)
        else:
            scaffold.check_restored_every_variable()  # v1's not-ready error for a v1 Saver of part of the graph.
        _check_ready(
            scaffold.ready_for_local_init_op,
            session,
            'Init operations did not make model ready for local_init. Init op:',
        )
        _run_init_callable(scaffold.local_init_op, session, scaffold.local_init_feed_dict)
        _check_ready(scaffold.ready_op, session, 'Init operations did not make model ready. Not ready:')
        if cluster is not None and cluster.is_chief:
            cluster.announce_ready(session.restored_path)
        return session

    def _restore(self, scaffold: Scaffold) -> str | None:
        partial = scaffold.allow_partial_restore
        if self._checkpoint_filename_with_path or self._directory:
            log_if_step_only(scaffold)
        if self._checkpoint_filename_with_path:
            path = checkpoints.expand_directory(self._checkpoint_filename_with_path)
            checkpoints.restore(scaffold.checkpoint, path, allow_partial=partial)
            return path
        if self._directory:
            return self._directory.restore_latest(scaffold.checkpoint, allow_partial=partial)
        return None

    @staticmethod
    def _initialize(scaffold: Scaffold, session: RawSession) -> None:
        _run_init_callable(scaffold.init_op, session, scaffold.init_feed_dict)
        if scaffold.init_fn is not None:
            scaffold.init_fn(session)


class WorkerSessionCreator(SessionCreator):
    """Creates a non-chief worker's session: wait for the chief's first checkpoint, then restore it.

    v1 waited until the chief had initialized the shared variables. Eagerly each worker owns its
    variables, so the wait is for what makes workers agree: with `checkpoint_dir` (an eager-only,
    keyword-only argument that `MonitoredTrainingSession` passes), the worker polls until the chief's
    first checkpoint is there and restores it, and raises v1's `DeadlineExceededError` after
    `max_wait_secs`; a `CheckpointDirectory` is used as it is. Without `checkpoint_dir` there is nothing to wait
    for.

    Under a multi-worker `MultiWorkerMirroredStrategy` the worker waits (up to `max_wait_secs`) until the
    chief has initialized or restored, then restores the checkpoint the chief restored, or initializes as
    the chief did (see `compat_mts.deploy.distribute`). `max_wait_secs=None` (or `inf`) waits forever, as v1's
    `SessionManager.wait_for_session` did.
    """

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = '',
        config=None,
        max_wait_secs: float | None = 30 * 60,
        *,
        checkpoint_dir: str | os.PathLike | CheckpointDirectory | None = None,
    ):
        check_scaffold(scaffold)
        distribute.check_master(master)
        distribute.check_config(config)
        distribute.check_not_between_graph(master)
        validation.check_max_wait_secs(max_wait_secs)
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = validation.seconds_or_forever(max_wait_secs)
        self._directory = CheckpointDirectory.optional(checkpoint_dir)

    def create_session(self) -> RawSession:
        distribute.apply_config(self._config)
        device = distribute.connect(self._master)
        scaffold = self._scaffold.finalize()
        session = RawSession(scaffold, None)
        session.device = device
        cluster = deployment_lib.current().cluster  # The session's, when it creates this one.
        if cluster is not None:
            cluster.prepare(scaffold.checkpoint)
            session.restored_path = cluster.wait_for_chief(self._max_wait_secs)
            if session.restored_path is not None:
                checkpoints.restore(
                    scaffold.checkpoint, session.restored_path, allow_partial=scaffold.allow_partial_restore
                )
            else:
                ChiefSessionCreator._initialize(scaffold, session)
        elif self._directory:
            deadline = time.time() + self._max_wait_secs
            while True:
                try:
                    session.restored_path = self._directory.restore_latest(
                        scaffold.checkpoint, allow_partial=scaffold.allow_partial_restore
                    )
                except checkpoints.DamagedCheckpointsError as error:  # The chief may be writing its first one.
                    logging.info('%s', error)
                if session.restored_path is not None:
                    break
                if time.time() >= deadline:
                    raise tf.errors.DeadlineExceededError(
                        None, None, 'Session was not ready after waiting %d secs.' % self._max_wait_secs
                    )
                logging.info("Waiting for the chief's first checkpoint in %s.", self._directory.path)
                time.sleep(min(_WORKER_POLL_SECS, max(0.0, deadline - time.time())))
        if session.restored_path is not None:
            scaffold.check_restored_every_variable()
        _run_init_callable(scaffold.local_init_op, session, scaffold.local_init_feed_dict)
        return session
