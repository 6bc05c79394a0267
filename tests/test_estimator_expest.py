"""`compat_mts.estimator.experimental`'s builders and Estimators against TF 2.15's `tf.compat.v1.estimator`.

One TF 2.15 child process (tests/tf215.py) runs `tests/estimator_programs/expest_runner.py`, then this process
runs the same programs with compat_mts, reading the child's checkpoints where a network starts at random: the
variables' names and shapes, the predictions from the same weights, the metrics and the errors are compared.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import expest_runner

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'expest_runner.py')


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp('expest')
    (root / 'tf215').mkdir()
    (root / 'compat').mkdir()
    child = tf215.run(RUNNER, str(root / 'tf215'))
    assert child.returncode == 0, child.stderr[-3000:]
    theirs = json.loads(child.stdout.split('RESULTS:', 1)[1])
    ours = expest_runner.results(tf, estimator, str(root / 'compat'), str(root / 'tf215'))
    return json.loads(json.dumps(ours)), theirs


@pytest.mark.slow  # The TF 2.15 child process.
def test_logit_fn_builders_build_tf215s_variables_and_logits(both):
    ours, theirs = both
    assert ours['builders']['variables'] == theirs['builders']['variables']
    assert ours['builders']['logits'] == pytest.approx(theirs['builders']['logits'], rel=1e-5, abs=1e-6)
    assert ours['builders']['errors'][0] == theirs['builders']['errors'][0]
    assert theirs['builders']['errors'][1] is None and 'units must be an int' in ours['builders']['errors'][1][1]


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['full_batch_kmeans_plus_plus', 'full_batch_random_cosine', 'relative_tolerance'])
def test_kmeans_clusters_as_tf215(both, scenario):
    ours, theirs = both
    mine, reference = ours['kmeans'][scenario], theirs['kmeans'][scenario]
    assert mine['variables'] == reference['variables']
    assert ['clusters', [3, 2]] in mine['variables']
    assert mine['step'] == reference['step']
    assert mine['indices'] == reference['indices']
    np.testing.assert_allclose(mine['centers'], reference['centers'], rtol=1e-5)
    assert mine['score'] == pytest.approx(reference['score'], rel=1e-5)
    np.testing.assert_allclose(mine['distances'], reference['distances'], rtol=1e-5)


@pytest.mark.slow  # The TF 2.15 child process.
def test_mini_batch_kmeans_has_tf215s_variables(both):
    # TensorFlow's mini-batch graph reads and updates the centers without an order between the two (a race its
    # own code comments on): on a loaded machine the centers differ from run to run, on either side.
    ours, theirs = both
    mine, reference = ours['kmeans']['mini_batch'], theirs['kmeans']['mini_batch']
    assert mine['variables'] == reference['variables']
    assert mine['step'] == reference['step'] == 4
    assert len(mine['indices']) == len(reference['indices']) == 40


@pytest.mark.slow  # The TF 2.15 child process.
def test_kmeans_constants_and_errors_are_tf215s(both):
    ours, theirs = both
    assert ours['kmeans']['constants'] == theirs['kmeans']['constants']
    assert ours['kmeans']['errors'] == theirs['kmeans']['errors']


@pytest.mark.slow  # The TF 2.15 child process.
def test_tpu_embedding_config_spec_is_checked_and_trains_off_the_tpu_as_tf215(both):
    ours, theirs = both
    assert ours['tpu_embedding'] == theirs['tpu_embedding']
    mod_refused = ['ValueError', 'Mod sharding of embedding tables not supported on CPU.']
    assert theirs['tpu_embedding']['errors'][2] == mod_refused
