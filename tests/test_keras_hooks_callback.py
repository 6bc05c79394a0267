"""HooksCallback: SessionRunHooks inside a real Keras `model.fit` (stage 3 of the migration)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf
from keras.src import utils as keras_utils

import compat_mts as mts
from compat_mts.keras import HooksCallback
from tests.models import Recorder
from tests.support import checkpoint_steps, last_json_line, read_events, read_records, run_python

keras = tf.keras
FEATURES = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)  # 8 batches of 8 per epoch.
TARGETS = FEATURES @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def compiled_model(steps_per_execution: int = 1) -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name='dense')], name='regression')
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss='mse', steps_per_execution=steps_per_execution)
    return model


def fit(model: keras.Model, hooks: list, epochs: int = 5) -> None:
    model.fit(
        FEATURES, TARGETS, batch_size=8, epochs=epochs, shuffle=False, verbose=0, callbacks=[HooksCallback(hooks)]
    )


def iterations(model: keras.Model) -> int:
    return int(model.optimizer.iterations.numpy())


def optimizer_slots(model: keras.Model) -> list[np.ndarray]:
    return [
        variable.numpy()
        for variable in model.optimizer.variables
        if 'iteration' not in variable.name and 'learning_rate' not in variable.name
    ]


def logging_tensor_hook_class():
    from compat_mts.hooks.logging import LoggingTensorHook

    return LoggingTensorHook


def test_stop_at_step_hook_stops_fit_at_last_step_and_checkpoints_land_on_v1_steps(tmp_path):
    model = compiled_model()
    fit(model, [mts.StopAtStepHook(last_step=7), mts.CheckpointSaverHook(str(tmp_path), save_steps=3)])
    assert iterations(model) == 7
    assert checkpoint_steps(str(tmp_path)) == [0, 3, 6, 7]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-7')


def test_hooks_are_called_in_the_session_order_once_per_batch():
    calls = []
    fit(compiled_model(), [Recorder('first', calls), mts.StopAtStepHook(last_step=3), Recorder('second', calls)])
    around_a_run = [('first', 'before_run'), ('second', 'before_run'), ('first', 'after_run'), ('second', 'after_run')]
    assert calls == [
        ('first', 'begin'),
        ('second', 'begin'),
        ('first', 'after_create_session'),
        ('second', 'after_create_session'),
        *around_a_run * 3,
        ('first', 'end'),
        ('second', 'end'),
    ]


def test_logging_tensor_hook_logs_on_v1_iterations_next_to_stop_and_checkpoint_hooks(tmp_path, tf_logs):
    logging_tensor_hook = logging_tensor_hook_class()
    model = compiled_model()
    losses = Recorder('losses', [], fetches='loss')
    fit(
        model,
        [
            mts.StopAtStepHook(last_step=7),
            logging_tensor_hook(['loss'], every_n_iter=2),
            mts.CheckpointSaverHook(str(tmp_path), save_steps=3),
            losses,
        ],
    )
    assert iterations(model) == 7
    assert checkpoint_steps(str(tmp_path)) == [0, 3, 6, 7]
    lines = [message for message in tf_logs.messages() if message.startswith('loss = ')]
    # Local iterations 0, 2, 4 and 6 of 7, as in a v1 session; the first line has no elapsed time.
    assert [line.split(' (')[0] for line in lines] == ['loss = %s' % losses.results[i] for i in (0, 2, 4, 6)]
    assert re.fullmatch(r'loss = \d+\.\d+', lines[0])
    assert all(re.fullmatch(r'loss = \d+\.\d+ \(\d+\.\d{3} sec\)', line) for line in lines[1:])


def test_second_fit_resumes_weights_optimizer_slots_and_step(tmp_path):
    first = compiled_model()
    fit(first, [mts.StopAtStepHook(last_step=7), mts.CheckpointSaverHook(str(tmp_path), save_steps=3)])

    mts.reset_global_step()  # A new process: new model, new optimizer, same directory.
    second = compiled_model()
    restored = {}

    class Snapshot(mts.SessionRunHook):
        def after_create_session(self, session, coord):
            restored['step'] = int(session.run('global_step'))
            restored['weights'] = second.get_weights()
            restored['slots'] = optimizer_slots(second)

    fit(second, [mts.StopAtStepHook(last_step=10), mts.CheckpointSaverHook(str(tmp_path), save_steps=3), Snapshot()])
    assert restored['step'] == 7
    for restored_value, saved_value in zip(restored['weights'], first.get_weights(), strict=True):
        np.testing.assert_array_equal(restored_value, saved_value)
    assert len(restored['slots']) == 4  # Adam's two moments of kernel and bias, not fresh zeros.
    for restored_value, saved_value in zip(restored['slots'], optimizer_slots(first), strict=True):
        np.testing.assert_array_equal(restored_value, saved_value)
    assert iterations(second) == 10
    assert checkpoint_steps(str(tmp_path))[-1] == 10


def test_fetch_names_resolve_to_batch_logs_then_model_variables_then_global_step():
    model = compiled_model()
    fetches = {
        'loss': 'loss',
        'bias': 'regression/dense/bias',
        'step': 'global_step',
        'stale': mts.STALE_GLOBAL_STEP,
        'iterations': model.optimizer.iterations.value,
    }
    recorder = Recorder('names', [], fetches=fetches)
    history = model.fit(
        FEATURES, TARGETS, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[HooksCallback([recorder])]
    )
    first, last = recorder.results[0], recorder.results[-1]
    assert (first['stale'], first['step'], first['iterations']) == (0, 1, 1)
    assert (last['stale'], last['step']) == (7, 8)
    assert last['loss'].dtype == np.float32 and last['loss'] == np.float32(history.history['loss'][-1])
    np.testing.assert_array_equal(last['bias'], model.get_layer('dense').bias.numpy())


def test_stale_global_step_follows_every_move_of_iterations_across_batches_and_epochs():
    model = compiled_model()
    stale = Recorder('stale', [], fetches=mts.STALE_GLOBAL_STEP)

    class JumpAtTheThirdBatch(mts.SessionRunHook):
        """Moves the global step through the session, as a hook may: the next stale step must show it."""

        def begin(self):
            self.batches = 0

        def after_run(self, run_context, run_values):
            self.batches += 1
            if self.batches == 3:
                run_context.session.run(lambda: model.optimizer.iterations.assign_add(100))

    class JumpAtEpochBegin(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1:
                self.model.optimizer.iterations.assign_add(1000)

    model.fit(
        FEATURES,
        TARGETS,
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[HooksCallback([stale, JumpAtTheThirdBatch()]), JumpAtEpochBegin()],
    )
    assert stale.results == [0, 1, 2, 103, 104, 105, 106, 107] + list(range(1108, 1116))
    assert iterations(model) == 1116


def test_unknown_fetch_name_raises_a_key_error_listing_what_is_available():
    with pytest.raises(KeyError) as raised:
        fit(compiled_model(), [Recorder('unknown', [], fetches='accuracy')])
    message = str(raised.value)
    assert "'accuracy'" in message and "['loss']" in message and 'regression/dense/kernel' in message


def test_a_name_of_an_earlier_programs_wrapped_graph_is_no_name_of_a_fit():
    def build():
        tf.compat.v1.get_variable('stale', initializer=0.0043)
        return tf.identity(tf.compat.v1.get_variable('other', initializer=1.0), name='stale_value')

    mts.wrap_graph(build)  # An earlier program of the process; its graph stays registered until reset().
    mts.reset_global_step()
    with pytest.raises(KeyError, match="'stale_value:0' is neither a log of the batch"):
        fit(compiled_model(), [Recorder('stale', [], fetches='stale_value:0')], epochs=1)


def test_request_stop_sets_model_stop_training():
    model = compiled_model()
    fit(model, [Recorder('stopper', [], stop_at_before_run=3)])
    assert model.stop_training
    assert iterations(model) == 3


def test_batch_methods_are_left_to_keras_defaults_when_no_hook_works_per_batch():
    class BeginAndEndOnly(mts.SessionRunHook):
        def begin(self):
            pass

        def end(self, session):
            pass

    batch_methods = ('on_batch_begin', 'on_batch_end', 'on_train_batch_begin', 'on_train_batch_end')
    quiet = HooksCallback([BeginAndEndOnly(), mts.SessionRunHook()])
    assert all(keras_utils.is_default(getattr(quiet, method)) for method in batch_methods)
    busy = HooksCallback([BeginAndEndOnly(), mts.StopAtStepHook(last_step=3)])
    assert not keras_utils.is_default(busy.on_train_batch_begin)
    assert not keras_utils.is_default(busy.on_train_batch_end)

    model = compiled_model()
    fit(model, [BeginAndEndOnly()], epochs=1)
    assert iterations(model) == 8


def test_steps_per_execution_runs_hooks_once_per_execution_and_stops_exactly_at_last_step(tmp_path):
    model = compiled_model(steps_per_execution=4)
    recorder = Recorder('execution', [], fetches=mts.STALE_GLOBAL_STEP)
    fit(model, [mts.StopAtStepHook(last_step=7), mts.CheckpointSaverHook(str(tmp_path), save_steps=3), recorder])
    assert recorder.results == [0, 4]  # Two executions: steps 1-4, then only 5-7 (shortened).
    assert iterations(model) == 7
    assert checkpoint_steps(str(tmp_path)) == [0, 4, 7]
    assert model.steps_per_execution == 4

    recorder.results.clear()
    fit(model, [mts.StopAtStepHook(last_step=16), mts.CheckpointSaverHook(str(tmp_path), save_steps=3), recorder])
    assert recorder.results == [7, 11, 15]
    assert iterations(model) == 16


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


def test_summary_saver_and_step_counter_write_the_same_tags_and_steps_as_a_session(tmp_path):
    def hooks(directory):
        return [
            mts.StopAtStepHook(last_step=6),
            mts.SummarySaverHook(save_steps=2, output_dir=directory, scaffold=mts.Scaffold()),
            mts.StepCounterHook(every_n_steps=2, output_dir=directory),
        ]

    fit_dir, session_dir = str(tmp_path / 'fit'), str(tmp_path / 'session')
    model = SummarizingRegression()
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss='mse')
    fit(model, hooks(fit_dir))

    mts.reset_global_step()
    global_step = mts.get_or_create_global_step()
    model = SummarizingRegression()
    optimizer = keras.optimizers.SGD(0.01)
    dataset = iter(tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(8).repeat())

    @tf.function
    def train_step():
        features, targets = next(dataset)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features) - targets))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        global_step.assign_add(1)
        tf.summary.scalar('loss', loss)
        return {'loss': loss}

    with mts.MonitoredSession(hooks=hooks(session_dir)) as session:
        while not session.should_stop():
            session.run(train_step)

    fit_events, session_events = read_events(fit_dir), read_events(session_dir)
    assert set(fit_events) == set(session_events) == {'loss', 'global_step/sec'}
    for tag, expected_steps in (('loss', [1, 3, 5]), ('global_step/sec', [3, 5])):
        assert [step for step, _ in fit_events[tag]] == expected_steps, tag
        assert [step for step, _ in session_events[tag]] == expected_steps, tag


def test_two_summary_hooks_on_one_directory_write_each_ones_summaries_at_its_steps_in_fit_as_in_a_session(tmp_path):
    """Each hook's `summary_op` at its own steps (v1's), in the same order in `fit` as in a session."""

    def hooks(directory, step):
        return [
            mts.StopAtStepHook(last_step=7),
            mts.SummarySaverHook(save_steps=2, output_dir=directory, summary_op=lambda: tf.summary.scalar('a', step)),
            mts.SummarySaverHook(save_steps=3, output_dir=directory, summary_op=lambda: tf.summary.scalar('b', step)),
        ]

    fit_dir, session_dir = str(tmp_path / 'fit'), str(tmp_path / 'session')
    model = compiled_model()
    fit(model, hooks(fit_dir, model.optimizer.iterations))

    mts.reset_global_step()
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step():
        global_step.assign_add(1)
        return {'loss': tf.constant(0.0)}

    with mts.MonitoredSession(hooks=hooks(session_dir, global_step)) as session:
        while not session.should_stop():
            session.run(train_step)

    expected = [('a', 1), ('b', 1), ('a', 3), ('b', 4), ('a', 5), ('a', 7), ('b', 7)]
    assert [(tag, step) for tag, step, _ in read_records(session_dir)] == expected
    assert [(tag, step) for tag, step, _ in read_records(fit_dir)] == expected
    assert all(value == step for _, step, value in read_records(fit_dir))


def test_global_step_is_the_optimizer_iterations_while_fit_runs_and_unregistered_after():
    model = compiled_model()
    seen = {}

    class Probe(mts.SessionRunHook):
        def begin(self):
            seen['step'] = mts.get_global_step()

    assert mts.get_global_step() is None
    fit(model, [Probe()], epochs=1)
    assert seen['step'] is model.optimizer.iterations.value
    assert mts.get_global_step() is None

    own_step = mts.get_or_create_global_step()
    fit(model, [Probe()], epochs=1)
    assert mts.get_global_step() is own_step


def test_a_fit_that_raised_is_undone_by_the_next_fit_with_the_same_callback(tmp_path):
    # Keras calls no `on_train_end` when `fit` raises: the summary defaults and the registered step stay until this
    # callback's next `fit`, which undoes them first (the hooks' `end()` is not called, as v1 at an unclean close).
    class FailsOnce(mts.SessionRunHook):
        failed = False

        def after_run(self, run_context, run_values):
            if not FailsOnce.failed:
                FailsOnce.failed = True
                raise RuntimeError('the hook failed')

    model = compiled_model()
    saver = mts.SummarySaverHook(save_steps=1, output_dir=str(tmp_path), scaffold=mts.Scaffold())
    callback = HooksCallback([saver, FailsOnce()])
    own_step = mts.get_or_create_global_step()
    with pytest.raises(RuntimeError, match='the hook failed'):
        model.fit(FEATURES, TARGETS, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    assert mts.get_global_step() is model.optimizer.iterations.value  # Left as the failed fit set it.
    model.fit(FEATURES, TARGETS, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    assert mts.get_global_step() is own_step
    assert not bool(tf.summary.scalar('after', 1.0, step=0))  # No default writer left.


def test_a_fit_that_raised_is_undone_by_the_next_fit_with_another_callback_and_two_callbacks_share_a_fit(tmp_path):
    """A program that makes its callback anew for each fit (`callbacks=[HooksCallback(...)]`) after one raised; and
    two HooksCallbacks in one fit, which must not undo each other."""

    class Fails(mts.SessionRunHook):
        def after_run(self, run_context, run_values):
            raise RuntimeError('the hook failed')

    model = compiled_model()
    own_step = mts.get_or_create_global_step()
    saver = mts.SummarySaverHook(save_steps=1, output_dir=str(tmp_path / 'first'), scaffold=mts.Scaffold())
    with pytest.raises(RuntimeError, match='the hook failed'):
        model.fit(FEATURES, TARGETS, batch_size=8, epochs=1, verbose=0, callbacks=[HooksCallback([saver, Fails()])])
    assert mts.get_global_step() is model.optimizer.iterations.value  # Left as the failed fit set it.

    calls = []

    class Counts(mts.SessionRunHook):
        def __init__(self, name):
            self.name = name

        def after_run(self, run_context, run_values):
            calls.append(self.name)

    steps = mts.StepCounterHook(every_n_steps=1, output_dir=str(tmp_path / 'second'))
    callbacks = [HooksCallback([Counts('a'), steps]), HooksCallback([Counts('b')])]
    model.fit(FEATURES, TARGETS, batch_size=8, epochs=1, verbose=0, callbacks=callbacks)
    assert calls == ['a', 'b'] * (len(FEATURES) // 8)  # Both ran every batch: neither undid the other.
    assert mts.get_global_step() is own_step  # The failed fit's step is gone, and each fit put back its own.
    assert not bool(tf.summary.scalar('after', 1.0, step=0))  # No default writer left.
    assert read_events(str(tmp_path / 'second')).get('global_step/sec'), 'the second fit recorded'


def test_stage_2_session_checkpoints_resume_in_fit(tmp_path):
    global_step = mts.get_or_create_global_step()
    model = compiled_model()
    dataset = iter(tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(8).repeat())

    @tf.function
    def train_step():
        features, targets = next(dataset)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features) - targets))
        model.optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        global_step.assign_add(1)
        return {'loss': loss}

    scaffold = mts.Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=model.optimizer))
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), scaffold=scaffold, hooks=[mts.StopAtStepHook(last_step=5)]
    ) as session:
        while not session.should_stop():
            session.run(train_step)
    stage_2_weights = model.get_weights()

    mts.reset_global_step()
    stage_3 = compiled_model()
    restored = {}

    class Snapshot(mts.SessionRunHook):
        def after_create_session(self, session, coord):
            restored['step'] = int(session.run('global_step'))
            restored['weights'] = stage_3.get_weights()

    fit(stage_3, [mts.StopAtStepHook(last_step=8), mts.CheckpointSaverHook(str(tmp_path), save_steps=100), Snapshot()])
    assert restored['step'] == 5
    for restored_value, saved_value in zip(restored['weights'], stage_2_weights, strict=True):
        np.testing.assert_array_equal(restored_value, saved_value)
    assert iterations(stage_3) == 8


def test_bad_input_raises_clear_errors():
    with pytest.raises(TypeError, match='got a single hook; wrap it in a list'):
        HooksCallback(mts.StopAtStepHook(last_step=1))
    with pytest.raises(TypeError, match='must hold SessionRunHook instances.*got str'):
        HooksCallback(['loss'])
    with pytest.raises(TypeError, match='Use compat_mts.StopAtStepHook instead'):
        HooksCallback([tf.compat.v1.train.StopAtStepHook(last_step=1)])

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=None, loss='mse')
    with pytest.raises(ValueError, match="needs the model's optimizer"):
        fit(model, [mts.StopAtStepHook(last_step=1)])

    class Feeder(mts.SessionRunHook):
        def before_run(self, run_context):
            return mts.SessionRunArgs(None, feed_dict={'x': 1.0})

    with pytest.raises(ValueError, match='Feeder.before_run returned a feed_dict'):
        fit(compiled_model(), [Feeder()])


_TF_KERAS_SCRIPT = r"""
import json, sys, tempfile
import numpy as np
import tensorflow as tf
import compat_mts as mts
from compat_mts.keras import HooksCallback

