"""NanTensorHook and NanLossDuringTrainingError, eagerly."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks.nan import NanLossDuringTrainingError, NanTensorHook


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


@pytest.fixture
def tf_records(caplog):
    caplog.set_level(logging.INFO, logger='tensorflow')
    return caplog


def scheduled_step(losses):
    """A step whose loss is `losses[global step]` (the last one repeats); returns {'loss', 'pair'}."""
    global_step = mts.get_or_create_global_step()
    table = tf.constant(losses, tf.float32)

    @tf.function
    def step():
        loss = tf.gather(table, tf.minimum(global_step, len(losses) - 1))
        global_step.assign_add(1)
        return {'loss': loss, 'pair': tf.stack([loss, loss])}

    return step


class EndCounter(mts.SessionRunHook):
    def __init__(self):
        self.ends = 0

    def end(self, session):
        self.ends += 1


def test_nan_loss_logs_an_error_and_raises_nan_loss_during_training_error(tf_records):
    step = scheduled_step([1.0, float('nan')])
    returned = []
    with pytest.raises(NanLossDuringTrainingError) as raised:
        with mts.MonitoredSession(hooks=[NanTensorHook('loss')]) as session:
            for _ in range(3):
                returned.append(session.run(step)['loss'])
    assert returned == [1.0]
    assert str(raised.value) == 'NaN loss during training.'
    assert isinstance(raised.value, RuntimeError)
    assert [(r.levelno, r.getMessage()) for r in tf_records.records if 'NaN' in r.getMessage()] == [
        (logging.ERROR, 'Model diverged with loss = NaN.')
    ]


def test_the_error_leaves_the_with_block_without_end_calls():
    step = scheduled_step([float('nan')])
    counter = EndCounter()
    with pytest.raises(NanLossDuringTrainingError):
        with mts.MonitoredSession(hooks=[NanTensorHook('loss'), counter]) as session:
            session.run(step)
    assert counter.ends == 0


def test_without_fail_on_nan_loss_it_warns_and_requests_a_stop_and_the_run_returns(tf_records):
    step = scheduled_step([1.0, float('nan'), 3.0])
    with mts.MonitoredSession(hooks=[NanTensorHook('loss', fail_on_nan_loss=False)]) as session:
        assert session.run(step)['loss'] == 1.0
        assert not session.should_stop()
        assert np.isnan(session.run(step)['loss'])
        assert session.should_stop()
    assert [(r.levelno, r.getMessage()) for r in tf_records.records if 'NaN' in r.getMessage()] == [
        (logging.WARNING, 'Model diverged with loss = NaN.')
    ]


def test_the_loss_is_fetched_on_every_run_from_the_same_execution():
    step = scheduled_step([1.0])
    seen = []

    def loss():
        seen.append(int(mts.get_global_step().numpy()))  # Evaluated after the step of the same run.
        return tf.constant(0.0)

    with mts.MonitoredSession(hooks=[NanTensorHook(loss)]) as session:
        for _ in range(3):
            session.run(step)
    assert seen == [1, 2, 3]


@pytest.mark.parametrize(
    'make_loss',
    [
        lambda: tf.Variable(float('nan')),
        lambda: lambda: tf.constant(float('nan')),
        lambda: 'loss',
    ],
    ids=['variable', 'callable', 'step_output_name'],
)
def test_the_loss_can_be_any_fetch(make_loss):
    step = scheduled_step([float('nan')])
    with pytest.raises(NanLossDuringTrainingError):
        with mts.MonitoredSession(hooks=[NanTensorHook(make_loss())]) as session:
            session.run(step)


def test_an_unknown_loss_name_lists_the_available_names():
    step = scheduled_step([1.0])
    with pytest.raises(KeyError, match=r"'lss'.*Available names: \['global_step', 'loss', 'pair'\]"):
        with mts.MonitoredSession(hooks=[NanTensorHook('lss')]) as session:
            session.run(step)


def test_the_loss_must_be_a_scalar_as_np_isnan_decides_in_v1():
    step = scheduled_step([1.0])
    with pytest.raises(ValueError, match='truth value of an array'):
        with mts.MonitoredSession(hooks=[NanTensorHook('pair')]) as session:
            session.run(step)


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({'loss_tensor': None}, '`loss_tensor` must be a name'),
        ({'loss_tensor': 3.5}, '`loss_tensor` must be a name'),
        ({'loss_tensor': 'loss', 'fail_on_nan_loss': 'yes'}, '`fail_on_nan_loss` must be a bool'),
    ],
)
def test_constructor_rejects_what_is_not_a_loss_or_a_bool(kwargs, message):
    with pytest.raises(TypeError, match=message):
        NanTensorHook(**kwargs)


def test_the_loss_can_be_a_tensor_of_a_wrapped_legacy_graph():
    from compat_mts.legacy import wrap_graph

    def build():
        scale = tf.compat.v1.placeholder(tf.float32, [], name='scale')
        global_step = tf.compat.v1.train.get_or_create_global_step()
        loss = tf.math.log(scale, name='loss')
        return scale, loss, tf.compat.v1.assign_add(global_step, 1).op

    scale, loss, train_op = wrap_graph(build).outputs
    with pytest.raises(NanLossDuringTrainingError):
        with mts.MonitoredSession(hooks=[NanTensorHook(loss)]) as session:
            session.run(train_op, feed_dict={scale: 2.0})
            session.run(train_op, feed_dict={scale: -1.0})
    assert int(mts.get_global_step().numpy()) == 2
