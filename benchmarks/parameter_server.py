"""Steps/s of a v1 ps/worker program on compat_mts with 2 workers against 1, on the same model.

Each measurement is a local cluster on loopback ports: one ps task and W workers (servers that join, started as
copies of this script), and a chief that runs the v1 graph code under `compat_mts.parameter_server_strategy`
with `MonitoredTrainingSession` and its default hooks. The model is an MLP (256 -> 512 -> 512 -> 1, ReLU) on a
batch of 256 computed in the graph, trained by v1's `GradientDescentOptimizer` placed by `replica_device_setter`,
so that a step is mostly the workers' compute. Every `sess.run(train_op)` schedules `--steps-per-run` steps on a
worker and returns without waiting for them.

A chief warms up (tracing, the first runs) for `--warmup` runs, then counts the global step (read from the ps
task) over `--seconds` of wall clock while its loop keeps scheduling; steps/s is (steps after - steps before) /
elapsed, once every scheduled step has finished. Measurements alternate between W=1 and W=2 for `--rounds`
rounds, so that a change in the machine's load hits both alike; reported are each W's median and range, and
the ratio of the medians. Every process of both clusters shares the machine's cores: on a machine with fewer
cores than processes, a second worker competes with the first one (and with the chief and the ps task) for them.

Run: `PYTHONPATH=. python benchmarks/parameter_server.py`
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(('', 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def serve(cluster: dict, job: str, index: int) -> None:
    import tensorflow as tf

    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=index, protocol='grpc')
    print('serving', flush=True)
    server.join()


def chief(cluster: dict, steps_per_run: int, warmup: int, seconds: float) -> None:
    import tensorflow as tf
    import compat_mts as mts
    from compat_mts.core import global_step as global_step_lib
    from compat_mts import legacy
    from compat_mts.deploy import parameter_server

    spec = tf.train.ClusterSpec(cluster)
    mts.parameter_server_strategy(spec, steps_per_run=steps_per_run)
    scheduler = parameter_server.current()
    with tf.Graph().as_default():
        with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(cluster=spec)):
            global_step = tf.compat.v1.train.get_or_create_global_step()
            features = tf.random.stateless_normal([256, 256], seed=[1, 2])
            labels = tf.reduce_sum(features, axis=1, keepdims=True)
            hidden = features
            for index, width in enumerate((512, 512)):
                weights = tf.compat.v1.get_variable(f'w{index}', [hidden.shape[1], width])
                hidden = tf.nn.relu(tf.matmul(hidden, weights))
            output = tf.matmul(hidden, tf.compat.v1.get_variable('w_out', [512, 1]))
            loss = tf.reduce_mean(tf.square(output - labels))
            train_op = tf.compat.v1.train.GradientDescentOptimizer(1e-4).minimize(loss, global_step=global_step)
        with mts.MonitoredTrainingSession() as sess:
            with global_step_lib.outside_graph_mode():
                step_variable = legacy.wrapped_graph_of_global_step().global_step
            for _ in range(warmup):
                sess.run(train_op)
            with global_step_lib.outside_graph_mode():
                scheduler.finish()
                before, started = int(step_variable.numpy()), time.perf_counter()
            while time.perf_counter() - started < seconds:
                sess.run(train_op)
            with global_step_lib.outside_graph_mode():
                scheduler.finish()
                elapsed, after = time.perf_counter() - started, int(step_variable.numpy())
    print(
        json.dumps({'steps': after - before, 'seconds': elapsed, 'steps_per_sec': (after - before) / elapsed}),
        flush=True,
    )


def measure(workers: int, args) -> float:
    """Starts a cluster of one ps task and `workers` workers, runs its chief, returns its steps/s."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    for _ in range(3):  # Again on other ports if one was taken before its task could bind it.
        ports = free_ports(2 + workers)
        cluster = {
            'chief': [f'localhost:{ports[0]}'],
            'ps': [f'localhost:{ports[1]}'],
            'worker': [f'localhost:{port}' for port in ports[2:]],
        }
        tasks = [
            subprocess.Popen(
                [sys.executable, __file__, '--serve', json.dumps(cluster), job, str(index)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for job, index in [('ps', 0)] + [('worker', index) for index in range(workers)]
        ]
        try:
            if not all(task.stdout.readline().strip() == 'serving' for task in tasks):
                continue
            result = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    '--chief',
                    json.dumps(cluster),
                    str(args.steps_per_run),
                    str(args.warmup),
                    str(args.seconds),
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            lines = [line for line in result.stdout.splitlines() if line.startswith('{')]
            if lines:
                return json.loads(lines[-1])['steps_per_sec']
            print(result.stderr[-3000:], file=sys.stderr)
        finally:
            for task in tasks:
                task.kill()
                task.wait()
    raise RuntimeError(f'the cluster with {workers} worker(s) did not run')


def main() -> None:
    if sys.argv[1:2] == ['--serve']:
        serve(json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    if sys.argv[1:2] == ['--chief']:
        chief(json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--steps-per-run', type=int, default=10)
    args = parser.parse_args()
    results: dict[int, list[float]] = {1: [], 2: []}
    for round_index in range(args.rounds):
        for workers in (1, 2) if round_index % 2 == 0 else (2, 1):
            results[workers].append(measure(workers, args))
            print(f'round {round_index + 1}: {workers} worker(s): {results[workers][-1]:.1f} steps/s', flush=True)
    print(f'\ncpu cores: {os.cpu_count()}, load average before the end: {os.getloadavg()[0]:.2f}')
    print('| workers | steps/s (median) | range |')
    print('|---|---|---|')
    for workers, values in results.items():
        print(f'| {workers} | {statistics.median(values):.1f} | {min(values):.1f}-{max(values):.1f} |')
    print(f'\n2 workers / 1 worker: {statistics.median(results[2]) / statistics.median(results[1]):.2f}x')


if __name__ == '__main__':
    main()
