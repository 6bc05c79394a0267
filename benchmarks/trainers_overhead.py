"""Steps per second of two ported v1 trainers at stage 1 on compat_mts, against the same programs in v1 graph mode.

The trainers are the test suite's v1 programs, run as written:

- `cifar10`: `tests/v1_programs/cifar10_train.py`, shaped like the tensorflow/models CIFAR-10 tutorial (graph
  built inside `with tf.Graph().as_default():`, `StopAtStepHook`, `NanTensorHook`, a `_LoggerHook` of its own
  fetching the loss, summaries every 5 steps with histograms, a checkpoint every 10 steps, a `tf.data`
  iterator). Stage 1 is the same `train()` with `compat_mts` as `train_lib`.
- `mnist`: `tests/v1_programs/mnist_layers_v1.py`, shaped like Horovod's `tensorflow_mnist.py`
  (`tf.layers`, placeholders fed from a NumPy generator, `AdamOptimizer`, `LoggingTensorHook` every 10
  steps, a checkpoint every 20 steps, `[train_op, loss, accuracy_update]` fetched per run), against its
  stage-1 twin `mnist_layers_compat.py`. Both sides run with `TF_USE_LEGACY_KERAS=1`, as the programs say.

Each side runs in a child process of its own (`--child TRAINER SIDE`): the v1 side calls
`tf.compat.v1.disable_eager_execution()` (the mnist program does so itself, with `disable_v2_behavior()`), the
compat side stays eager. A child answers each `run` line on its stdin with one timed repeat: the whole program
(graph building, session creation, the loop, closing) on a fresh directory for `--warmup + --steps` steps, with
one hook of the benchmark's appended to the program's hooks, which reads the clocks in `after_run` and does
nothing else. A repeat's time is that of its last `--steps` runs, from the end of run `--warmup` to the end of
the last, so tracing, pruning and the checkpoint at creation stay outside, while the program's own per-step
work (the feed generator, the loop) and its periodic work (summaries, checkpoints, log lines) are inside, at
the program's frequencies.

The parent interleaves the two sides of a trainer, alternating which goes first each round, so that both see
the same machine load. A trainer's ratio is the median over rounds of (compat mean step time / v1 mean step
time), by the wall clock and by the child's CPU time (all its threads).

Run: `PYTHONPATH=. python benchmarks/trainers_overhead.py [--steps 150] [--warmup 20] [--repeats 5] [--out FILE]`
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # Before TensorFlow is imported: no C++ info on stderr.

BENCHMARKS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS_DIR)

import workload  # noqa: E402

PROGRAMS_DIR = os.path.join(os.path.dirname(BENCHMARKS_DIR), 'tests', 'v1_programs')
TRAINERS = ('cifar10', 'mnist')
SIDES = ('v1', 'compat')
VARIANTS = ('as_written', 'default_frequencies')
VARIANT_LABELS = {'as_written': 'as written', 'default_frequencies': "v1's default save frequencies"}
LABELS = {
    'cifar10': 'CIFAR-10 tutorial trainer (cifar10_train.py)',
    'mnist': 'Horovod-style MNIST trainer (mnist_layers_*.py)',
}


# The child: one trainer on one side, timed on request.


class _ClockHook:
    """Appended to the program's hooks: records both clocks after every run, and nothing else.

    Made a subclass of the session's own hook class at run time (v1's or compat_mts's).
    """

    def begin(self):
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def after_run(self, run_context, run_values):
        self.wall.append(time.perf_counter())
        self.cpu.append(time.process_time())


def _with_clock(module, hook_base, variant: str):
    """`module` (a `train` library) whose `MonitoredTrainingSession` appends a clock hook; returns it and the hook.

    In the `default_frequencies` variant it also drops the program's `save_checkpoint_steps` and
    `save_summaries_steps`, so that the session saves on v1's defaults (every 600 s, every 100 steps).
    """
    hook = type('ClockHook', (_ClockHook, hook_base), {})()
    session_class = module.MonitoredTrainingSession

    def monitored_training_session(*args, hooks=None, **kwargs):
        if variant == 'default_frequencies':
            kwargs.pop('save_checkpoint_steps', None)
            kwargs.pop('save_summaries_steps', None)
        return session_class(*args, hooks=list(hooks or []) + [hook], **kwargs)

    return _Proxy(module, MonitoredTrainingSession=monitored_training_session), hook


class _Proxy:
    """`module` with some attributes replaced."""

    def __init__(self, module, **replaced):
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name):
        return getattr(self._module, name)


def _child_runner(trainer: str, side: str):
    """Imports the trainer for `side`; returns `run(directory, last_step, variant) -> clock hook`."""
    if trainer == 'mnist':
        os.environ['TF_USE_LEGACY_KERAS'] = '1'  # Both programs need tf-keras's tf.layers.
    sys.path.insert(0, PROGRAMS_DIR)
    import tensorflow as tf

    if side == 'v1':
        tf.compat.v1.disable_eager_execution()
    if trainer == 'cifar10':
        import cifar10_train

        if side == 'v1':
            train_lib, hook_base = tf.compat.v1.train, tf.compat.v1.train.SessionRunHook
        else:
            import compat_mts

            train_lib, hook_base = compat_mts, compat_mts.SessionRunHook

        def run(directory: str, last_step: int, variant: str):
            proxy, hook = _with_clock(train_lib, hook_base, variant)
            cifar10_train.train(proxy, directory, last_step)
            return hook

        return run

    if side == 'v1':
        import mnist_layers_v1 as program

        v1 = program.tf

        def run(directory: str, last_step: int, variant: str):
            proxy, hook = _with_clock(v1.train, v1.train.SessionRunHook, variant)
            program.tf = _Proxy(v1, train=proxy)
            try:
                with v1.Graph().as_default():  # A fresh graph per repeat; the program builds in the default one.
                    program.main(directory, last_step)
            finally:
                program.tf = v1
            return hook

        return run

    import mnist_layers_compat as program

    mts = program.mts

    def run(directory: str, last_step: int, variant: str):
        proxy, hook = _with_clock(mts, mts.SessionRunHook, variant)
        program.mts = proxy
        try:
            program.main(directory, last_step)
        finally:
            program.mts = mts
        return hook

    return run


def serve(trainer: str, side: str, warmup_steps: int, steps: int) -> None:
    """Answers each `run` line on stdin with one timed repeat (one JSON line), until `quit`."""
    protocol = sys.stdout
    run = _child_runner(trainer, side)
    import tensorflow as tf

    protocol.write(json.dumps({'ready': True, 'tensorflow': tf.__version__}) + '\n')
    protocol.flush()
    for line in sys.stdin:
        command = line.split()
        if command == ['quit']:
            return
        if len(command) != 2 or command[0] != 'run' or command[1] not in VARIANTS:
            raise SystemExit(
                f'trainers_overhead.py --child: unknown command {line!r} '
                f'(expected quit, or run and one of {", ".join(VARIANTS)}).'
            )
        directory = tempfile.mkdtemp(prefix=f'trainers_overhead_{trainer}_{side}_')
        program_start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):  # The programs' own output; stdout is the protocol's.
                hook = run(directory, warmup_steps + steps, command[1])
        finally:
            program_s = time.perf_counter() - program_start
            shutil.rmtree(directory, ignore_errors=True)
        if len(hook.wall) != warmup_steps + steps:
            raise SystemExit(f'{trainer} {side}: {len(hook.wall)} runs, expected {warmup_steps + steps}.')
        start = warmup_steps - 1 if warmup_steps else 0
        timed = len(hook.wall) - 1 - start
        protocol.write(
            json.dumps(
                {
                    'mean_step_s': (hook.wall[-1] - hook.wall[start]) / timed,
                    'cpu_step_s': (hook.cpu[-1] - hook.cpu[start]) / timed,
                    'step_times_s': [b - a for a, b in zip(hook.wall[start:], hook.wall[start + 1 :])],
                    'program_s': program_s,
                }
            )
            + '\n'
        )
        protocol.flush()


def profile(trainer: str, variant: str, warmup_steps: int, steps: int, rows: int) -> None:
    """cProfile of the compat side's runs after `warmup_steps`, in this process; prints the top `rows`, cumulative."""
    global _ClockHook  # `_with_clock` makes its hook from this class.
    import cProfile
    import pstats

    profiler = cProfile.Profile()

    class ProfilingClock(_ClockHook):
        def after_run(self, run_context, run_values):
            super().after_run(run_context, run_values)
            if len(self.wall) == warmup_steps:
                profiler.enable()

    plain_clock, _ClockHook = _ClockHook, ProfilingClock
    try:
        run = _child_runner(trainer, 'compat')
        directory = tempfile.mkdtemp(prefix=f'trainers_overhead_profile_{trainer}_')
        try:
            with contextlib.redirect_stdout(sys.stderr):
                run(directory, warmup_steps + steps, variant)
        finally:
            profiler.disable()
            shutil.rmtree(directory, ignore_errors=True)
    finally:
        _ClockHook = plain_clock
    print(
        f'cProfile of {trainer} ({variant}) on compat_mts, runs {warmup_steps + 1}-{warmup_steps + steps}; '
        f'divide by {steps} for per-run figures'
    )
    pstats.Stats(profiler).sort_stats('cumulative').print_stats(rows)


