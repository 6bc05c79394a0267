"""`HookDriver` and `HookCapabilities`: one driver of the hook protocol, and what a hook may offer it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.session.hook_driver import HookDriver, acts_around_runs
from compat_mts.keras import HooksCallback
from compat_mts.session.session_run_hook import STALE_GLOBAL_STEP_REQUEST, HookCapabilities, capability

keras = tf.keras


class Recording(mts.SessionRunHook):
    """A hook of the program's own, without `HookCapabilities`: records every call as `(name, method, step)`."""

    def __init__(self, name: str, calls: list):
        self.name, self.calls = name, calls

    def begin(self):
        self.calls.append((self.name, 'begin', None))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, 'after_create_session', None))

    def before_run(self, run_context):
        self.calls.append((self.name, 'before_run', None))
        return STALE_GLOBAL_STEP_REQUEST

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, 'after_run', run_values.results))

    def end(self, session):
        self.calls.append((self.name, 'end', None))


class EveryThird(Recording):
    """A hook that offers `HookCapabilities`: it acts on runs whose stale step is a multiple of 3, and says so."""

    reads_clock_after_run = False

    def __init__(self, name: str, calls: list):
        super().__init__(name, calls)
        self.next_step = 0
        self.caught_up: list[int] = []
        self.told: list[int] = []

    def after_run(self, run_context, run_values):
        super().after_run(run_context, run_values)
        self.next_step = run_values.results + 3 - run_values.results % 3

    def idle_until(self):
        return (self.next_step, float('inf'))

    def catch_up(self, last_stale_step: int) -> None:
        self.caught_up.append(last_stale_step)

    def set_steps_per_run(self, steps_per_run: int) -> None:
        self.told.append(steps_per_run)


def test_the_built_in_step_counting_hooks_offer_the_protocol_and_a_program_s_own_hook_need_not(tmp_path):
    mts.get_or_create_global_step()
    directory = str(tmp_path)
    built_in = [
        mts.StopAtStepHook(last_step=10),
        mts.StepCounterHook(every_n_steps=5, output_dir=directory),
        mts.CheckpointSaverHook(directory, save_steps=5),
        mts.SummarySaverHook(save_steps=5, output_dir=directory, scaffold=mts.Scaffold()),
        mts.LoggingTensorHook(['loss'], every_n_iter=5),
        mts.ProfilerHook(save_steps=5, output_dir=directory),
    ]
    for hook in built_in:
        assert isinstance(hook, HookCapabilities), type(hook).__name__
    assert isinstance(EveryThird('a', []), HookCapabilities)
    assert not isinstance(Recording('a', []), HookCapabilities)
    assert not isinstance(mts.SessionRunHook(), HookCapabilities)
    assert not isinstance(mts.NanTensorHook('loss'), HookCapabilities)  # Called on every run, told nothing.

    # The periodic ones say when they next act; the others need every run.
    stop = built_in[0]
    assert capability(stop, 'idle_until')() == (10 - 1, float('inf'))
    assert capability(built_in[4], 'idle_until')() is None
    assert capability(built_in[1], 'reads_clock_after_run') is True
    assert capability(stop, 'reads_clock_after_run') is True  # Its before_run only asks for the stale step.
    assert capability(Recording('a', []), 'idle_until') is None
    with pytest.raises(ValueError, match=r"`name` must be one of .*'idle_until'.*got 'idle'"):
        capability(stop, 'idle')


def test_a_capability_set_to_none_is_withdrawn_and_the_former_private_names_are_read():
    class Withdrawn(EveryThird):
        idle_until = None

    class FormerNames(Recording):
        _reads_clock_after_run = True

        def _idle_until(self):
            return (7, float('inf'))

        def _set_steps_per_run(self, steps_per_run):
            self.calls.append(steps_per_run)

    assert capability(Withdrawn('a', []), 'idle_until') is None
    assert capability(Withdrawn('a', []), 'catch_up') is not None
    former = FormerNames('a', [])
    assert capability(former, 'idle_until')() == (7, float('inf'))
    assert capability(former, 'reads_clock_after_run') is True
    capability(former, 'set_steps_per_run')(4)
    assert former.calls == [4]
    stop = mts.StopAtStepHook(last_step=10)
    stop._idle_until = None  # The former name set to None withdraws the public one too.
    assert capability(stop, 'idle_until') is None


def drive(driver: HookDriver, stale_steps: list) -> None:
    """Runs `driver` through one scheduled run per stale step, as `HooksCallback` does."""
    for stale_step in stale_steps:
        context = mts.SessionRunContext(original_args=mts.SessionRunArgs(None), session=None)
        if driver.select(stale_step):
            driver.before_run(context, None, None)
        late = driver.late()
        if late:
            driver.before_run_late(context, late)
        if not driver.called:
            continue
        results = [stale_step if request is not None else None for request in driver.requests]
        driver.after_run(context, results)


