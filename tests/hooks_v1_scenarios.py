"""The hook scenarios of `test_hooks_differential_v1.py`, written once for v1 graph mode and compat_mts.

`python tests/hooks_v1_scenarios.py` runs every scenario with the real `tf.compat.v1.train` hooks under
`tf.compat.v1.disable_eager_execution()`, each in a fresh graph and directory, and prints `{name: result}`
as one JSON line. The test module runs the very same scenario functions eagerly through compat_mts
(`EagerSide`, defined there) and compares what happened: values returned and fetched, log lines, errors,
trigger steps, files written.

A scenario is `fn(side, result, directory)`. `side.train` is `tf.compat.v1.train` or `compat_mts`;
`side.model(losses)` builds the same little program on both sides (`GraphModel` here); the clock is a
`FakeClock` patched over `time.time`/`time.sleep`, as v1's own hook tests do, so logged timings are exact.
"""

import contextlib
import json
import logging
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import tensorflow as tf
from tensorflow.python.training import training_util

LOSSES = [0.5, 1.25, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
HOOK_LINE_PATTERNS = (
    'Model diverged',
    ' = ',
    'formatted:',
    'Waiting for global step',
    'FinalOpsHook',
    'Saving timeline',
)


class FakeClock:
    """`time.time` that moves only when told (or slept on); `time.sleep` that records and moves it."""

    def __init__(self, on_sleep=None):
        self.now = 1000.0
        self.sleeps = []
        self.on_sleep = on_sleep

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep()

    @contextlib.contextmanager
    def installed(self):
        real_time, real_sleep = time.time, time.sleep
        time.time, time.sleep = self.time, self.sleep
        try:
            yield self
        finally:
            time.time, time.sleep = real_time, real_sleep


class LogCapture(logging.Handler):
    """Keeps `[level, message]` of what v1 and compat_mts log at INFO+ (both through the `tensorflow` logger)."""

    def __init__(self):
        super().__init__(level=logging.INFO)
        self.lines = []

    def emit(self, record):
        message = record.getMessage()
        if any(pattern in message for pattern in HOOK_LINE_PATTERNS):
            self.lines.append([record.levelname, message])

    @contextlib.contextmanager
    def installed(self):
        logger = logging.getLogger('tensorflow')
        level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.setLevel(level)


class GraphModel:
    """The v1 program: `loss = LOSSES[global_step] * scale`, `vec = [loss * 1e-5, loss]`, `w += 0.5`.

    Every field a scenario uses has an eager twin in `EagerSide.model` (the test module).
    """

    def __init__(self, losses):
        self.global_step = tf.compat.v1.train.get_or_create_global_step()
        self.scale = tf.compat.v1.placeholder_with_default(np.float32(1.0), [], name='scale')
        index = tf.minimum(self.global_step, len(losses) - 1)
        self.loss = tf.identity(tf.gather(tf.constant(losses, tf.float32), index) * self.scale, name='loss')
        self.vec = tf.identity(tf.stack([self.loss * 1e-5, self.loss]), name='vec')
        self.w = tf.compat.v1.get_variable('w', initializer=np.float32(0.0))
        # After the hooks' read of the stale global step, as v1's Estimator built its model_fn: otherwise that
        # read and the increment are unordered, and a hook's trigger steps could change from run to run.
        hooks_global_step_read = training_util._get_or_create_global_step_read()
        with tf.control_dependencies([self.loss, self.vec, hooks_global_step_read]):
            self.train_op = tf.group(self.global_step.assign_add(1), self.w.assign_add(0.5))
        with tf.control_dependencies([self.train_op]):
            self.global_step_after = tf.identity(self.global_step.read_value())
            w_after = tf.identity(self.w.read_value())
        # Two summary ops outside the SUMMARIES collection (only the hook given one writes it): `w` after the run.
        self.summary_a = tf.compat.v1.summary.scalar('a', w_after, collections=[])
        self.summary_b = tf.compat.v1.summary.scalar('b', w_after * 10.0, collections=[])
        self._advance_by = tf.compat.v1.placeholder(tf.int64, [])
        self._advance = self.global_step.assign_add(self._advance_by)
        self.feed_key = self.scale
        self.scaled_w = self.w * self.scale
        self.exhausted_input = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(0)).get_next()
        self.sessions = []

    def run_step(self, session, feed_dict=None):
        return float(session.run([self.train_op, self.loss], feed_dict=feed_dict)[1])

    def advance_global_step(self, amount):
        self.sessions[-1].run(self._advance, feed_dict={self._advance_by: amount})

    @staticmethod
    def summary_writer(directory):
        return tf.compat.v1.summary.FileWriter(directory)

    @staticmethod
    def flush_summaries():
        """Closes the cached writers, as the end of the program would: v1 flushed only in `SummarySaverHook.end()`."""
        tf.compat.v1.summary.FileWriterCache.clear()

    def summary_scaffold(self):
        """A `Scaffold` whose `summary_op` is `summary_a` (what MonitoredTrainingSession's own hook writes)."""
        return tf.compat.v1.train.Scaffold(summary_op=self.summary_a)


