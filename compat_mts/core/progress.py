"""Progress of a long command-line job: how far, how fast, how long still to go.

`compat-mts demo` and `compat-mts convert` report through one `Progress`. Two ways of showing it, chosen by
where the lines go, as pip, wget and Keras's `Progbar` choose:

- on a terminal (`live` stream given): one line redrawn in place at most every `redraw_secs`, ended with a
  newline when the work is done;
- anywhere else (a log file, a pipe, CI): a full line at each quarter of the work, so a log of any length of
  work gets four lines, not one per step, and still records the rate the job ran at.

The rate is measured from the first update on, so the slow first step of a `tf.function` (its tracing) does
not make the estimate of what remains pessimistic for the rest of the run.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, TextIO

UNITS = ('steps', 'bytes')
_MARKS = 4  # Lines written away from a terminal: one at each quarter of the work.


def format_bytes(count: float) -> str:
    """`1536` -> `'1.5 KB'`: powers of 1024, one decimal from KB on."""
    for unit in ('B', 'KB', 'MB', 'GB'):
        if abs(count) < 1024 or unit == 'GB':
            return f'{count:.0f} {unit}' if unit == 'B' else f'{count:.1f} {unit}'
        count /= 1024
    raise AssertionError('unreachable')


def format_duration(seconds: float) -> str:
    """`0.42` -> `'0.4s'`, `12.2` -> `'13s'`, `125` -> `'2m05s'`, `3720` -> `'1h02m'`.

    Tenths below ten seconds, whole seconds (rounded up) above, so a short job does not read `ETA 1s` throughout.
    """
    if seconds < 9.95:
        return f'{max(0.0, seconds):.1f}s'
    seconds = math.ceil(seconds)
    if seconds < 60:
        return f'{seconds}s'
    if seconds < 3600:
        return f'{seconds // 60}m{seconds % 60:02d}s'
    return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'


class Progress:
    """Reports `done` out of `total` units of work with a rate and an estimate of the time left.

    A line reads `200/400 steps (50%), 812 steps/s, ETA 1s, loss 0.0123` (`detail`, if given, comes last);
    in bytes, `1.5 MB/3.0 MB (50%), 20.0 MB/s, ETA 1s`. The last line, at `total`, gives the time taken
    instead of an ETA.

    Args:
      total: The amount of work, a positive number of `unit`s.
      unit: 'steps' or 'bytes' (shown as sizes: `1.5 MB`, `20.0 MB/s`).
      out: Called with each full line, away from a terminal (`live` None).
      live: A terminal stream (`sys.stdout` when it `isatty()`): the line is redrawn there in place instead.
      redraw_secs: The least time between two redraws of the live line.
      clock: Seconds, monotonic; `time.monotonic` unless a test drives the clock.

    Raises:
      ValueError: `total` is not positive, or `unit` is not one of 'steps', 'bytes'.
    """

    def __init__(
        self,
        total: float,
        *,
        unit: str = 'steps',
        out: Callable[[str], Any] = print,
        live: TextIO | None = None,
        redraw_secs: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ):
        if isinstance(total, bool) or not isinstance(total, (int, float)) or not total > 0:
            raise ValueError(f'`total` ({total!r}) must be a positive number.')
        if unit not in UNITS:
            raise ValueError(f'`unit` must be one of {UNITS}, got {unit!r}.')
        self._total = total
        self._unit = unit
        self._out = out
        self._live = live
        self._redraw_secs = redraw_secs
        self._clock = clock
        self._started = clock()
        self._first: tuple[float, float] | None = None  # (time, done) of the first update: the rate's origin.
        self._marks_written = 0
        self._last_redraw: float | None = None
        self._live_width = 0
        self._finished = False

    def update(self, done: float, detail: str = '') -> None:
        """Records that `done` units are done (a running total, not an increment) and reports if it is time."""
        now = self._clock()
        if self._first is None:
            self._first = (now, done)
        complete = done >= self._total
        if self._live is not None:
            if complete or self._last_redraw is None or now - self._last_redraw >= self._redraw_secs:
                self._redraw(self.line(done, now, detail))
                self._last_redraw = now
        else:
            mark = min(_MARKS, int(done * _MARKS // self._total))
            if mark > self._marks_written:
                self._marks_written = mark
                self._out(self.line(done, now, detail))
        if complete:
            self.finish()

    def finish(self) -> None:
        """Ends the live line (work that stopped early leaves it as last drawn); idempotent."""
        if self._finished:
            return
        self._finished = True
        if self._live is not None and self._last_redraw is not None:
            self._live.write('\n')
            self._live.flush()

    def line(self, done: float, now: float, detail: str = '') -> str:
        """The progress line for `done` units at time `now`."""
        percent = int(100 * done // self._total)
        parts = [
            f'{self._amount(done)}/{self._amount(self._total)}'
            + (' steps' if self._unit == 'steps' else '')
            + f' ({percent}%)'
        ]
        rate = self._rate(done, now)
        if rate is not None:
            parts.append(self._amount(rate) + ('/s' if self._unit == 'bytes' else ' steps/s'))
        if done >= self._total:
            parts.append(f'took {format_duration(now - self._started)}')
        elif rate:
            parts.append(f'ETA {format_duration((self._total - done) / rate)}')
        if detail:
            parts.append(detail)
        return ', '.join(parts)

    def _rate(self, done: float, now: float) -> float | None:
        first_time, first_done = self._first if self._first is not None else (self._started, 0)
        if now > first_time and done > first_done:
            return (done - first_done) / (now - first_time)
        if done >= self._total and now > self._started:  # Done in one update: the time since the start is all.
            return done / (now - self._started)
        return None  # One update so far, which may have paid for tracing: no estimate yet.

    def _amount(self, value: float) -> str:
        if self._unit == 'bytes':
            return format_bytes(value)
        return f'{value:.0f}' if value >= 10 or float(value).is_integer() else f'{value:.1f}'

    def _redraw(self, text: str) -> None:
        padding = ' ' * max(0, self._live_width - len(text))  # Covers what a longer previous line left.
        self._live.write('\r' + text + padding)
        self._live.flush()
        self._live_width = len(text) + len(padding)