def test_a_scheduled_driver_skips_a_hook_that_offers_idle_until_and_calls_one_without_it_every_run():
    calls: list = []
    periodic, own = EveryThird('periodic', calls), Recording('own', calls)
    driver = HookDriver([periodic, own], scheduled=True)
    driver.set_steps_per_run(1)
    driver.begin()
    driver.after_create_session(None, None)
    drive(driver, [0, 1, 2, 3, 4, 5, 6, 7])
    driver.end(None)

    def steps_of(name: str, method: str) -> list:
        return [step for hook, called, step in calls if hook == name and called == method]

    assert steps_of('own', 'after_run') == [0, 1, 2, 3, 4, 5, 6, 7]
    assert steps_of('periodic', 'after_run') == [0, 3, 6]
    assert periodic.caught_up == [2, 5]  # The stale step of the run before each resumption.
    assert periodic.told == [1]
    # v1's orders: begin, after_create_session and end in hook order; before_run of all, then after_run of all.
    assert calls[:4] == [
        ('periodic', 'begin', None),
        ('own', 'begin', None),
        ('periodic', 'after_create_session', None),
        ('own', 'after_create_session', None),
    ]
    assert [(hook, method) for hook, method, _ in calls[4:8]] == [
        ('periodic', 'before_run'),
        ('own', 'before_run'),
        ('periodic', 'after_run'),
        ('own', 'after_run'),
    ]
    assert calls[-2:] == [('periodic', 'end', None), ('own', 'end', None)]


def test_a_scheduled_driver_whose_hooks_never_idle_calls_every_hook_on_every_run_as_the_session_does():
    # No hook offers `idle_until`: nothing is ever skipped, so the driver keeps no schedule (its bookkeeping was
    # the cost of hooks called on every batch of `fit`, benchmarks/hook_calls.py).
    calls: list = []
    hooks = [Recording('first', calls), Recording('second', calls)]
    driver = HookDriver(hooks, scheduled=True)
    driver.begin()
    driver.after_create_session(None, None)
    drive(driver, [0, 1, 2])
    assert list(driver.select(3)) == [0, 1] and list(driver.called) == [0, 1] and driver.late() == []
    assert [(hook, step) for hook, method, step in calls if method == 'after_run'] == [
        ('first', 0),
        ('second', 0),
        ('first', 1),
        ('second', 1),
        ('first', 2),
        ('second', 2),
    ]


def test_hooks_that_do_nothing_around_runs_are_left_out_of_runs_but_not_of_begin_and_end():
    calls: list = []
    quiet = mts.SessionRunHook()
    patched = mts.SessionRunHook()
    patched.before_run = lambda run_context: calls.append('patched') or None
    assert not acts_around_runs(quiet)
    assert acts_around_runs(patched)
    assert acts_around_runs(Recording('a', calls))
    driver = HookDriver([quiet, patched, Recording('own', calls)])
    assert driver.run_hooks == (patched, driver.hooks[2])
    assert driver.hooks == (quiet, patched, driver.hooks[2])


def test_the_session_calls_every_hook_on_every_run_in_v1_s_orders_and_end_only_at_a_clean_close():
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step():
        global_step.assign_add(1)
        return {'loss': tf.constant(1.0)}

    calls: list = []
    periodic, own = EveryThird('periodic', calls), Recording('own', calls)
    with mts.MonitoredSession(hooks=[periodic, own]) as session:
        for _ in range(5):
            session.run(step)
        session.run(mts.repeat_steps(step, 2))
    runs = [(hook, method, value) for hook, method, value in calls if method in ('before_run', 'after_run')]
    expected = []
    for stale_step in [0, 1, 2, 3, 4, 5]:  # The session has no schedule: `idle_until` is not asked.
        expected += [('periodic', 'before_run', None), ('own', 'before_run', None)]
        expected += [('periodic', 'after_run', stale_step), ('own', 'after_run', stale_step)]
    assert runs == expected
    assert periodic.told == [2]  # The session tells the hooks K when it changes.
    assert periodic.caught_up == []
    assert calls[-2:] == [('periodic', 'end', None), ('own', 'end', None)]

    calls.clear()
    with pytest.raises(ValueError, match='in the loop'):
        with mts.MonitoredSession(hooks=[periodic, own]) as session:
            session.run(step)
            raise ValueError('in the loop')
    assert [method for _, method, _ in calls].count('end') == 0  # v1: no end() when the block raises.


def test_fit_skips_a_program_s_hook_that_offers_idle_until_and_calls_one_without_it_on_every_batch():
    features = np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss='mse')
    calls: list = []
    periodic, own = EveryThird('periodic', calls), Recording('own', calls)
    model.fit(features, features[:, :1], batch_size=8, epochs=2, verbose=0, callbacks=[HooksCallback([periodic, own])])

    def steps_of(name: str) -> list:
        return [int(step) for hook, method, step in calls if hook == name and method == 'after_run']

    assert steps_of('own') == list(range(10))
    assert steps_of('periodic') == [0, 3, 6, 9]
    assert periodic.caught_up == [2, 5, 8]
    assert periodic.told == [1]
