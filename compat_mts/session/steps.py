"""K training steps per `session.run`: `repeat_steps` turns a one-step function into a K-step one.

v1 ran several steps per `Session.run` by wrapping the model in a `tf.while_loop` (TPUEstimator's
`iterations_per_loop`, Estimator's distributed `steps_per_run`) and telling the hooks, through their
private `_set_steps_per_run`, that the global step now jumps by K between runs. compat_mts does the same:
`repeat_steps(step_fn, K)` returns a callable that runs `step_fn` K times in one `tf.function` with a
`tf.while_loop`, and the session, when it runs one, tells every hook about K and shortens the last run so
that it stops exactly at a `StopAtStepHook`'s `last_step`, as v1's `_MultiStepStopAtStepHook` did.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import tensorflow as tf

from compat_mts.core import global_step as global_step_lib
from compat_mts.session import hook_driver
from compat_mts.core import validation
from compat_mts.session.session_run_hook import last_step_hooks, nearest_last_step

_NO_STOP = 2**63 - 1


class RepeatedStep:
    """`step_fn` run `steps_per_run` times per call, in one `tf.function` and a `tf.while_loop`.

    Made by `repeat_steps`. Called by a session (or directly), it runs the steps and returns the outputs
    of the last one, with the structure `step_fn` returns; keyword arguments (the string keys of a
    `feed_dict`) go to every one of the steps. Inside a session, the last run of a `StopAtStepHook` runs
    only the steps that remain (at least one, as a one-step run would).

    `tf.summary` calls of `step_fn` are recorded in the last step of a run only, stamped with the global
    step after it: a `SummarySaverHook` that triggers on a run records that run's K-step boundary, as
    v1's `steps_per_run` did. (Without this all K steps would write, at one step.)
    """

    def __init__(self, step_fn: Callable, steps_per_run: int):
        self._step_fn = step_fn
        self._steps_per_run = steps_per_run
        # What messages call it (a `feed_dict` that does not fit it names the step).
        self.__name__ = f'repeat_steps({getattr(step_fn, "__name__", type(step_fn).__name__)}, {steps_per_run})'
        self._stop_at = self._stop_at_in_variable = _NO_STOP
        with tf.init_scope():
            # A variable rather than an argument: it changes about once a session, and an argument would
            # cost every call more than the assignment costs when it changes.
            self._stop_at_variable = tf.Variable(_NO_STOP, dtype=tf.int64, trainable=False, name='compat_mts_stop_at')
            # Variables, not tensors: a `tf.function` step is traced once, in the loop, and that trace also
            # serves the last step, so what differs between the two must be read from variables.
            self._record_summaries = tf.Variable(False, trainable=False, name='compat_mts_record_summaries_now')
            self._summary_step = tf.Variable(0, dtype=tf.int64, trainable=False, name='compat_mts_summary_step')
        self._function = tf.function(self._run_steps)

    @property
    def steps_per_run(self) -> int:
        """K, the number of steps a call runs (the last run of a session can run fewer)."""
        return self._steps_per_run

    @property
    def step_fn(self) -> Callable:
        """The one-step function this repeats."""
        return self._step_fn

    @property
    def __signature__(self) -> inspect.Signature:
        """The arguments of `step_fn`, which a call passes on to it (what a session checks `feed_dict`'s keys
        against)."""
        step_fn = self._step_fn
        return inspect.signature(getattr(step_fn, 'python_function', step_fn))

    def __call__(self, *args, **kwargs) -> Any:
        stop_at, self._stop_at = self._stop_at, _NO_STOP  # A limit holds for one run.
        if stop_at != self._stop_at_in_variable:
            self._stop_at_variable.assign(stop_at)
            self._stop_at_in_variable = stop_at
        return self._function(*args, **kwargs)

    def get_concrete_function(self, *args, **kwargs):
        """The traced K-step function (what `save_graph_def` writes as `graph.pbtxt`)."""
        return self._function.get_concrete_function(*args, **kwargs)

    def _set_stop_at(self, last_step: int | None) -> None:
        """Makes the next call stop at global step `last_step` (after one step at least); None: K steps."""
        self._stop_at = _NO_STOP if last_step is None else int(last_step)

    def _run_steps(self, *args, **kwargs):
        """All steps but the last in a `tf.while_loop` that records no summaries, then the last one."""
        with tf.init_scope():  # The registered global step (inside a trace, v1 lookups see the trace's graph).
            global_step = global_step_lib.get_global_step()
        count = tf.constant(self._steps_per_run)
        if global_step is not None:  # The steps left before `stop_at`, counted on the device: no host read.
            left = self._stop_at_variable - tf.cast(global_step, tf.int64)
            count = tf.cast(tf.clip_by_value(left, 1, self._steps_per_run), tf.int32)
        recording = tf.summary.should_record_summaries()
        # With no summary writer when traced, the step's summaries are no-ops: nothing to select.
        static_recording = tf.get_static_value(recording)
        select_summaries = static_recording is None or bool(static_recording)
        if select_summaries:
            self._record_summaries.assign(False)
        name_scope = tf.compat.v1.get_default_graph().get_name_scope()

        def body(index):
            # The loop body's name scope is `while/`; without this, summaries would be tagged `while/loss`.
            with tf.compat.v1.get_default_graph().name_scope(name_scope + '/' if name_scope else None):
                self._one_step(select_summaries, global_step, args, kwargs)
            return index + 1

        tf.while_loop(lambda index: index < count - 1, body, [tf.constant(0)])
        if select_summaries:
            self._record_summaries.assign(recording)
            if global_step is not None:
                self._summary_step.assign(tf.cast(global_step, tf.int64) + 1)
        return self._one_step(select_summaries, global_step, args, kwargs)

    def _one_step(self, select_summaries, global_step, args, kwargs):
        """One call of `step_fn`; its summaries are recorded (at the global step after it) if this is
        the run's last step and the session records this run."""
        if not select_summaries:
            return self._step_fn(*args, **kwargs)
        with tf.summary.record_if(lambda: self._record_summaries):
            default_step = tf.summary.experimental.get_step()
            if default_step is None or global_step is None:
                return self._step_fn(*args, **kwargs)
            tf.summary.experimental.set_step(self._summary_step)
            try:
                return self._step_fn(*args, **kwargs)
            finally:
                tf.summary.experimental.set_step(default_step)


