"""`wrap_graph`: v1 graph code run eagerly by compat_mts sessions, fetched and fed as v1 fetched and fed it."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts import _tf_internals as tf_internals
from compat_mts.core import fetch as fetches_lib
from compat_mts import legacy
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook


def build_regression():
    """x (placeholder) → dense (v1 variables in a scope) → loss; SGD with the graph's global step."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name='y')
    with tf.compat.v1.variable_scope('dense'):
        kernel = tf.compat.v1.get_variable('kernel', initializer=[[1.0], [2.0]])
        bias = tf.compat.v1.get_variable('bias', [1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, kernel) + bias - y), name='loss')
    tf.compat.v1.summary.scalar('loss', loss)
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return {'x': x, 'y': y, 'loss': loss, 'kernel': kernel, 'global_step': global_step, 'train_op': train_op}


FEATURES = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
TARGETS = np.array([[0.0], [1.0]], np.float32)


@pytest.fixture
def graph():
    return mts.wrap_graph(build_regression)


class RecordingHook(SessionRunHook):
    """Asks for `fetches` on every run and keeps what it got."""

    def __init__(self, fetches, feed_dict=None):
        self._fetches = fetches
        self._feed_dict = feed_dict
        self.results = []

    def before_run(self, run_context):
        return SessionRunArgs(self._fetches, self._feed_dict)

    def after_run(self, run_context, run_values):
        self.results.append(run_values.results)


def test_outputs_are_what_build_fn_returned_and_are_hashable_plain_graph_tensors(graph):
    outputs = graph.outputs
    assert set(outputs) == {'x', 'y', 'loss', 'kernel', 'global_step', 'train_op'}
    assert outputs['loss'].graph is graph.graph
    assert {outputs['x']: 1}[outputs['x']] == 1  # A function graph's tensors would raise "unhashable".
    with pytest.raises(TypeError, match='unhashable'):
        {tf.constant(1.0): 1}  # Tensor equality is still on.
    if tf_internals.CAN_UNFINALIZE:
        assert graph.graph.finalized
        with pytest.raises(RuntimeError, match='finalized'):
            with graph.graph.as_default():
                tf.constant(1.0)
    else:  # A finalized graph could not be opened again (`as_default`): left open, an op made in it runs.
        assert not graph.graph.finalized
        with graph.graph.as_default():
            doubled = tf.multiply(outputs['loss'], 2.0)
        with mts.MonitoredSession() as session:
            assert session.run(doubled, feed_dict={outputs['x']: FEATURES, outputs['y']: TARGETS}) == 2.0


def test_graph_variables_become_eager_and_the_graph_global_step_is_the_session_global_step(graph):
    variables = {variable.name: variable for variable in graph.variables}
    assert sorted(variables) == ['dense/bias:0', 'dense/kernel:0', 'global_step:0']
    assert [np.shape(variables[name].numpy()) for name in sorted(variables)] == [(1,), (2, 1), ()]  # Initialized.
    assert mts.get_global_step() is graph.global_step is variables['global_step:0']
    assert graph.global_step.dtype == tf.int64 and int(graph.global_step.numpy()) == 0
    np.testing.assert_array_equal(variables['dense/kernel:0'].numpy(), [[1.0], [2.0]])


def test_run_trains_with_feed_dict_keyed_by_placeholders_or_their_names(graph):
    x, y, loss, train_op = (graph.outputs[name] for name in ('x', 'y', 'loss', 'train_op'))
    with mts.MonitoredSession() as session:
        first = session.run(loss, feed_dict={x: FEATURES, y: TARGETS})
        _, by_name = session.run([train_op, 'loss:0'], feed_dict={'x:0': FEATURES, 'y:0': TARGETS})
        after = session.run({'loss': loss}, feed_dict={x: FEATURES, y: TARGETS})
    assert first == pytest.approx(1.0) and by_name == pytest.approx(1.0)  # Loss before the step's update.
    assert after['loss'] < first
    assert int(graph.global_step.numpy()) == 1