keras = tf.keras
features = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
targets = features @ np.array([[1.0], [-2.0], [0.5]], np.float32)
directory, spe_directory = tempfile.mkdtemp(), tempfile.mkdtemp()

def compiled_model(steps_per_execution=1):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss='mse', steps_per_execution=steps_per_execution)
    return model

def fit(model, hooks):
    model.fit(features, targets, batch_size=8, epochs=5, shuffle=False, verbose=0, callbacks=[HooksCallback(hooks)])
    return int(model.optimizer.iterations.numpy())

def slots(model):
    return [v.numpy().tolist() for v in model.optimizer.variables if 'iteration' not in v.name]

class LogLoss(mts.SessionRunHook):
    losses = []
    def before_run(self, run_context):
        return mts.SessionRunArgs('loss')
    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results))

class Snapshot(mts.SessionRunHook):
    restored = {}
    def after_create_session(self, session, coord):
        self.restored.update(step=int(session.run('global_step')), slots=slots(second))

first = compiled_model()
first_stop = fit(first, [mts.StopAtStepHook(last_step=7), mts.CheckpointSaverHook(directory, save_steps=3),
                         mts.StepCounterHook(every_n_steps=2, output_dir=directory), LogLoss()])
mts.reset_global_step()
second = compiled_model()
second_stop = fit(second, [mts.StopAtStepHook(last_step=10), mts.CheckpointSaverHook(directory, save_steps=3),
                           Snapshot()])
