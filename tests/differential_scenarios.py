"""The differential scenarios, written once and run by both sides: real v1 graph mode and compat_mts eagerly.

`tests/v1_reference.py` and `tests/compat_reference.py` each provide a *side*: the training API (`side.train`
is `tf.compat.v1.train` or `compat_mts`), `side.build_model()`, which builds the same linear regression the
way that side's user writes it (a graph with `GradientDescentOptimizer.minimize`, or a `tf.function` step),
`side.new_program()`, a context in which the program starts over (fresh graph / no global step), and
`side.prepare()`, the context each scenario runs in.
Everything else, the session arguments, the hooks and the loop, is this one function per scenario, so the two
sides cannot drift apart. A scenario fills in `result` (see `support.run_scenarios` for what the driver adds).

A `Model` offers:
  global_step: the global step variable (fetchable by a hook's raw `session.run`).
  loss: a hook fetch of this run's loss (v1: the tensor; compat: the name `'loss'` of the step's output).
  global_step_after: a hook fetch of the global step after this run's step (v1: a read with a control
    dependency on the train op, since a plain read is unordered; compat: the variable, read after the step).
  scaffold: the `Scaffold` for the session (v1: None, the default; compat: one whose saver also holds `w`).
  run_step(sess): one `sess.run` of the train step, returning the loss as a float.
  run_step_and_loss(sess): one `sess.run([step, loss])`, returning its second element as a float.
"""

import types

import numpy as np

from tests import support

LEARNING_RATE = 0.1


def regression_data():
    """The fixed data of the differential scenarios' linear regression: `X` [8, 3] and `Y` [8, 1], float32.

    Both sides fit `w` ([3, 1], zeros) to it by plain SGD with learning rate `LEARNING_RATE` on the mean
    squared error, so every run's loss is the same number on both sides.
    """
    rng = np.random.RandomState(0)
    features = rng.uniform(-1.0, 1.0, size=(8, 3)).astype(np.float32)
    targets = (features @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    return features, targets


def recording_hook(*args, **kwargs):
    """A new `support.recording_hook_class()` instance (the class is built on first use, importing TensorFlow)."""
    return support.recording_hook_class()(*args, **kwargs)


def _loop(sess, model, result):
    while not sess.should_stop():
        result['returned'].append(model.run_step(sess))


def default_hooks(side, result, directory):
    """Scenario 1: every default hook, on short periods, stopped by `StopAtStepHook(last_step=7)`."""
    model = side.build_model()
    hook = recording_hook('user', result['hook_calls'], global_step=model.global_step)
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold,
        hooks=[side.train.StopAtStepHook(last_step=7), hook],
        save_checkpoint_steps=3,
        save_summaries_steps=2,
        log_step_count_steps=2,
    ) as sess:
        _loop(sess, model, result)
    result['final_global_step'] = hook.last_end_step


def resume_num_steps(side, result, directory):
    """Scenario 2: `StopAtStepHook(num_steps=5)` twice on one directory; the second session resumes at 5."""
    for session_index in range(2):
        # A new program each time (fresh graph / fresh variables), so only the checkpoint carries the state over.
        with side.new_program():
            model = side.build_model()
            hook = recording_hook(f'session{session_index}', result['hook_calls'], global_step=model.global_step)
            with side.train.MonitoredTrainingSession(
                checkpoint_dir=directory, scaffold=model.scaffold, hooks=[side.train.StopAtStepHook(num_steps=5), hook]
            ) as sess:
                _loop(sess, model, result)
    result['final_global_step'] = hook.last_end_step


def hook_protocol(side, result, directory):
    """Scenario 3: two hooks' call order, their fetches, and `request_stop()` from `before_run`."""
    model = side.build_model()
    calls = result['hook_calls']
    fetching = recording_hook(
        'fetching',
        calls,
        global_step=model.global_step,
        fetches={'loss': model.loss, 'global_step': model.global_step_after},
    )
    stopping = recording_hook('stopping', calls, stop_at_run=3)
    with side.train.MonitoredTrainingSession(hooks=[fetching, stopping]) as sess:
        while not sess.should_stop():
            result['returned'].append(model.run_step_and_loss(sess))
        try:
            model.run_step(sess)
        except RuntimeError as error:
            result['run_after_stop_error'] = {'type': type(error).__name__, 'message': str(error)}
    result['final_global_step'] = fetching.last_end_step