def test_hook_fetches_and_feeds_go_into_the_same_single_call(graph):
    x, y, loss, train_op = (graph.outputs[name] for name in ('x', 'y', 'loss', 'train_op'))
    loss_hook = RecordingHook({'loss': loss, 'by_name': 'loss:0'})
    feeding_hook = RecordingHook(None, feed_dict={y: TARGETS})
    with mts.MonitoredSession(hooks=[loss_hook, feeding_hook]) as session:
        for _ in range(3):
            _, loss_value = session.run([train_op, loss], feed_dict={x: FEATURES})
            assert loss_hook.results[-1] == {'loss': loss_value, 'by_name': loss_value}
    assert int(graph.global_step.numpy()) == 3
    assert graph.pruned_functions == 1  # One fetch/feed set, pruned once and reused.


def test_graph_fetches_built_anew_each_run_resolve_in_the_same_shapes_and_one_call_every_run(graph):
    x, y, loss, train_op, kernel = (graph.outputs[name] for name in ('x', 'y', 'loss', 'train_op', 'kernel'))
    stale_hook = RecordingHook({'step': mts.STALE_GLOBAL_STEP, 'loss': loss, 'none': None, 'kernel': kernel})
    pair_hook = RecordingHook((loss, mts.STALE_GLOBAL_STEP))
    results = []
    with mts.MonitoredSession(hooks=[stale_hook, pair_hook]) as session:
        for _ in range(3):  # A new list per run, as programs write it.
            results.append(session.run([train_op, loss, None], feed_dict={x: FEATURES, y: TARGETS}))
    assert [type(result) for result in results] == [list] * 3
    assert [result[0] for result in results] == [None] * 3 and [result[2] for result in results] == [None] * 3
    assert [list(result) for result in stale_hook.results] == [['step', 'loss', 'none', 'kernel']] * 3
    assert [result['step'] for result in stale_hook.results] == [0, 1, 2]
    assert [result['loss'] for result in stale_hook.results] == [result[1] for result in results]
    assert stale_hook.results[0]['none'] is None
    np.testing.assert_array_equal(stale_hook.results[0]['kernel'], [[1.0], [2.0]])  # Read before the step.
    assert [type(result) for result in pair_hook.results] == [tuple] * 3
    assert [result[1] for result in pair_hook.results] == [0, 1, 2]
    assert graph.pruned_functions == 1


def test_an_iterator_advances_once_per_run_and_is_shared_by_every_fetch_set():
    def build():
        tf.compat.v1.train.get_or_create_global_step()
        one_shot = tf.compat.v1.data.make_one_shot_iterator(tf.compat.v1.data.Dataset.range(100))
        initializable = tf.compat.v1.data.make_initializable_iterator(tf.compat.v1.data.Dataset.range(10, 20))
        return one_shot.get_next(), initializable.initializer, initializable.get_next()

    graph = mts.wrap_graph(build)
    next_element, initializer, next_initializable = graph.outputs
    seen = RecordingHook(next_element)
    with mts.MonitoredSession(hooks=[seen]) as session:
        assert session.run(next_element) == 0 and seen.results == [0]
        assert session.run([next_element, 'global_step']) == [1, 0]  # Another pruned function, same iterator.
        session.run(initializer)
        assert session.run(next_initializable) == 10
        assert session.run(next_initializable) == 11
    assert seen.results == [0, 1, 2, 3, 4]


def test_fetching_a_graph_variable_reads_it_before_the_step_updates_it(graph):
    x, y, kernel, global_step, train_op = (
        graph.outputs[name] for name in ('x', 'y', 'kernel', 'global_step', 'train_op')
    )
    with mts.MonitoredSession() as session:
        _, step, kernel_value = session.run([train_op, global_step, kernel], feed_dict={x: FEATURES, y: TARGETS})
        assert step == 0
        np.testing.assert_array_equal(kernel_value, [[1.0], [2.0]])
        assert session.run('global_step:0') == 1  # By name: the variable's value, as for v1 ref variables.


