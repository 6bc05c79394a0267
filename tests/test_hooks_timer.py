"""SecondOrStepTimer: v1's trigger arithmetic."""

from __future__ import annotations

import time

import pytest

from compat_mts import SecondOrStepTimer
from compat_mts.hooks.timer import NeverTriggerTimer


def test_needs_exactly_one_period():
    with pytest.raises(ValueError, match='Either every_secs or every_steps should be provided.'):
        SecondOrStepTimer()
    with pytest.raises(ValueError, match='Can not provide both every_secs and every_steps.'):
        SecondOrStepTimer(every_secs=1, every_steps=1)


def test_steps_trigger_first_then_every_n():
    timer = SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(5)
    assert timer.update_last_triggered_step(5) == (None, None)
    assert [step for step in range(5, 12) if timer.should_trigger_for_step(step)] == [8, 9, 10, 11]
    assert timer.last_triggered_step() == 5


def test_seconds_trigger_on_time_but_never_for_the_same_step(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(time, 'time', lambda: now[0])
    timer = SecondOrStepTimer(every_secs=10)
    timer.update_last_triggered_step(1)
    now[0] = 109.9
    assert not timer.should_trigger_for_step(2)
    now[0] = 110.0
    assert timer.should_trigger_for_step(2)
    assert not timer.should_trigger_for_step(1)
    elapsed_secs, elapsed_steps = timer.update_last_triggered_step(4)
    assert (elapsed_secs, elapsed_steps) == (pytest.approx(10.0), 3)


def test_reset_forgets_the_last_trigger():
    timer = SecondOrStepTimer(every_steps=100)
    timer.update_last_triggered_step(3)
    timer.reset()
    assert timer.last_triggered_step() is None
    assert timer.should_trigger_for_step(3)


def test_never_trigger_timer():
    timer = NeverTriggerTimer()
    assert not timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(5) == (None, None)
    assert timer.last_triggered_step() is None