class SessionGrabber(tf.compat.v1.train.SessionRunHook):
    """Hands the raw session to `model.sessions` (for `advance_global_step` in v1)."""

    def __init__(self, model):
        self.model = model

    def after_create_session(self, session, coord):
        self.model.sessions.append(session)


class EndRecorder(tf.compat.v1.train.SessionRunHook):
    """Counts `end()` calls (a v1 user hook; compat_mts accepts it unchanged)."""

    def __init__(self):
        self.ends = 0

    def end(self, session):
        self.ends += 1


def run_session(side, model, hooks, runs, result, feed_dicts=None):
    """Runs up to `runs` steps (fewer if a hook stops) in a MonitoredSession; records values and errors."""
    recorder = EndRecorder()
    result['returned'] = []
    try:
        with side.train.MonitoredSession(hooks=list(hooks) + [recorder, SessionGrabber(model)]) as session:
            for run in range(runs):
                if session.should_stop():
                    break
                feed_dict = feed_dicts[run] if feed_dicts else None
                result['returned'].append(model.run_step(session, feed_dict))
            result['should_stop'] = session.should_stop()
    finally:
        result['ends'] = recorder.ends


def record_error(result, error):
    result['error'] = {'type': type(error).__name__, 'message': str(error)}


# NanTensorHook


def nan_fail(side, result, directory):
    model = side.model([1.0, 2.0, float('nan'), 4.0])
    run_session(side, model, [side.train.NanTensorHook(model.loss)], 4, result)


def nan_stop(side, result, directory):
    model = side.model([1.0, 2.0, float('nan'), 4.0])
    run_session(side, model, [side.train.NanTensorHook(model.loss, fail_on_nan_loss=False)], 4, result)


def nan_vector_loss(side, result, directory):
    model = side.model(LOSSES)
    run_session(side, model, [side.train.NanTensorHook(model.vec)], 2, result)


# LoggingTensorHook


def logging_sorted_dict_every_n_iter(side, result, directory):
    model = side.model(LOSSES)
    clock = FakeClock()
    hook = side.train.LoggingTensorHook(
        {'zeta': model.loss, 'alpha': model.vec, 'step': model.global_step_after}, every_n_iter=2
    )
    with clock.installed():
        recorder = _TickingHook(clock, 0.25)
        run_session(side, model, [hook, recorder], 5, result)


def logging_list_in_given_order(side, result, directory):
    model = side.model(LOSSES)
    run_session(
        side, model, [side.train.LoggingTensorHook([model.vec_name, model.loss_name], every_n_iter=3)], 4, result
    )


