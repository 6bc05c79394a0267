"""`master=server.target` of a `tf.distribute.Server` the program started itself, the global step created first.

That is the order of v1's distributed trainers: the cluster and the server, the graph under a
`replica_device_setter`, then `MonitoredTrainingSession(master=server.target, is_chief=...)`. With this task alone
in the cluster the program runs as written (in-process, as v1 ran it on its own server); with other tasks it is
v1's between-graph replication, which gets an error that says what to do. Each program runs in a fresh process
(a server lives as long as its process) on a port the server picks itself.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import run_python, run_v1_and_compat

pytestmark = pytest.mark.slow  # Every test runs a program with its own server in a process.

_PROGRAM = """
import json
import sys
import tempfile
import tensorflow as tf
if sys.argv[1] == 'v1':
    tf.compat.v1.disable_eager_execution()
    train = tf.compat.v1.train
else:
    import compat_mts as train
jobs = json.loads(sys.argv[2])

cluster = tf.train.ClusterSpec(jobs)
server = tf.distribute.Server(cluster, job_name='worker', task_index=0)
with tf.Graph().as_default():
    with tf.compat.v1.device(
            tf.compat.v1.train.replica_device_setter(worker_device='/job:worker/task:0', cluster=cluster)):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        weights = tf.compat.v1.get_variable('w', initializer=[[0.0], [0.0]])
        loss = tf.reduce_mean(tf.square(tf.matmul([[1.0, 2.0]], weights) - 3.0))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
    final = train.FinalOpsHook({'step': global_step, 'w': weights})
    with train.MonitoredTrainingSession(master=server.target, is_chief=True, checkpoint_dir=tempfile.mkdtemp(),
                                        hooks=[train.StopAtStepHook(last_step=4), final]) as session:
        while not session.should_stop():
            session.run(train_op)
print(json.dumps({'step': int(final.final_ops_values['step']), 'w': final.final_ops_values['w'].tolist()}))
"""


def test_the_programs_own_server_alone_in_its_cluster_runs_as_written_as_in_v1():
    jobs = json.dumps({'worker': ['localhost:0']})
    results = {}
    for mode, result in zip(
        ('v1', 'compat'), run_v1_and_compat((_PROGRAM, 'v1', jobs), (_PROGRAM, 'compat', jobs), timeout=120)
    ):
        assert result.returncode == 0, result.stderr[-3000:]
        results[mode] = json.loads(result.stdout.splitlines()[-1])
    assert results['compat']['step'] == results['v1']['step'] == 4
    np.testing.assert_allclose(results['compat']['w'], results['v1']['w'], rtol=1e-6)


def test_the_programs_own_server_in_a_ps_worker_cluster_gets_an_error_that_says_what_to_do():
    jobs = json.dumps({'ps': ['localhost:0'], 'worker': ['localhost:0', 'localhost:0']})
    result = run_python(_PROGRAM, 'compat', jobs, timeout=120)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith('ValueError: `master`')
    assert 'in a cluster of several tasks (ps: 1 task, worker: 2 tasks)' in message
    assert "master=''" in message and 'MultiWorkerMirroredStrategy' in message


def test_a_graph_placed_on_ps_tasks_without_a_server_gets_the_same_advice():
    program = _PROGRAM.replace('master=server.target', "master=''")
    result = run_python(program, 'compat', json.dumps({'ps': ['localhost:0'], 'worker': ['localhost:0']}), timeout=120)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("ValueError: The graph places ops on the job(s) ['ps']")
    assert 'replica_device_setter' in message and 'MultiWorkerMirroredStrategy' in message
