"""Under `MirroredStrategy`, a v1 `Saver`'s restore is ready or not ready as TF 2.15's was, naming each variable once.

Keras 3 layers built under a strategy list each replica's copy of a variable in the graph's collections beside
the strategy's variable, so a `Saver(var_list=tf.compat.v1.global_variables())` holds the copies: it restores every
replica's copy under the variable's name and the session is ready, as it is by v1's own readiness report
(`report_uninitialized_variables`) of those collections; a `Saver` that leaves a layer out is not ready,
naming that layer's variables once, not once per replica. compat_mts runs on two logical CPUs, TF 2.15 on one
device (its own MirroredStrategy Estimator does not finish a step on two logical CPUs); every batch is the same, so
the numbers are one device's (`tests/estimator_programs/replica_readiness.py`).
"""

from __future__ import annotations

import concurrent.futures
import json
import os

import pytest

from tests import support
from tests import tf215

PROGRAM = os.path.join(support.TESTS_DIR, 'estimator_programs', 'replica_readiness.py')


def _results(process):
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.split('RESULTS:', 1)[1])


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp('replica_readiness')
    (root / 'compat').mkdir()
    (root / 'tf215').mkdir()
    tf215.python()  # Made (or skipped) here, not in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        ours = pool.submit(support.run_python, PROGRAM, 'compat', str(root / 'compat'), timeout=600)
        theirs = pool.submit(tf215.run, PROGRAM, 'tf215', str(root / 'tf215'), timeout=600)
        return _results(ours.result()), _results(theirs.result())


@pytest.mark.slow
@pytest.mark.parametrize('saver', ['all', 'ready_op'])
def test_a_restored_model_is_ready_with_every_replicas_copy_restored(results, saver):
    ours, theirs = results
    assert ours[saver] == theirs[saver]
    assert ours[saver]['variables'] == ['global_step', 'hidden/bias', 'hidden/kernel', 'logits/bias', 'logits/kernel']


@pytest.mark.slow
def test_a_saver_leaving_a_layer_out_is_not_ready_naming_each_variable_once_as_tf215(results):
    ours, theirs = results
    assert ours['part'] == theirs['part']
    assert ours['part']['train'][2] == 'Variables not initialized: logits/kernel, logits/bias'