def logging_every_n_secs(side, result, directory):
    model = side.model(LOSSES)
    clock = FakeClock()
    with clock.installed():
        hooks = [side.train.LoggingTensorHook({'loss': model.loss}, every_n_secs=1.0), _TickingHook(clock, 0.4)]
        run_session(side, model, hooks, 8, result)


def logging_two_hooks_different_periods(side, result, directory):
    """Each hook logs on its own iterations and seconds, in the hooks' order on a run where both do."""
    model = side.model(LOSSES)
    clock = FakeClock()
    with clock.installed():
        hooks = [
            side.train.LoggingTensorHook({'loss': model.loss}, every_n_iter=2),
            side.train.LoggingTensorHook({'step': model.global_step_after}, every_n_iter=3),
            side.train.LoggingTensorHook({'vec': model.vec}, every_n_secs=1.0),
            _TickingHook(clock, 0.4),
        ]
        run_session(side, model, hooks, 8, result)


def logging_formatter(side, result, directory):
    model = side.model(LOSSES)

    def formatter(values):
        return 'formatted: ' + ', '.join('%s=%s' % (tag, values[tag]) for tag in sorted(values))

    hook = side.train.LoggingTensorHook(
        {'loss': model.loss, 'step': model.global_step_after}, every_n_iter=2, formatter=formatter
    )
    run_session(side, model, [hook], 3, result)


def logging_only_at_end(side, result, directory):
    model = side.model(LOSSES)
    run_session(side, model, [side.train.LoggingTensorHook({'w': model.w}, at_end=True)], 3, result)


def logging_at_end_with_timer(side, result, directory):
    # LOSSES is constant from index 3: v1 evaluates `loss` again at the end (at step 4), compat_mts logs
    # the last run's (step 3): the same number here, and the documented difference stays out of the way.
    model = side.model(LOSSES)
    clock = FakeClock()
    with clock.installed():
        hook = side.train.LoggingTensorHook({'loss': model.loss}, every_n_iter=3, at_end=True)
        run_session(side, model, [hook, _TickingHook(clock, 0.5)], 4, result)


def logging_counts_from_each_begin(side, result, directory):
    # A second v1 session re-initializes the variables; an eager one keeps them. A constant loss keeps
    # that difference out of the lines, which show where each session's count starts.
    model = side.model([2.0] * 10)
    hook = side.train.LoggingTensorHook({'loss': model.loss}, every_n_iter=2)
    first, second = {}, {}
    run_session(side, model, [hook], 3, first)
    run_session(side, model, [hook], 3, second)
    result['returned'] = first['returned'] + second['returned']


# GlobalStepWaiterHook


def waiter_zero_never_waits(side, result, directory):
    model = side.model(LOSSES)
    clock = FakeClock()
    with clock.installed():
        run_session(side, model, [side.train.GlobalStepWaiterHook(0)], 2, result)
    result['sleeps'] = clock.sleeps


def waiter_polls_until_the_step(side, result, directory):
    model = side.model(LOSSES)
    clock = FakeClock(on_sleep=lambda: model.advance_global_step(600))
    with clock.installed():
        run_session(side, model, [side.train.GlobalStepWaiterHook(2000)], 3, result)
    result['sleeps'] = clock.sleeps


def waiter_needs_a_global_step(side, result, directory):
    try:
        side.train.MonitoredSession(hooks=[side.train.GlobalStepWaiterHook(2)])
    except RuntimeError as error:
        record_error(result, error)


# The global step read after the run, by several hooks of one run


class StepMover(tf.compat.v1.train.SessionRunHook):
    """A program's hook that moves the global step by `amount` in the `after_run` of run `at`, and sleeps a second
    after every run (so that `StepCounterHook`'s rate has a time to divide by under the fake clock)."""

    def __init__(self, model, at, amount):
        self.model, self.at, self.amount, self.runs = model, at, amount, 0

    def after_run(self, run_context, run_values):
        if self.runs == self.at:
            self.model.advance_global_step(self.amount)
        self.runs += 1
        time.sleep(1.0)