def chief_only_hooks_order(side, result, directory):
    """`chief_only_hooks` come before the user's `hooks` in every protocol call."""
    model = side.build_model()
    calls = result['hook_calls']
    with side.train.MonitoredTrainingSession(
        hooks=[recording_hook('user', calls)], chief_only_hooks=[recording_hook('chief_only', calls)]
    ) as sess:
        for _ in range(2):
            result['returned'].append(model.run_step(sess))


def exit_out_of_range(side, result, directory):
    """Scenario 4: an `OutOfRangeError` from the step (input exhausted) ends the `with` cleanly, with `end()`."""
    model = side.build_model(loss_scales=[1.0, 1.0, 1.0])
    hook = recording_hook('user', result['hook_calls'], global_step=model.global_step)
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, hooks=[hook], save_checkpoint_steps=100
    ) as sess:
        _loop(sess, model, result)
    result['final_global_step'] = hook.last_end_step


def exit_value_error(side, result, directory):
    """Scenario 4: a `ValueError` raised in the `with` body propagates, and no hook's `end()` runs."""
    model = side.build_model()
    hook = recording_hook('user', result['hook_calls'], global_step=model.global_step)
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, hooks=[hook], save_checkpoint_steps=100
    ) as sess:
        for _ in range(2):
            result['returned'].append(model.run_step(sess))
        raise ValueError('The training loop failed.')


def exit_hook_error(side, result, directory):
    """Scenario 4: a hook's `after_run` raising skips the later hooks' `after_run`; the error propagates."""
    model = side.build_model()
    calls = result['hook_calls']
    failing = recording_hook('failing', calls, raise_in_after_run=(2, ValueError('after_run failed.')))
    with side.train.MonitoredTrainingSession(hooks=[failing, recording_hook('later', calls)]) as sess:
        _loop(sess, model, result)


def exit_stop_iteration(side, result, directory):
    """Scenario 4: a `StopIteration` (from a hook here) is suppressed by `__exit__` like `OutOfRangeError`."""
    model = side.build_model()
    calls = result['hook_calls']
    hook = recording_hook('stopping', calls, global_step=model.global_step, raise_in_after_run=(2, StopIteration()))
    with side.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        _loop(sess, model, result)
    result['final_global_step'] = hook.last_end_step


def no_dirs(side, result, directory):
    """Scenario 5: `MonitoredTrainingSession()` without directories has no default hooks and writes nothing."""
    model = side.build_model()
    hook = recording_hook('user', result['hook_calls'], global_step=model.global_step)
    with side.train.MonitoredTrainingSession(hooks=[hook], log_step_count_steps=1) as sess:
        for _ in range(3):
            result['returned'].append(model.run_step(sess))
    result['final_global_step'] = hook.last_end_step


def summary_dir_only(side, result, directory):
    """Scenario 5: `summary_dir` alone: step counter and summaries (default every 100 steps), no checkpoints."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(summary_dir=directory, log_step_count_steps=2) as sess:
        for _ in range(5):
            result['returned'].append(model.run_step(sess))


def use_default_checkpoint_secs(side, result, directory):
    """Scenario 6: both checkpoint arguments left as USE_DEFAULT: every 600 s, so only at creation and end."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(checkpoint_dir=directory, scaffold=model.scaffold) as sess:
        for _ in range(4):
            result['returned'].append(model.run_step(sess))


def checkpoint_steps_only(side, result, directory):
    """Scenario 6: only `save_checkpoint_steps` given: the secs default is dropped, steps 0, 2, 4 and end 5."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, save_checkpoint_steps=2
    ) as sess:
        for _ in range(5):
            result['returned'].append(model.run_step(sess))


def checkpoint_disabled(side, result, directory):
    """Scenario 6: `save_checkpoint_secs=None`, `save_summaries_steps=0`: only the step counter remains."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold,
        save_checkpoint_secs=None,
        save_summaries_steps=0,
        log_step_count_steps=1,
    ) as sess:
        for _ in range(3):
            result['returned'].append(model.run_step(sess))


