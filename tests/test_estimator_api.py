"""The smaller names of `tf.estimator` against TF 2.15's: parse specs, `add_metrics`, `BestExporter`, `EvalOutput`,
`build_raw_supervised_input_receiver_fn`, `call_logit_fn`.

One TF 2.15 child process (tests/tf215.py) runs `tests/estimator_programs/api_runner.py`, this process the same
calls with compat_mts: the specs, metric values, export decisions, keys, tensors and error messages must be
TF 2.15's (error messages up to the addresses of the functions they print).
"""

import json
import os
import re

import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import api_runner

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'api_runner.py')


def _without_addresses(value):
    return json.loads(re.sub(r' at 0x[0-9a-f]+', '', json.dumps(value)))


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp('api')
    (root / 'tf215').mkdir()
    (root / 'compat').mkdir()
    ours, theirs = tf215.results_beside(
        RUNNER, lambda: api_runner.results(tf, estimator, str(root / 'compat')), str(root / 'tf215'), timeout=600
    )
    return _without_addresses(ours), _without_addresses(theirs)


@pytest.mark.slow  # The TF 2.15 child process.
def test_parse_example_specs_and_their_errors_are_tf215s(both):
    ours, theirs = both
    assert ours['parse_specs'] == theirs['parse_specs']
    assert all(ours['parse_specs']['errors'])
    assert ours['parse_specs']['regressor']['y'] == ['FixedLenFeature', [3], 'float32', None]


@pytest.mark.slow  # The TF 2.15 child process.
def test_add_metrics_evaluates_tf215s_metrics_on_a_premade_estimator(both):
    ours, theirs = both
    mine, reference = ours['add_metrics'], theirs['add_metrics']
    assert sorted(mine['evaluate']) == sorted(reference['evaluate'])
    assert {'mae', 'saves', 'average_loss'} <= set(mine['evaluate'])
    for key, value in reference['evaluate'].items():
        assert mine['evaluate'][key] == pytest.approx(value, rel=1e-4), key
    assert mine['model_dir'] is reference['model_dir'] is True
    assert mine['error'] == reference['error']


@pytest.mark.slow  # The TF 2.15 child process.
def test_best_exporter_exports_the_evaluations_tf215_exported(both):
    ours, theirs = both
    assert ours['best_exporter'] == theirs['best_exporter']
    decisions = [exported for _, exported in ours['best_exporter']['exported']]
    assert True in decisions and False in decisions  # The learning rate makes the loss fall, then rise.
    assert ours['best_exporter']['kept'] == 2


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('part', ['eval_output', 'eval_output_errors', 'receivers', 'call_logit_fn'])
def test_export_outputs_receivers_and_logit_fns_are_tf215s(both, part):
    ours, theirs = both
    assert ours['graph_names'][part] == theirs['graph_names'][part]


def test_eval_output_refuses_keras_metrics_naming_what_it_takes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r'must be a \(value, update_op\) pair of tf.compat.v1.metrics'):
            estimator.export.EvalOutput(metrics={'auc': tf.keras.metrics.AUC()})


def test_eval_output_outputs_are_its_three_parts():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        output = estimator.export.EvalOutput(
            loss=loss, predictions={'y': loss}, metrics=tf.compat.v1.metrics.mean(loss)
        )
        assert sorted(output.outputs) == ['loss', 'metrics/update_op', 'metrics/value', 'predictions/y']