def stop_reads_the_step_a_hook_moved(side, result, directory):
    # `StepCounterHook` reads the step after every run; the program's hook then sets it back by 2 after the run
    # that reached `last_step`, so `StopAtStepHook`, after it, reads 2 and goes on until the step is 4 again.
    model = side.model(LOSSES)
    hooks = [
        side.train.StepCounterHook(every_n_steps=1),
        StepMover(model, at=3, amount=-2),
        side.train.StopAtStepHook(last_step=4),
    ]
    run_session(side, model, hooks, 8, result)


def stop_reads_the_step_a_subclassed_hook_moved(side, result, directory):
    # As above, but the hook that moves the step is a program's subclass of `StepCounterHook`: its `after_run`
    # is the program's, so the step it leaves is read again by `StopAtStepHook`.
    model = side.model(LOSSES)

    class CountingStepMover(side.train.StepCounterHook):
        def __init__(self):
            super().__init__(every_n_steps=1)
            self.mover = StepMover(model, at=3, amount=-2)

        def after_run(self, run_context, run_values):
            super().after_run(run_context, run_values)
            self.mover.after_run(run_context, run_values)

    run_session(side, model, [CountingStepMover(), side.train.StopAtStepHook(last_step=4)], 8, result)


def subclassed_hooks_are_called_on_every_run(side, result, directory):
    # Programs' subclasses of the periodic hooks with methods of their own: v1 calls those on every run, not only
    # on the runs where the built-in would act.
    model = side.model(LOSSES)
    calls = {'before_run': 0, 'after_run': 0}

    class CountingStepCounter(side.train.StepCounterHook):
        def before_run(self, run_context):
            calls['before_run'] += 1
            return super().before_run(run_context)

    class CountingStop(side.train.StopAtStepHook):
        def after_run(self, run_context, run_values):
            calls['after_run'] += 1
            super().after_run(run_context, run_values)

    hooks = [CountingStepCounter(every_n_steps=100, output_dir=directory), CountingStop(last_step=50)]
    run_session(side, model, hooks, 8, result)
    result['calls'] = calls


# FinalOpsHook


def final_ops_values(side, result, directory):
    model = side.model(LOSSES)
    hooks = [
        side.train.FinalOpsHook({'w': model.w, 'step': model.global_step}),
        side.train.FinalOpsHook([model.w]),
        side.train.FinalOpsHook(model.w),
    ]
    result['before'] = [hook.final_ops_values for hook in hooks]
    run_session(side, model, hooks, 3, result)
    result['after'] = [_jsonable(hook.final_ops_values) for hook in hooks]


def final_ops_feed_dict(side, result, directory):
    model = side.model(LOSSES)
    hook = side.train.FinalOpsHook(model.scaled_w, final_ops_feed_dict={model.feed_key: np.float32(4.0)})
    run_session(side, model, [hook], 2, result)
    result['after'] = _jsonable(hook.final_ops_values)


def final_ops_out_of_range(side, result, directory):
    model = side.model(LOSSES)
    try:
        run_session(side, model, [side.train.FinalOpsHook(model.exhausted_input)], 1, result)
    except tf.errors.OutOfRangeError as error:
        result['error'] = {'type': type(error).__name__}


# FeedFnHook


def feed_fn_feeds_every_run(side, result, directory):
    model = side.model(LOSSES)
    scales = iter([np.float32(2.0), np.float32(3.0), np.float32(4.0)])
    calls = []

    def feed_fn():
        calls.append(1)
        return {model.feed_key: next(scales)}

    run_session(side, model, [side.train.FeedFnHook(feed_fn)], 3, result)
    result['feed_fn_calls'] = len(calls)


def feed_fn_conflicts_with_user_feed(side, result, directory):
    model = side.model(LOSSES)
    hook = side.train.FeedFnHook(lambda: {model.feed_key: np.float32(2.0)})
    try:
        run_session(side, model, [hook], 1, result, feed_dicts=[{model.feed_key: np.float32(3.0)}])
    except RuntimeError as error:
        record_error(result, error)
        result['error']['message'] = result['error']['message'].split(' Conflict(s)')[0]