# The parent.


class Child(workload.ServedChild):
    """One side of one trainer, in its own process."""

    def __init__(self, trainer: str, side: str, warmup_steps: int, steps: int, stderr_path: str):
        super().__init__(
            f'{trainer} {side}',
            [os.path.abspath(__file__), '--child', trainer, side, '--warmup', str(warmup_steps), '--steps', str(steps)],
            stderr_path,
            close_timeout_s=120,
        )

    def run_repeat(self, variant: str) -> dict:
        return self.request(f'run {variant}')


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _summary(means: list[float], cpus: list[float], step_times: list[float], programs: list[float]) -> dict:
    return {
        'median_step_s': _median(means),
        'repeat_means_s': means,
        'steps_per_s': 1 / _median(means),
        'median_cpu_step_s': _median(cpus),
        'repeat_cpu_means_s': cpus,
        'p50_step_s': _percentile(step_times, 0.5),
        'p90_step_s': _percentile(step_times, 0.9),
        'median_program_s': _median(programs),
    }


def run_trainer(trainer: str, variants: list[str], steps: int, warmup_steps: int, repeats: int, workdir: str) -> dict:
    """Both sides of `trainer` in every variant, `repeats` interleaved rounds; per-side timings and ratios."""
    children = {
        side: Child(trainer, side, warmup_steps, steps, os.path.join(workdir, f'{trainer}_{side}.stderr'))
        for side in SIDES
    }
    timings = {
        (variant, side): {'means': [], 'cpus': [], 'steps': [], 'programs': []}
        for variant in variants
        for side in SIDES
    }
    try:
        for child in children.values():
            child.wait_until_ready()
        for round_index in range(repeats):
            for variant in variants:
                for side in SIDES if round_index % 2 == 0 else tuple(reversed(SIDES)):
                    result = children[side].run_repeat(variant)
                    timing = timings[variant, side]
                    timing['means'].append(result['mean_step_s'])
                    timing['cpus'].append(result['cpu_step_s'])
                    timing['steps'].extend(result['step_times_s'])
                    timing['programs'].append(result['program_s'])
            print(
                f'{trainer} round {round_index + 1}/{repeats}: '
                + '; '.join(
                    f'{variant}: '
                    + ', '.join(f'{side} {timings[variant, side]["means"][-1] * 1e6:.0f} us' for side in SIDES)
                    for variant in variants
                ),
                file=sys.stderr,
                flush=True,
            )
        version = children['v1'].tensorflow_version
    finally:
        for child in children.values():
            child.close()
    results = {}
    for variant in variants:
        v1, compat = timings[variant, 'v1'], timings[variant, 'compat']
        sides = {
            side: _summary(
                **{
                    key: timings[variant, side][name]
                    for key, name in (
                        ('means', 'means'),
                        ('cpus', 'cpus'),
                        ('step_times', 'steps'),
                        ('programs', 'programs'),
                    )
                }
            )
            for side in SIDES
        }
        results[variant] = {
            'sides': sides,
            'ratio_wall': _median([c / v for c, v in zip(compat['means'], v1['means'])]),
            'ratio_cpu': _median([c / v for c, v in zip(compat['cpus'], v1['cpus'])]),
            'ratio_p50': sides['compat']['p50_step_s'] / sides['v1']['p50_step_s'],
            'ratio_program': _median([c / v for c, v in zip(compat['programs'], v1['programs'])]),
        }
    return {'tensorflow': version, 'variants': results}