def test_what_an_assign_returns_runs_the_assignment_and_reads_after_it():
    def build():
        step = tf.compat.v1.train.get_or_create_global_step()
        return tf.compat.v1.assign_add(step, 5)

    graph = mts.wrap_graph(build)
    with mts.MonitoredSession() as session:
        assert session.run(graph.outputs) == 5
        assert session.run(graph.outputs) == 10


def test_the_stale_global_step_is_read_before_the_run_whose_fetches_move_it_at_once():
    def build():
        step = tf.compat.v1.train.get_or_create_global_step()
        # Ready as soon as the run starts, as the stale step's read: only the run's order puts the read first.
        return tf.compat.v1.assign_add(step, 1).op, tf.compat.v1.assign_add(step, 10)

    graph = mts.wrap_graph(build)
    increment, add_ten = graph.outputs
    stale = RecordingHook(mts.STALE_GLOBAL_STEP)
    with mts.MonitoredSession(hooks=[stale]) as session:
        for _ in range(100):
            assert session.run(increment) is None
        assert session.run(add_ten) == 110  # Its read, after its assignment.
    assert stale.results == [*range(100), 100]


def test_feed_errors_are_v1s(graph):
    x, loss = graph.outputs['x'], graph.outputs['loss']
    with mts.MonitoredSession() as session:
        with pytest.raises(
            ValueError,
            match=r'Cannot feed value of shape \(3,\) for Tensor x:0, which has shape '
            r'\(None, 2\)',
        ):
            session.run(loss, feed_dict={x: np.zeros(3), 'y:0': TARGETS})
        with pytest.raises(TypeError, match='The value of a feed cannot be a tf.Tensor object'):
            session.run(loss, feed_dict={x: loss, 'y:0': TARGETS})
        with pytest.raises(ValueError, match='missing:0'):  # Not a name of the graph: a keyword argument.
            session.run(loss, feed_dict={x: FEATURES, 'missing:0': TARGETS})
    other = tf.Graph()
    with other.as_default():
        foreign = tf.compat.v1.placeholder(tf.float32, name='foreign')
    with mts.MonitoredSession() as session:
        with pytest.raises(TypeError, match='Cannot interpret feed_dict key as Tensor'):
            session.run(loss, feed_dict={x: FEATURES, 'y:0': TARGETS, foreign: 1.0})


def test_feeds_of_two_placeholders_take_arrays_lists_and_python_numbers_as_a_v1_session_takes_them():
    def build():
        a = tf.compat.v1.placeholder(tf.float32, [None, 2], name='a')
        b = tf.compat.v1.placeholder(tf.int32, [], name='b')
        return a, b, tf.reduce_sum(a) * tf.cast(b, tf.float32)

    feeds = [  # (a, b) -> feed_dict: values to convert to each dtype, then two shapes that do not fit.
        lambda a, b: {a: np.ones((3, 2)), b: 3},
        lambda a, b: {a: [[1, 2]], b: np.int64(2)},
        lambda a, b: {a: [[0.5, 2.0]], b: 2.9},
        lambda a, b: {a: [[1, 2, 3]], b: 3},
        lambda a, b: {a: [[1, 2]], b: [3]},
    ]

    def outcomes(run, a, b):
        results = []
        for feed in feeds:
            try:
                results.append(float(run(feed(a, b))))
            except ValueError as error:
                results.append(str(error))
        return results

    with tf.Graph().as_default() as v1_graph:
        v1_a, v1_b, v1_product = build()
    with tf.compat.v1.Session(graph=v1_graph) as v1_session:
        expected = outcomes(lambda feed_dict: v1_session.run(v1_product, feed_dict=feed_dict), v1_a, v1_b)
    a, b, product = mts.wrap_graph(build).outputs
    with mts.MonitoredSession() as session:
        assert outcomes(lambda feed_dict: session.run(product, feed_dict=feed_dict), a, b) == expected
        assert expected[:3] == [18.0, 6.0, 5.0] and expected[3].startswith('Cannot feed value of shape (1, 3)')
        # TF 2.15's error (NumPy 1); on NumPy 2 v1's own check raises NumPy's OverflowError first.
        with pytest.raises(TypeError, match=r"^Type of feed value 1099511627776 with type <class 'int'> is not "):
            session.run(product, feed_dict={a: [[1, 2]], b: 2**40})


