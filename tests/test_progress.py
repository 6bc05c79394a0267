"""`compat_mts.core.progress`: a rate and an ETA, one live line on a terminal, four lines in a log."""

from __future__ import annotations

import io

import pytest

from compat_mts.core import progress


class FakeClock:
    """Seconds that pass only when the test says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_away_from_a_terminal_a_line_is_written_at_each_quarter_only():
    clock, lines = FakeClock(), []
    report = progress.Progress(1000, out=lines.append, clock=clock)
    for step in range(1, 1001):
        clock.now += 0.002  # 500 steps/s
        report.update(step, f'loss {1 / step:.3f}')
    assert lines == [
        '250/1000 steps (25%), 500 steps/s, ETA 1.5s, loss 0.004',
        '500/1000 steps (50%), 500 steps/s, ETA 1.0s, loss 0.002',
        '750/1000 steps (75%), 500 steps/s, ETA 0.5s, loss 0.001',
        '1000/1000 steps (100%), 500 steps/s, took 2.0s, loss 0.001',
    ]


def test_the_rate_leaves_out_the_first_update_which_paid_for_tracing():
    clock, lines = FakeClock(), []
    report = progress.Progress(400, out=lines.append, clock=clock)
    clock.now += 30.0  # the first step traces the tf.function
    report.update(1)
    for step in range(2, 201):
        clock.now += 0.01
        report.update(step)
    assert lines == ['100/400 steps (25%), 100 steps/s, ETA 3.0s', '200/400 steps (50%), 100 steps/s, ETA 2.0s']


def test_on_a_terminal_one_line_is_redrawn_in_place_at_most_every_redraw_secs():
    clock, terminal, lines = FakeClock(), io.StringIO(), []
    report = progress.Progress(100, out=lines.append, live=terminal, redraw_secs=0.2, clock=clock)
    for step in range(1, 101):
        clock.now += 0.05
        report.update(step, 'x' * (100 - step))  # ever shorter lines: each redraw must cover the previous one
    text = terminal.getvalue()
    assert lines == []
    assert text.endswith('\n') and text.count('\n') == 1
    draws = text[:-1].split('\r')[1:]
    assert 20 <= len(draws) <= 27, draws  # every 4th update, plus the first and the last
    assert draws[0] == '1/100 steps (1%), ' + 'x' * 99  # no rate from a single update
    assert draws[-1].startswith('100/100 steps (100%), 20 steps/s, took 5.0s')
    widths = [len(draw) for draw in draws]
    assert widths == sorted(widths), widths  # each draw covers all that the ones before it left on the line


def test_work_that_stops_early_ends_the_live_line_at_finish():
    clock, terminal = FakeClock(), io.StringIO()
    report = progress.Progress(10, live=terminal, clock=clock)
    clock.now += 1
    report.update(3)
    report.finish()
    report.finish()
    assert terminal.getvalue() == '\r3/10 steps (30%)\n'


def test_bytes_are_shown_as_sizes():
    clock, lines = FakeClock(), []
    report = progress.Progress(3 * 1024**2, unit='bytes', out=lines.append, clock=clock)
    report.update(1)
    clock.now += 0.5
    report.update(1.5 * 1024**2, 'model.ckpt-20 (1/2 checkpoints)')
    assert lines == ['1.5 MB/3.0 MB (50%), 3.0 MB/s, ETA 0.5s, model.ckpt-20 (1/2 checkpoints)']


@pytest.mark.parametrize(
    'seconds, text', [(0.04, '0.0s'), (9.9, '9.9s'), (12.2, '13s'), (125, '2m05s'), (3720, '1h02m')]
)
def test_durations_read_at_a_glance(seconds, text):
    assert progress.format_duration(seconds) == text


@pytest.mark.parametrize(
    'arguments, message',
    [
        ({'total': 0}, '`total` (0) must be a positive number.'),
        ({'total': 5, 'unit': 'files'}, '`unit` must be one of'),
    ],
)
def test_bad_arguments_name_the_argument(arguments, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
        progress.Progress(**arguments)
