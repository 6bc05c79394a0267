"""The process-wide tables of compat_mts, in one `Program`; `reset()` forgets a program as a new process would.

Sessions keep their own state (`compat_mts.core.fetch.SessionState`, the writers and recorders their hooks took).
What outlives a session is in a table that its module registers with `PROGRAM` when it is imported: the
registered global step, the legacy graphs a program built (`wrap_graph`, the graphs sessions adopted), the
caches derived from them, the writers, the lock files... `PROGRAM.tables()` lists them with what each holds.

A table is of one of two kinds (ARCHITECTURE.md, "Process-wide tables"):

- `program`: what a program registered, or a cache of it. `reset()` clears these. A notebook cell run again, or
  a test, starts afresh.
- `process`: resources of the process that outlive programs (the writers traced steps keep using, the lock files
  of this process, a cluster's strategy). `reset()` keeps them: dropping one would break what still runs.

This module is in the lowest layer: it imports nothing of compat_mts, and every other module may register here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, TypeVar

KINDS = ('program', 'process')
_Table = TypeVar('_Table')


@dataclasses.dataclass(frozen=True)
class Table:
    """One process-wide table.

    Attributes:
      name: `<module>.<table>`, e.g. `fetches.graph_runners`.
      kind: 'program' (cleared by `reset()`) or 'process' (kept).
      holds: what it holds, in a line.
      size: how many entries it holds now (a flag or a single value counts 1 when set).
      clear: empties it; None for a `process` table.
    """

    name: str
    kind: str
    holds: str
    size: Callable[[], int]
    clear: Callable[[], None] | None


class Program:
    """Owns every process-wide table of compat_mts; `reset()` clears the program's."""

    def __init__(self):
        self._tables: dict[str, Table] = {}

    def table(self, name: str, value: _Table, holds: str, kind: str = 'program') -> _Table:
        """Registers a dict, list, set or `WeakSet` held in a module's global; returns it.

        The module keeps using its global (no indirection on the run path); `reset()` clears the same object.

        Args:
          name: `<module>.<table>`, unique.
          value: the empty container.
          holds: what it holds, in a line.
          kind: 'program' or 'process'.

        Returns:
          `value`.
        """
        self.register(name, holds, size=lambda: len(value), clear=value.clear, kind=kind)
        return value

    def register(
        self,
        name: str,
        holds: str,
        size: Callable[[], int],
        clear: Callable[[], None] | None = None,
        kind: str = 'program',
    ) -> None:
        """Registers a table that is not a plain container (a module global set to a value, a flag).

        Args:
          name: `<module>.<table>`; registering a name again (a module reloaded) replaces it.
          holds: what it holds, in a line.
          size: returns how many entries it holds now.
          clear: empties it; `reset()` calls it for a `program` table.
          kind: 'program' or 'process'.

        Raises:
          ValueError: `kind` is not one of `KINDS`.
        """
        if kind not in KINDS:
            raise ValueError(f'`kind` must be one of {KINDS}, got {kind!r}.')
        self._tables[name] = Table(name, kind, holds, size, clear if kind == 'program' else None)

    def tables(self) -> list[Table]:
        """Every registered table, in the order their modules registered them."""
        return list(self._tables.values())

    def reset(self) -> None:
        """Clears every `program` table (see the module's docstring); the `process` tables are kept."""
        for table in list(self._tables.values()):
            if table.clear is not None:
                table.clear()


PROGRAM = Program()
"""The process's one `Program`."""


def reset() -> None:
    """Forgets what the program registered process-wide, as a new process would start.

    The registered global step, every legacy graph (`wrap_graph`, and the graphs sessions adopted) so that their
    names no longer resolve and they can be freed, the caches derived from them, and the logged-once messages.
    Call it between independent programs in one process, for example at the top of a notebook cell that builds a
    model anew; `reset_global_step()` forgets the global step alone. Sessions still open keep running: each holds
    its own global step and graph. Writers, summary recorders, checkpoint locks and clusters belong to the process
    and are kept: traced steps keep using their writers, whose events files close with the last session that uses
    them (ARCHITECTURE.md, "Process-wide tables").
    """
    PROGRAM.reset()
