"""`MonitoredSession` and `SingularMonitoredSession`: v1's hooked, coordinated, recoverable run loop, eagerly.

v1 stacked five private session wrappers (recoverable → coordinated → hooked → tf.Session). Their
behaviour is kept, in one class:

- hooks: `begin()` once, `after_create_session` after every (re)creation, `before_run`/`after_run`
  around each `run()` with all fetches resolved from the same execution, `end()` at a clean close;
- a `tf.train.Coordinator` whose threads `close()` joins for `stop_grace_period_secs`, and whose
  reported exceptions stop the loop and surface from `close()`;
- recovery (MonitoredSession only): an `AbortedError`/`UnavailableError` from the step or a hook
  closes the session, re-creates it (restoring the latest checkpoint, or re-initializing to the values
  of the first creation) and retries the same call.

There is no `tf.compat.v1.Session` underneath: "the session" that hooks and `run_step_fn` see is a raw
session whose `run(fetches, feed_dict=None)` follows the eager fetch model without hooks. The creators of
those sessions (restore or initialize, wait for the chief) are `compat_mts.session.session_creators`; they are
re-exported here, where v1 had them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from typing import Any, Callable, Sequence

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.deploy import preemption
from compat_mts.session import steps as steps_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.session.hook_driver import HookDriver
from compat_mts.session.scaffold import Scaffold
from compat_mts.session.session_creators import ChiefSessionCreator, RawSession, SessionCreator, WorkerSessionCreator
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunContext, checkpoint_saving_hooks

__all__ = [
    'MonitoredSession',
    'SingularMonitoredSession',
    'StepContext',
    'SessionCreator',
    'ChiefSessionCreator',
    'WorkerSessionCreator',
    'RawSession',
]

_PREEMPTION_ERRORS = (tf.errors.AbortedError, tf.errors.UnavailableError)
# v1's tf.Session said the first sentence; its MonitoredSession raised an AttributeError of None instead.
_CLOSED = (
    'Attempted to use a closed Session. This session was closed (its `with` block ended, or close() was called) '
    'and runs nothing more; run the steps inside the `with` block, or create a new session.'
)
_LATE = 'it was called after the run (reads_clock_after_run).'  # Why a hook called late may not feed.
_HOOKS_GRAPH: contextvars.ContextVar[Any] = contextvars.ContextVar('hooks_graph', default=None)


@contextlib.contextmanager
def hooks_begin_in(graph: Any):
    """The sessions created in this block call their hooks' `begin()` inside `graph.as_default()`.

    v1's Estimator created its session inside the graph its `model_fn` built, so a hook's `begin()` found the
    graph's global step there (`tf.compat.v1.train.get_global_step()`) and could add ops to it; compat_mts's
    Estimator wraps that graph, and creates its sessions in this block with the `WrappedGraph`, whose
    `as_default()` opens the plain graph for the new ops and makes them runnable.
    """
    token = _HOOKS_GRAPH.set(graph)
    try:
        yield
    finally:
        _HOOKS_GRAPH.reset(token)


class StepContext:
    """What `run_step_fn` passes to `step_fn`: the raw session, `run_with_hooks`, `request_stop`."""

    def __init__(self, session: RawSession, run_with_hooks_fn: Callable):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> RawSession:
        return self._session

    def run_with_hooks(self, *args, **kwargs) -> Any:
        """Runs as `MonitoredSession.run` does, hooks included."""
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        """Ends the `run_step_fn` iterations, as v1 did, by raising StopIteration."""
        raise StopIteration('step_fn has requested the iterations to stop.')


def _outside_graph_mode(method: Callable) -> Callable:
    """Runs a session method eagerly also when the program calls it inside its `with tf.Graph().as_default():`."""

    @functools.wraps(method)
    def eagerly(self, *args, **kwargs):
        if self._graph is None:
            return method(self, *args, **kwargs)
        with global_step_lib.outside_graph(self._graph):
            return method(self, *args, **kwargs)

    return eagerly


class _MonitoredSession:
    """The loop shared by `MonitoredSession` and `SingularMonitoredSession`."""

    def __init__(self, session_creator, hooks, should_recover: bool, stop_grace_period_secs: float = 120):
        validation.check_session_creator(session_creator)
        validation.check_stop_grace_period_secs(stop_grace_period_secs)
        self._hooks = validation.check_hooks(hooks)
        # Chosen once (ARCHITECTURE.md, "The deployment seam"); refined only when a `grpc://` master connects.
        self._deployment = deployment_lib.current()
        # Idle hooks whose `before_run` only asks for the stale step are decided after the run, the others called on
        # every run (ARCHITECTURE.md, "The hook-driver seam"); every hook on every run on the general path.
        self._driver = HookDriver(self._hooks, decide_after_run=fetches_lib.fast_paths())
        self._steps_per_run = steps_lib.StepsPerRun(
            self._hooks, graph_steps_per_run=self._deployment.steps_per_run, tell_hooks=self._driver.set_steps_per_run
        )
        self._creator = session_creator or ChiefSessionCreator()
        self._should_recover = should_recover and self._deployment.recovers
        self._stop_grace_period_secs = stop_grace_period_secs
        self._raw: RawSession | None = None
        self._coord: tf.train.Coordinator | None = None
        self._closed = False
        self._hooks_requested_stop = False
        self._preempted = False
        self._sigterm_received = False
        self._sigterm = preemption.SigtermWatcher(self._on_sigterm)
        # Created inside the program's own `with tf.Graph().as_default():`, the session runs that graph
        # (`compat_mts.legacy.adopt_graph`, imported then: eager programs do not load compat_mts.legacy).
        self._graph = tf.compat.v1.get_default_graph() if global_step_lib.in_graph_mode() else None
        self._unfinalize_at_close = (
            self._graph is not None and not self._graph.finalized and tf_internals.CAN_UNFINALIZE
        )
        self._summaries = summary_lib.SessionSummaries()  # Writers released (events files closed) at close.
        self._state = fetches_lib.SessionState()
        self._adopted_graph = None
        self._registration_before_adoption = global_step_lib.registration()
        self._global_step: tf.Variable | None = None
        try:
            self._deployment.guard(self._begin_and_create)
        except BaseException:
            # A creation that failed after the summaries were activated (a hook's `after_create_session` refused)
            # must not leave them the process's defaults: a later graph or `tf.summary` call would read them.
            try:
                self._close_inner()
            except Exception as error:  # The creation's error is the one to raise.
                logging.debug('Closing the session whose creation failed: %s', error)
            self._release_graph()
            self._summaries.release()
            raise
        if checkpoint_saving_hooks(self._hooks):  # A SIGTERM stops after this run; end() saves.
            self._sigterm.install()

    def _begin_and_create(self) -> None:
        hooks_graph = _HOOKS_GRAPH.get() if self._graph is None else None
        with self._summaries.collecting(), hooks_graph.as_default() if hooks_graph else contextlib.nullcontext():
            self._driver.begin()  # In the program's graph, if it has one: a v1 hook may add ops there, as in v1.
        with global_step_lib.outside_graph_mode():
            if self._graph is not None:
                from compat_mts.legacy import graph as legacy_graph  # Layer 5, below the session: no circle.

                self._adopted_graph = legacy_graph.adopt_graph(self._graph)
            if self._should_recover:
                self._create_recoverably()
            else:
                self._create()

    def _release_graph(self) -> None:
        """Lets the program add ops to its graph again, as v1 did after a session closed.

        The program's graph also leaves the fetch model, and its global step the registration (the one
        registered before is registered again): with the session gone nothing runs it, and a later session of
        other code in the process (stage 2 of the same notebook) must neither resolve its names (`'loss'`) to
        the closed graph's tensors nor count on its global step.
        """
        if self._adopted_graph is not None:
            from compat_mts.legacy import graph as legacy_graph

            legacy_graph.forget_graph(self._adopted_graph)
            if global_step_lib.registration()[0] is self._adopted_graph.global_step is not None:
                global_step_lib.restore_registration(self._registration_before_adoption)
            self._adopted_graph = None
        if self._unfinalize_at_close:
            self._unfinalize_at_close = False
            tf_internals.unfinalize(self._graph)

    # Creation and teardown of the inner (re-creatable) session.

    def _create(self) -> None:
        with self._deployment.in_effect():  # The creator and the hooks read it (a re-creation is not guarded).
            self._raw = validation.check_created_session(self._creator.create_session(), self._creator)
            self._deployment = self._deployment.connected(getattr(self._raw, 'device', None))
            self._state = self._fetch_state_of(self._raw)
            self._state.graph_runner = self._adopted_graph or fetches_lib.graph_runner_of_global_step()
            self._coord = tf.train.Coordinator(clean_stop_exception_types=[])
            self._global_step = global_step_lib.get_global_step()
            self._last_stale_step: int | None = None  # The global step before the last run, if hooks read it.
            self._deployment.start_session(self._hooks, self._global_step)
            self._summaries.activate()
            self._driver.after_create_session(self._raw, self._coord)

    @staticmethod
    def _fetch_state_of(raw: Any) -> fetches_lib.SessionState:
        """The fetch state of a newly created raw session: its own, so that a re-created session starts afresh."""
        state = getattr(raw, 'fetch_state', None)
        if state is None:  # The session object of a creator of the program's own: hooks find the state on it.
            state = fetches_lib.SessionState()
            try:
                raw.fetch_state = state
            except AttributeError:  # Slots or a read-only attribute: the session writes no step graph then.
                pass
        return state

    def _create_recoverably(self) -> None:
        while True:
            try:
                self._create()
                return
            except _PREEMPTION_ERRORS as error:
                logging.info(
                    'An error was raised while a session was being created. This may be due to a '
                    'preemption of a connected worker or parameter server. A new session will be '
                    'created. Error: %s',
                    error,
                )
                self._close_inner_quietly()

    def _close_inner(self) -> None:
        """Stops the coordinator, joins its threads, stops summary recording, closes the raw session."""
        coord, raw = self._coord, self._raw
        self._coord = None
        self._raw = None
        try:
            if coord is not None:
                coord.request_stop()
                threads = tf_internals.coordinator_threads(coord)
                try:
                    coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
                finally:
                    self._report_stragglers(threads)
        finally:
            self._summaries.deactivate()
            summary_lib.flush_all()
            if raw is not None:
                raw.close()

    def _report_stragglers(self, threads: list) -> None:
        stragglers = sorted(thread.name for thread in threads if thread.is_alive())
        if stragglers:
            logging.warning(
                'These threads of the session were still running %g secs (stop_grace_period_secs) '
                'after close() asked them to stop; they are left running: %s.',
                self._stop_grace_period_secs,
                ', '.join(stragglers),
            )

    def _close_inner_quietly(self) -> None:
        try:
            self._close_inner()
        except _PREEMPTION_ERRORS as error:
            logging.info('An error occurred while closing the session for recovery: %s', error)

    # The v1 surface.

    @property
    def graph(self):
        """v1 returned the session's graph; eagerly there is none, so this is None."""
        return None

    @_outside_graph_mode
    def run(self, fetches: Any, feed_dict: dict | None = None, options=None, run_metadata=None) -> Any:
        """Runs `fetches` with every hook's fetches in one execution and returns them as NumPy.

        See `compat_mts.core.fetch` for what a fetch is. Raises v1's RuntimeError when called after
        `should_stop()` became True through a hook, and `RuntimeError('Attempted to use a closed Session. ...')`
        after the session was closed (its `with` block ended): nothing is run then.
        """
        if not self._should_recover:
            return self._coordinated_run(fetches, feed_dict, options, run_metadata)
        while True:
            try:
                if self._raw is None:
                    if self._closed:  # Never recreated to run a step outside its `with` block.
                        raise RuntimeError(_CLOSED)
                    self._create()
                return self._coordinated_run(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as error:
                self._log_and_close_for_recovery(error)

    def _log_and_close_for_recovery(self, error) -> None:
        logging.info(
            'An error was raised. This may be due to a preemption in a connected worker or '
            'parameter server. The current session will be closed and a new session will be '
            'created. Error: %s',
            error,
        )
        self._close_inner_quietly()

    def _coordinated_run(self, fetches, feed_dict, options, run_metadata) -> Any:
        if self._raw is None:
            raise RuntimeError(_CLOSED if self._closed else 'Run called on a closed session.')
        try:
            results = self._deployment.run(self._hooked_run, fetches, feed_dict, options, run_metadata)
            if self._deployment.agrees:  # The workers of a cluster stop after the same run.
                self._hooks_requested_stop, preempted = self._deployment.agree(
                    self._hooks_requested_stop, self._sigterm_received
                )
                self._preempted = self._preempted or preempted
            return results
        except _PREEMPTION_ERRORS:
            raise
        except Exception:  # A preemption reported by a thread takes precedence, as in v1.
            original = sys.exc_info()
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:
                pass
            raise original[1].with_traceback(original[2])

    def _hooked_run(self, fetches, feed_dict, options, run_metadata) -> Any:
        if self._hooks_requested_stop:
            raise RuntimeError('Run called even after should_stop requested.')
        self._steps_per_run.prepare(fetches)
        driver = self._driver
        if not driver.select_before_run() and driver.decides_after_run and feed_dict is None and options is None:
            try:
                quiet = fetches_lib.run_step_and_stale(fetches, self._global_step, self._state)
            except (tf.errors.OutOfRangeError, StopIteration):
                self._take_back_the_increment_of_a_step_without_data()
                raise
            if quiet is not None:  # No hook was called before this run; those that act on it are called late.
                return self._after_a_quiet_run(fetches, quiet, run_metadata)
        context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict), session=self._raw)
        requests, feeds = driver.before_run(context, fetches, feed_dict, options)
        stale_position = driver.stale_position
        if stale_position is None and driver.decides_after_run:  # The skipped hooks are decided on the stale step.
            stale_position = len(requests)
            requests = [*requests, fetches_lib.STALE_GLOBAL_STEP]
        try:
            results = fetches_lib.Run(
                requests, feeds, self._global_step, session_step=True, state=self._state
            ).execute()
        except (tf.errors.OutOfRangeError, StopIteration):
            self._take_back_the_increment_of_a_step_without_data()
            raise
        if stale_position is not None:
            self._last_stale_step = stale = results[stale_position]
            late = driver.select_after_run(stale)
            if late:
                self._run_late_hooks(context, late, results, stale)
        driver.after_run(context, results, run_metadata)
        self._hooks_requested_stop = self._hooks_requested_stop or context.stop_requested
        return results[0]

    def _after_a_quiet_run(self, fetches: Any, quiet: tuple, run_metadata) -> Any:
        """The end of a run of the step alone (`fetches_lib.run_step_and_stale`) on which the schedule called no hook
        before it: the hooks that act on it after all, called late with its stale step as `_hooked_run` calls them,
        or none (the usual run: no context is made, since no hook would see it)."""
        output, stale = quiet
        self._last_stale_step = stale
        driver = self._driver
        late = driver.select_after_run(stale)
        if not late:
            return output
        context = SessionRunContext(original_args=SessionRunArgs(fetches, None), session=self._raw)
        # No hook was called before the run: the requests are the caller's (None here, the output is known) and the
        # late hooks', resolved as `_run_late_hooks` resolves them.
        driver.before_run_late(context, late, refuse_feeds=_LATE)
        results = [output]
        for request in driver.requests[1:]:
            results.append(stale if request is fetches_lib.STALE_GLOBAL_STEP else self._raw.run(request))
        driver.after_run(context, results, run_metadata)
        self._hooks_requested_stop = self._hooks_requested_stop or context.stop_requested
        return output

    def _run_late_hooks(self, context: SessionRunContext, late: list[int], results: list, stale: int) -> None:
        """The `before_run` of the hooks decided after the run, their requests resolved into `results`.

        They ask for the stale step (`reads_clock_after_run`); anything else they ask for is run on the raw session.
        """
        driver = self._driver
        del results[len(driver.requests) :]  # The stale step fetched for the decision alone.
        driver.before_run_late(context, late, refuse_feeds=_LATE)
        for request in driver.requests[len(results) :]:
            results.append(stale if request is fetches_lib.STALE_GLOBAL_STEP else self._raw.run(request))

    def _take_back_the_increment_of_a_step_without_data(self) -> None:
        """Undoes the global-step increment of a step whose input ran out, as v1's step never made it.

        v1's `minimize(global_step=...)` incremented the step after the update, which needs the batch, so a run
        whose input was exhausted left the step as it was, and the final checkpoint is that of the last full
        step. An eager step's `global_step.assign_add(1)` does not depend on the batch and may have run before
        the iterator raised. When the step before this run is known (read by the hooks in the previous run, one
        step per run) and the step moved once more, it is set back. Nothing is read on any other run.

        Other counters the step moves independently of the batch (a separate global step's optimizer's
        `iterations`) are not set back: their value before the run is unknown, and reading them on every run
        would cost the loop. With `iterations` as the global step (`set_global_step`), it is the one set back.
        """
        if (
            self._last_stale_step is None
            or self._global_step is None
            or self._deployment.agrees
            or self._steps_per_run.current != 1
        ):
            return
        before_this_run = self._last_stale_step + 1
        if int(global_step_lib.read_value(self._global_step)) == before_this_run + 1:
            self._global_step.assign(before_this_run)

    def _on_sigterm(self) -> None:
        """SIGTERM: stop after this run; in a cluster, after the run all workers agree on
        (compat_mts.deploy.preemption)."""
        if not self._deployment.agrees:
            self._preempted = True
        else:
            self._sigterm_received = True

    @_outside_graph_mode
    def run_step_fn(self, step_fn: Callable) -> Any:
        """Runs `step_fn(step_context)` with recovery, as v1 did; returns what it returns.

        Raises:
          ValueError: `step_fn` does not take exactly one `step_context` argument (v1's message).
        """
        arguments = tf_internals.fn_args(step_fn)
        if arguments != ('step_context',) and arguments != ('self', 'step_context'):
            raise ValueError(
                '`step_fn` may either have one `step_context` argument, or'
                " `self` and `step_context` arguments if it's an instance"
                ' method. Got {} instead.'.format(arguments)
            )
        while True:
            try:
                if self._raw is None:
                    if self._closed:
                        raise RuntimeError(_CLOSED)
                    self._create()
                context = StepContext(self._raw, self._run_without_recovery)
                return step_fn(context)
            except _PREEMPTION_ERRORS as error:
                if not self._should_recover:
                    raise
                self._log_and_close_for_recovery(error)

    def _run_without_recovery(self, fetches, feed_dict=None, options=None, run_metadata=None):
        return self._coordinated_run(fetches, feed_dict, options, run_metadata)

    @_outside_graph_mode
    def should_stop(self) -> bool:
        """True once a hook requested a stop, the coordinator stopped, or the session is closed."""
        if self._closed:
            return True
        if self._hooks_requested_stop or self._preempted:
            return True
        if self._raw is None:
            return not self._should_recover
        try:
            self._coord.raise_requested_exception()
            return self._coord.should_stop()
        except _PREEMPTION_ERRORS as error:
            if not self._should_recover:
                raise
            logging.info(
                'An error was raised while considering whether the session is complete. This may '
                'be due to a preemption in a connected worker or parameter server. The current '
                'session will be closed and a new session will be created. Error: %s',
                error,
            )
            self._close_inner_quietly()
            self._create()
            return False
        except Exception:
            if not self._should_recover:
                raise
            return True

    def _end_hooks(self) -> None:
        if self._raw is not None:
            self._deployment.finish()  # The last save has every step.
        self._driver.end(self._raw)

    def close(self) -> None:
        """Calls every hook's `end()`, then stops threads, flushes summaries and closes (v1's order)."""
        self._close_internal(None)

    @_outside_graph_mode
    def _close_internal(self, exception_type) -> None:
        try:
            if not exception_type:
                self._deployment.guard(self._end_hooks)
        finally:
            try:
                if self._closed:
                    raise RuntimeError('Session is already closed.')
                self._close_inner()
            finally:
                self._closed = True
                self._raw = None
                self._coord = None
                self._sigterm.uninstall()
                self._release_graph()
                self._summaries.release()
        if self._preempted and not exception_type:
            logging.warning(
                'Training was preempted (SIGTERM); its checkpoint is saved. Exiting with code %d.',
                preemption.PREEMPTION_EXIT_CODE,
            )
            raise SystemExit(preemption.PREEMPTION_EXIT_CODE)

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback) -> bool:
        if exception_type in (tf.errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    def _tf_sess(self) -> RawSession | None:
        return self._raw


class MonitoredSession(_MonitoredSession):
    """Session-like object that runs hooks, coordinates threads and recovers from preemption, eagerly.

    Arguments and behaviour are v1's `tf.compat.v1.train.MonitoredSession`; see the module docstring.

    Example:

    ```python
    with compat_mts.MonitoredSession(hooks=[compat_mts.StopAtStepHook(last_step=100)]) as session:
        while not session.should_stop():
            session.run(train_step)
    ```

    Args:
      session_creator: a `ChiefSessionCreator` (the default) or `WorkerSessionCreator` that makes the raw
        session, restoring or initializing the variables; called again on each recovery.
      hooks: `SessionRunHook`s, called in this order around every `run`.
      stop_grace_period_secs: how long `close()` waits for the coordinator's threads to end (`inf`: until
        they do) before it reports those still alive.

    Raises:
      TypeError, ValueError: an argument of the wrong type or value, named in the message.
    """

    def __init__(self, session_creator=None, hooks: Sequence | None = None, stop_grace_period_secs: float = 120):
        super().__init__(session_creator, hooks, should_recover=True, stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief `MonitoredSession` without recovery, with `raw_session()` (v1's arguments).

    Example:

    ```python
    with compat_mts.SingularMonitoredSession(checkpoint_dir=directory) as session:
        while not session.should_stop():
            session.run(train_step)
    ```

    Args:
      hooks: `SessionRunHook`s, called in this order around every `run`.
      scaffold: a `Scaffold`: what is checkpointed, and how to initialize when nothing is restored.
      master: `''` runs in this process; `grpc://host:port` runs on that TensorFlow server
        (`compat_mts.deploy.distribute`).
      config: a `tf.compat.v1.ConfigProto`; its fields with a TF2 equivalent are applied, the others named in
        one warning.
      checkpoint_dir: the directory whose latest checkpoint is restored when the session is created (`''`
        is None, as in v1).
      stop_grace_period_secs: how long `close()` waits for the coordinator's threads to end.
      checkpoint_filename_with_path: a checkpoint to restore instead of `checkpoint_dir`'s latest.

    Raises:
      TypeError, ValueError: an argument of the wrong type or value, named in the message; both
        `checkpoint_dir` and `checkpoint_filename_with_path` given.
    """

    def __init__(
        self,
        hooks: Sequence | None = None,
        scaffold: Scaffold | None = None,
        master: str = '',
        config=None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: float = 120,
        checkpoint_filename_with_path: str | None = None,
    ):
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self) -> RawSession | None:
        """The raw session, or None after close."""
        return self._raw
