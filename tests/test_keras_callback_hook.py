"""CallbackHook: real Keras callbacks inside a real MonitoredSession loop."""

from __future__ import annotations

import csv
import math
import os

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.keras import CallbackHook
from tests.support import last_json_line, read_events, run_python

keras = tf.keras
LOSSES = [1.0, 0.9, 0.5, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]  # The loss the step returns at each global step.


def scripted_step(losses=LOSSES):
    """A step that increments the global step and returns `{'loss': losses[step], 'weights': [0, 0, 0]}`."""
    global_step = mts.get_or_create_global_step()
    table = tf.constant(losses, tf.float32)

    @tf.function
    def step():
        loss = table[global_step]
        global_step.assign_add(1)
        return {'loss': loss, 'weights': tf.zeros([3])}

    return step


def compiled_model() -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse')
    return model


def train(hooks, step, last_step=len(LOSSES)):
    with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=last_step), *hooks]) as session:
        while not session.should_stop():
            session.run(step)
    return int(mts.get_global_step().numpy())


class EventRecorder(keras.callbacks.Callback):
    """Records every train-time callback call with its arguments."""

    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append(('train_begin',))

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(('epoch_begin', epoch))

    def on_train_batch_begin(self, batch, logs=None):
        self.events.append(('batch_begin', batch))

    def on_train_batch_end(self, batch, logs=None):
        self.events.append(('batch_end', batch, dict(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(('epoch_end', epoch, dict(logs)))

    def on_train_end(self, logs=None):
        self.events.append(('train_end', dict(logs or {})))


def test_early_stopping_stops_the_session_after_the_epoch_keras_would_stop_at():
    early_stopping = keras.callbacks.EarlyStopping(monitor='loss', patience=1)
    step = scripted_step()
    final_step = train([CallbackHook([early_stopping], model=compiled_model(), steps_per_epoch=2)], step)
    assert final_step == 6  # Epoch losses 0.9, 0.4, then 0.7: no improvement in epoch 2.
    assert early_stopping.stopped_epoch == 2


def test_csv_logger_writes_one_row_per_epoch_with_the_last_step_outputs(tmp_path):
    path = str(tmp_path / 'training.csv')
    train([CallbackHook([keras.callbacks.CSVLogger(path)], steps_per_epoch=2)], scripted_step(), last_step=5)
    with open(path, newline='') as file:
        rows = list(csv.DictReader(file))
    assert [row['epoch'] for row in rows] == ['0', '1', '2']  # Epoch 2 ends with the session, as in fit.
    assert [float(row['loss']) for row in rows] == pytest.approx([0.9, 0.4, 0.6])


def test_tensorboard_writes_epoch_and_batch_scalars(tmp_path):
    log_dir = str(tmp_path / 'logs')
    tensorboard = keras.callbacks.TensorBoard(log_dir, update_freq=1)
    train([CallbackHook([tensorboard], model=compiled_model(), steps_per_epoch=2)], scripted_step(), last_step=4)
    events = read_events(os.path.join(log_dir, 'train'))
    assert events['epoch_loss'] == [(0, pytest.approx(0.9)), (1, pytest.approx(0.4))]
    assert [step for step, _ in events['batch_loss']] == [1, 2, 3, 4]
    assert [value for _, value in events['batch_loss']] == pytest.approx(LOSSES[:4])


def test_batch_callbacks_get_the_scalar_step_outputs_as_logs():
    recorder = EventRecorder()
    train([CallbackHook([recorder])], scripted_step(), last_step=2)
    assert recorder.events == [
        ('train_begin',),
        ('batch_begin', 0),
        ('batch_end', 0, {'loss': 1.0}),
        ('batch_begin', 1),
        ('batch_end', 1, {'loss': pytest.approx(0.9)}),
        ('train_end', {'loss': pytest.approx(0.9)}),
    ]


def test_epochs_follow_the_global_step_when_a_session_resumes():
    step = scripted_step()
    mts.get_global_step().assign(3)
    recorder = EventRecorder()
    train([CallbackHook([recorder], steps_per_epoch=2)], step, last_step=6)
    assert [event[:2] for event in recorder.events] == [
        ('train_begin',),
        ('epoch_begin', 1),
        ('batch_begin', 1),
        ('batch_end', 1),
        ('epoch_end', 1),
        ('epoch_begin', 2),
        ('batch_begin', 0),
        ('batch_end', 0),
        ('batch_begin', 1),
        ('batch_end', 1),
        ('epoch_end', 2),
        ('train_end', {'loss': pytest.approx(0.7)}),
    ]


class RequestSpy(CallbackHook):
    """Keeps what `before_run` asked the session for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.requests = []

    def before_run(self, run_context):
        request = super().before_run(run_context)
        self.requests.append(request)
        return request


def test_step_outputs_are_fetched_only_when_a_callback_reads_logs():
    step = scripted_step()
    quiet = RequestSpy([keras.callbacks.LambdaCallback(on_train_begin=lambda logs: None)], steps_per_epoch=2)
    train([quiet], step, last_step=2)
    assert quiet.requests == [None, None]

    reading = RequestSpy([keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: None)], steps_per_epoch=2)
    train([reading], step, last_step=4)
    assert [request.fetches for request in reading.requests] == [step, step]


def test_terminate_on_nan_stops_the_session():
    model = compiled_model()
    final_step = train(
        [CallbackHook([keras.callbacks.TerminateOnNaN()], model=model)],
        scripted_step([1.0, 0.5, math.nan, 0.2, 0.1]),
        last_step=5,
    )
    assert final_step == 3
    assert model.stop_training


def test_bad_input_raises_clear_errors():
    with pytest.raises(TypeError, match='got a single callback; wrap it in a list'):
        CallbackHook(keras.callbacks.CSVLogger('log.csv'))
    with pytest.raises(TypeError, match='must hold .*Callback instances.*got StopAtStepHook'):
        CallbackHook([mts.StopAtStepHook(last_step=1)])
    with pytest.raises(TypeError, match='must be a list of Keras callbacks, got int'):
        CallbackHook(3)
    with pytest.raises(ValueError, match='holds EarlyStopping, which uses the model'):
        CallbackHook([keras.callbacks.EarlyStopping()])
    uncompiled = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match='holds ReduceLROnPlateau, which uses `model.optimizer`'):
        CallbackHook([keras.callbacks.ReduceLROnPlateau()], model=uncompiled)
    with pytest.raises(TypeError, match='`model` must be None or a tf.keras.Model, got str'):
        CallbackHook([], model='model')
    with pytest.raises(ValueError, match='`steps_per_epoch` must be None or a positive integer, got 0'):
        CallbackHook([], steps_per_epoch=0)
    with pytest.raises(ValueError, match='`steps_per_epoch` must be None or a positive integer within the range of'):
        CallbackHook([], steps_per_epoch=10**30)
    with pytest.raises(TypeError, match='`steps_per_epoch` must be None or a positive integer'):
        CallbackHook([], steps_per_epoch=2.0)
    with pytest.raises(RuntimeError, match='Global step should be created to use CallbackHook.'):
        mts.MonitoredSession(hooks=[CallbackHook([], steps_per_epoch=2)])


_TF_KERAS_SCRIPT = r"""
import csv, json, sys, tempfile
import tensorflow as tf
import compat_mts as mts
from compat_mts.keras import CallbackHook

keras = tf.keras
global_step = mts.get_or_create_global_step()
table = tf.constant([1.0, 0.9, 0.5, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1], tf.float32)

@tf.function
def step():
    loss = table[global_step]
    global_step.assign_add(1)
    return {'loss': loss}

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse')
path = tempfile.mkdtemp() + '/training.csv'
batches = []
callbacks = [keras.callbacks.EarlyStopping(monitor='loss', patience=1), keras.callbacks.CSVLogger(path),
             keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: batches.append(float(logs['loss'])))]
with mts.MonitoredSession(hooks=[mts.StopAtStepHook(last_step=10),
                                 CallbackHook(callbacks, model=model, steps_per_epoch=2)]) as session:
    while not session.should_stop():
        session.run(step)
with open(path, newline='') as file:
    rows = [(int(row['epoch']), round(float(row['loss']), 4)) for row in csv.DictReader(file)]
print(json.dumps({'keras': keras.__name__, 'step': int(global_step.numpy()), 'rows': rows, 'batches': len(batches),
                  'stopped_epoch': callbacks[0].stopped_epoch}))
"""


@pytest.mark.slow
def test_tf_keras_callbacks_run_in_a_session():
    result = run_python(_TF_KERAS_SCRIPT, env={'TF_USE_LEGACY_KERAS': '1'}, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    outcome = last_json_line(result.stdout)
    assert outcome['keras'].startswith('tf_keras'), outcome['keras']
    assert (outcome['step'], outcome['stopped_epoch'], outcome['batches']) == (6, 2, 6)
    assert outcome['rows'] == [[0, 0.9], [1, 0.4], [2, 0.7]]