def checkpoint_retention(side, result, directory):
    """A checkpoint every step: only the last 5 are kept (v1's `max_to_keep`), on disk and in the state file."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=model.scaffold,
        save_checkpoint_steps=1,
        save_summaries_steps=0,
        log_step_count_steps=0,
    ) as sess:
        for _ in range(7):
            result['returned'].append(model.run_step(sess))


def no_graph_def(side, result, directory):
    """`save_graph_def=False`: no `graph.pbtxt` (and, in v1, no `.meta` files); checkpoints as usual."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, save_graph_def=False, save_checkpoint_steps=2
    ) as sess:
        for _ in range(3):
            result['returned'].append(model.run_step(sess))


def both_checkpoint_secs_and_steps(side, result, directory):
    """Scenario 6: `save_checkpoint_secs` and `save_checkpoint_steps` both > 0 raise v1's timer ValueError."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, save_checkpoint_secs=10, save_checkpoint_steps=2
    ) as sess:
        result['returned'].append(model.run_step(sess))


def both_summaries_secs_and_steps(side, result, directory):
    """Scenario 6: `save_summaries_secs` and `save_summaries_steps` both > 0 raise the same ValueError."""
    model = side.build_model()
    with side.train.MonitoredTrainingSession(
        checkpoint_dir=directory, scaffold=model.scaffold, save_summaries_secs=10, save_summaries_steps=2
    ) as sess:
        result['returned'].append(model.run_step(sess))


def logging_tensor_hook(side, result, directory):
    """`LoggingTensorHook(every_n_iter=2)` logs the loss on local iterations 0, 2 and 4."""
    model = side.build_model()
    hooks = [side.train.StopAtStepHook(last_step=5), side.train.LoggingTensorHook({'loss': model.loss}, every_n_iter=2)]
    with side.train.MonitoredTrainingSession(hooks=hooks) as sess:
        _loop(sess, model, result)


def nan_loss_fails(side, result, directory):
    """`NanTensorHook` raises `NanLossDuringTrainingError` on the third run; later hooks and `end()` are skipped."""
    model = side.build_model(loss_scales=[1.0, 1.0, np.nan, 1.0, 1.0])
    hooks = [side.train.NanTensorHook(model.loss), recording_hook('later', result['hook_calls'])]
    with side.train.MonitoredTrainingSession(hooks=hooks) as sess:
        _loop(sess, model, result)


def nan_loss_stops(side, result, directory):
    """`NanTensorHook(fail_on_nan_loss=False)` warns and requests a stop; the NaN run still returns."""
    model = side.build_model(loss_scales=[1.0, 1.0, np.nan, 1.0, 1.0])
    hook = recording_hook('later', result['hook_calls'])
    with side.train.MonitoredTrainingSession(
        hooks=[side.train.NanTensorHook(model.loss, fail_on_nan_loss=False), hook]
    ) as sess:
        _loop(sess, model, result)


def run_step_fn(side, result, directory):
    """`MonitoredSession.run_step_fn`: `run_with_hooks` runs the hooks; `request_stop()` ends the `with`."""
    model = side.build_model()
    hook = recording_hook('user', result['hook_calls'], global_step=model.global_step)

    def train(step_context):
        return model.run_step(types.SimpleNamespace(run=step_context.run_with_hooks))

    def train_then_stop(step_context):
        result['returned'].append(train(step_context))
        step_context.request_stop()

    with side.train.MonitoredSession(hooks=[hook]) as sess:
        for _ in range(2):
            result['returned'].append(sess.run_step_fn(train))
        result['should_stop_before_request'] = sess.should_stop()
        sess.run_step_fn(train_then_stop)
    result['final_global_step'] = hook.last_end_step


SCENARIOS = {
    scenario.__name__: scenario
    for scenario in [
        default_hooks,
        resume_num_steps,
        hook_protocol,
        chief_only_hooks_order,
        exit_out_of_range,
        exit_value_error,
        exit_hook_error,
        exit_stop_iteration,
        no_dirs,
        summary_dir_only,
        use_default_checkpoint_secs,
        checkpoint_steps_only,
        checkpoint_disabled,
        checkpoint_retention,
        no_graph_def,
        both_checkpoint_secs_and_steps,
        both_summaries_secs_and_steps,
        logging_tensor_hook,
        nan_loss_fails,
        nan_loss_stops,
        run_step_fn,
    ]
}