def format_table(report: dict) -> str:
    lines = [
        '| trainer | save frequencies | v1 graph mode µs/step | compat_mts µs/step | v1 steps/s '
        '| compat_mts steps/s | **compat / v1 (wall)** | compat / v1 (CPU) | compat / v1 (p50 step) '
        '| compat / v1 (whole program) |',
        '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for trainer, trainer_result in report['trainers'].items():
        for variant, result in trainer_result['variants'].items():
            v1, compat = result['sides']['v1'], result['sides']['compat']
            lines.append(
                f'| {LABELS[trainer]} | {VARIANT_LABELS[variant]} | {v1["median_step_s"] * 1e6:.0f} '
                f'| {compat["median_step_s"] * 1e6:.0f} | {v1["steps_per_s"]:.0f} | {compat["steps_per_s"]:.0f} '
                f'| **{result["ratio_wall"]:.3f}** | {result["ratio_cpu"]:.3f} | {result["ratio_p50"]:.3f} '
                f'| {result["ratio_program"]:.3f} |'
            )
    return '\n'.join(lines)


def _check_finite(report: dict) -> None:
    for trainer, trainer_result in report['trainers'].items():
        for variant, result in trainer_result['variants'].items():
            values = [result[key] for key in ('ratio_wall', 'ratio_cpu', 'ratio_p50', 'ratio_program')]
            values += [
                side[key]
                for side in result['sides'].values()
                for key in ('median_step_s', 'median_cpu_step_s', 'p50_step_s', 'median_program_s')
            ]
            if not all(math.isfinite(value) and value > 0 for value in values):
                raise RuntimeError(f'{trainer} {variant}: a result is not a positive finite number: {result!r}')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=150, help='timed runs per repeat (default: %(default)s)')
    parser.add_argument(
        '--warmup', type=int, default=20, help='untimed runs at the start of each repeat (default: %(default)s)'
    )
    parser.add_argument(
        '--repeats', type=int, default=5, help='interleaved rounds, each running both sides once (default: %(default)s)'
    )
    parser.add_argument(
        '--trainers', default=','.join(TRAINERS), help='comma-separated, of %s (default: all)' % ', '.join(TRAINERS)
    )
    parser.add_argument(
        '--variants', default=','.join(VARIANTS), help='comma-separated, of %s (default: all)' % ', '.join(VARIANTS)
    )
    parser.add_argument('--out', help='write the full results (every repeat, the environment) to this JSON file')
    parser.add_argument(
        '--profile',
        metavar='TRAINER',
        help='instead: cProfile --steps runs of TRAINER on compat_mts in this process, in the first '
        'of --variants, and print the functions by cumulative time',
    )
    parser.add_argument('--child', nargs=2, metavar=('TRAINER', 'SIDE'), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0:
        parser.error('--steps and --repeats must be positive, --warmup non-negative.')
    if args.child:
        serve(args.child[0], args.child[1], args.warmup, args.steps)
        return
    if args.profile:
        if args.profile not in TRAINERS:
            parser.error(f'--profile takes one of {", ".join(TRAINERS)}; got {args.profile!r}.')
        profile(args.profile, args.variants.split(',')[0], args.warmup, args.steps, rows=40)
        return
    trainers = [name for name in args.trainers.split(',') if name]
    variants = [name for name in args.variants.split(',') if name]
    if not trainers or set(trainers) - set(TRAINERS):
        parser.error(f'--trainers takes a comma-separated list of {", ".join(TRAINERS)}; got {args.trainers!r}.')
    if not variants or set(variants) - set(VARIANTS):
        parser.error(f'--variants takes a comma-separated list of {", ".join(VARIANTS)}; got {args.variants!r}.')

    workdir = tempfile.mkdtemp(prefix='trainers_overhead_')
    load_before = os.getloadavg()
    started = time.perf_counter()
    try:
        results = {
            trainer: run_trainer(trainer, variants, args.steps, args.warmup, args.repeats, workdir)
            for trainer in trainers
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {
        'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        'command': ' '.join([os.path.basename(sys.executable)] + sys.argv),
        'python': platform.python_version(),
        'machine': f'{platform.machine()}, {os.cpu_count()} CPUs',
        'load_average_before': load_before,
        'load_average_after': os.getloadavg(),
        'seconds': time.perf_counter() - started,
        'steps': args.steps,
        'warmup': args.warmup,
        'repeats': args.repeats,
        'trainers': results,
    }
    _check_finite(report)
    workload.publish(
        report,
        [
            f'{report["date"]}  TensorFlow {results[trainers[0]]["tensorflow"]}  Python '
            f'{report["python"]}  {report["machine"]}',
            f'{args.repeats} interleaved rounds x {args.steps} timed runs (+{args.warmup} untimed) per side; load '
            f'average {load_before[0]:.2f} before, {report["load_average_after"][0]:.2f} after; '
            f'{report["seconds"]:.0f} s',
        ],
        format_table(report),
        args.out,
    )


if __name__ == '__main__':
    main()