def feed_fn_conflicts_between_hooks(side, result, directory):
    model = side.model(LOSSES)
    hooks = [side.train.FeedFnHook(lambda: {model.feed_key: np.float32(2.0)}) for _ in range(2)]
    try:
        run_session(side, model, hooks, 1, result)
    except RuntimeError as error:
        record_error(result, error)
        result['error']['message'] = result['error']['message'].split(' Conflict(s)')[0]


# ProfilerHook


def profiler_every_2_steps(side, result, directory):
    model = side.model(LOSSES)
    run_session(side, model, [side.train.ProfilerHook(save_steps=2, output_dir=directory)], 5, result)
    _record_timelines(result, directory)


def profiler_every_second(side, result, directory):
    model = side.model(LOSSES)
    clock = FakeClock()
    with clock.installed():
        hooks = [side.train.ProfilerHook(save_secs=1.0, output_dir=directory), _TickingHook(clock, 0.4)]
        run_session(side, model, hooks, 7, result)
    _record_timelines(result, directory)


def _record_timelines(result, directory):
    timelines = sorted(name for name in os.listdir(directory) if name.startswith('timeline-'))
    result['timelines'] = timelines
    result['timeline_event_counts_positive'] = []
    for name in timelines:
        with open(os.path.join(directory, name)) as timeline:
            trace = json.load(timeline)
        result['timeline_event_counts_positive'].append(
            sum(1 for event in trace['traceEvents'] if event.get('ph') == 'X') > 0
        )
    result['run_metadata_tags'] = _run_metadata_tags(directory)


def _run_metadata_tags(directory):
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    tags = []
    for name in sorted(os.listdir(directory)):
        if name.startswith('events.out.tfevents'):
            for event in LegacyEventFileLoader(os.path.join(directory, name)).Load():
                if event.HasField('tagged_run_metadata'):
                    tags.append([event.tagged_run_metadata.tag, int(event.step)])
                for value in event.summary.value:
                    if value.metadata.plugin_data.plugin_name == 'graph_run_metadata_graph':
                        tags.append([value.tag, int(event.step)])
    return tags


class _TickingHook(tf.compat.v1.train.SessionRunHook):
    """Moves the fake clock by `seconds` after every run (after the hooks listed before it)."""

    def __init__(self, clock, seconds):
        self.clock = clock
        self.seconds = seconds

    def after_run(self, run_context, run_values):
        self.clock.now += self.seconds


# SummarySaverHook: several hooks, one writer. v1's hooks each wrote their own summary op at their own steps.


def _summary_session(side, model, hooks, runs, result, directories, ticks=0.25, **session_kwargs):
    """Runs `runs` steps with `hooks` (and the clock ticking `ticks` after each); records each directory's summaries.

    With `session_kwargs`, a `MonitoredTrainingSession` with them (and its default hooks); else a `MonitoredSession`.
    """
    clock = FakeClock()
    with clock.installed():
        hooks = list(hooks) + [_TickingHook(clock, ticks)]
        if session_kwargs:
            result['returned'] = []
            with side.train.MonitoredTrainingSession(hooks=hooks, **session_kwargs) as session:
                for _ in range(runs):
                    result['returned'].append(model.run_step(session))
        else:
            run_session(side, model, hooks, runs, result)
    model.flush_summaries()
    result['summaries'] = {name: _summary_records(directory) for name, directory in directories.items()}


def _summary_records(directory):
    """`[tag, step, value]` of every scalar in `directory`'s events files, in file order (TensorBoard's reader)."""
    from tests import support

    return [list(record) for record in support.read_records(directory)]


