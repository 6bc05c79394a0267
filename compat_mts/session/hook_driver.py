"""`HookDriver`: the one piece of code that calls a list of `SessionRunHook`s, for the session and for `fit`.

The session (`compat_mts.session.monitored_session`) and `keras.HooksCallback` both drive the hook protocol through it,
in v1's orders: `begin()` of every hook in order, `after_create_session(session, coord)` after every creation,
around each run every hook's `before_run` in order (their requests merged into the run's fetches, feeds and
`RunOptions`) and every hook's `after_run` in order with its own results, and `end(session)` at a clean close.
What a hook offers beyond those methods (`HookCapabilities`: when it next acts, whether it reads the clock after
the run, how many steps a run goes) is read once, when the driver is made.

A driver without a schedule calls every hook on every run. One with a schedule (`HooksCallback`'s,
`session_run_hook.HookSchedule`) skips the hooks that said they will not act on a run, and catches them up when
they run again (ARCHITECTURE.md, "The hook-driver seam"); the session's schedule is in after-run mode, which
leaves out only the idle `reads_clock_after_run` hooks and calls them late on the runs where they act. Where no
hook offers `idle_until`, nothing can be skipped and it keeps no schedule.
"""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from compat_mts.core import fetch as fetches_lib
from compat_mts.session.session_run_hook import (
    STALE_GLOBAL_STEP_REQUEST,
    HookSchedule,
    SessionRunValues,
    capability,
    decides_on_previous_run,
    said_of_its_runs,
)


_V1_HOOK = tf.compat.v1.train.SessionRunHook
_RunOptions = tf.compat.v1.RunOptions
_RunMetadata = tf.compat.v1.RunMetadata


def acts_around_runs(hook: Any) -> bool:
    """Whether `hook` does anything around a run: overrides `before_run` or `after_run` (in its class or itself).

    The others' `before_run` and `after_run` are `SessionRunHook`'s, which do nothing, so calling them or not is
    the same. A hook whose class lacks them (a `MagicMock(spec=SessionRunHook)`, a duck-typed hook that has them
    per instance) is called, as v1 called every hook.
    """
    hook_class, own = type(hook), getattr(hook, '__dict__', {})
    return (
        getattr(hook_class, 'before_run', None) is not _V1_HOOK.before_run
        or getattr(hook_class, 'after_run', None) is not _V1_HOOK.after_run
        or 'before_run' in own
        or 'after_run' in own
    )


def steps_per_run_setters(hooks: Sequence) -> list:
    """The `set_steps_per_run` of each hook of `hooks` that offers it (`HookCapabilities`), in order."""
    setters = [capability(hook, 'set_steps_per_run') for hook in hooks]
    return [setter for setter in setters if setter is not None]


def _leaves_global_step(hook: Any) -> bool:
    """Whether `hook`'s `after_run` leaves the global step as it was (`leaves_global_step = True`, said of its own
    `after_run`: `session_run_hook.said_of_its_runs`)."""
    return getattr(hook, 'leaves_global_step', False) is True and said_of_its_runs(hook, 'leaves_global_step')


