"""`HookSchedule`: hooks that say when they next act are skipped in between, on v1's trigger steps all the same."""

from __future__ import annotations

import time

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.keras import HooksCallback
from compat_mts.session.session_run_hook import HookSchedule
from tests.support import checkpoint_steps, read_events

keras = tf.keras
FEATURES = np.random.default_rng(1).normal(size=(64, 3)).astype(np.float32)  # 8 batches of 8 per epoch.
TARGETS = FEATURES @ np.array([[1.0], [-2.0], [0.5]], np.float32)


class SummarizingRegression(keras.Model):
    """A linear model whose train step writes a `tf.summary` scalar, as v1 programs wrote summary ops."""

    def __init__(self):
        super().__init__(name='summarizing')
        self.dense = keras.layers.Dense(1, name='dense')

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        logs = super().train_step(data)
        tf.summary.scalar('loss', logs['loss'])
        return logs


def counting(hook_class: type, skippable: bool) -> type:
    """`hook_class`, recording the stale global step of each batch its `before_run` is called on.

    `skippable`: saying again what the hook class says of its `before_run` (as a subclass with a method of its own
    must, `session_run_hook.said_of_its_runs`). Not `skippable`: as a hook of the program's own, so it is called
    on every batch.
    """

    class Counting(hook_class):
        def begin(self):
            self.called_at = []
            super().begin()

        def before_run(self, run_context):
            self.called_at.append(run_context.session.stale_step)
            return super().before_run(run_context)

    if skippable:
        for capability in ('idle_until', 'reads_clock_after_run', 'catch_up'):
            setattr(Counting, capability, getattr(hook_class, capability))
    return Counting


def default_hooks(directory: str, skippable: bool) -> list:
    return [
        counting(mts.StopAtStepHook, skippable)(last_step=20),
        counting(mts.SummarySaverHook, skippable)(save_steps=5, output_dir=directory, scaffold=mts.Scaffold()),
        counting(mts.StepCounterHook, skippable)(every_n_steps=5, output_dir=directory),
        counting(mts.CheckpointSaverHook, skippable)(directory, save_steps=5),
    ]


def fit(hooks: list, callbacks: tuple = ()) -> keras.Model:
    model = SummarizingRegression()
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss='mse')
    model.fit(
        FEATURES,
        TARGETS,
        batch_size=8,
        epochs=3,
        shuffle=False,
        verbose=0,
        callbacks=[*callbacks, HooksCallback(hooks)],
    )
    return model


def test_step_triggered_hooks_are_called_only_on_batches_where_they_act_and_trigger_on_v1_steps(tmp_path):
    skipping_dir, calling_dir = str(tmp_path / 'skipping'), str(tmp_path / 'calling')
    skipping = default_hooks(skipping_dir, skippable=True)
    fit(skipping)
    mts.reset_global_step()
    calling = default_hooks(calling_dir, skippable=False)
    fit(calling)

    every_batch = list(range(20))
    assert [hook.called_at for hook in calling] == [every_batch] * 4
    stop, summaries, step_counter, checkpoints = (hook.called_at for hook in skipping)
    assert stop == [0, 19]  # The first batch, then the one that reaches last_step.
    assert summaries == [0, 1, 5, 6, 10, 11, 15, 16]  # Recording batches, and the next (recording stops).
    assert step_counter == [0, 5, 10, 15]
    assert checkpoints == [0, 4, 9, 14, 19]

    # v1's trigger steps (as in tests/test_keras_hooks_callback.py), identical with and without the skip.
    assert checkpoint_steps(skipping_dir) == checkpoint_steps(calling_dir) == [0, 5, 10, 15, 20]
    skipping_events, calling_events = read_events(skipping_dir), read_events(calling_dir)
    for tag, expected_steps in (('loss', [1, 6, 11, 16]), ('global_step/sec', [6, 11, 16])):
        assert [step for step, _ in skipping_events[tag]] == expected_steps, tag
        assert [step for step, _ in calling_events[tag]] == expected_steps, tag


class AdvanceClock(keras.callbacks.Callback):
    """Moves a patched `time.time` on by `seconds` at the end of each batch, before `HooksCallback` sees it."""

    def __init__(self, now: list, seconds: float):
        super().__init__()
        self._now, self._seconds = now, seconds

    def on_train_batch_end(self, batch, logs=None):
        self._now[0] += self._seconds


@pytest.mark.parametrize('skippable', [True, False])
def test_time_triggered_checkpoints_land_on_the_batch_whose_end_reaches_the_time(tmp_path, monkeypatch, skippable):
    now = [1000.0]
    monkeypatch.setattr(time, 'time', lambda: now[0])
    directory = str(tmp_path)
    hook = counting(mts.CheckpointSaverHook, skippable)(directory, save_secs=10)
    fit([counting(mts.StopAtStepHook, True)(last_step=12), hook], callbacks=(AdvanceClock(now, 4.0),))

    # Each batch ends 4 s after the previous one: the save after 10 s lands on the 3rd batch after the last save.
    assert checkpoint_steps(directory) == [0, 3, 6, 9, 12]
    if skippable:  # The first batch; then at the end of each batch that reaches the time, not at its start.
        assert hook.called_at == [0, 2, 5, 8, 11]
    else:
        assert hook.called_at == list(range(12))


class Periodic:
    """A hook that acts every `every` steps and says so (`_idle_until`), recording what the schedule tells it."""

    def __init__(self, every: int):
        self._every = every
        self.caught_up: list[int] = []
        self.next_step = 0

    def _idle_until(self):
        return (self.next_step, float('inf'))

    def _catch_up(self, last_stale_step: int) -> None:
        self.caught_up.append(last_stale_step)

    def ran(self, stale_step: int) -> None:
        self.next_step = stale_step + self._every


def drive(schedule: HookSchedule, hooks: list, stale_steps: list) -> list:
    """Runs `stale_steps` through `schedule`; returns the positions called on each run."""
    calls = []
    for stale_step in stale_steps:
        called = schedule.select(stale_step)
        for index in called:
            if isinstance(hooks[index], Periodic):
                hooks[index].ran(stale_step)
        calls.append(list(called))
        schedule.ran()
    return calls


def test_schedule_skips_only_promised_runs_calls_own_hooks_always_and_catches_up():
    periodic, own = Periodic(every=3), mts.SessionRunHook()
    hooks = [periodic, own]
    calls = drive(HookSchedule(hooks), hooks, [0, 1, 2, 3, 4, 5, 6])
    assert calls == [[0, 1], [1], [1], [0, 1], [1], [1], [0, 1]]
    assert periodic.caught_up == [2, 5]  # The stale step of the run before each resumption.

    periodic = Periodic(every=5)
    hooks = [periodic]
    # A global step that does not move (2, 2) or goes back (1) calls every hook: v1's hooks compare runs.
    assert drive(HookSchedule(hooks), hooks, [0, 1, 2, 2, 1, 2]) == [[0], [], [], [0], [0], []]
    assert periodic.caught_up == [2]
