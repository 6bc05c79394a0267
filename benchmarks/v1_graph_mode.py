"""Variant 4 of `session_overhead.py`: the workload in v1 graph mode under the real v1 `MonitoredTrainingSession`.

The program is written the TF1 way: eager execution off, the model built from `tf.compat.v1` variables
and constants, `GradientDescentOptimizer(...).minimize(loss, global_step=...)`, a
`tf.compat.v1.summary.scalar`, and `tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=...)` with
its defaults (summaries and `global_step/sec` every 100 steps, a checkpoint every 600 s), looping on
`session.run(train_op)`. It runs in its own process because eager execution cannot be turned off in a
process that already executed eagerly.

Two ways to run it:

- alone: `python benchmarks/v1_graph_mode.py --steps 2000 --repeats 5` prints one JSON object with the
  median per-step time and step percentiles;
- as `session_overhead.py`'s child (`--serve`): it builds the graph, prints `{"ready": ...}`, then for
  each `run` line read on stdin times one repeat and prints its result as one JSON line, so that the
  parent can interleave v1 repeats with its own variants. Only JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # Before TensorFlow is imported: no C++ info on stderr.

import numpy as np
import tensorflow as tf

import workload


def build_train_op() -> tf.Operation:
    """Builds the workload in the default graph, v1 style; returns `train_op`."""
    global_step = tf.compat.v1.train.get_or_create_global_step()
    features, targets = (tf.constant(array) for array in workload.synthetic_batch())
    weights = {
        name: tf.compat.v1.get_variable(name, initializer=value) for name, value in workload.initial_weights().items()
    }
    hidden = tf.nn.relu(tf.matmul(features, weights['kernel_1']) + weights['bias_1'])
    predictions = tf.matmul(hidden, weights['kernel_2']) + weights['bias_2']
    loss = tf.reduce_mean(tf.square(predictions - targets))
    tf.compat.v1.summary.scalar('loss', loss)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(workload.LEARNING_RATE)
    return optimizer.minimize(loss, global_step=global_step)


def run_repeat(train_op: tf.Operation, checkpoint_dir: str, warmup_steps: int, steps: int) -> dict:
    """One v1 session with default hooks: `warmup_steps` untimed runs, then `steps` timed ones."""
    with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir) as session:
        for _ in range(warmup_steps):
            session.run(train_op)
        timing = workload.time_steps_with_cpu(lambda: session.run(train_op), steps)
        global_step = int(session.run(tf.compat.v1.train.get_global_step()))
    return {**timing, 'step_times_s': timing['step_times_s'].tolist(), 'global_step': global_step}


def _print_json(value: dict) -> None:
    sys.stdout.write(json.dumps(value) + '\n')
    sys.stdout.flush()


def serve(train_op: tf.Operation, checkpoint_dir: str, warmup_steps: int, steps: int) -> None:
    """Answers each `run` line on stdin with one timed repeat, until `quit` or end of input."""
    _print_json({'ready': True, 'tensorflow': tf.__version__})
    for line in sys.stdin:
        command = line.strip()
        if command == 'quit':
            return
        if command != 'run':
            raise SystemExit(f'v1_graph_mode.py --serve: unknown command {command!r} (expected run or quit).')
        _print_json(run_repeat(train_op, checkpoint_dir, warmup_steps, steps))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=2000, help='timed steps per repeat (default: %(default)s)')
    parser.add_argument(
        '--warmup', type=int, default=100, help='untimed steps at the start of each repeat (default: %(default)s)'
    )
    parser.add_argument('--repeats', type=int, default=5, help='repeats when run alone (default: %(default)s)')
    parser.add_argument(
        '--serve', action='store_true', help="time one repeat per 'run' line on stdin (session_overhead.py's protocol)"
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.repeats < 1:
        parser.error('--steps and --repeats must be positive and --warmup non-negative.')

    tf.compat.v1.disable_eager_execution()
    train_op = build_train_op()
    checkpoint_dir = tempfile.mkdtemp(prefix='v1_graph_mode_')
    try:
        if args.serve:
            serve(train_op, checkpoint_dir, args.warmup, args.steps)
            return
        repeats = [run_repeat(train_op, checkpoint_dir, args.warmup, args.steps) for _ in range(args.repeats)]
        step_times = np.concatenate([repeat['step_times_s'] for repeat in repeats])
        _print_json(
            {
                'variant': 'v1_graph_mode',
                'tensorflow': tf.__version__,
                **workload.summarize_step_times(
                    [repeat['mean_step_s'] for repeat in repeats],
                    step_times,
                    [repeat['cpu_step_s'] for repeat in repeats],
                ),
            }
        )
    finally:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)


if __name__ == '__main__':
    main()
