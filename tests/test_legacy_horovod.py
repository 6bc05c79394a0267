"""`compat_mts.legacy.horovod`'s arguments, in process. Its runs (one worker, two workers on loopback ports) are in
tests/test_upgrade_programs.py, on an upgraded Horovod trainer; `hvd.init()` is never called here, as it would
start a `MultiWorkerMirroredStrategy` in the test process."""

from __future__ import annotations

import pytest
import tensorflow as tf

from compat_mts.legacy import horovod as hvd


def test_distributed_optimizer_takes_a_v1_optimizer_and_says_so_of_a_keras_one():
    with pytest.raises(TypeError, match=r'takes a v1 optimizer \(tf.compat.v1.train.\*Optimizer\), got SGD'):
        hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))


def test_distributed_optimizer_names_the_reductions_it_has():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match=r"op must be one of Average, Sum \(hvd.Average, hvd.Sum\), got 'Adasum'"):
        hvd.DistributedOptimizer(optimizer, op='Adasum')
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
