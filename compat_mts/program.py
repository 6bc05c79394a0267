"""`reset()`: forget what a program registered process-wide, as a new process would start.

Sessions keep their own state (`compat_mts.fetches.SessionState`, the writers and recorders their hooks took).
What outlives a session is the program's: the registered global step and the legacy graphs it built
(`wrap_graph`, the graphs sessions adopted). A notebook cell run again, or a test, starts afresh with `reset()`.
Writers and summary recorders are not forgotten: traced steps keep using them, and their events files close
with the last session that uses them.
"""

from __future__ import annotations

from compat_mts import fetches as fetches_lib
from compat_mts import global_step as global_step_lib


def reset() -> None:
    """Forgets the registered global step and every legacy graph, as a new process would start.

    `reset_global_step()` forgets the global step alone; `reset()` also drops the `wrap_graph` graphs (and the
    graphs sessions adopted) from the fetch model, so that their names no longer resolve and they can be freed.
    Call it between independent programs in one process, for example at the top of a notebook cell that builds
    a model anew. Sessions still open keep running: each holds its own global step and graph.
    """
    global_step_lib.reset_global_step()
    fetches_lib.forget_graph_runners()
