"""`FeedFnHook`: feeds every run from a function; eagerly the feeds are keyword arguments of the step."""

from __future__ import annotations

from typing import Callable

from compat_mts.core import validation
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook


class FeedFnHook(SessionRunHook):
    """Calls `feed_fn()` before every run and feeds what it returns (v1's behaviour).

    Eagerly a feed with a string key is a keyword argument of the step callable: `feed_fn` returning
    `{'features': batch}` makes the run call `step(features=batch)`. Placeholders (or their names) of a
    `wrap_graph` graph are fed as in v1. Feeds are merged with the caller's and other hooks' by v1's
    rules, and a key fed twice raises v1's `RuntimeError` ("Same tensor is fed by ...").

    Args:
      feed_fn: A callable taking no argument, called before every run; it returns the feed dict of that
        run (string keys are keyword arguments of the step, placeholders feed a `wrap_graph` graph), or
        None to feed nothing.

    Example:

    ```python
    batches = iter(dataset.as_numpy_iterator())
    hook = compat_mts.FeedFnHook(lambda: {'features': next(batches)})
    ```

    Raises:
      TypeError: `feed_fn` is not callable, or (at a run) returns something that is not a dict or None.
    """

    def __init__(self, feed_fn: Callable[[], dict]):
        validation.check_callable(feed_fn, 'feed_fn', 'a callable returning a feed dict')
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        feed_dict = self.feed_fn()
        if feed_dict is not None and not isinstance(feed_dict, dict):
            raise TypeError(f'`feed_fn` must return a dict of feeds, returned {type(feed_dict).__name__}.')
        return SessionRunArgs(fetches=None, feed_dict=feed_dict)
