"""Per-step cost of a `wrap_graph` program under compat_mts against the same graph under v1 graph-mode MTS.

The same v1 graph code runs in two ways, in this one process, so that both see the same machine load:

1. `v1`: built in a plain `tf.Graph` and run, inside `graph.as_default()` (graph mode), by the real
   `tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=...)` with its defaults (summaries and
   `global_step/sec` every 100 steps, a checkpoint every 600 s), looping on `session.run(...)`;
2. `compat`: built by `compat_mts.wrap_graph(build_fn)` and run eagerly by
   `compat_mts.MonitoredTrainingSession(checkpoint_dir=...)` with the same defaults and the same loop.

Two graphs (`workload.py`'s tiny MLP, 32 -> 64 -> 1, batch 32, SGD, with a `tf.compat.v1.summary.scalar`):

- `constant`: the batch is a constant of the graph (`v1_graph_mode.build_train_op`); the loop runs
  `session.run(train_op)`;
- `fed`: the batch comes through placeholders; the loop runs
  `session.run([train_op, loss], feed_dict={x: features, y: targets})`, the usual v1 pattern.

Per graph, both sessions stay open side by side. After `--warmup` untimed steps each, the sides take turns
running blocks of `--block` steps (v1 first in even blocks, compat first in odd ones), so that the two see
the same machine load within a fraction of a second. Each block is timed by the wall clock and by the
process's CPU time (all threads, TensorFlow's included). A graph's ratio is the median over blocks of
(compat block time / v1 block time), the paired blocks being adjacent in time; CPU time is the steadier
measure on a machine shared with other work, wall time the one a user sees.

Run: `PYTHONPATH=. python benchmarks/legacy_overhead.py [--steps 1000] [--rounds 15] [--out results.json]`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # Before TensorFlow is imported: no C++ info on stderr.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
import tensorflow as tf

import v1_graph_mode
import workload

GRAPHS = ('constant', 'fed')


def build_fed_graph():
    """The workload with its batch fed through placeholders; returns `(x, y, loss, train_op)`."""
    global_step = tf.compat.v1.train.get_or_create_global_step()
    x = tf.compat.v1.placeholder(tf.float32, [None, workload.INPUT_SIZE], name='x')
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name='y')
    weights = {
        name: tf.compat.v1.get_variable(name, initializer=value) for name, value in workload.initial_weights().items()
    }
    hidden = tf.nn.relu(tf.matmul(x, weights['kernel_1']) + weights['bias_1'])
    predictions = tf.matmul(hidden, weights['kernel_2']) + weights['bias_2']
    loss = tf.reduce_mean(tf.square(predictions - y), name='loss')
    tf.compat.v1.summary.scalar('loss', loss)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(workload.LEARNING_RATE).minimize(
        loss, global_step=global_step
    )
    return x, y, loss, train_op


def step_function(graph_name: str, outputs, session):
    """The loop body of `graph_name` for `session`, given what the build function returned."""
    if graph_name == 'constant':
        train_op = outputs
        return lambda: session.run(train_op)
    x, y, loss, train_op = outputs
    features, targets = workload.synthetic_batch()
    return lambda: session.run([train_op, loss], feed_dict={x: features, y: targets})


def time_block(run_step, steps: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) per step over `steps` runs of `run_step`."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        run_step()
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def build_v1(graph_name: str):
    """Builds `graph_name` in a new plain graph, as the v1 program would; returns (graph, outputs)."""
    graph = tf.Graph()
    with graph.as_default():
        outputs = v1_graph_mode.build_train_op() if graph_name == 'constant' else build_fed_graph()
    return graph, outputs


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--block', type=int, default=100, help='steps per timed block (default: %(default)s)')
    parser.add_argument('--blocks', type=int, default=60, help='timed blocks per side (default: %(default)s)')
    parser.add_argument('--warmup', type=int, default=300, help='untimed steps per side (default: %(default)s)')
    parser.add_argument('--out', help='also write the results as JSON to this file')
    args = parser.parse_args(argv)
    if args.block < 1 or args.blocks < 1 or args.warmup < 0:
        parser.error('--block and --blocks must be positive and --warmup non-negative.')

    import compat_mts as mts

    results = {
        'tensorflow': tf.__version__,
        'block': args.block,
        'blocks': args.blocks,
        'warmup': args.warmup,
        'graphs': {},
    }
    for graph_name in GRAPHS:
        directories = [tempfile.mkdtemp(prefix=f'legacy_overhead_{side}_{graph_name}_') for side in ('v1', 'compat')]
        graph, v1_outputs = build_v1(graph_name)
        mts.reset_global_step()
        wrapped = mts.wrap_graph(v1_graph_mode.build_train_op if graph_name == 'constant' else build_fed_graph)
        times = {'v1': [], 'compat': []}
        try:
            with graph.as_default():
                v1_session = tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=directories[0])
            compat_session = mts.MonitoredTrainingSession(checkpoint_dir=directories[1])
            v1_step = step_function(graph_name, v1_outputs, v1_session)
            compat_step = step_function(graph_name, wrapped.outputs, compat_session)

            def time_v1(steps: int) -> tuple[float, float]:
                with graph.as_default():  # Graph mode, as the v1 program ran.
                    return time_block(v1_step, steps)

            def time_compat(steps: int) -> tuple[float, float]:
                return time_block(compat_step, steps)

            time_v1(args.warmup)
            time_compat(args.warmup)
            for block in range(args.blocks):
                sides = [('v1', time_v1), ('compat', time_compat)]
                for side, run in sides if block % 2 == 0 else reversed(sides):
                    times[side].append(run(args.block))
            with graph.as_default():
                v1_session.close()
            compat_session.close()
        finally:
            for directory in directories:
                shutil.rmtree(directory, ignore_errors=True)
        v1_wall, v1_cpu = np.array(times['v1']).T
        compat_wall, compat_cpu = np.array(times['compat']).T
        results['graphs'][graph_name] = {
            'v1_median_step_us': float(np.median(v1_wall) * 1e6),
            'compat_median_step_us': float(np.median(compat_wall) * 1e6),
            'median_ratio_wall': float(np.median(compat_wall / v1_wall)),
            'v1_median_step_cpu_us': float(np.median(v1_cpu) * 1e6),
            'compat_median_step_cpu_us': float(np.median(compat_cpu) * 1e6),
            'median_ratio_cpu': float(np.median(compat_cpu / v1_cpu)),
        }
        print(
            f'{graph_name}: ' + ', '.join(f'{key} {value:.3f}' for key, value in results['graphs'][graph_name].items()),
            flush=True,
        )
    print(json.dumps(results, indent=2))
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as out:
            json.dump(results, out, indent=2)
    return results


if __name__ == '__main__':
    main()
