"""The SessionRunHook protocol: hooks, the arguments they return, what they get back.

The classes subclass their `tf.compat.v1.train` namesakes, so a user's hook written against
`tf.compat.v1.train.SessionRunHook` (returning `tf.compat.v1.train.SessionRunArgs`) works unchanged,
and hooks written against compat_mts still pass `isinstance` checks in v1 code.

What differs from v1 is only what a fetch *is* (see `compat_mts.core.fetch`): a callable run as the
step, a `tf.Variable`, an eager tensor, a name of a step output, or a tensor of a `wrap_graph` graph.
"""

from __future__ import annotations

import math
import time
from typing import Any, Protocol, Sequence, runtime_checkable

import tensorflow as tf

from compat_mts.core.fetch import STALE_GLOBAL_STEP

_v1 = tf.compat.v1.train


class SessionRunHook(_v1.SessionRunHook):
    """Hook to extend calls to `MonitoredSession.run()`, eagerly.

    The five methods and their order are v1's: `begin()` once per session, `after_create_session(session,
    coord)` after every (re)creation, `before_run(run_context)` and `after_run(run_context, run_values)`
    around each `run()`, and `end(session)` at a clean close. `session` is a raw session whose
    `run(fetches, feed_dict=None)` follows the eager fetch model without hooks; `coord` is a
    `tf.train.Coordinator`.

    Example:

    ```python
    class PrintLoss(compat_mts.SessionRunHook):
        def before_run(self, run_context):
            return compat_mts.SessionRunArgs('loss')       # a key of the dict the step returns

        def after_run(self, run_context, run_values):
            print(run_values.results)
    ```
    """


