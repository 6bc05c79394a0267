"""The SessionRunHook protocol: hooks, the arguments they return, what they get back.

The classes subclass their `tf.compat.v1.train` namesakes, so a user's hook written against
`tf.compat.v1.train.SessionRunHook` (returning `tf.compat.v1.train.SessionRunArgs`) works unchanged,
and hooks written against compat_mts still pass `isinstance` checks in v1 code.

What differs from v1 is only what a fetch *is* (see `compat_mts.fetches`): a callable run as the
step, a `tf.Variable`, an eager tensor, a name of a step output, or a tensor of a `wrap_graph` graph.
"""

from __future__ import annotations

from typing import Any

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
