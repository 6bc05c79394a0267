"""Per-step cost of `DNNClassifier.train`: compat_mts.estimator against TF 2.15's tf.estimator, in one run.

The iris program of tests/estimator_programs/premade_iris.py (four numeric columns, `hidden_units=[10, 10]`,
`n_classes=3`, batch 100) trains on both sides: here with `compat_mts.estimator`, and in a child process of
TF 2.15's virtualenv (tests/tf215.py makes it on first use; `--tf215-python` names another) with `tf.estimator`.
A v1 `SessionRunHook` on each side takes the time after every step; the per-step cost is the mean (and median) of
the intervals between steps, after `--warmup` steps (the graph build, the session's creation and the first,
tracing step are not part of it). The sides alternate for `--rounds` rounds, each round a fresh `train()` call
into a fresh `model_dir`, so machine load hits both alike; the ratio is the median over rounds of compat_mts's
mean step time over TF 2.15's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _step_intervals(estimator, model_dir: str, steps: int, warmup: int) -> tuple[list[float], float]:
    """Trains the iris program for `warmup + steps` steps.

    Returns:
      The `steps` last step intervals, in seconds, and the process's CPU seconds per step over them.
    """
    import tensorflow as tf

    from tests.estimator_programs import premade_iris

    times, cpu_times = [], []

    class StepTimes(tf.compat.v1.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            times.append(time.perf_counter())
            cpu_times.append(time.process_time())

    (train_x, train_y), _ = premade_iris.load_data()
    config = estimator.RunConfig(log_step_count_steps=None, save_summary_steps=100)
    classifier = premade_iris.make_estimator(estimator, model_dir, config=config)
    classifier.train(
        lambda: premade_iris.train_input_fn(train_x, train_y, premade_iris.BATCH_SIZE),
        steps=warmup + steps,
        hooks=[StepTimes()],
    )
    intervals = [later - earlier for earlier, later in zip(times[warmup:], times[warmup + 1 :])]
    return intervals, (cpu_times[-1] - cpu_times[warmup]) / len(intervals)


def _side(name: str, steps: int, warmup: int) -> dict:
    if name == 'compat_mts':
        import compat_mts.estimator as estimator
    else:
        import tensorflow as tf

        estimator = tf.estimator
    with tempfile.TemporaryDirectory() as model_dir:
        intervals, cpu_per_step = _step_intervals(estimator, model_dir, steps, warmup)
    return {
        'mean_us': 1e6 * statistics.fmean(intervals),
        'p50_us': 1e6 * statistics.median(intervals),
        'cpu_us': 1e6 * cpu_per_step,
    }


def _tf215_python(given: str | None) -> str:
    if given:
        return given
    from tests import tf215

    return tf215.python()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=2000, help='timed steps per round (default: %(default)s)')
    parser.add_argument('--warmup', type=int, default=50, help='untimed steps first (default: %(default)s)')
    parser.add_argument('--rounds', type=int, default=3, help='alternating rounds per side (default: %(default)s)')
    parser.add_argument(
        '--tf215-python', help='a Python with TF 2.15 and tensorflow-estimator (default: tests/tf215.py)'
    )
    parser.add_argument('--out', help='write every round and the environment to this JSON file')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, _REPO)
    if args.child:
        print('RESULT:' + json.dumps(_side('tf215', args.steps, args.warmup)))
        return
    python = _tf215_python(args.tf215_python)
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env.update(PYTHONPATH=_REPO, TF_CPP_MIN_LOG_LEVEL='2')
    load_before = os.getloadavg()
    rounds = []
    for _ in range(args.rounds):
        child = subprocess.run(
            [python, os.path.abspath(__file__), '--child', '--steps', str(args.steps), '--warmup', str(args.warmup)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        theirs = json.loads(child.stdout.split('RESULT:', 1)[1])
        ours = _side('compat_mts', args.steps, args.warmup)
        rounds.append({'compat_mts': ours, 'tf215': theirs, 'ratio': ours['mean_us'] / theirs['mean_us']})
    report = {
        'rounds': rounds,
        'ratio_median': statistics.median(r['ratio'] for r in rounds),
        'ratio_p50_median': statistics.median(r['compat_mts']['p50_us'] / r['tf215']['p50_us'] for r in rounds),
        'ratio_cpu_median': statistics.median(r['compat_mts']['cpu_us'] / r['tf215']['cpu_us'] for r in rounds),
        'load_average_before': load_before,
        'load_average_after': os.getloadavg(),
        'steps': args.steps,
        'warmup': args.warmup,
    }
    print(
        f'{args.rounds} alternating rounds x {args.steps} timed steps (+{args.warmup}) per side; load average '
        f'{load_before[0]:.2f} before, {report["load_average_after"][0]:.2f} after'
    )
    print()
    print('| round | compat_mts mean µs | p50 µs | CPU µs | TF 2.15 mean µs | p50 µs | CPU µs | ratio (mean) |')
    print('|---:|---:|---:|---:|---:|---:|---:|---:|')
    for index, result in enumerate(rounds):
        ours, theirs = result['compat_mts'], result['tf215']
        print(
            f'| {index} | {ours["mean_us"]:.1f} | {ours["p50_us"]:.1f} | {ours["cpu_us"]:.1f} | '
            f'{theirs["mean_us"]:.1f} | {theirs["p50_us"]:.1f} | {theirs["cpu_us"]:.1f} | {result["ratio"]:.3f} |'
        )
    print()
    ratio, ratio_p50, ratio_cpu = report['ratio_median'], report['ratio_p50_median'], report['ratio_cpu_median']
    print(f'compat_mts / TF 2.15: **{ratio:.3f}** (median of rounds; p50 {ratio_p50:.3f}, CPU {ratio_cpu:.3f})')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as file:
            json.dump(report, file, indent=2)


if __name__ == '__main__':
    main()