class SessionRunArgs(_v1.SessionRunArgs):
    """What a hook adds to a `run()` call: `fetches`, `feed_dict` and `options`.

    `fetches` follow the eager fetch model; string keys of `feed_dict` become keyword arguments of the
    step callable. `options` (a `tf.compat.v1.RunOptions`) are merged with v1's rules and handed back in
    `SessionRunValues.options`; eager execution has no use for them beyond that.
    """

    __slots__ = ()

    def __new__(cls, fetches: Any, feed_dict: Any = None, options: Any = None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(_v1.SessionRunValues):
    """What a hook gets back: `results` of its fetches (NumPy values, or None), `options`, `run_metadata`."""

    __slots__ = ()


class SessionRunContext(_v1.SessionRunContext):
    """Information about the `run()` call in progress, shared by every hook of that call.

    `original_args` are the caller's fetches and feeds; `session` is the raw session (no hooks);
    `request_stop()` asks the session to stop after this run, as in v1. The built-in hooks read the global step
    after the run through `global_step_after_run`, which the hooks of one run share.
    """

    __slots__ = ()

    # While a driver calls the run's `after_run`s: the global steps read after the run, {id: (variable, value)}.
    _reads_after_run: dict | None = None


def global_step_after_run(run_context: Any, global_step: Any) -> int:
    """`int(run_context.session.run(global_step))`: the global step after the run, for a hook's `after_run`.

    v1's hooks each read it so, one `session.run` per hook that triggers. While a `HookDriver` calls the
    `after_run`s of a run, the first read is kept and handed to the hooks after it, until a hook that may move
    the global step has run (one without `leaves_global_step`, see `HookDriver.after_run`): those reads would
    all have returned it. Outside a driver's `after_run` (a hook called by hand, a v1 `SessionRunContext`),
    every call reads.
    """
    reads = run_context._reads_after_run if isinstance(run_context, SessionRunContext) else None
    if reads is None:
        return int(run_context.session.run(global_step))
    read = reads.get(id(global_step))
    if read is None or read[0] is not global_step:
        read = reads[id(global_step)] = (global_step, int(run_context.session.run(global_step)))
    return read[1]


STALE_GLOBAL_STEP_REQUEST = SessionRunArgs(STALE_GLOBAL_STEP)
"""What the built-in hooks return from `before_run` on most runs; immutable, so one serves every run."""


@runtime_checkable
class HookCapabilities(Protocol):
    """What a hook may offer its driver (`compat_mts.session.hook_driver.HookDriver`) beyond the five methods.

    The built-in hooks that count steps implement it (through `StepsPerRunMixin`); a hook of the program's own
    need not: without it, it is called on every run and told nothing, as in v1. The driver asks a hook what it
    offers, not which class it is, so that the session core imports no hook (the hooks import the core).

    - `set_steps_per_run(steps_per_run)`: told how many steps each run goes, when that changes (`repeat_steps`,
      `steps_per_execution`), as v1's Estimator told its hooks; the hook's trigger arithmetic looks that far
      ahead.
    - `idle_until()`, after the hook's `after_run`: `(step, time)`, meaning it needs neither `before_run` nor
      `after_run` on a later run whose stale global step is below `step` and that starts before `time.time()`
      reaches `time` (either may be `inf`); or None: it needs the next run. A driver with a schedule
      (`HookSchedule`, used by `keras.HooksCallback`) then skips it.
    - `reads_clock_after_run`: True when that time is its `after_run`'s (a time-based timer checked after the
      run): its `before_run` only asks for the stale step, so it may be called at the end of the run.
    - `catch_up(last_stale_step)`: called before the hook runs again after skipped runs, with the stale step of
      the run before (what its own `after_run` would have seen last), for a hook that keeps per-run state.

    A flag beside them, `decides_on_previous_run` (see the function of that name), lets the session's schedule
    decide on an idle hook before the run rather than after it. `isinstance(hook, HookCapabilities)` says whether a
    hook offers all four. The driver reads each one alone (`capability`), so a hook may offer some; setting one to
    None on a subclass withdraws it (a built-in hook with `idle_until = None` is called on every run). `idle_until`,
    `reads_clock_after_run` and `catch_up` speak for the hook's `before_run` and `after_run`, so a subclass with
    either method of its own does not inherit them (`said_of_its_runs`): a program's subclass of a built-in hook
    that logs every run is called on every run, as in v1, unless it says them again.

    The private names of before this protocol are read when the public name is absent, and their None withdraws
    too. `_set_steps_per_run` is v1's own name: its Estimator called it and v1 programs' hooks define it, so it
    stays (`StepsPerRunMixin` keeps it as an alias). `_idle_until`, `_reads_clock_after_run` and `_catch_up` were
    never public, but they were the way to opt a subclass of a built-in hook out of the schedule
    (`_idle_until = None`) or a hook in; they are read once per driver, at no cost per run, so code written so
    keeps working. New code uses the public names.
    """

    reads_clock_after_run: bool

    def idle_until(self) -> tuple[float, float] | None: ...

    def catch_up(self, last_stale_step: int) -> None: ...

    def set_steps_per_run(self, steps_per_run: int) -> None: ...


_FORMER_NAMES = {
    'idle_until': '_idle_until',
    'reads_clock_after_run': '_reads_clock_after_run',
    'catch_up': '_catch_up',
    'set_steps_per_run': '_set_steps_per_run',
}
_ABSENT = object()
# The capabilities that say what a hook's `before_run` and `after_run` need: a subclass with either method of
# its own does not inherit them (`said_of_its_runs`).
_SAID_OF_THE_RUNS = frozenset({'idle_until', 'reads_clock_after_run', 'catch_up'})


def said_of_its_runs(hook: Any, attribute: str) -> bool:
    """Whether `hook`'s `attribute` was said of the `before_run` and `after_run` it has: set on the hook itself, or
    defined by a class that is (or derives from) the classes defining both methods.

    A program's subclass of a built-in hook with a `before_run` or `after_run` of its own (one that logs every
    run, or moves the global step) does not inherit what the built-in said of its own methods, so it is called
    on every run as in v1, unless the subclass says it again.
    """
    if attribute in getattr(hook, '__dict__', ()):
        return True
    mro = type(hook).__mro__
    said = next((klass for klass in mro if attribute in vars(klass)), None)
    if said is None:
        return False
    if said is StepsPerRunMixin:  # Its defaults skip nothing: the next run is needed, no clock, nothing to catch up.
        return True
    return all(
        issubclass(said, next((klass for klass in mro if method in vars(klass)), object))
        for method in ('before_run', 'after_run')
    )


def decides_on_previous_run(hook: Any) -> bool:
    """Whether `hook` says `decides_on_previous_run = True` of its own `before_run` and `after_run`
    (`said_of_its_runs`).

    Such a hook's `before_run` decides whether it acts on a run from what its `after_run` of the run before left
    (or its `catch_up` with that run's stale step) and the clock, never from the run's own stale step, and on a
    run it does not act on changes nothing but what `catch_up` restores. Its `idle_until` promise then holds for
    a run whose stale step is the previous run's plus one, whatever that run's own turns out to be, so the
    session's after-run schedule decides on it before the run, which reads its stale step inside the step
    (`HookSchedule.select_before_run`). `SummarySaverHook` says it: it predicts the next run's step.
    """
    return getattr(hook, 'decides_on_previous_run', False) is True and said_of_its_runs(hook, 'decides_on_previous_run')


def capability(hook: Any, name: str) -> Any:
    """The capability `name` (a member of `HookCapabilities`) that `hook` offers, or None.

    The public name first; the former private name (see `HookCapabilities`) when the public one is absent. Either
    set to None withdraws the capability. `reads_clock_after_run` is True or None.

    Raises:
      ValueError: `name` is not a member of `HookCapabilities`.
    """
    if name not in _FORMER_NAMES:
        raise ValueError(f'`name` must be one of {sorted(_FORMER_NAMES)}, got {name!r}.')
    offered = getattr(hook, name, _ABSENT)
    former = getattr(hook, _FORMER_NAMES[name], _ABSENT)
    if offered is None or former is None:
        return None
    if offered is _ABSENT:
        offered, name_given = former, _FORMER_NAMES[name]
    else:
        name_given = name
    if name in _SAID_OF_THE_RUNS and not said_of_its_runs(hook, name_given):
        return None
    if name == 'reads_clock_after_run':
        return True if offered is True else None
    return offered if callable(offered) else None


class StepsPerRunMixin:
    """`HookCapabilities` for a hook that counts steps: how many steps a run goes (`_steps_per_run`, 1 by default),
    and the defaults of the others (needs every run, reads no clock after it, nothing to catch up).

    A periodic hook overrides `idle_until` (and `reads_clock_after_run`, `catch_up`) to be skipped between its
    triggers where its driver has a schedule.
    """

    _steps_per_run = 1
    reads_clock_after_run = False

    def set_steps_per_run(self, steps_per_run: int) -> None:
        """Told by the driver how many steps each run goes (1, or K of `repeat_steps`/`steps_per_execution`)."""
        self._steps_per_run = steps_per_run

    def _set_steps_per_run(self, steps_per_run: int) -> None:
        """v1's name of `set_steps_per_run`, for code that calls it as v1's Estimator did."""
        self.set_steps_per_run(steps_per_run)

    def idle_until(self) -> tuple[float, float] | None:
        """None: the hook needs the next run (see `HookCapabilities`)."""
        return None

    def catch_up(self, last_stale_step: int) -> None:
        """Nothing to catch up (see `HookCapabilities`)."""


def checkpoint_saving_hooks(hooks: Sequence) -> list:
    """The hooks among `hooks` that save checkpoints (`saves_checkpoints = True`).

    Such a hook has `checkpoint_dir`, `checkpoint` and `_set_default_scaffold(scaffold)`, and saves at `end()` too:
    a SIGTERM then stops the loop after the run in progress, and `keras.HooksCallback` restores the latest
    checkpoint before `fit`. A hook of the program's own may say the same.
    """
    return [hook for hook in hooks if getattr(hook, 'saves_checkpoints', False) is True]


def last_step_hooks(hooks: Sequence) -> list:
    """The hooks among `hooks` that stop at a last step (`stops_at_last_step = True`).

    Such a hook has `last_step` and requests a stop once the global step reaches it; a repeated step or a Keras
    execution is shortened so as not to pass it. A hook of the program's own may say the same.
    """
    return [hook for hook in hooks if getattr(hook, 'stops_at_last_step', False) is True]


def nearest_last_step(hooks: Sequence) -> int | None:
    """The smallest known `last_step` of `hooks` (from `last_step_hooks`), or None."""
    last_steps = [hook.last_step for hook in hooks if hook.last_step is not None]
    return min(last_steps) if last_steps else None


class HookSchedule:
    """Which hooks a run calls: every hook, except those that said (`idle_until`) they will not act on it.

    The hooks' trigger arithmetic stays theirs: a hook is skipped only on runs on which its own timer could not
    trigger, and a skipped hook is called again, caught up, on the first run on which it could. Cheap as that
    test is, most runs of v1's default hooks then cost a few comparisons instead of every hook's `before_run` and
    `after_run` (a tiny model's step is half a millisecond; three hooks' calls are tens of microseconds).

    A run whose stale global step is not above the previous run's (a global step that did not move, or went
    back) calls every hook, since their arithmetic compares consecutive runs (`StepCounterHook`'s warning).
    A hook without `idle_until` (a hook of the program's own, see `HookCapabilities`) is called on every run.

    Use: `select(stale_step)` at the start of each run gives the positions of the hooks to call there;
    `late()` at its end those of skipped `reads_clock_after_run` hooks whose time has come by then (call their
    `before_run`, then `after_run`); `ran()` after the `after_run`s; `reset()` when the session is created again
    or the steps per run change. `compat_mts.session.hook_driver.HookDriver` does all this when it has a schedule.

    `keras.HooksCallback`'s driver uses `select`. The session's stale step is read inside the step's own call and
    known only after the run (choosing the hooks before it would take a read between two steps, dearer than the
    calls it saves, or a count on the host, which a program that runs something other than its train step would
    falsify), so its driver's schedule is in after-run mode (`decide_after_run`): `select_before_run()` calls every
    hook but the idle `reads_clock_after_run` ones, whose `before_run` only asks for the stale step, and
    `select_after_run(stale_step)`, with the run's stale step, gives those of them that act on the run after all
    (`select`'s rule), to call late; the other hooks are called on every run (ARCHITECTURE.md, "The hook-driver
    seam").

    Args:
      hooks: the hooks, in order.
      decide_after_run: the session's mode: only idle `reads_clock_after_run` hooks are skipped, decided after
        the run.
    """

    def __init__(self, hooks: Sequence, decide_after_run: bool = False):
        self._hooks = tuple(hooks)
        self._idle_until = [capability(hook, 'idle_until') for hook in self._hooks]
        self._catch_up = [capability(hook, 'catch_up') for hook in self._hooks]
        self._late = [capability(hook, 'reads_clock_after_run') is True for hook in self._hooks]
        # After-run mode (the session's): only these may be skipped, decided once the run's stale step is known,
        self._decide_after_run = decide_after_run
        self._deferrable = [
            decide_after_run and late and idle is not None for late, idle in zip(self._late, self._idle_until)
        ]
        # and these, decided before the run on the previous run's stale step (`decides_on_previous_run`).
        self._decided_before = [
            decide_after_run and not deferrable and idle is not None and decides_on_previous_run(hook)
            for hook, deferrable, idle in zip(self._hooks, self._deferrable, self._idle_until)
        ]
        self.reset()

    def reset(self) -> None:
        """Forgets what the hooks said: the next run calls every hook."""
        count = len(self._hooks)
        self._promises: list[tuple[float, float] | None] = [None] * count
        self._last_called = [-2] * count  # The run each hook was last called on.
        self._run = -1
        self._previous_stale: int | None = None
        self._stale_before: int | None = None  # The previous run's stale step, as the current run started.
        self._selected: list[int] = []
        self._update_bounds()

    def _update_bounds(self) -> None:
        promises = self._promises
        self._all_idle = bool(promises) and all(promise is not None for promise in promises)
        self._wake_step = min((promise[0] for promise in promises if promise is not None), default=-math.inf)
        self._wake_time = min((promise[1] for promise in promises if promise is not None), default=math.inf)
        self._late_wake_time = min(
            (promise[1] for promise, late in zip(promises, self._late) if promise is not None and late),
            default=math.inf,
        )
        deferred = [promise is not None and deferrable for promise, deferrable in zip(promises, self._deferrable)]
        decided = [promise is not None and before for promise, before in zip(promises, self._decided_before)]
        self._before_run = [index for index in range(len(promises)) if not deferred[index] and not decided[index]]
        self._deferred = [index for index, skipped in enumerate(deferred) if skipped]
        self._deferred_wake_step = min((promises[index][0] for index in self._deferred), default=math.inf)
        self._deferred_wake_time = min((promises[index][1] for index in self._deferred), default=math.inf)
        self._decided = [index for index, idle in enumerate(decided) if idle]
        self._decided_wake_step = min((promises[index][0] for index in self._decided), default=math.inf)
        self._decided_wake_time = min((promises[index][1] for index in self._decided), default=math.inf)

    def select_before_run(self) -> list[int]:
        """After-run mode: the positions of the hooks to call before the run that starts now, whose stale step is
        not known yet: every hook except the idle ones whose `before_run` only asks for the stale step
        (`reads_clock_after_run`), which `select_after_run` decides on once the run has given its stale step, and
        the idle ones that decide on the previous run's stale step (`decides_on_previous_run`) and do not act on a
        run whose stale step is the previous one's plus one (`select`'s rule, on that step)."""
        run = self._run = self._run + 1
        last_called = self._last_called
        for index in self._before_run:
            last_called[index] = run
        decided = self._decided
        previous = self._previous_stale
        if not decided or (
            previous is not None
            and previous + 1 < self._decided_wake_step
            and (self._decided_wake_time == math.inf or time.time() < self._decided_wake_time)
        ):
            self._selected = list(self._before_run)
            return self._selected
        now = time.time() if self._decided_wake_time != math.inf else 0.0
        woken = []
        for index in decided:
            promise = self._promises[index]
            if previous is not None and previous + 1 < promise[0] and now < promise[1]:
                continue
            self._call(index, previous)
            woken.append(index)
        self._selected = sorted(self._before_run + woken)
        return self._selected

    def select_after_run(self, stale_step: int) -> list[int]:
        """After-run mode: the positions of the idle hooks `select_before_run` left out that act on this run after
        all, now that its stale step is known (`select`'s rule); call their `before_run`, then every `after_run`."""
        previous, self._previous_stale = self._previous_stale, stale_step
        self._stale_before = previous
        deferred = self._deferred
        if not deferred or (
            previous is not None
            and previous < stale_step < self._deferred_wake_step
            and (self._deferred_wake_time == math.inf or time.time() < self._deferred_wake_time)
        ):
            return []
        now = time.time() if self._deferred_wake_time != math.inf else 0.0
        late = []
        for index in deferred:
            promise = self._promises[index]
            if previous is not None and previous < stale_step < promise[0] and now < promise[1]:
                continue
            self._call(index, previous)
            late.append(index)
        if late:
            self._selected = sorted(self._selected + late)
        return late

    def select(self, stale_step: int) -> list[int]:
        """The positions (in `hooks`, in order) of the hooks to call around the run that starts now."""
        self._run += 1
        previous, self._previous_stale = self._previous_stale, stale_step
        self._stale_before = previous
        if (
            self._all_idle
            and previous is not None
            and previous < stale_step < self._wake_step
            and (self._wake_time == math.inf or time.time() < self._wake_time)
        ):
            self._selected = []
            return self._selected
        now = time.time() if self._wake_time != math.inf else 0.0
        selected = []
        for index, promise in enumerate(self._promises):
            if promise is not None and previous is not None and previous < stale_step < promise[0] and now < promise[1]:
                continue
            self._call(index, previous)
            selected.append(index)
        self._selected = selected
        return selected

    def _call(self, index: int, previous_stale: int | None) -> None:
        if self._last_called[index] != self._run - 1 and previous_stale is not None and self._promises[index]:
            catch_up = self._catch_up[index]
            if catch_up is not None:
                catch_up(previous_stale)
        self._last_called[index] = self._run

    def late(self) -> list[int]:
        """The positions of the skipped hooks whose `after_run` clock has reached their time by the end of this run."""
        if self._late_wake_time == math.inf:
            return []
        now = time.time()
        if now < self._late_wake_time:
            return []
        selected = set(self._selected)
        late = [
            index
            for index, (promise, reads_after) in enumerate(zip(self._promises, self._late))
            if reads_after and index not in selected and promise is not None and now >= promise[1]
        ]
        for index in late:
            self._call(index, self._stale_before)
        self._selected = sorted(self._selected + late)
        return late

    @property
    def called(self) -> list[int]:
        """The positions of the hooks called on this run (`select`'s, and `late`'s once it has run), in order."""
        return self._selected

    def ran(self) -> None:
        """Asks the hooks called on this run, after their `after_run`, when they next need a run."""
        if not self._selected:
            return
        idle_until, promises, changed = self._idle_until, self._promises, False
        for index in self._selected:
            if idle_until[index] is None or (
                self._decide_after_run and not self._deferrable[index] and not self._decided_before[index]
            ):
                continue  # Called on every run whatever it says (in after-run mode, all but those two kinds).
            promise = idle_until[index]()
            if promise != promises[index]:
                promises[index], changed = promise, True
        if changed:
            self._update_bounds()
