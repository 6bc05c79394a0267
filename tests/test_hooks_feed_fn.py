"""FeedFnHook: feed_fn runs before every run; its feeds are keyword arguments of the step."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib
from compat_mts.hooks.feed_fn import FeedFnHook


@pytest.fixture(autouse=True)
def fresh_global_step():
    global_step_lib.reset_global_step()
    yield
    global_step_lib.reset_global_step()


def make_scaled_step():
    """A step `(scale, offset=0) -> {'value': 2 * scale + offset}` that increments the global step."""
    global_step = mts.get_or_create_global_step()

    @tf.function
    def scaled_step(scale, offset=np.float32(0.0)):
        global_step.assign_add(1)
        return {'value': scale * 2.0 + offset}

    return scaled_step


def test_feed_fn_is_called_before_every_run_and_feeds_keyword_arguments_of_the_step():
    scaled_step = make_scaled_step()
    scales = iter(np.arange(1, 4, dtype=np.float32))
    calls = []

    def feed_fn():
        calls.append(int(mts.get_global_step().numpy()))  # Before the step of its run.
        return {'scale': next(scales)}

    with mts.MonitoredSession(hooks=[FeedFnHook(feed_fn)]) as session:
        values = [float(session.run(scaled_step)['value']) for _ in range(3)]
    assert values == [2.0, 4.0, 6.0]
    assert calls == [0, 1, 2]


def test_hook_feeds_merge_with_the_callers_feeds():
    scaled_step = make_scaled_step()
    hook = FeedFnHook(lambda: {'scale': np.float32(1.0)})
    with mts.MonitoredSession(hooks=[hook]) as session:
        assert session.run(scaled_step, feed_dict={'offset': np.float32(10.0)})['value'] == 12.0


def test_a_key_fed_by_the_hook_and_the_caller_raises_v1s_error():
    scaled_step = make_scaled_step()
    with mts.MonitoredSession(hooks=[FeedFnHook(lambda: {'scale': np.float32(1.0)})]) as session:
        with pytest.raises(
            RuntimeError,
            match=r'^Same tensor is fed by a SessionRunHook and user. '
            r"Conflict\(s\): \['scale'\]$",
        ):
            session.run(scaled_step, feed_dict={'scale': np.float32(2.0)})


def test_a_key_fed_by_two_hooks_raises_v1s_error():
    scaled_step = make_scaled_step()
    hooks = [FeedFnHook(lambda: {'scale': np.float32(1.0)}) for _ in range(2)]
    with mts.MonitoredSession(hooks=hooks) as session:
        with pytest.raises(RuntimeError, match=r"^Same tensor is fed by two hooks. Conflict\(s\): \['scale'\]$"):
            session.run(scaled_step)


def test_feed_fn_may_feed_nothing():
    scaled_step = make_scaled_step()
    with mts.MonitoredSession(hooks=[FeedFnHook(lambda: None)]) as session:
        assert session.run(scaled_step, feed_dict={'scale': np.float32(3.0)})['value'] == 6.0


def test_feed_fn_must_return_a_dict():
    scaled_step = make_scaled_step()
    with mts.MonitoredSession(hooks=[FeedFnHook(lambda: [('scale', 1.0)])]) as session:
        with pytest.raises(TypeError, match='`feed_fn` must return a dict of feeds, returned list.'):
            session.run(scaled_step)


def test_feed_fn_must_be_callable():
    with pytest.raises(TypeError, match='`feed_fn` must be a callable returning a feed dict, got dict.'):
        FeedFnHook({'scale': 1.0})


def test_placeholders_of_a_wrapped_legacy_graph_are_fed_as_in_v1():
    from compat_mts.legacy import wrap_graph

    def build():
        scale = tf.compat.v1.placeholder(tf.float32, [], name='scale')
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.control_dependencies([tf.compat.v1.assign_add(global_step, 1)]):
            doubled = tf.identity(scale * 2.0, name='doubled')
        return scale, doubled

    scale, doubled = wrap_graph(build).outputs
    scales = iter([1.0, 2.5])
    with mts.MonitoredSession(hooks=[FeedFnHook(lambda: {scale: next(scales)})]) as session:
        assert [float(session.run(doubled)) for _ in range(2)] == [2.0, 5.0]
