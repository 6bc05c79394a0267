"""`compat_mts.legacy.horovod`: its arguments, in process, and its collectives on one worker and on two (processes
on loopback ports, `tests/v1_programs/horovod_collectives.py`). An upgraded Horovod trainer runs in
tests/test_upgrade_programs.py. `hvd.init()` is never called in the test process, as it would start a
`MultiWorkerMirroredStrategy` there.

What Horovod gives is from its documentation (`hvd.allreduce`'s `op`, `average`, `prescale_factor` and
`postscale_factor`; `broadcast`; `broadcast_variables`): Horovod itself does not build against this TensorFlow.
"""

from __future__ import annotations

import os
import sys

import pytest
import tensorflow as tf

from compat_mts.legacy import horovod as hvd
from tests import support
from tests.test_distribute_cluster import worker_json_lines

COLLECTIVES = os.path.join(support.TESTS_DIR, 'v1_programs', 'horovod_collectives.py')


def test_distributed_optimizer_takes_a_v1_optimizer_and_says_so_of_a_keras_one():
    with pytest.raises(TypeError, match=r'takes a v1 optimizer \(tf.compat.v1.train.\*Optimizer\), got SGD'):
        hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))


def test_distributed_optimizer_names_the_reductions_it_has():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match=r"op must be one of Average, Sum \(hvd.Average, hvd.Sum\), got 'Min'"):
        hvd.DistributedOptimizer(optimizer, op=hvd.Min)
    with pytest.raises(ValueError, match=r'op=hvd.Adasum\): hvd.Adasum has no counterpart .* use hvd.Average'):
        hvd.DistributedOptimizer(optimizer, op=hvd.Adasum)
    assert hvd.DistributedOptimizer(optimizer, op=hvd.Sum).get_name() == 'DistributedGradientDescentOptimizer'


def test_horovods_other_options_are_taken_at_their_defaults_and_refused_otherwise():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    hvd.DistributedOptimizer(optimizer, backward_passes_per_step=1, sparse_as_dense=False, compression=None)
    with pytest.raises(ValueError, match=r'backward_passes_per_step=4\) is not supported .* leave it at 1'):
        hvd.DistributedOptimizer(optimizer, backward_passes_per_step=4)
    with pytest.raises(TypeError, match="unexpected argument 'learning_rate'"):
        hvd.DistributedOptimizer(optimizer, learning_rate=0.1)


def test_rank_and_size_before_init_say_to_call_init_first():
    for function in (hvd.rank, hvd.size, hvd.local_rank, hvd.local_size):
        with pytest.raises(ValueError, match=r'hvd.init\(\) must be called first'):
            function()


def test_the_broadcast_hook_takes_a_worker_index():
    with pytest.raises(ValueError, match=r"root_rank must be a worker index \(an int\), got '0'"):
        hvd.BroadcastGlobalVariablesHook('0')


def test_allreduce_names_what_it_takes_before_it_builds_anything():
    with pytest.raises(ValueError, match=r'allreduce takes `average` or `op`, not both'):
        hvd.allreduce(tf.constant(1.0), average=True, op=hvd.Sum)
    with pytest.raises(
        ValueError, match=r"op must be one of Average, Sum, Min, Max, Product \(hvd.Average, ...\), got 'Mean'"
    ):
        hvd.allreduce(tf.constant(1.0), op='Mean')
    with pytest.raises(ValueError, match=r'allreduce\(op=hvd.Adasum\): hvd.Adasum has no counterpart'):
        hvd.allreduce(tf.constant(1.0), op=hvd.Adasum)
    with pytest.raises(ValueError, match=r"allreduce\(compression='fp16'\) is not supported .* leave it out"):
        hvd.allreduce(tf.constant(1.0), compression='fp16')


def _run_workers(workers: int) -> list[dict]:
    """`horovod_collectives.py` once per worker (with TF_CONFIG when several); each worker's JSON line."""
    return worker_json_lines(lambda index: [sys.executable, COLLECTIVES], workers, timeout=300)


@pytest.mark.slow
def test_the_collectives_on_one_worker_give_its_own_values():
    [alone] = _run_workers(1)
    value = [1.0, 10.0]
    assert (alone['rank'], alone['size']) == (0, 1)
    for name in ('average', 'average_true', 'average_false', 'sum', 'min', 'max', 'product', 'from_last'):
        assert alone[name] == value, name
    assert alone['scaled_sum'] == [0.5, 5.0]  # value * 2 * 0.25
    assert alone['w_after_broadcast_variables'] == [0.0, 0.0]
    assert alone['w_v_after_broadcast_global_variables'] == [[0.0, 0.0], 101.0]


@pytest.mark.slow
def test_the_collectives_on_two_workers_give_every_worker_the_reduced_or_broadcast_values():
    first, second = _run_workers(2)
    assert [(first['rank'], first['size']), (second['rank'], second['size'])] == [(0, 2), (1, 2)]
    # The workers' values: [1, 10] on rank 0, [2, 20] on rank 1.
    expected = {
        'average': [1.5, 15.0],
        'average_true': [1.5, 15.0],
        'average_false': [3.0, 30.0],
        'sum': [3.0, 30.0],
        'min': [1.0, 10.0],
        'max': [2.0, 20.0],
        'product': [2.0, 200.0],
        'scaled_sum': [1.5, 15.0],  # (2 * [1, 10] + 2 * [2, 20]) * 0.25
        'from_last': [2.0, 20.0],  # rank 1's
        'w_after_broadcast_variables': [1.0, 1.0],  # rank 1's w
        'w_v_after_broadcast_global_variables': [[1.0, 1.0], 101.0],  # rank 0's w (rank 1's by then) and v
    }
    assert {name: first[name] for name in expected} == expected
    assert {name: second[name] for name in expected} == expected