class HookDriver:
    """Calls `hooks` (in their order) as v1's hooked session did; with `scheduled`, skips idle periodic hooks.

    Around runs only the hooks that act there are called (`run_hooks`, see `acts_around_runs`): the others'
    `before_run` and `after_run` do nothing.

    One run goes: `before_run(context, fetches, feed_dict, options)`, which returns the run's fetches (the
    caller's first, then each requesting hook's) and its merged feeds; the run; `after_run(context, results,
    run_metadata)` with the results in the same order. A scheduled driver calls `select(stale_step)` before the
    run (an empty list: no hook acts on it, skip `before_run` and `after_run`), and `late()` then `before_run_late`
    at its end.

    Args:
      hooks: the `SessionRunHook`s, already checked (`validation.check_hooks`).
      scheduled: whether to skip the hooks that say (`idle_until`) they will not act on a run; the run's stale
        global step must then be known before it (`select`).
      decide_after_run: the session's schedule instead (`HookSchedule`'s after-run mode): only the idle hooks whose
        `before_run` only asks for the stale step are skipped, decided once the run gave its stale step
        (`select_before_run`, then `select_after_run`).
    """

    def __init__(self, hooks: Sequence, scheduled: bool = False, decide_after_run: bool = False):
        self.hooks = tuple(hooks)
        # Only these are called around runs; the positions of `select`, `late` and requests are theirs.
        self.run_hooks = tuple(hook for hook in self.hooks if acts_around_runs(hook))
        self._steps_per_run_setters = steps_per_run_setters(self.hooks)
        # A schedule only where some hook may be skipped: without `idle_until` every hook is called on every run.
        may_idle = any(capability(hook, 'idle_until') is not None for hook in self.run_hooks)
        self._schedule = HookSchedule(self.run_hooks) if scheduled and may_idle else None
        # Whether the run's stale step must be read for the schedule (the session then fetches it): some hook is
        # decided after the run (`reads_clock_after_run`) or before it on the previous run's stale step.
        self.decides_after_run = (
            decide_after_run
            and not scheduled
            and any(
                capability(hook, 'idle_until') is not None
                and (capability(hook, 'reads_clock_after_run') is True or decides_on_previous_run(hook))
                for hook in self.run_hooks
            )
        )
        if self.decides_after_run:
            self._schedule = HookSchedule(self.run_hooks, decide_after_run=True)
        self._every_position = tuple(range(len(self.run_hooks)))
        # The hooks whose `after_run` does not move the global step: a read after the run is shared past them.
        self._leaves_global_step = tuple(_leaves_global_step(hook) for hook in self.run_hooks)
        self._no_options = _RunOptions()  # The options of runs without any; no hook's are merged into it.
        self.requests: list = []
        self.stale_position: int | None = None  # Where the stale global step is in this run's requests, if asked.
        self._requesting: list[int] = []  # The position of the hook of each request after the caller's.
        self._options = None
        self._feeds: dict = {}
        self._started = False  # Whether this run's requests were begun (a scheduled run may call no hook first).

    # Creation and close.

    def set_steps_per_run(self, steps_per_run: int) -> None:
        """Tells every hook that offers `set_steps_per_run` how many steps each run now goes; a schedule starts
        afresh (what the hooks promised counted the former steps per run)."""
        for setter in self._steps_per_run_setters:
            setter(steps_per_run)
        if self._schedule is not None:
            self._schedule.reset()

    def begin(self) -> None:
        """Every hook's `begin()`, in order."""
        for hook in self.hooks:
            hook.begin()

    def after_create_session(self, session: Any, coord: tf.train.Coordinator) -> None:
        """Every hook's `after_create_session(session, coord)`, in order; a schedule starts afresh."""
        for hook in self.hooks:
            hook.after_create_session(session, coord)
        if self._schedule is not None:
            self._schedule.reset()

    def end(self, session: Any) -> None:
        """Every hook's `end(session)`, in order (at a clean close only, as v1)."""
        for hook in self.hooks:
            hook.end(session)

    # One run.

    def select(self, stale_step: int) -> Sequence[int]:
        """The positions of the hooks that act on the run that starts now (every one's without a schedule)."""
        self._started = False
        if self._schedule is None:
            return self._every_position
        return self._schedule.select(stale_step)

    def select_before_run(self) -> Sequence[int]:
        """The positions of the hooks to call before the run that starts now, its stale step unknown (every one's
        without an after-run schedule)."""
        self._started = False
        if not self.decides_after_run:
            return self._every_position
        return self._schedule.select_before_run()

    def select_after_run(self, stale_step: int) -> list[int]:
        """With an after-run schedule, the positions of the hooks `select_before_run` skipped that act on this run
        after all (its stale step is `stale_step`): call `before_run_late` with them, then `after_run`."""
        if not self.decides_after_run:
            return []
        return self._schedule.select_after_run(stale_step)

    @property
    def called(self) -> Sequence[int]:
        """The positions of the hooks called on this run so far (`select`'s, then `late`'s), in order."""
        return self._every_position if self._schedule is None else self._schedule.called

    def late(self) -> list[int]:
        """The positions of the skipped hooks whose `after_run` clock has come by the end of the run."""
        return [] if self._schedule is None else self._schedule.late()

    def before_run(self, context, fetches: Any, feed_dict: dict | None, options=None, refuse_feeds: str = '') -> tuple:
        """Every hook's `before_run(context)` in order (those `select` chose, when scheduled), merged.

        `STALE_GLOBAL_STEP_REQUEST`, the built-in hooks' usual answer, costs nothing to merge. The others add
        their fetches, feeds and `RunOptions` (merged into `options` with v1's rules; without `options`, into a new
        one on the first run that has some, and until then the hooks see one empty `RunOptions`, never written).

        Args:
          context: the run's `SessionRunContext`, handed to every hook.
          fetches: the caller's fetches, first in the returned requests.
          feed_dict: the caller's feeds, or None.
          options: the caller's `RunOptions`, or None.
          refuse_feeds: when not empty, why a hook may not feed (the run has nothing to feed).

        Returns:
          `(requests, feeds)`: the caller's fetches then every requesting hook's, and the merged feeds.

        Raises:
          RuntimeError: two hooks, or a hook and the caller, feed the same key (v1's messages).
          ValueError: a hook returned a `feed_dict` and `refuse_feeds` says why it may not.
        """
        self._started = True
        self._options = options or self._no_options
        self.requests = [fetches]
        self._requesting = []
        self._feeds = {}
        self.stale_position = None
        self._ask(context, self._every_position if self._schedule is None else self._schedule.called, refuse_feeds)
        if not self._feeds:
            return self.requests, feed_dict
        return self.requests, _merge_feeds(feed_dict, self._feeds)

    def before_run_late(self, context, positions: Sequence[int], refuse_feeds: str = '') -> None:
        """The `before_run` of the hooks `late()` gave, at the end of the run: their requests join `requests`
        (which hold the caller's None first when no hook was called before the run)."""
        if not self._started:  # No hook was called before the run: `called` is `positions`.
            self.before_run(context, None, None, refuse_feeds=refuse_feeds)
        else:
            self._ask(context, positions, refuse_feeds)

    def _ask(self, context, positions: Sequence[int], refuse_feeds: str) -> None:
        requests, requesting, hook_feeds, hooks = self.requests, self._requesting, self._feeds, self.run_hooks
        for index in positions:
            hook = hooks[index]
            request = hook.before_run(context)
            if request is None:
                continue
            if request is STALE_GLOBAL_STEP_REQUEST:  # Nothing to merge.
                self.stale_position = len(requests)
                requests.append(fetches_lib.STALE_GLOBAL_STEP)
                requesting.append(index)
                continue
            if request.fetches is not None:
                requests.append(request.fetches)
                requesting.append(index)
            if request.feed_dict:
                if refuse_feeds:
                    raise ValueError(f'{type(hook).__name__}.before_run returned a feed_dict, but {refuse_feeds}')
                conflicts = [key for key in request.feed_dict if key in hook_feeds]
                if conflicts:
                    raise RuntimeError(f'Same tensor is fed by two hooks. Conflict(s): {conflicts}')
                hook_feeds.update(request.feed_dict)
            if request.options:
                if self._options is self._no_options:
                    self._options = _RunOptions()
                _merge_options(self._options, request.options)

    def after_run(self, context, results: Sequence, run_metadata=None) -> None:
        """Every called hook's `after_run(context, values)` in order, each with the results of its own request.

        Hooks that asked for the same object (the stale step) share one `SessionRunValues`; a hook that fetched
        nothing gets `results` None. `results` are in the order of `requests` (the caller's first).

        The global step the hooks read after the run (`session_run_hook.global_step_after_run`) is read once and
        shared, until a hook that may move it has run: one that does not say `leaves_global_step = True` (the
        built-in hooks that only read it do; a subclass with an `after_run` of its own does not inherit it).
        """
        options = self._options
        run_metadata = run_metadata or _RunMetadata()
        hooks = self.run_hooks
        none = SessionRunValues(None, options, run_metadata)
        values: dict[int, SessionRunValues] = {}  # The requesting hooks' values; the others get `none`.
        shared: dict[int, SessionRunValues] = {}
        for index, result in zip(self._requesting, results[1:]):
            hook_values = shared.get(id(result))
            if hook_values is None:
                hook_values = shared[id(result)] = SessionRunValues(result, options, run_metadata)
            values[index] = hook_values
        schedule = self._schedule
        leaves_global_step = self._leaves_global_step
        reads = context._reads_after_run = {}
        try:
            for index in self._every_position if schedule is None else schedule.called:
                hooks[index].after_run(context, values.get(index, none))
                if reads and not leaves_global_step[index]:
                    reads.clear()
        finally:
            context._reads_after_run = None
        if schedule is not None:
            schedule.ran()