def summary_hooks_two_ops_one_directory(side, result, directory):
    model = side.model(LOSSES)
    hooks = [
        side.train.SummarySaverHook(save_steps=2, output_dir=directory, summary_op=model.summary_a),
        side.train.SummarySaverHook(save_steps=3, output_dir=directory, summary_op=model.summary_b),
    ]
    _summary_session(side, model, hooks, 8, result, {'dir': directory})


def summary_hooks_steps_and_secs_one_directory(side, result, directory):
    model = side.model(LOSSES)
    hooks = [
        side.train.SummarySaverHook(save_steps=2, output_dir=directory, summary_op=model.summary_a),
        side.train.SummarySaverHook(save_secs=1.0, output_dir=directory, summary_op=model.summary_b),
    ]
    _summary_session(side, model, hooks, 8, result, {'dir': directory}, ticks=0.4)


def summary_hooks_one_given_writer(side, result, directory):
    model = side.model(LOSSES)
    writer = model.summary_writer(directory)
    hooks = [
        side.train.SummarySaverHook(save_steps=2, summary_writer=writer, summary_op=model.summary_a),
        side.train.SummarySaverHook(save_steps=3, summary_writer=writer, summary_op=model.summary_b),
    ]
    _summary_session(side, model, hooks, 8, result, {'dir': directory})


def summary_hooks_two_directories(side, result, directory):
    model = side.model(LOSSES)
    directories = {'a': os.path.join(directory, 'a'), 'b': os.path.join(directory, 'b')}
    hooks = [
        side.train.SummarySaverHook(save_steps=2, output_dir=directories['a'], summary_op=model.summary_a),
        side.train.SummarySaverHook(save_steps=3, output_dir=directories['b'], summary_op=model.summary_b),
    ]
    _summary_session(side, model, hooks, 8, result, directories)


def summary_hook_beside_the_session_default(side, result, directory):
    """MonitoredTrainingSession's own SummarySaverHook (every 2 steps) and StepCounterHook, and the program's
    SummarySaverHook every 3 steps, all on `checkpoint_dir`."""
    model = side.model(LOSSES)
    hook = side.train.SummarySaverHook(save_steps=3, output_dir=directory, summary_op=model.summary_b)
    _summary_session(
        side,
        model,
        [hook],
        8,
        result,
        {'dir': directory},
        checkpoint_dir=directory,
        scaffold=model.summary_scaffold(),
        save_checkpoint_secs=None,
        save_summaries_steps=2,
        log_step_count_steps=2,
    )


def step_counter_hooks_one_directory(side, result, directory):
    model = side.model(LOSSES)
    hooks = [
        side.train.StepCounterHook(every_n_steps=2, output_dir=directory),
        side.train.StepCounterHook(every_n_steps=3, output_dir=directory),
    ]
    _summary_session(side, model, hooks, 8, result, {'dir': directory})


# Constructor arguments. v1 rejects some at construction; others only when the session uses them.

CONSTRUCTOR_CASES = {
    'logging_no_trigger': ('LoggingTensorHook', ({'a': 'loss'},), {}),
    'logging_both_triggers': ('LoggingTensorHook', ({'a': 'loss'},), {'every_n_iter': 1, 'every_n_secs': 1}),
    'logging_zero_iter': ('LoggingTensorHook', ({'a': 'loss'},), {'every_n_iter': 0}),
    'logging_negative_iter_at_end': ('LoggingTensorHook', ({'a': 'loss'},), {'every_n_iter': -3, 'at_end': True}),
    'profiler_no_trigger': ('ProfilerHook', (), {}),
    'profiler_both_triggers': ('ProfilerHook', (), {'save_steps': 1, 'save_secs': 1}),
}
LATE_CASES = {
    'logging_non_tensor_value': ('LoggingTensorHook', ({'a': 5},), {'every_n_iter': 1}),
    'nan_none_loss': ('NanTensorHook', (None,), {}),
    'feed_fn_not_callable': ('FeedFnHook', (5,), {}),
    'waiter_string_step': ('GlobalStepWaiterHook', ('10',), {}),
    'final_ops_int': ('FinalOpsHook', (5,), {}),
    'profiler_none_output_dir': ('ProfilerHook', (), {'save_steps': 1, 'output_dir': None}),
}


