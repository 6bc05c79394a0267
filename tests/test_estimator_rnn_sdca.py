"""`experimental.RNNClassifier`/`RNNEstimator` and `LinearSDCA` against TF 2.15's `tf.estimator`.

One TF 2.15 child process (tests/tf215.py) runs `tests/estimator_programs/rnn_sdca_runner.py`, then this process
runs the same programs with compat_mts, training on from the child's checkpoints: the variables' names and
shapes, the weights, predictions and metrics, the SDCA example-state tables and the errors are compared.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import rnn_sdca_runner

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'rnn_sdca_runner.py')


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp('rnn_sdca')
    (root / 'tf215').mkdir()
    (root / 'compat').mkdir()
    child = tf215.run(RUNNER, str(root / 'tf215'))
    assert child.returncode == 0, child.stderr[-3000:]
    theirs = json.loads(child.stdout.split('RESULTS:', 1)[1])
    ours = rnn_sdca_runner.results(tf, estimator, str(root / 'compat'), str(root / 'tf215'))
    return json.loads(json.dumps(ours)), theirs


def assert_close(ours, theirs, rtol, atol):
    """Equal structure and strings; numbers equal within `rtol`/`atol`."""
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for key in theirs:
            assert_close(ours[key], theirs[key], rtol, atol)
    elif isinstance(theirs, list) and theirs and isinstance(theirs[0], (dict, str)):
        assert len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            assert_close(mine, reference, rtol, atol)
    elif isinstance(theirs, (list, float, int)) and not isinstance(theirs, bool):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    else:
        assert ours == theirs


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['lstm_classifier', 'gru_regression'])
def test_rnn_estimators_have_tf215s_variables(both, scenario):
    ours, theirs = both
    assert ours['rnn'][scenario]['variables'] == theirs['rnn'][scenario]['variables']


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['lstm_classifier', 'gru_regression'])
def test_rnn_estimators_train_on_from_tf215s_checkpoint_to_its_weights_predictions_and_metrics(both, scenario):
    ours, theirs = both
    assert_close(ours['rnn'][scenario]['trained_on'], theirs['rnn'][scenario]['trained_on'], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # The TF 2.15 child process.
def test_rnn_estimators_raise_tf215s_errors(both):
    ours, theirs = both
    assert ours['rnn']['errors'] == theirs['rnn']['errors']


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['classifier', 'regressor'])
def test_linear_sdca_has_tf215s_variables_and_example_tables(both, scenario):
    ours, theirs = both
    mine, reference = ours['sdca'][scenario], theirs['sdca'][scenario]
    assert mine['variables'] == reference['variables']
    assert [keys for keys, _ in mine['tables']] == [keys for keys, _ in reference['tables']]
    for (_, values), (_, reference_values) in zip(mine['tables'], reference['tables']):
        np.testing.assert_allclose(values, reference_values, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['classifier', 'regressor'])
@pytest.mark.parametrize('run', ['fresh', 'resumed'])
def test_linear_sdca_trains_to_tf215s_weights_predictions_and_metrics(both, scenario, run):
    ours, theirs = both
    mine, reference = ours['sdca'][scenario], theirs['sdca'][scenario]
    if run == 'resumed':  # Trained on from TF 2.15's checkpoint, its tables included.
        mine, reference = mine['resumed'], reference['resumed']
    for key in ('weights', 'predictions', 'metrics'):
        assert_close(mine[key], reference[key], rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # The TF 2.15 child process.
def test_linear_sdca_raises_tf215s_errors(both):
    ours, theirs = both
    assert ours['sdca']['errors'] == theirs['sdca']['errors']


def test_rnn_estimator_refuses_return_sequences_saying_why():
    tokens = tf.feature_column.sequence_categorical_column_with_identity('tokens', num_buckets=5)
    with pytest.raises(ValueError, match='return_sequences=True.*sequential head'):
        estimator.experimental.RNNClassifier([tf.feature_column.embedding_column(tokens, 2)], return_sequences=True)
    with pytest.raises(
        ValueError, match=r'^Provided head must be a `_SequentialHead` object when `return_sequences` is set to True\. '
    ):  # TF 2.15's message for a head given to RNNEstimator, which no head here is.
        estimator.experimental.RNNEstimator(
            estimator.MultiClassHead(3), [tf.feature_column.embedding_column(tokens, 2)], return_sequences=True
        )
