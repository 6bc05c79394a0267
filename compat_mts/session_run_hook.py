"""The SessionRunHook protocol: hooks, the arguments they return, what they get back.

The classes subclass their `tf.compat.v1.train` namesakes, so a user's hook written against
`tf.compat.v1.train.SessionRunHook` (returning `tf.compat.v1.train.SessionRunArgs`) works unchanged,
and hooks written against compat_mts still pass `isinstance` checks in v1 code.

What differs from v1 is only what a fetch *is* (see `compat_mts.fetches`): a callable run as the
step, a `tf.Variable`, an eager tensor, a name of a step output, or a tensor of a `wrap_graph` graph.
"""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from compat_mts.fetches import STALE_GLOBAL_STEP

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
    `request_stop()` asks the session to stop after this run, as in v1.
    """

    __slots__ = ()


STALE_GLOBAL_STEP_REQUEST = SessionRunArgs(STALE_GLOBAL_STEP)
"""What the built-in hooks return from `before_run` on most runs; immutable, so one serves every run."""


# Capabilities. The session, `repeat_steps` and `keras.HooksCallback` ask a hook what it offers, not which class
# it is, so that the session core imports no hook (the hooks import the core). A hook of the program's own may
# offer the same:
# - `_set_steps_per_run(steps)`: told how many steps each run goes, as v1's Estimator told its hooks;
# - `saves_checkpoints = True`, with `checkpoint_dir`, `checkpoint` and `_set_default_scaffold(scaffold)`: saves
#   checkpoints into `checkpoint_dir`, at `end()` too (a SIGTERM then stops the loop after the run in progress,
#   and `HooksCallback` restores the latest one before `fit`);
# - `stops_at_last_step = True`, with `last_step`: requests a stop once the global step reaches `last_step` (a
#   repeated step or a Keras execution is shortened so as not to pass it).


class StepsPerRunMixin:
    """What a hook that counts steps needs to know of a run: how many steps it goes (`_steps_per_run`, 1 by default).

    The session (`repeat_steps`) and `keras.HooksCallback` (`steps_per_execution`) call `_set_steps_per_run(K)`
    when K changes, as v1's Estimator told its hooks; the hook's trigger arithmetic looks K steps ahead.
    """

    _steps_per_run = 1

    def _set_steps_per_run(self, steps_per_run: int) -> None:
        self._steps_per_run = steps_per_run


def checkpoint_saving_hooks(hooks: Sequence) -> list:
    """The hooks among `hooks` that save checkpoints (`saves_checkpoints`)."""
    return [hook for hook in hooks if getattr(hook, 'saves_checkpoints', False) is True]


def last_step_hooks(hooks: Sequence) -> list:
    """The hooks among `hooks` that stop at a last step (`stops_at_last_step`)."""
    return [hook for hook in hooks if getattr(hook, 'stops_at_last_step', False) is True]


def nearest_last_step(hooks: Sequence) -> int | None:
    """The smallest known `last_step` of `hooks` (from `last_step_hooks`), or None."""
    last_steps = [hook.last_step for hook in hooks if hook.last_step is not None]
    return min(last_steps) if last_steps else None
