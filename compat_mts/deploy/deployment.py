"""Where a session runs: in this process, on a `grpc://` master, as a worker of a multi-worker cluster, or as a
parameter-server chief. One `Deployment`, chosen when the session is made, answers for it.

v1 decided this in the session's graph and its target. compat_mts decides it once per session (`choose`): the
session has one run method and calls it through its deployment (`run`, with `agree` after each run where the
workers stop together), watches its creation and close through it (`guard`), and its hooks and creators read
what they need (chief or not, the multi-worker `Cluster`, the ps `Scheduler`) from the deployment in effect
(`current`) instead of asking the strategy in scope themselves (ARCHITECTURE.md, "The deployment seam").
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Sequence

import tensorflow as tf

from compat_mts.deploy import distribute
from compat_mts.deploy import parameter_server

__all__ = [
    'Deployment',
    'Local',
    'RemoteMaster',
    'MultiWorker',
    'ParameterServer',
    'LOCAL',
    'choose',
    'current',
    'of_session',
]


class Deployment:
    """Where a session runs, and what that changes in its run, creation and close.

    The base is the in-process run (`Local`); the others override what differs.

    Attributes:
      is_chief: whether this process writes the checkpoints and summaries (a multi-worker cluster's other
        workers do not).
      recovers: whether a `MonitoredSession` may re-create its session after a preemption error in-process
        (a cluster cannot: see `compat_mts.deploy.distribute.ClusterError` and
        `compat_mts.deploy.parameter_server.ParameterServerError`).
      agrees: whether the workers agree after every run on whether to stop (`agree`).
      steps_per_run: the steps that one run of graph fetches goes (a parameter-server chief's K).
      cluster: the multi-worker `compat_mts.deploy.distribute.Cluster`, or None.
      scheduler: the parameter-server `compat_mts.deploy.parameter_server.Scheduler`, or None.
      device: the device the steps run on (a `grpc://` master's task), or None.
    """

    is_chief = True
    recovers = True
    agrees = False
    steps_per_run = 1
    cluster: distribute.Cluster | None = None
    scheduler: parameter_server.Scheduler | None = None
    device: str | None = None

    def run(self, run_once: Callable[..., Any], fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """One run of the session, `run_once(fetches, feed_dict, options, run_metadata)`, as this deployment runs it.

        Returns:
          What `run_once` returns.
        """
        return run_once(fetches, feed_dict, options, run_metadata)

    def agree(self, stop_requested: bool, sigterm_received: bool) -> tuple[bool, bool]:
        """Whether the session stops after this run, and whether it was preempted (SIGTERM), for every worker.

        Called after each run when `agrees`; one process decides alone.

        Returns:
          `(stop, preempted)`.
        """
        return stop_requested, sigterm_received

    def guard(self, work: Callable[[], Any]) -> Any:
        """`work()` (a session's creation or close) with this deployment in effect (`current`).

        Returns:
          What `work` returns.
        """
        with self.in_effect():
            return work()

    def connected(self, device: str | None) -> Deployment:
        """The deployment once the session's creator has connected: `device` is a `grpc://` master's task, or None."""
        del device
        return self

    def start_session(self, hooks: Sequence, global_step: tf.Variable | None) -> None:
        """A session (re)created on this deployment is about to call its hooks' `after_create_session`."""
        del hooks, global_step

    def finish(self) -> None:
        """Before the hooks' `end()` at a clean close: whatever the runs left in flight is done."""

    def settle(self) -> None:
        """Before a checkpoint: the runs in flight are done, so the variables hold every step counted."""

    @contextlib.contextmanager
    def in_effect(self) -> Iterator[Deployment]:
        """The block's `current()` is this deployment: a session's hooks and creator read it there."""
        token = _IN_EFFECT.set(self)
        try:
            yield self
        finally:
            _IN_EFFECT.reset(token)

    def __repr__(self) -> str:
        return f'<{type(self).__name__}>'


class Local(Deployment):
    """This process alone: the session runs its steps here (the default)."""

    def connected(self, device: str | None) -> Deployment:
        return self if device is None else RemoteMaster(device)


class RemoteMaster(Deployment):
    """One process whose steps run on the TensorFlow server of a `grpc://` master
    (`compat_mts.deploy.distribute.connect`)."""

    def __init__(self, device: str):
        self.device = device

    def run(self, run_once: Callable[..., Any], fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        with tf.device(self.device):
            return run_once(fetches, feed_dict, options, run_metadata)

    def __repr__(self) -> str:
        return f'<RemoteMaster on {self.device}>'


class MultiWorker(Deployment):
    """A worker of a `MultiWorkerMirroredStrategy` cluster: the workers fail together and stop after the same run.

    A failing step or hook is reported to the other workers (whose collectives would otherwise wait for this
    one), an error from the cluster is a `ClusterError`, and after every run the workers agree on whether to
    stop (one small all-reduce of the hooks' stop requests and SIGTERM). See `compat_mts.deploy.distribute`.
    """

    recovers = False
    agrees = True

    def __init__(self, cluster: distribute.Cluster):
        self.cluster = cluster
        self.is_chief = cluster.is_chief

    def run(self, run_once: Callable[..., Any], fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        try:
            return run_once(fetches, feed_dict, options, run_metadata)
        except (tf.errors.OutOfRangeError, StopIteration):
            raise  # A distributed dataset ends on every worker at the same step.
        except Exception as error:  # Alone, a failing worker would leave the others waiting in a collective.
            cluster_error = self.cluster.failed(error)
            if cluster_error is None:
                raise
            raise cluster_error from error

    def agree(self, stop_requested: bool, sigterm_received: bool) -> tuple[bool, bool]:
        """See `Deployment.agree`.

        Raises:
          compat_mts.deploy.distribute.ClusterError: a peer failed or was lost.
        """
        return self.cluster.agree(stop_requested, sigterm_received)

    def __repr__(self) -> str:
        return f'<MultiWorker {self.cluster.name}>'


class ParameterServer(Deployment):
    """The chief of a parameter-server cluster: graph fetches scheduled on the workers, K steps per run, watched.

    A run takes v1 graph fetches only (`check_graph_fetches`); runs, creation and close are watched so that a
    lost ps task is a `ParameterServerError`, and a silent one ends the process instead of hanging it
    (`Scheduler.guard`). See `compat_mts.deploy.parameter_server`.
    """

    recovers = False

    def __init__(self, scheduler: parameter_server.Scheduler):
        self.scheduler = scheduler
        self.steps_per_run = scheduler.steps_per_run

    def run(self, run_once: Callable[..., Any], fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        parameter_server.check_graph_fetches(fetches)
        return self.scheduler.guard(lambda: run_once(fetches, feed_dict, options, run_metadata))

    def guard(self, work: Callable[[], Any]) -> Any:
        """See `Deployment.guard`: watched, so that a ps task that stops answering while the session is created (the
        hooks' writers, the variables initialized or restored on the ps tasks) or ends (the last checkpoint read from
        them) ends the process with a clear message instead of a hang, as during runs."""
        with self.in_effect():
            return self.scheduler.guard(work)

    def start_session(self, hooks: Sequence, global_step: tf.Variable | None) -> None:
        self.scheduler.start_session(hooks, global_step)

    def finish(self) -> None:
        self.scheduler.finish()  # The last save has every step.

    def settle(self) -> None:
        self.scheduler.guard(self.scheduler.finish)


LOCAL = Local()
"""The deployment of a session in this process alone (it holds nothing, so one serves every session)."""

_IN_EFFECT: contextvars.ContextVar[Deployment | None] = contextvars.ContextVar('deployment', default=None)


def choose() -> Deployment:
    """The deployment of a session made now, from the strategy in scope and the process's parameter-server chief.

    A `ParameterServer` on the chief of a parameter-server cluster (`parameter_server.current()`), a
    `MultiWorker` inside the scope of a `MultiWorkerMirroredStrategy` of several workers
    (`distribute.current_cluster()`), else `LOCAL` (which a `grpc://` master's creator turns into a
    `RemoteMaster` when it connects, `Deployment.connected`).

    Returns:
      A `Deployment`.
    """
    scheduler = parameter_server.current()
    cluster = distribute.current_cluster()
    if scheduler is not None:
        return ParameterServer(scheduler)
    if cluster is not None:
        return MultiWorker(cluster)
    return LOCAL


@contextlib.contextmanager
def local() -> Iterator[None]:
    """Within it, the graphs and sessions made run in this process (`parameter_server.local_graphs`), and so do
    their hooks: `current()` is chosen afresh, not the deployment of a session whose hooks are running around the
    block. An Estimator's evaluation after its last checkpoint runs in the training session's `end()` (the
    listener's), where that session's parameter-server deployment is in effect; its session must not schedule
    its runs on the workers.
    """
    with parameter_server.local_graphs():
        token = _IN_EFFECT.set(None)
        try:
            yield
        finally:
            _IN_EFFECT.reset(token)


def of_session() -> Deployment | None:
    """The deployment of the session whose creation, hooks or close are running, or None outside a session."""
    return _IN_EFFECT.get()


def current() -> Deployment:
    """The deployment of the session whose creation, hooks or close are running, else `choose()`'s.

    A session puts its deployment in effect while it creates its raw session, calls its hooks' `begin()`,
    `after_create_session()` and `end()`, and while `MonitoredTrainingSession` makes it; hooks and session
    creators read it here (v1's hooks have no argument for it). Outside a session (a hook in
    `keras.HooksCallback`, a creator or `wrap_graph` called by the program) it is chosen as a session made
    now would choose it.

    Returns:
      A `Deployment`.
    """
    in_session = _IN_EFFECT.get()
    return in_session if in_session is not None else choose()
