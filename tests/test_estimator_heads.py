"""The heads (`BinaryClassHead`, ..., `MultiHead`) and the Estimators taking one, against TF 2.15's.

tests/estimator_programs/heads_runner.py runs the same cases on both sides, on constant starting weights: each
head in a custom `model_fn` (weights, thresholds, a name, regularization, head weights among them; trained 3
steps, evaluated, predicted, exported), called eagerly on logits of two batch dimensions, and in a v1 graph of
the program's own, and `LinearEstimator`, `DNNLinearCombinedEstimator`, `DNNEstimator`
(warm-started from fixed weights) with a head. The metrics (keys and values), the predictions (keys and values)
and the export signatures (names, method names, input and output keys) must be TF 2.15's.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215

pytestmark = pytest.mark.slow

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'heads_runner.py')


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    """(compat_mts's results, TF 2.15's), by case."""
    root = tmp_path_factory.mktemp('heads')

    def ours():
        run = support.run_python(RUNNER, 'compat', str(root), timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        return run.stdout.split('RESULTS:', 1)[1]

    compat, reference = tf215.results_beside(RUNNER, lambda: json.loads(ours()), 'tf215', str(root))
    return compat, reference


def _close(ours, theirs):
    if isinstance(theirs, float):
        return ours == pytest.approx(theirs, rel=1e-4, abs=1e-5)
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(_close, ours, theirs))
    return ours == theirs


def _assert_same_keys_and_values(ours: dict, theirs: dict) -> None:
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        assert _close(ours[key], value), (key, ours[key], value)


CASES = ('binary', 'multi_class', 'multi_label', 'regression', 'poisson', 'logistic', 'multi_head')
ESTIMATORS = ('LinearEstimator/multi_label', 'DNNLinearCombinedEstimator/poisson', 'DNNEstimator/multi_head')


@pytest.mark.parametrize('case', CASES + ESTIMATORS)
def test_metrics_and_predictions_are_tf215s(results, case):
    compat, reference = results
    ours, theirs = compat[case], reference[case]
    _assert_same_keys_and_values(ours['metrics'], theirs['metrics'])
    _assert_same_keys_and_values(ours['predictions'], theirs['predictions'])


@pytest.mark.parametrize('case', CASES)
def test_export_signatures_are_tf215s(results, case):
    compat, reference = results
    ours = dict(compat[case]['signatures'])
    # compat_mts's exports also carry the `__saved_model_init_op` signature TF 2.15's v1 exports did not (the
    # export's difference, not the heads').
    assert ours.pop('__saved_model_init_op', None) in (None, ['', [], ['__saved_model_init_op']])
    assert ours == reference[case]['signatures']


EAGER_CASES = ('binary', 'multi_class', 'multi_label', 'regression', 'poisson', 'multi_head')


@pytest.mark.parametrize('case', EAGER_CASES)
def test_eager_heads_on_two_batch_dimensions_are_tf215s(results, case):
    """`loss`, `metrics`/`update_metrics` and `predictions` called eagerly, on logits `[2, 2, n]`, labels one rank
    short or whole, weights one rank short (a numeric column's normalizer among them); and the message for labels
    of another batch shape."""
    ours, theirs = results[0]['eager'][case], results[1]['eager'][case]
    assert _close(ours['loss'], theirs['loss']), (ours['loss'], theirs['loss'])
    _assert_same_keys_and_values(ours['metrics'], theirs['metrics'])
    _assert_same_keys_and_values(ours['predictions'], theirs['predictions'])
    assert ours.get('error') == theirs.get('error')


def test_head_spec_in_a_v1_graph_of_the_programs_own_is_tf215s(results):
    """An EVAL spec built in a `tf.Graph()` and run by a `tf.compat.v1.Session` through its scaffold's ops."""
    ours, theirs = results[0]['graph'], results[1]['graph']
    assert (ours['not_ready'], ours['saver']) == (theirs['not_ready'], theirs['saver'])
    assert _close(ours['loss'], theirs['loss'])
    _assert_same_keys_and_values(ours['metrics'], theirs['metrics'])


def test_bad_head_arguments_get_tf215s_messages():
    with pytest.raises(ValueError, match=r'n_classes must be > 2: 2\.'):
        estimator.MultiClassHead(2)
    with pytest.raises(ValueError, match=r'thresholds not in \(0, 1\)'):
        estimator.BinaryClassHead(thresholds=[1.5])
    with pytest.raises(ValueError, match='All given heads must have name specified'):
        estimator.MultiHead([estimator.RegressionHead()])
    with pytest.raises(ValueError, match='Invalid loss_reduction: none'):
        estimator.RegressionHead(loss_reduction='none')
    with pytest.raises(ValueError, match='n_classes cannot be None'):
        estimator.MultiClassHead(None)
    with pytest.raises(ValueError, match='"label_vocabulary" does not have "n_classes" items'):
        estimator.MultiClassHead(3, label_vocabulary=['a', 'b'])


def test_a_head_refuses_what_is_no_keras_optimizer_and_logits_and_labels_of_two_shapes_as_tf215():
    """TF 2.15's heads took only Keras optimizers (a v1 optimizer is a premade Estimator's, not a head's), and
    its binary head's loss in a graph raised tf.nn's message of TF 2.15 for two static shapes."""
    head = estimator.BinaryClassHead()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='The given optimizer is not a tf.keras.optimizers.Optimizer instance'):
            head.create_estimator_spec(
                {'x': np.array([[1.0]])},
                estimator.ModeKeys.TRAIN,
                np.array([[1.0], [2.0]], np.float32),
                np.array([[1.0], [0.0]]),
                optimizer=tf.compat.v1.train.AdamOptimizer(),
            )
        with pytest.raises(ValueError, match=r'^logits and labels must have the same shape \(\(2, 1\) vs \(3, 1\)\)$'):
            head.loss(np.array([[0.0], [1.0], [0.0]]), np.array([[0.0], [1.0]], np.float32))


def test_an_optimizer_defining_get_updates_is_asked_for_the_train_op():
    """As TF 2.15's heads took `optimizer.get_updates(loss, trainable_variables)[0]`."""
    calls = []

    class Optimizer(tf.keras.optimizers.SGD):
        def get_updates(self, loss, params):
            calls.append((loss, params))
            return [tf.no_op(name='my_train_op')]

    with tf.Graph().as_default():
        variable = tf.Variable([1.0])
        spec = estimator.RegressionHead().create_estimator_spec(
            {},
            estimator.ModeKeys.TRAIN,
            np.array([[1.0]]),
            np.array([[3.0]]),
            optimizer=Optimizer(0.1),
            trainable_variables=[variable],
        )
        with tf.compat.v1.Session() as session:
            passed = session.run(calls[0][0])
    assert spec.train_op.name == 'training/my_train_op'
    assert calls[0][1] == [variable]
    assert passed == 4.0
