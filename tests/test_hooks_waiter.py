"""GlobalStepWaiterHook: waits once, polling the global step, with v1's log lines."""

from __future__ import annotations

import logging
import os
import threading
import time
import types

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks import waiter
from compat_mts.hooks.waiter import GlobalStepWaiterHook


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    return lambda: [r.getMessage() for r in caplog.records if r.pathname.endswith(os.path.join('hooks', 'waiter.py'))]


def patch_sleep(monkeypatch, sleep):
    """Replaces `time.sleep` as the waiter hook reads it, not for the whole process: other threads sleep too (the
    lease renewal of a checkpoint directory's lock), and one that called `sleep` here would fail or move the step."""
    monkeypatch.setattr(waiter, 'time', types.SimpleNamespace(sleep=sleep))


def make_step():
    global_step = mts.get_or_create_global_step()
    return global_step, tf.function(lambda: global_step.assign_add(1))


def test_needs_a_global_step():
    with pytest.raises(RuntimeError, match='^Global step should be created to use _GlobalStepWaiterHook.$'):
        mts.MonitoredSession(hooks=[GlobalStepWaiterHook(3)])


@pytest.mark.parametrize('wait_until_step', [0, -5])
def test_a_step_of_zero_or_less_never_waits(wait_until_step, lines, monkeypatch):
    _, step = make_step()
    patch_sleep(monkeypatch, lambda seconds: pytest.fail('slept'))
    with mts.MonitoredSession(hooks=[GlobalStepWaiterHook(wait_until_step)]) as session:
        session.run(step)
    assert lines() == []


def test_the_first_run_polls_every_half_second_and_logs_progress_past_1000_steps(lines, monkeypatch):
    global_step, step = make_step()
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        global_step.assign_add(600)

    patch_sleep(monkeypatch, sleep)
    with mts.MonitoredSession(hooks=[GlobalStepWaiterHook(2000)]) as session:
        assert session.run(step) == 2401
    assert slept == [0.5, 0.5, 0.5, 0.5]
    assert lines() == [
        'Waiting for global step 2000 before starting training.',
        'Waiting for global step 2000 before starting training. Current step is 1200.',
    ]


def test_another_thread_moving_the_global_step_releases_the_wait():
    global_step, step = make_step()
    started = time.monotonic()  # Before the timer starts: the run cannot return before it fires.
    mover = threading.Timer(0.3, lambda: global_step.assign(5))
    mover.start()
    with mts.MonitoredSession(hooks=[GlobalStepWaiterHook(5)]) as session:
        assert session.run(step) == 6
    mover.join()
    assert time.monotonic() - started >= 0.3


def test_it_never_waits_again_in_the_session(monkeypatch):
    global_step, step = make_step()
    global_step.assign(10)
    patch_sleep(monkeypatch, lambda seconds: pytest.fail('slept'))
    with mts.MonitoredSession(hooks=[GlobalStepWaiterHook(10)]) as session:
        session.run(step)
        global_step.assign(0)
        session.run(step)


def test_a_step_already_reached_logs_once_and_does_not_sleep(lines, monkeypatch):
    global_step, step = make_step()
    global_step.assign(50)
    patch_sleep(monkeypatch, lambda seconds: pytest.fail('slept'))
    with mts.MonitoredSession(hooks=[GlobalStepWaiterHook(20)]) as session:
        session.run(step)
    assert lines() == ['Waiting for global step 20 before starting training.']


def test_each_session_waits_again_from_begin(lines, monkeypatch):
    global_step, step = make_step()
    hook = GlobalStepWaiterHook(3)
    patch_sleep(monkeypatch, lambda seconds: global_step.assign_add(1))
    for _ in range(2):
        global_step.assign(0)
        with mts.MonitoredSession(hooks=[hook]) as session:
            assert session.run(step) == 4
    assert lines() == ['Waiting for global step 3 before starting training.'] * 2


@pytest.mark.parametrize('value', ['10', 2.5, None, True])
def test_wait_until_step_must_be_an_integer(value):
    with pytest.raises(TypeError, match='`wait_until_step` must be an integer'):
        GlobalStepWaiterHook(value)