spe_stop = fit(compiled_model(steps_per_execution=4), [mts.StopAtStepHook(last_step=7),
                                                       mts.CheckpointSaverHook(spe_directory, save_steps=3)])
print(json.dumps({
    'keras': keras.__name__, 'first_stop': first_stop, 'losses': len(LogLoss.losses),
    'restored_step': Snapshot.restored['step'], 'slots_restored': Snapshot.restored['slots'] == slots(first),
    'second_stop': second_stop, 'spe_stop': spe_stop, 'directory': directory, 'spe_directory': spe_directory,
    'quiet_batch_hooks': HooksCallback([mts.SessionRunHook()])._implements_train_batch_hooks(),
    'busy_batch_hooks': HooksCallback([mts.StopAtStepHook(last_step=1)])._implements_train_batch_hooks()}))
"""


@pytest.mark.slow
def test_tf_keras_fit_runs_the_same_hooks():
    result = run_python(_TF_KERAS_SCRIPT, env={'TF_USE_LEGACY_KERAS': '1'}, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    outcome = last_json_line(result.stdout)
    assert outcome['keras'].startswith('tf_keras'), outcome['keras']
    assert (outcome['first_stop'], outcome['losses']) == (7, 7)
    assert (outcome['restored_step'], outcome['slots_restored'], outcome['second_stop']) == (7, True, 10)
    assert checkpoint_steps(outcome['directory']) == [0, 3, 6, 7, 10]
    assert 'global_step/sec' in read_events(outcome['directory'])
    assert (outcome['quiet_batch_hooks'], outcome['busy_batch_hooks']) == (False, True)
    assert (outcome['spe_stop'], checkpoint_steps(outcome['spe_directory'])) == (7, [0, 4, 7])