def repeat_steps(step_fn: Callable, steps_per_run: int) -> RepeatedStep:
    """Returns a callable that runs `step_fn` `steps_per_run` times per `session.run`, in a `tf.while_loop`.

    `step_fn` is a one-step function (a `tf.function` or a plain function that `tf.function` can trace)
    that increments the global step once, as a v1 `train_op` did. `session.run(repeat_steps(step_fn, K))`
    runs K steps in one host round trip, and every hook stays correct: the session tells the hooks that
    each run advances the global step by K (`set_steps_per_run`, as v1's Estimator did), so timers count
    global steps, checkpoints and summaries land on K-step boundaries, and the last run before a
    `StopAtStepHook`'s `last_step` runs only the steps that remain.

    Per-step data should come from a `tf.data` iterator read inside `step_fn` (`next(iterator)`); a
    `feed_dict` is passed to each of the K steps alike. Hooks that fetch step outputs (`'loss'`) get
    those of the last of the K steps.

    Example: the last run before `last_step` runs only the 50 steps left.

    >>> import compat_mts
    >>> global_step = compat_mts.get_or_create_global_step()
    >>> train_step = compat_mts.repeat_steps(lambda: global_step.assign_add(1), steps_per_run=100)
    >>> reached = []
    >>> with compat_mts.MonitoredTrainingSession(hooks=[compat_mts.StopAtStepHook(last_step=250)]) as session:
    ...     while not session.should_stop():
    ...         _ = session.run(train_step)
    ...         reached.append(int(global_step))
    >>> reached
    [100, 200, 250]

    Args:
      step_fn: the one-step callable; its keyword arguments are the run's string feeds.
      steps_per_run: K, a positive integer.

    Raises:
      TypeError: `step_fn` is not callable, or `steps_per_run` is not an integer.
      ValueError: `steps_per_run` is less than 1 (v1's message), or more than an int32 loop counter holds.
    """
    if not callable(step_fn) or isinstance(step_fn, (tf.Variable, tf.Tensor)):
        raise TypeError(f'`step_fn` must be a callable that runs one training step, got {type(step_fn).__name__}.')
    validation.check_steps_per_run(steps_per_run, below_one='steps_per_run should be greater than 0')
    return RepeatedStep(step_fn, int(steps_per_run))