def _merge_feeds(user_feeds: dict | None, hook_feeds: dict) -> dict | None:
    if not hook_feeds:
        return user_feeds
    if not user_feeds:
        return hook_feeds
    conflicts = [key for key in user_feeds if key in hook_feeds]
    if conflicts:
        raise RuntimeError(f'Same tensor is fed by a SessionRunHook and user. Conflict(s): {conflicts}')
    merged = dict(hook_feeds)
    merged.update(user_feeds)
    return merged


def _merge_options(target, source) -> None:
    """Merges `source` `RunOptions` into `target` as v1's hooked session did."""
    target.trace_level = max(target.trace_level, source.trace_level)
    target.timeout_in_ms = max(target.timeout_in_ms, source.timeout_in_ms)
    target.inter_op_thread_pool = max(target.inter_op_thread_pool, source.inter_op_thread_pool)
    target.output_partition_graphs = max(target.output_partition_graphs, source.output_partition_graphs)
    target.debug_options.debug_tensor_watch_opts.extend(source.debug_options.debug_tensor_watch_opts)
    target.debug_options.reset_disk_byte_usage = (
        target.debug_options.reset_disk_byte_usage or source.debug_options.reset_disk_byte_usage
    )
    target.report_tensor_allocations_upon_oom = (
        target.report_tensor_allocations_upon_oom or source.report_tensor_allocations_upon_oom
    )