def test_a_fed_eager_tensor_or_list_is_converted_to_the_placeholder_dtype(graph):
    loss = graph.outputs['loss']
    with mts.MonitoredSession() as session:
        from_lists = session.run(loss, feed_dict={'x:0': FEATURES.tolist(), 'y:0': TARGETS.astype(np.float64)})
        from_tensor = session.run(loss, feed_dict={'x:0': tf.constant(FEATURES), 'y:0': TARGETS})
    assert from_lists == from_tensor == pytest.approx(1.0)


def test_default_checkpoint_holds_every_global_variable_under_its_v1_name(graph, tmp_path):
    x, y, train_op = graph.outputs['x'], graph.outputs['y'], graph.outputs['train_op']
    hooks = [mts.StopAtStepHook(last_step=3)]
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks) as session:
        while not session.should_stop():
            session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
    names = dict(tf.train.list_variables(str(tmp_path)))
    assert sorted(names) == ['dense/bias', 'dense/kernel', 'global_step']
    assert tf.train.load_variable(str(tmp_path), 'global_step') == 3
    kernel = next(variable for variable in graph.variables if variable.name == 'dense/kernel:0')
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), 'dense/kernel'), kernel.numpy())


def test_a_new_program_on_the_same_directory_resumes_the_variables(tmp_path):
    def train(checkpoint_dir, last_step):
        mts.reset_global_step()  # Each call plays a new run of the program.
        graph = mts.wrap_graph(build_regression)
        x, y, train_op = graph.outputs['x'], graph.outputs['y'], graph.outputs['train_op']
        with mts.MonitoredTrainingSession(
            checkpoint_dir=checkpoint_dir, hooks=[mts.StopAtStepHook(last_step=last_step)]
        ) as session:
            start = int(graph.global_step.numpy())
            while not session.should_stop():
                session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
        return start, {variable.name: variable.numpy() for variable in graph.variables}

    assert train(str(tmp_path / 'resumed'), 4)[0] == 0
    start, resumed = train(str(tmp_path / 'resumed'), 8)
    _, straight = train(str(tmp_path / 'straight'), 8)
    assert start == 4 and resumed['global_step:0'] == 8
    for name, value in straight.items():
        np.testing.assert_allclose(resumed[name], value, rtol=1e-6)


def test_merged_graph_summaries_are_the_default_summary_op(graph, tmp_path):
    from tests import support

    x, y, train_op = graph.outputs['x'], graph.outputs['y'], graph.outputs['train_op']
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), save_summaries_steps=2, hooks=[mts.StopAtStepHook(last_step=5)]
    ) as session:
        while not session.should_stop():
            session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
    events = support.read_events(str(tmp_path))
    assert [step for step, _ in events['loss_1']] == [1, 3, 5]  # v1 named the summary after its scope.
    assert events['loss_1'][0][1] == pytest.approx(1.0)


def test_names_resolve_to_tensors_and_ops_of_the_graph(graph):
    assert graph.owns_name('loss:0') and graph.owns_name('loss') and graph.owns_name('global_step')
    assert not graph.owns_name('missing:0')
    with mts.MonitoredSession() as session:
        assert session.run('GradientDescent', feed_dict={'x:0': FEATURES, 'y:0': TARGETS}) is None
        assert session.run('global_step') == 1
    with mts.MonitoredSession() as session:
        with pytest.raises(KeyError, match='missing:0'):
            session.run('missing:0')