def constructor_errors(side, result, directory):
    """For each bad call: the exception raised, and whether at construction or when the session used it."""
    errors = {}
    for name, (hook_name, args, kwargs) in {**CONSTRUCTOR_CASES, **LATE_CASES}.items():
        with side.prepare():
            model = side.model(LOSSES)
            stage = 'construction'
            try:
                hook = getattr(side.train, hook_name)(*args, **kwargs)
                stage = 'run'
                run_session(side, model, [hook], 1, {})
                errors[name] = None
            except Exception as error:  # What is raised, and when, is the point of the case.
                errors[name] = {'at': stage, 'type': type(error).__name__, 'message': str(error)}
    result['errors'] = errors


def _jsonable(value):
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


SCENARIOS = {
    fn.__name__: fn
    for fn in [
        nan_fail,
        nan_stop,
        nan_vector_loss,
        logging_sorted_dict_every_n_iter,
        logging_list_in_given_order,
        logging_every_n_secs,
        logging_two_hooks_different_periods,
        logging_formatter,
        logging_only_at_end,
        logging_at_end_with_timer,
        logging_counts_from_each_begin,
        waiter_zero_never_waits,
        waiter_polls_until_the_step,
        waiter_needs_a_global_step,
        final_ops_values,
        final_ops_feed_dict,
        final_ops_out_of_range,
        feed_fn_feeds_every_run,
        feed_fn_conflicts_with_user_feed,
        feed_fn_conflicts_between_hooks,
        stop_reads_the_step_a_hook_moved,
        stop_reads_the_step_a_subclassed_hook_moved,
        subclassed_hooks_are_called_on_every_run,
        profiler_every_2_steps,
        profiler_every_second,
        summary_hooks_two_ops_one_directory,
        summary_hooks_steps_and_secs_one_directory,
        summary_hooks_one_given_writer,
        summary_hooks_two_directories,
        summary_hook_beside_the_session_default,
        step_counter_hooks_one_directory,
        constructor_errors,
    ]
}


def run_all(side, names=None):
    """Runs the scenarios with `side`; returns `{name: result}` (JSON data)."""
    results = {}
    capture = LogCapture()
    with tempfile.TemporaryDirectory(prefix='compat_mts_hooks_') as root, capture.installed():
        for name in names or list(SCENARIOS):
            directory = os.path.join(root, name)
            os.makedirs(directory)
            result = {'error': None}
            capture.lines = []
            previous_directory = os.getcwd()
            os.chdir(directory)
            try:
                with side.prepare(), FakeClock().installed():  # Scenarios that tick install their own.
                    SCENARIOS[name](side, result, directory)
            except Exception as error:  # Recorded and compared: raising is part of the behaviour.
                record_error(result, error)
                result['error']['traceback'] = traceback.format_exc()
            finally:
                os.chdir(previous_directory)
            result['logs'] = [[level, message.replace(directory, '<dir>')] for level, message in capture.lines]
            result['files'] = sorted(_files(directory))
            results[name] = _jsonable(result)
    return results


def _files(directory):
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.relpath(os.path.join(root, name), directory)
            yield 'events.out.tfevents' if name.startswith('events.out.tfevents') else path


class GraphSide:
    """The v1 side: `tf.compat.v1.train`, each scenario in a fresh graph."""

    train = tf.compat.v1.train

    @staticmethod
    def prepare():
        return tf.Graph().as_default()

    @staticmethod
    def model(losses):
        model = GraphModel(losses)
        model.loss_name, model.vec_name = 'loss', 'vec'
        return model


if __name__ == '__main__':
    tf.compat.v1.disable_eager_execution()
    sys.stdout.write(json.dumps(run_all(GraphSide, sys.argv[1:])) + '\n')