class StepsPerRun:
    """The session's side of `repeat_steps`: before each run's hooks, tells them how far the run goes.

    For a run whose fetches hold a `RepeatedStep`, every hook that offers `set_steps_per_run`
    (`session_run_hook.HookCapabilities`) learns K (only when K changes, so a program that never repeats steps
    never calls it, and a one-step run after K-step runs sets it back to 1), and the step is told the nearest
    `StopAtStepHook.last_step`, so that it runs only the steps left before it. A run without a `RepeatedStep`
    costs one scan of its fetches.
    """

    def __init__(self, hooks: Sequence, graph_steps_per_run: int = 1, tell_hooks: Callable[[int], None] | None = None):
        # `tell_hooks(K)`: the session's driver's `set_steps_per_run`, which also restarts its schedule.
        self._tell_hooks = [tell_hooks] if tell_hooks is not None else hook_driver.steps_per_run_setters(hooks)
        self._stop_hooks = last_step_hooks(hooks)
        self._announced = 1
        # The steps of a run without a `RepeatedStep`: K on the chief of a parameter-server cluster, whose
        # runs of graph fetches run K steps on a worker (compat_mts.deploy.parameter_server).
        self._graph_steps_per_run = graph_steps_per_run

    @property
    def current(self) -> int:
        """The steps per run of the latest run."""
        return self._announced

    def prepare(self, fetches: Any) -> None:
        """Configures the hooks and the repeated step (if any) for the run of `fetches`."""
        # A step alone (the usual fetch) is no `RepeatedStep` and holds none: no call then.
        step = _repeated_step_in(fetches) if isinstance(fetches, _MAY_HOLD_A_REPEATED_STEP) else None
        if step is None and self._announced == self._graph_steps_per_run:
            return
        steps_per_run = step.steps_per_run if step is not None else self._graph_steps_per_run
        if steps_per_run != self._announced:
            for set_steps_per_run in self._tell_hooks:
                set_steps_per_run(steps_per_run)
            self._announced = steps_per_run
        if step is not None:
            step._set_stop_at(nearest_last_step(self._stop_hooks))


_NESTED = (list, tuple, dict)  # The fetch structures a `RepeatedStep` is looked for in.
_MAY_HOLD_A_REPEATED_STEP = (RepeatedStep, *_NESTED)


def _repeated_step_in(fetches: Any) -> RepeatedStep | None:
    """The `RepeatedStep` among `fetches` (a nested list/tuple/dict), or None.

    Raises:
      ValueError: the fetches hold two different repeated steps.
    """
    if isinstance(fetches, RepeatedStep):
        return fetches
    if not isinstance(fetches, _NESTED):
        return None
    found = None
    for value in fetches.values() if isinstance(fetches, dict) else fetches:
        step = _repeated_step_in(value)
        if step is not None and found is not None and step is not found:
            raise ValueError(
                'A run can hold one `repeat_steps` callable; these fetches hold two '
                f'(steps_per_run {found.steps_per_run} and {step.steps_per_run}).'
            )
        found = step or found
    return found