def test_wrap_graph_rejects_what_it_cannot_run():
    with pytest.raises(TypeError, match='`build_fn` must be a function'):
        mts.wrap_graph('build_regression')

    def with_reference_variables():
        return tf.compat.v1.get_variable('w', [1], use_resource=False)

    with pytest.raises(TypeError, match='resource variables only'):
        mts.wrap_graph(with_reference_variables)

    def with_queue_runners():
        queue = tf.compat.v1.FIFOQueue(4, tf.float32)
        tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, [queue.enqueue([1.0])]))
        return queue.dequeue()

    with pytest.raises(ValueError, match='queue runners'):
        mts.wrap_graph(with_queue_runners)


def test_final_ops_and_nan_hooks_take_graph_tensors(graph):
    x, y, loss, train_op = (graph.outputs[name] for name in ('x', 'y', 'loss', 'train_op'))
    final = mts.FinalOpsHook(loss, final_ops_feed_dict={x: FEATURES, y: TARGETS})
    with mts.MonitoredSession(hooks=[final, mts.NanTensorHook(loss)]) as session:
        session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
    assert final.final_ops_values < 1.0
    with pytest.raises(mts.NanLossDuringTrainingError):
        with mts.MonitoredSession(hooks=[mts.NanTensorHook(loss)]) as session:
            session.run(train_op, feed_dict={x: np.full((2, 2), np.nan, np.float32), y: TARGETS})


def test_reset_global_step_ends_the_wrapped_graph_defaults(graph):
    assert legacy.wrapped_graph_of_global_step() is graph
    mts.reset_global_step()
    assert legacy.wrapped_graph_of_global_step() is None
    assert mts.Scaffold().finalize().checkpoint is not graph.checkpoint


def test_recovery_without_a_checkpoint_goes_back_to_the_initial_values(graph):
    x, y, train_op = graph.outputs['x'], graph.outputs['y'], graph.outputs['train_op']

    class PreemptOnce(SessionRunHook):
        def __init__(self):
            self.runs = 0

        def after_run(self, run_context, run_values):
            self.runs += 1
            if self.runs == 3:
                raise tf.errors.AbortedError(None, None, 'preempted')

    with mts.MonitoredSession(hooks=[PreemptOnce()]) as session:
        for _ in range(3):
            session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
    assert int(graph.global_step.numpy()) == 1  # A fresh v1 session re-initialized, then the run was retried.


def test_partitioned_variables_are_saved_under_their_full_v1_name(tmp_path):
    def build():
        tf.compat.v1.train.get_or_create_global_step()
        return tf.compat.v1.get_variable(
            'table',
            [6, 2],
            initializer=tf.compat.v1.ones_initializer(),
            partitioner=tf.compat.v1.fixed_size_partitioner(2),
        )

    graph = mts.wrap_graph(build)
    path = graph.checkpoint.write(str(tmp_path / 'model.ckpt-0'))
    assert dict(tf.train.list_variables(path)) == {'table': [6, 2], 'global_step': []}
    np.testing.assert_array_equal(tf.train.load_variable(path, 'table'), np.ones((6, 2)))
    parts = [variable for variable in graph.variables if variable.name.startswith('table/part_')]
    assert [tuple(part.shape) for part in parts] == [(3, 2), (3, 2)]
    for part in parts:
        part.assign(tf.zeros_like(part))
    graph.checkpoint.restore(path).assert_consumed()
    assert [float(part.numpy().sum()) for part in parts] == [6.0, 6.0]


