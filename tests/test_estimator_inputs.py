"""`compat_mts.estimator.inputs` against TF 2.15's `tf.compat.v1.estimator.inputs`, scenario by scenario.

One TF 2.15 child process (tests/tf215.py) runs `tests/estimator_programs/inputs_runner.py`; this process runs
the same scenarios with compat_mts (its `MonitoredTrainingSession` drains the v1 graphs, its `Estimator`
trains on the input functions). In order (`shuffle=False`) the batches, their static shapes and dtypes, the
end of the input and the Estimator's weights, metrics and predictions are TF 2.15's exactly. Shuffled, and
with two reader threads (whose interleaving v1 left to its threads), the orders differ, so what is compared is
what v1 fixed: each row read `num_epochs` times, the batch sizes, the end. The pandas scenarios run when
pandas is installed on both sides.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts
import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import inputs_runner

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'inputs_runner.py')


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp('inputs')
    session = compat_mts.MonitoredTrainingSession
    return tf215.results_beside(
        RUNNER,
        lambda: inputs_runner.results(tf, estimator, estimator.inputs, session, str(root / 'compat')),
        str(root / 'tf215'),
        timeout=600,
    )


def _columns(batch):
    """The columns of a batch: a features dict (by key), or `[features, targets]`."""
    if isinstance(batch, dict):
        return [column for key in sorted(batch) for column in _columns(batch[key])]
    if isinstance(batch[0], dict):
        return _columns(batch[0]) + _columns(batch[1])
    return [batch]


def _rows(drained):
    """The rows of every batch, as sorted tuples of their values (features, then targets)."""
    return sorted(row for batch in drained['batches'] for row in zip(*_columns(batch)))


def _sizes(drained):
    return [len(_columns(batch)[0]) for batch in drained['batches']]


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['dict_in_order', 'array_no_target', 'dict_target', 'forever'])
def test_numpy_batches_in_order_are_tf215s(both, scenario):
    ours, theirs = both
    assert ours['numpy'][scenario] == theirs['numpy'][scenario]
    assert len(ours['numpy'][scenario]['batches']) > 1


@pytest.mark.slow  # The TF 2.15 child process.
def test_numpy_reads_epochs_as_one_stream_and_ends_with_out_of_range(both):
    ours, _ = both
    drained = ours['numpy']['dict_in_order']
    assert _sizes(drained) == [4, 4, 4, 4, 4]  # 2 epochs of 10 rows: a batch straddles the epochs, as in v1.
    assert drained['batches'][2][0]['a'] == [8.0, 9.0, 0.0, 1.0]
    assert drained['ended'] == 'OutOfRangeError'
    assert drained['shapes'] == [{'a': [None], 'b': [None]}, [None]]
    assert ours['numpy']['forever']['shapes'] == [{'a': [4], 'b': [4]}, [4]]  # v1's dequeue_many.


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['shuffled', 'two_threads'])
def test_numpy_shuffled_or_threaded_reads_each_row_as_often_in_batches_of_tf215s_sizes(both, scenario):
    ours, theirs = both
    mine, reference = ours['numpy'][scenario], theirs['numpy'][scenario]
    assert _rows(mine) == _rows(reference)
    assert _sizes(mine) == _sizes(reference)
    assert (mine['ended'], mine['shapes'], mine['dtypes']) == (
        reference['ended'],
        reference['shapes'],
        reference['dtypes'],
    )
    if scenario == 'shuffled':
        assert [row for batch in mine['batches'] for row in batch[1]] != sorted(range(20, 30)) * 3


def _first_column_under_seed(seed):
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(seed)
        features = estimator.inputs.numpy_input_fn({'a': np.arange(20)}, batch_size=5, shuffle=True, queue_capacity=8)()
        with compat_mts.MonitoredTrainingSession() as session:
            return [session.run(features['a']).tolist() for _ in range(4)]


def test_a_graph_seed_repeats_the_shuffled_order():
    first = _first_column_under_seed(7)
    assert first == _first_column_under_seed(7)
    assert sorted(sum(first, [])) == list(range(20)) and sum(first, []) != list(range(20))


@pytest.mark.slow  # The TF 2.15 child process.
def test_numpy_errors_are_tf215s(both):
    ours, theirs = both
    assert ours['numpy']['errors'] == theirs['numpy']['errors']
    assert all(ours['numpy']['errors'])


@pytest.mark.slow  # The TF 2.15 child process.
def test_an_estimator_trains_evaluates_and_predicts_on_numpy_input_fns_as_tf215(both):
    ours, theirs = both
    mine, reference = ours['estimator'], theirs['estimator']
    assert mine['trained_in_order'][0] == reference['trained_in_order'][0] == 5  # 2 epochs of 40 rows, 16 a batch.
    np.testing.assert_allclose(mine['trained_in_order'][1], reference['trained_in_order'][1], rtol=1e-5)
    np.testing.assert_allclose(mine['trained_in_order'][2], reference['trained_in_order'][2], rtol=1e-5, atol=1e-7)
    assert sorted(mine['evaluate']) == sorted(reference['evaluate'])
    for key, value in reference['evaluate'].items():
        assert mine['evaluate'][key] == pytest.approx(value, rel=1e-5), key
    np.testing.assert_allclose([p['y'] for p in mine['predict']], [p['y'] for p in reference['predict']], rtol=1e-5)
    assert mine['steps_after_shuffled_epochs'] == reference['steps_after_shuffled_epochs'] == 10


def _pandas_pair(both):
    ours, theirs = both
    if ours['pandas'] is None or theirs['pandas'] is None:
        pytest.skip('pandas is not installed here or in the TF 2.15 virtualenv')
    return ours['pandas'], theirs['pandas']


@pytest.mark.slow  # The TF 2.15 child process.
def test_pandas_batches_in_order_and_errors_are_tf215s(both):
    ours, theirs = _pandas_pair(both)
    assert ours['series_in_order'] == theirs['series_in_order']
    assert ours['frame_target'] == theirs['frame_target']
    # The DataFrame's columns are printed by pandas, whose versions differ in the dtype they show.
    assert [(kind, message.split('Index(')[0]) for kind, message in ours['errors']] == [
        (kind, message.split('Index(')[0]) for kind, message in theirs['errors']
    ]


@pytest.mark.slow  # The TF 2.15 child process.
def test_pandas_shuffled_reads_each_row_as_often_as_tf215(both):
    ours, theirs = _pandas_pair(both)
    assert _rows(ours['no_target_default_capacity']) == _rows(theirs['no_target_default_capacity'])
    assert _sizes(ours['no_target_default_capacity']) == _sizes(theirs['no_target_default_capacity'])


@pytest.mark.parametrize(
    'arguments, message',
    [
        ({'batch_size': 0}, '`batch_size` must be an integer > 0, got 0.'),
        ({'num_epochs': 0}, '`num_epochs` must be None or an integer > 0, got 0.'),
        ({'queue_capacity': -1}, '`queue_capacity` must be an integer > 0, got -1.'),
        ({'num_threads': 0}, '`num_threads` must be an integer > 0, got 0.'),
    ],
)
def test_counts_that_are_not_positive_are_refused_naming_the_argument(arguments, message):
    with pytest.raises(ValueError) as raised:
        estimator.inputs.numpy_input_fn({'a': np.arange(3)}, shuffle=False, **arguments)
    assert str(raised.value) == message


def test_a_count_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match='`batch_size` must be an integer > 0'):
        estimator.inputs.numpy_input_fn({'a': np.arange(3)}, shuffle=False, batch_size=2.5)


def test_the_input_fn_called_eagerly_says_where_it_runs():
    input_fn = estimator.inputs.numpy_input_fn({'a': np.arange(3)}, shuffle=False)
    with pytest.raises(RuntimeError, match='pass it to an Estimator'):
        input_fn()


def test_the_input_fn_feeds_a_wrapped_graph():
    def build():
        features = estimator.inputs.numpy_input_fn({'a': np.arange(5)}, batch_size=2, shuffle=False)()
        return features['a']

    batch = compat_mts.wrap_graph(build).outputs
    with compat_mts.MonitoredTrainingSession() as session:
        values = [session.run(batch).tolist() for _ in range(3)]
        with pytest.raises(tf.errors.OutOfRangeError):
            session.run(batch)
    assert values == [[0, 1], [2, 3], [4]]
