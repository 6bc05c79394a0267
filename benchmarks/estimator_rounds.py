"""Memory and exit over many `train_and_evaluate` rounds: compat_mts.estimator against TF 2.15's tf.estimator.

Issue 34's goal 2 and issue 29's item 6: memory flat over 50 `train_and_evaluate` rounds, and the process's exit
within 1 s of its last line whatever the number of rounds. The model is the census-shaped wide & deep
`DNNLinearCombinedClassifier` of tests/estimator_programs/census_wide_deep.py. A round is one
`train_and_evaluate(model, TrainSpec(max_steps=--steps more than the last), EvalSpec(steps=None, throttle_secs=0))`
in one `model_dir`: a `train()` of `--steps` steps, and the `evaluate()` of its last checkpoint (200 examples).

Each side runs in a process of its own, compat_mts under this Python's TensorFlow, tf.estimator in TF 2.15's
virtualenv (tests/tf215.py makes it on first use; `--tf215-python` names another). After each round, and a
`gc.collect()`, a side records its RSS, the functions registered with the eager context, the live
`ConcreteFunction`s and graphs (`tf.Graph`, `FuncGraph`), its threads and its atexit callbacks. The RSS growth is
taken over the rounds from `--settle` on (the first rounds build caches that stay): the median RSS of their later
half less that of their earlier half, per round between the two. A process
that imports TensorFlow and does nothing else ends first under each Python, before each side's run, so that the
exit lag of the program (its end after its last line, the parent's clock) stands beside TensorFlow's own at the
same load; the CPU time the process spends exiting (its whole CPU time, from `wait4`, less what it had used at
its last line) is less disturbed by the machine's load.

The exit goal (1 s) is issue 34's; TensorFlow 2.21's own exit, the bare import's, is about 1 s of CPU (Python's
collections at exit walk its 350,000 objects), so compare the program's exit with the bare import's beside it.

It exits non-zero when compat_mts's RSS grows by more than `--bound-mb` MB per round, when its registered or
live functions, graphs, threads or atexit callbacks grow after `--settle` rounds, or when it exits more than 1 s
after its last line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from benchmarks.premade_estimator import _child_report, _cpu_s, _rss_mb, _tf215_python  # noqa: E402

_COUNTS = ('context_functions', 'concrete_functions', 'graphs', 'threads', 'atexit_callbacks')


def _live(types: tuple) -> int:
    return sum(1 for obj in gc.get_objects() if isinstance(obj, types))


def _round_state() -> dict:
    """What a round may leave behind, after a full collection."""
    import atexit
    import threading

    from tensorflow.python.eager import context
    from tensorflow.python.eager.polymorphic_function import concrete_function
    from tensorflow.python.framework import ops

    gc.collect()
    return {
        'rss_mb': _rss_mb(),
        'context_functions': len(context.context().list_function_names()),
        'concrete_functions': _live((concrete_function.ConcreteFunction,)),
        'graphs': _live((ops.Graph,)),
        'threads': threading.active_count(),
        'atexit_callbacks': atexit._ncallbacks(),
    }


def _child(side: str, rounds: int, steps: int) -> None:
    import tensorflow as tf

    if side == 'compat_mts':
        import compat_mts.estimator as estimator
    else:
        estimator = tf.estimator
    from tests.estimator_programs import census_wide_deep

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    train_features, train_labels = census_wide_deep.load_data(400, seed=1)
    eval_features, eval_labels = census_wide_deep.load_data(200, seed=2)

    def train_input():
        return census_wide_deep.input_fn(train_features, train_labels, repeat=True)

    def eval_input():
        return census_wide_deep.input_fn(eval_features, eval_labels, repeat=False)

    states = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as model_dir:
        model = census_wide_deep.make_estimator(estimator, model_dir)
        eval_spec = estimator.EvalSpec(eval_input, steps=None, throttle_secs=0)
        for index in range(rounds):
            train_spec = estimator.TrainSpec(train_input, max_steps=steps * (index + 1))
            round_began, round_cpu = time.perf_counter(), _cpu_s()
            metrics, _ = estimator.train_and_evaluate(model, train_spec, eval_spec)
            if metrics['global_step'] != steps * (index + 1):
                raise SystemExit(f'round {index} evaluated step {metrics["global_step"]}, not {steps * (index + 1)}')
            states.append(
                dict(_round_state(), round_s=time.perf_counter() - round_began, round_cpu_s=_cpu_s() - round_cpu)
            )
    report = {'total_s': time.perf_counter() - began, 'rounds': states}
    report.update(last_line_time=time.time(), last_line_cpu_s=_cpu_s())
    print('RESULT:' + json.dumps(report), flush=True)


def _bare_child() -> None:
    import tensorflow  # noqa: F401 - only its import, and the process's end.

    print('RESULT:' + json.dumps({'last_line_time': time.time(), 'last_line_cpu_s': _cpu_s()}), flush=True)


def _run(python: str, env: dict, arguments: list[str], what: str) -> dict:
    """A child process: its report, its exit lag and the CPU time it spent exiting."""
    return _child_report([python, os.path.abspath(__file__), '--child', *arguments], env, what)


def _growth(values: list[float]) -> float:
    """Growth per round: the median of the later half of `values` less the earlier half's, over their distance.

    Medians, not a fitted line: the RSS dips for one round now and then (the allocator returning memory), which
    would tilt a line fitted through a few rounds.
    """
    half = len(values) // 2
    if half == 0:
        return 0.0
    earlier, later = values[:half], values[len(values) - half :]
    return (statistics.median(later) - statistics.median(earlier)) / (len(values) - half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=50, help='train_and_evaluate rounds per side (%(default)s)')
    parser.add_argument('--steps', type=int, default=5, help='training steps per round (%(default)s)')
    parser.add_argument('--settle', type=int, default=10, help='rounds left out of the growth checks (%(default)s)')
    parser.add_argument(
        '--bound-mb', type=float, default=0.1, help="compat_mts's largest RSS growth, MB per round (%(default)s)"
    )
    parser.add_argument('--repeats', type=int, default=1, help='alternating runs of each side (%(default)s)')
    parser.add_argument(
        '--tf215-python', help='a Python with TF 2.15 and tensorflow-estimator (default: tests/tf215.py)'
    )
    parser.add_argument(
        '--sides',
        nargs='+',
        choices=('compat_mts', 'tf215'),
        default=['compat_mts', 'tf215'],
        help='the sides to run (default: both)',
    )
    parser.add_argument('--out', help='write every round and the load to this JSON file')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--side', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.side == 'bare':
            _bare_child()
        else:
            _child(args.side, args.rounds, args.steps)
        return
    if not 0 <= args.settle < args.rounds:
        parser.error(f'--settle: {args.settle}; it must be from 0 to --rounds - 1 ({args.rounds - 1})')
    python = _tf215_python(args.tf215_python) if 'tf215' in args.sides else None
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env.update(PYTHONPATH=_REPO, TF_CPP_MIN_LOG_LEVEL='2')
    pythons = {'compat_mts': sys.executable, 'tf215': python}
    sides = {side: pythons[side] for side in ('compat_mts', 'tf215') if side in args.sides}
    program = ['--rounds', str(args.rounds), '--steps', str(args.steps)]
    load_before = os.getloadavg()
    repeats = []
    for _ in range(args.repeats):
        repeat = {}
        for side, side_python in sides.items():
            bare = _run(side_python, env, ['--side', 'bare'], f'the bare import of {side}')
            repeat[side] = dict(_run(side_python, env, ['--side', side, *program], side), bare=bare)
        repeats.append(repeat)
    load_after = os.getloadavg()
    print(
        f'{args.repeats} alternating run(s) x {args.rounds} rounds of train_and_evaluate (train {args.steps} steps, '
        f'evaluate 200 examples) per side; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after'
    )
    print()
    print(
        '| side | round CPU s (median) | RSS MB round 1, median after settle, last | RSS growth MB/round | '
        + ' | '.join(f'{name} settle → last' for name in _COUNTS)
        + ' | exit lag s | exit CPU s | bare import exit lag s | bare exit CPU s |'
    )
    print('|---|---:|---:|---:|' + '---:|' * len(_COUNTS) + '---:|---:|---:|---:|')
    failures = []
    for side in sides:
        for repeat in repeats:
            report = repeat[side]
            rounds = report['rounds']
            settled = rounds[args.settle - 1] if args.settle else rounds[0]
            rss = [state['rss_mb'] for state in rounds]
            growth = _growth(rss[args.settle :])
            report['rss_growth_mb'] = growth
            print(
                f'| {side} | {statistics.median(state["round_cpu_s"] for state in rounds):.2f} | '
                f'{rss[0]:.0f}, {statistics.median(rss[args.settle :]):.0f}, {rss[-1]:.0f} | {growth:.3f} | '
                + ' | '.join(f'{settled[name]} → {rounds[-1][name]}' for name in _COUNTS)
                + f' | {report["exit_lag_s"]:.2f} | {report["exit_cpu_s"]:.2f} | '
                f'{report["bare"]["exit_lag_s"]:.2f} | {report["bare"]["exit_cpu_s"]:.2f} |'
            )
            if side != 'compat_mts':
                continue
            if growth > args.bound_mb:
                failures.append(f'RSS grows by {growth:.3f} MB per round (bound {args.bound_mb})')
            grown = [name for name in _COUNTS if max(state[name] for state in rounds[args.settle :]) > settled[name]]
            if grown:
                failures.append(f'grow after round {args.settle}: {", ".join(grown)}')
            if report['exit_lag_s'] > 1.0:
                failures.append(f'exit {report["exit_lag_s"]:.2f} s after the last line (goal <= 1 s)')
    print()
    for failure in failures:
        print(f'compat_mts: {failure}')
    if not failures:
        print(f'compat_mts: memory flat (RSS growth <= {args.bound_mb} MB per round), exit within 1 s')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as file:
            json.dump({'repeats': repeats, 'load_before': load_before, 'load_after': load_after}, file, indent=2)
    if failures:
        raise SystemExit(1)


if __name__ == '__main__':
    main()