def test_a_checkpoint_of_another_program_stops_the_session_instead_of_starting_afresh(tmp_path):
    other_kernel = tf.Variable(np.zeros((3, 3), np.float32))
    manager = tf.train.CheckpointManager(
        legacy.NameBasedCheckpoint({'dense/kernel': other_kernel}),
        str(tmp_path),
        max_to_keep=5,
        checkpoint_name='model.ckpt',
    )
    manager.save(checkpoint_number=5)
    graph = mts.wrap_graph(build_regression)
    with pytest.raises(legacy.CheckpointMismatchError, match=r'dense/kernel: shape \[3, 3\] in the checkpoint'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))
    assert int(graph.global_step.numpy()) == 0
    assert sorted(name for name in os.listdir(tmp_path) if name.startswith('model.ckpt')) == [
        'model.ckpt-5.data-00000-of-00001',
        'model.ckpt-5.index',
    ]  # Nothing written over the other program's.


def test_the_overhead_benchmark_runs_end_to_end(capsys):
    import importlib.util
    import math
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / 'benchmarks' / 'legacy_overhead.py'
    spec = importlib.util.spec_from_file_location('legacy_overhead', path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    results = benchmark.main(['--block', '3', '--blocks', '2', '--warmup', '3'])
    assert sorted(results['graphs']) == ['constant', 'fed']
    for numbers in results['graphs'].values():
        assert all(math.isfinite(value) and value > 0 for value in numbers.values()), numbers
    assert '"median_ratio_wall"' in capsys.readouterr().out


def test_graph_pbtxt_and_the_tensorboard_graph_are_the_wrapped_graph(graph, tmp_path):
    from tests import support

    x, y, train_op = graph.outputs['x'], graph.outputs['y'], graph.outputs['train_op']
    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[mts.StopAtStepHook(last_step=2)]) as session:
        while not session.should_stop():
            session.run(train_op, feed_dict={x: FEATURES, y: TARGETS})
    text = (tmp_path / 'graph.pbtxt').read_text()
    assert 'name: "dense/kernel"' in text and 'name: "GradientDescent"' in text
    assert support.has_graph_event(str(tmp_path))


def test_graph_def_is_the_graph_with_the_ops_a_hook_added_and_a_copy_each_time(graph):
    names = lambda graph_def: {node.name for node in graph_def.node}  # noqa: E731
    first = graph.graph_def()
    assert names(first) == {op.name for op in graph.graph.get_operations()}
    first.node.add(name='not_in_the_graph')
    assert 'not_in_the_graph' not in names(graph.graph_def())
    with graph.as_default():
        tf.identity(graph.outputs['loss'], name='added_by_a_hook')
    assert 'added_by_a_hook' in names(graph.graph_def())
    assert graph.graph_def() == graph.graph.as_graph_def(add_shapes=True)


def test_a_fed_tensor_and_the_wrap_function_run_on_the_variables_the_session_trains(graph):
    """A fetched fed tensor (which the functions made from the graph's own ops leave to `prune`), and `function`
    (made when first used), also for a variable a hook adds after it was made."""
    x, y, loss, train_op = (graph.outputs[name] for name in ('x', 'y', 'loss', 'train_op'))
    feeds = {x: FEATURES, y: TARGETS}
    arguments = (tf.constant(FEATURES), tf.constant(TARGETS))
    with mts.MonitoredSession() as session:
        session.run(train_op, feed_dict=feeds)
        fed, loss_value = session.run([x, loss], feed_dict=feeds)
        np.testing.assert_array_equal(fed, FEATURES)
        imported = graph.function.graph
        inputs = [imported.get_tensor_by_name('x:0'), imported.get_tensor_by_name('y:0')]
        pruned_loss = graph.function.prune(feeds=inputs, fetches=imported.get_tensor_by_name('loss:0'))
        assert float(pruned_loss(*arguments)) == pytest.approx(loss_value)
        with graph.as_default():
            scaled = loss * tf.compat.v1.get_variable('scale', initializer=3.0)
        assert session.run(scaled, feed_dict=feeds) == pytest.approx(3 * loss_value)
        pruned_scaled = graph.function.prune(feeds=inputs, fetches=imported.get_tensor_by_name(scaled.name))
        session.run(train_op, feed_dict=feeds)
        trained = session.run(loss, feed_dict=feeds)
    assert trained < loss_value
    assert float(pruned_loss(*arguments)) == pytest.approx(trained)
    assert float(pruned_scaled(*arguments)) == pytest.approx(3 * trained)


def test_fetching_what_needs_an_unfed_placeholder_raises_v1s_error(graph):
    loss = graph.outputs['loss']
    with mts.MonitoredSession() as session:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"You must feed a value for placeholder tensor 'y' with dtype float and shape "
            r'\[\?,1\]',
        ):
            session.run(loss, feed_dict={'x:0': FEATURES})


def _build_with_a_dimension_value():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name='x')
    return tf.compat.v1.get_variable('w', [x.get_shape()[1].value, 1])


def test_a_dimension_value_in_build_fn_gets_an_error_that_says_how_to_keep_v1_shapes():
    with pytest.raises(AttributeError) as raised:
        mts.wrap_graph(_build_with_a_dimension_value)
    message = str(raised.value)
    assert message.startswith("'int' object has no attribute 'value': v1 graph code reads a shape dimension")
    assert 'Add `tf.compat.v1.disable_v2_tensorshape()` at the top of the script' in message
    assert 'tf.compat.v1.dimension_value(x.shape[i])' in message
    assert str(raised.value.__cause__) == "'int' object has no attribute 'value'"


def test_other_errors_of_build_fn_are_raised_as_they_are():
    error = AttributeError("'NoneType' object has no attribute 'value'")

    def build():
        raise error

    with pytest.raises(AttributeError) as raised:
        mts.wrap_graph(build)
    assert raised.value is error


_V1_SHAPES_PROGRAM = """
import json
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_tensorshape()

import compat_mts as mts

FEATURES = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0


def build():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name='x')
    weights = tf.compat.v1.get_variable('w', [x.get_shape()[1].value, 1],
                                        initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, weights) - 1.0), name='loss')
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return x, loss, train_op


def train(checkpoint_dir, x, loss, train_op):
    losses = []
    hooks = [mts.StopAtStepHook(last_step=5), mts.NanTensorHook(loss),
             mts.LoggingTensorHook({'loss': loss}, every_n_iter=2)]
    with mts.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks) as session:
        while not session.should_stop():
            losses.append(float(session.run([train_op, loss], feed_dict={x: FEATURES})[1]))
    return losses


report = {'eager': tf.executing_eagerly()}
wrapped_dir, graph_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
report['wrap_graph'] = train(wrapped_dir, *mts.wrap_graph(build).outputs)
mts.reset_global_step()
with tf.Graph().as_default():
    report['graph_context'] = train(graph_dir, *build())
report['steps'] = [int(tf.train.load_variable(d, 'global_step')) for d in (wrapped_dir, graph_dir)]
report['eager_after'] = tf.executing_eagerly()
print(json.dumps(report))
"""


@pytest.mark.slow
def test_v1_shapes_make_dimension_value_code_run_eagerly_in_wrap_graph_and_in_a_graph_block():
    from tests.support import last_json_line, run_python

    result = run_python(_V1_SHAPES_PROGRAM)
    assert result.returncode == 0, result.stderr[-3000:]
    report = last_json_line(result.stdout)
    assert report['eager'] and report['eager_after']
    assert report['steps'] == [5, 5]
    assert len(report['wrap_graph']) == 5 and report['wrap_graph'][-1] < report['wrap_graph'][0]
    np.testing.assert_allclose(report['graph_context'], report['wrap_graph'], rtol=1e-6)


def _run_a_wrap_graph_program_whose_b_reads(source: str) -> None:
    """A finished earlier program of the process: a wrap_graph graph with `y` and `b`, run by a closed session."""

    def build():
        y = tf.compat.v1.placeholder(tf.float32, [None], name='y')
        weight = tf.compat.v1.get_variable('w', initializer=[0.0043])
        b = tf.identity(weight + tf.reduce_sum(y) if source == 'placeholder' else weight, name='b')
        step = tf.compat.v1.train.get_or_create_global_step()
        return y, b, tf.compat.v1.assign_add(step, 1)

    y, b, train_op = mts.wrap_graph(build).outputs
    with mts.MonitoredTrainingSession() as session:
        session.run([b, train_op], feed_dict={y: [0.0]})


@pytest.mark.parametrize('source', ['placeholder', 'variable'])
def test_names_of_a_later_eager_session_never_resolve_in_an_earlier_programs_wrapped_graph(source, tf_logs):
    # The order the differential suite ran in one process: a v1 program, then (the global step forgotten, as a
    # new run of a program starts) an eager program whose step returns 'b'.
    _run_a_wrap_graph_program_whose_b_reads(source)
    mts.reset_global_step()
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step(**unused_feeds):
        global_step.assign_add(1)
        return {'b': tf.constant(2.0)}

    hooks = [mts.LoggingTensorHook({'b': 'b'}, every_n_iter=1), RecordingHook(['global_step'])]
    with mts.MonitoredTrainingSession(hooks=hooks) as session:
        session.run(train_step)
        session.run(train_step)
        with pytest.raises(KeyError, match="'b:0' is not an output"):
            session.run('b:0')  # The earlier graph's tensor is not this session's.
        with pytest.raises(KeyError, match="'y:0' is not an output"):
            session.run('y:0')
        # 'y:0' is no placeholder of this session: it goes to the step as an argument.
        assert session.run(train_step, feed_dict={'y:0': [1.0]}) == {'b': 2.0}
    logged = [message.split(' (')[0] for message in tf_logs.messages() if message.startswith('b = ')]
    assert logged == ['b = 2.0'] * 3
    assert hooks[1].results == [[1], [2], [3]]


def test_a_wrapped_graph_given_to_a_session_resolves_its_names_there_and_not_in_the_next_programs_session():
    _run_a_wrap_graph_program_whose_b_reads('variable')
    earlier = fetches_lib.graph_runners()[-1]
    mts.reset_global_step()  # A new program: no global step, and a wrapped graph of its own without one.

    def build():
        x = tf.compat.v1.placeholder(tf.float32, [], name='x')
        return x, tf.multiply(x, 2.0, name='b')

    x, doubled = mts.wrap_graph(build).outputs
    with mts.MonitoredSession() as session:
        assert session.run(doubled, feed_dict={x: 3.0}) == 6.0  # Given the graph's tensors: the graph is its own.
        assert session.run('b:0', feed_dict={'x:0': 4.0}) == 8.0  # Its names then resolve in it, not in the earlier.
    with mts.MonitoredSession() as session:
        with pytest.raises(KeyError, match="'b:0' is not an output"):
            session.run('b:0')  # Neither graph is this session's.
    assert earlier in fetches_lib.graph_runners()  # Registered still, and never asked.


@pytest.mark.parametrize('source', ['placeholder', 'variable'])
def test_a_step_output_comes_before_the_wrapped_graphs_tensor_of_the_same_name_in_a_hook(source, tf_logs):
    # The other order: the eager program goes on with the wrapped graph's global step (no reset between), so the
    # graph is the session's own; the step's 'b' is still what LoggingTensorHook({'b': 'b'}) logs.
    _run_a_wrap_graph_program_whose_b_reads(source)
    global_step = mts.get_or_create_global_step()

    @tf.function
    def train_step():
        global_step.assign_add(1)
        return {'b': tf.constant(2.0)}

    with mts.MonitoredTrainingSession(hooks=[mts.LoggingTensorHook({'b': 'b'}, every_n_iter=1)]) as session:
        session.run(train_step)
        session.run(train_step)
    logged = [message.split(' (')[0] for message in tf_logs.messages() if message.startswith('b = ')]
    assert logged == ['b = 2.0'] * 2
