"""Per-step cost of `DNNClassifier.train`: compat_mts.estimator against TF 2.15's tf.estimator, in one run.

The iris program of tests/estimator_programs/premade_iris.py (four numeric columns, `hidden_units=[10, 10]`,
`n_classes=3`, batch 100) trains on both sides: here with `compat_mts.estimator`, and in a child process of
TF 2.15's virtualenv (tests/tf215.py makes it on first use; `--tf215-python` names another) with `tf.estimator`.
A v1 `SessionRunHook` on each side takes the time after every step; the per-step cost is the mean (and median) of
the intervals between steps, after `--warmup` steps (the graph build, the session's creation and the first,
tracing step are not part of it). The sides alternate for `--rounds` rounds, each round a fresh `train()` call
into a fresh `model_dir`, so machine load hits both alike; the ratio is the median over rounds of compat_mts's
mean step time over TF 2.15's.

`--models` without `--calls` times each model's step the same way (the models below; `bert1` is `bert` with
`iterations_per_loop=1`): per round and model, one fresh process per side (who goes first alternates), each one
`train()` of `--warmup + --steps` steps with the timing hook, in its program's own hooks (the custom `model_fn`'s
and BERT's loss hooks, the Estimators' `NanTensorHook` and summaries, BERT's `ExamplesPerSecondHook`) and no
checkpoint between the first step and the end (`_step_programs`). Each model's ratio is the median over rounds of
compat_mts's mean step over TF 2.15's; it exits non-zero when a model's is above `--goal` (0.9: issue 34's goal 2).

`--calls N` measures the start-up and the end of short calls instead (issue 34's goal 2, issue 29's exit):
each model of `--models` runs N rounds of `train(steps=--call-steps)`, `evaluate()` and `predict()` in one
process per side and model, the sides alternating for `--rounds` repeats. `--call-kinds` chooses the calls of a
round (`--call-kinds train evaluate` leaves `predict()` out); without `train`, one untimed `train()` before the
rounds gives `evaluate()` and `predict()` a checkpoint to restore, as in the rounds with it. The models:
`census`, the census-shaped wide & deep `DNNLinearCombinedClassifier` of tests/estimator_programs/census_wide_deep.py;
`dnn`, the iris `DNNClassifier`; `custom`, the custom `model_fn` of tests/estimator_programs/classifier.py; `bert`,
the BERT-shaped `TPUEstimator(use_tpu=False)` of tests/estimator_programs/bert_classifier.py
(`iterations_per_loop=2`).
Each side reports the time and the CPU time (every thread's) of each call, the RSS and the number of functions
registered with the eager context after each round, and how long the process took to exit after its last line.
The ratio of a call is compat_mts's total time of that call over the rounds over TF 2.15's (the median over
repeats); the CPU ratio beside it is less disturbed by the machine's load. It exits non-zero when a call's
ratio, or the rounds', is above 1.0, when a process of compat_mts exits more than 1 s after its last line, or
when its registered functions grow after the second round.

`--stale-read-blocks N` times compat_mts alone: inside one `train()` of the iris program, N alternating blocks of
200 runs of its step's fetches with the hooks' stale global step read in the step's own call (what the session
does) and read by an eager op before it (as before that), the median and the fastest block of each, in µs per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _step_programs(estimator, model_dir: str, total_steps: int) -> dict:
    """Per model: `train(hooks)`, one `train(steps=total_steps)` call of that model's program against `estimator`.

    Each program keeps its own hooks and summaries (the custom `model_fn`'s `LoggingTensorHook` and loss hook,
    BERT's loss hook and `ExamplesPerSecondHook`); `iris`'s and `census`'s `RunConfig` is the iris mode's (summaries
    every 100 steps, no step-count logging); no program saves a checkpoint between its first step and its end.
    """
    from tests.estimator_programs import census_wide_deep, classifier, premade_iris

    def dnn(hooks):
        (train_x, train_y), _ = premade_iris.load_data()
        config = estimator.RunConfig(log_step_count_steps=None, save_summary_steps=100)
        model = premade_iris.make_estimator(estimator, model_dir, config=config)
        model.train(
            lambda: premade_iris.train_input_fn(train_x, train_y, premade_iris.BATCH_SIZE),
            steps=total_steps,
            hooks=hooks,
        )

    def census(hooks):
        features, labels = census_wide_deep.load_data(400, seed=1)
        config = estimator.RunConfig(log_step_count_steps=None, save_summary_steps=100)
        model = census_wide_deep.make_estimator(estimator, model_dir, config=config)
        model.train(lambda: census_wide_deep.input_fn(features, labels, repeat=True), steps=total_steps, hooks=hooks)

    def custom(hooks):
        run_config = dict(classifier.RUN_CONFIG, save_checkpoints_steps=None)
        config = estimator.RunConfig(model_dir=model_dir, **run_config)
        model = estimator.Estimator(classifier.make_model_fn(estimator), config=config, params=classifier.PARAMS)
        model.train(classifier.train_input_fn, steps=total_steps, hooks=hooks)

    def bert(iterations_per_loop):
        def train(hooks):
            from tests.estimator_programs import bert_classifier  # Imports its own `estimator` (TF 2.15's or ours).

            model = bert_classifier.build_estimator(
                model_dir,
                num_train_steps=total_steps,
                save_checkpoints_steps=10 * total_steps,
                iterations_per_loop=iterations_per_loop,
            )
            examples = bert_classifier.synthetic_examples(64, 1)
            input_fn = bert_classifier.input_fn_builder(examples, bert_classifier.SEQ_LENGTH, True, True)
            model.train(input_fn, steps=total_steps, hooks=hooks)

        return train

    return {'census': census, 'dnn': dnn, 'custom': custom, 'bert': bert(2), 'bert1': bert(1)}


def _step_intervals(
    estimator, model_dir: str, steps: int, warmup: int, model: str = 'dnn'
) -> tuple[list[float], float]:
    """Trains `model` (the iris program by default) for `warmup + steps` steps, one step per run.

    Returns:
      The `steps` last step intervals, in seconds, and the process's CPU seconds per step over them.
    """
    import tensorflow as tf

    times, cpu_times = [], []

    class StepTimes(tf.compat.v1.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            times.append(time.perf_counter())
            cpu_times.append(time.process_time())

    _step_programs(estimator, model_dir, warmup + steps)[model]([StepTimes()])
    if len(times) != warmup + steps:
        raise RuntimeError(f'{model}: {len(times)} runs for {warmup + steps} steps; the mode times one step a run')
    intervals = [later - earlier for earlier, later in zip(times[warmup:], times[warmup + 1 :])]
    return intervals, (cpu_times[-1] - cpu_times[warmup]) / len(intervals)


def _stale_read_blocks(blocks: int, runs: int = 200, warmup: int = 50) -> dict:
    """compat_mts alone: the iris step's runs with the stale global step read in the step's own call, against
    an eager read op before the call, in alternating blocks of `runs` runs inside one `train()` (µs per run).

    Both go through the Estimator's wrapped graph: `WrappedGraph.run_after_read` (the session's way) and the
    base `GraphRunner.run_after_read` (the read first, eagerly, as before it). They train the model on.
    """
    import tensorflow as tf

    import compat_mts.estimator as estimator
    from compat_mts.core import fetch as fetches_lib
    from compat_mts.legacy import graph as graph_lib
    from tests.estimator_programs import premade_iris

    per_run: dict[str, list[float]] = {'in the call': [], 'eager read first': []}
    ways = {'in the call': lambda graph: graph.run_after_read}
    ways['eager read first'] = lambda graph: lambda *args: fetches_lib.GraphRunner.run_after_read(graph, *args)

    class Blocks(tf.compat.v1.train.SessionRunHook):
        def __init__(self):
            self.runs = 0

        def before_run(self, run_context):
            self.fetches = run_context.original_args.fetches

        def after_run(self, run_context, run_values):
            self.runs += 1
            if self.runs != warmup:
                return
            graph = graph_lib.wrapped_graph_of_global_step()
            for _ in range(blocks):
                for way, run_after_read in ways.items():
                    run = run_after_read(graph)
                    began = time.perf_counter()
                    for _ in range(runs):
                        run(self.fetches, {}, graph.global_step)
                    per_run[way].append(1e6 * (time.perf_counter() - began) / runs)

    (train_x, train_y), _ = premade_iris.load_data()
    with tempfile.TemporaryDirectory() as model_dir:
        config = estimator.RunConfig(log_step_count_steps=None, save_summary_steps=100)
        classifier = premade_iris.make_estimator(estimator, model_dir, config=config)
        classifier.train(
            lambda: premade_iris.train_input_fn(train_x, train_y, premade_iris.BATCH_SIZE),
            steps=warmup + 1,
            hooks=[Blocks()],
        )
    return {way: {'median_us': statistics.median(times), 'min_us': min(times)} for way, times in per_run.items()}


def _side(name: str, steps: int, warmup: int, model: str = 'dnn') -> dict:
    if name == 'compat_mts':
        import compat_mts.estimator as estimator
    else:
        import tensorflow as tf

        estimator = tf.estimator
    with tempfile.TemporaryDirectory() as model_dir:
        intervals, cpu_per_step = _step_intervals(estimator, model_dir, steps, warmup, model)
    return {
        'mean_us': 1e6 * statistics.fmean(intervals),
        'p50_us': 1e6 * statistics.median(intervals),
        'cpu_us': 1e6 * cpu_per_step,
    }


_CALLS = ('train', 'evaluate', 'predict')
_MODELS = ('census', 'dnn', 'custom', 'bert', 'bert1')


def _call_programs(estimator) -> dict:
    """Per model: `(make(model_dir), train(model, steps), evaluate(model), predict(model))` against `estimator`."""
    from tests.estimator_programs import census_wide_deep, classifier, premade_iris

    def custom(model_dir):
        config = estimator.RunConfig(model_dir=model_dir, **classifier.RUN_CONFIG)
        return estimator.Estimator(classifier.make_model_fn(estimator), config=config, params=classifier.PARAMS)

    def bert(iterations_per_loop):
        def make(model_dir):
            from tests.estimator_programs import bert_classifier  # Imports its own `estimator` (TF 2.15's or ours).

            return bert_classifier.build_estimator(
                model_dir, num_train_steps=1000, save_checkpoints_steps=1000, iterations_per_loop=iterations_per_loop
            )

        return make

    def bert_input(count: int, seed: int, is_training: bool, drop_remainder: bool):  # As its `run` reads.
        from tests.estimator_programs import bert_classifier

        examples = bert_classifier.synthetic_examples(count, seed)
        return bert_classifier.input_fn_builder(examples, bert_classifier.SEQ_LENGTH, is_training, drop_remainder)

    return {
        'census': (
            lambda model_dir: census_wide_deep.make_estimator(estimator, model_dir),
            census_wide_deep.train,
            census_wide_deep.evaluate,
            census_wide_deep.predict,
        ),
        'dnn': (
            lambda model_dir: premade_iris.make_estimator(estimator, model_dir),
            premade_iris.train,
            premade_iris.evaluate,
            premade_iris.predict,
        ),
        'custom': (
            custom,
            lambda model, steps: model.train(classifier.train_input_fn, steps=steps),
            lambda model: model.evaluate(classifier.eval_input_fn),
            lambda model: list(model.predict(classifier.predict_input_fn)),
        ),
        'bert': (
            bert(2),
            lambda model, steps: model.train(bert_input(64, 1, True, True), steps=steps),
            lambda model: model.evaluate(bert_input(12, 2, False, True), steps=None),
            lambda model: list(model.predict(bert_input(7, 3, False, False))),
        ),
        'bert1': (
            bert(1),
            lambda model, steps: model.train(bert_input(64, 1, True, True), steps=steps),
            lambda model: model.evaluate(bert_input(12, 2, False, True), steps=None),
            lambda model: list(model.predict(bert_input(7, 3, False, False))),
        ),
    }


def _calls_side(name: str, model_name: str, calls: int, steps: int, kinds: list[str]) -> dict:
    """`calls` rounds of the calls `kinds` (of train, evaluate, predict) of one model, timed each."""
    import gc

    if name == 'compat_mts':
        import compat_mts.estimator as estimator
    else:
        import tensorflow as tf

        estimator = tf.estimator
    import tensorflow as tf
    from tensorflow.python.eager import context

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    make, *call_functions = _call_programs(estimator)[model_name]
    functions = dict(zip(_CALLS, call_functions))
    rounds = []
    with tempfile.TemporaryDirectory() as model_dir:
        model = make(model_dir)
        if 'train' not in kinds:  # A checkpoint for evaluate() and predict() to restore, as in the rounds.
            functions['train'](model, steps)
        start = time.perf_counter()
        for _ in range(calls):
            times = {}
            for call in kinds:
                function = functions[call]
                began, began_cpu = time.perf_counter(), _cpu_s()
                function(model, steps) if call == 'train' else function(model)
                times[call + '_s'] = time.perf_counter() - began
                times[call + '_cpu_s'] = _cpu_s() - began_cpu
            gc.collect()
            rounds.append(dict(times, rss_mb=_rss_mb(), functions=len(context.context().list_function_names())))
        total = time.perf_counter() - start
    return {'total_s': total, 'rounds': rounds}


def _cpu_s() -> float:
    """The CPU seconds of this process so far, every thread's (TensorFlow's runtime runs on threads of its own)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    with open('/proc/self/status', encoding='utf-8') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return float('nan')


def _child_report(command: list[str], env: dict, what: str) -> dict:
    """A child's `RESULT:` report, with its exit lag (its end, the parent's clock, after its last line's time).

    A report with `last_line_cpu_s` also gets `exit_cpu_s`: the CPU time the child spent exiting (its whole CPU
    time, from `wait4`, less what it had used at its last line), less disturbed by the machine's load.
    """
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    report = None
    for line in child.stdout:
        if line.startswith('RESULT:'):
            report = json.loads(line[len('RESULT:') :])
    _, status, usage = os.wait4(child.pid, 0)
    ended = time.time()
    returncode = os.waitstatus_to_exitcode(status)
    if returncode != 0 or report is None:
        raise SystemExit(f'{what} failed (exit status {returncode})')
    report['exit_lag_s'] = ended - report.pop('last_line_time')
    if 'last_line_cpu_s' in report:
        report['exit_cpu_s'] = usage.ru_utime + usage.ru_stime - report.pop('last_line_cpu_s')
    return report


def _calls_run(python: str, env: dict, model: str, calls: int, steps: int, kinds: list[str], side: str) -> dict:
    """One side's child process: its report, and its exit lag."""
    arguments = ['--side', side, '--models', model, '--calls', str(calls), '--call-steps', str(steps)]
    return _child_report(
        [python, os.path.abspath(__file__), '--child', *arguments, '--call-kinds', *kinds],
        env,
        f'the {side} child of {model}',
    )


def _calls_main(args, python: str, env: dict) -> None:
    models = args.models.split(',')
    kinds = args.call_kinds
    load_before = os.getloadavg()
    repeats = []
    for _ in range(args.rounds):
        repeat = {}
        for model in models:
            ours = _calls_run(sys.executable, env, model, args.calls, args.call_steps, kinds, 'compat_mts')
            theirs = _calls_run(python, env, model, args.calls, args.call_steps, kinds, 'tf215')
            repeat[model] = {'compat_mts': ours, 'tf215': theirs}
        repeats.append(repeat)
    load_after = os.getloadavg()
    print(
        f'{args.rounds} alternating repeats x {args.calls} rounds of '
        + ', '.join(f'{kind}(steps={args.call_steps})' if kind == 'train' else f'{kind}()' for kind in kinds)
        + f' per side and model; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after'
    )
    print()
    print('| model | call | compat_mts s | TF 2.15 s | ratio | compat_mts CPU s | TF 2.15 CPU s | CPU ratio |')
    print('|---|---|---:|---:|---:|---:|---:|---:|')
    ratios, cpu_ratios = {}, {}
    for model in models:
        for call in (*kinds, 'rounds'):
            names = [call] if call != 'rounds' else kinds
            columns = []
            for suffix, kept in (('_s', ratios), ('_cpu_s', cpu_ratios)):
                ours_s, theirs_s, call_ratios = [], [], []
                for repeat in repeats:
                    ours_s.append(sum(r[n + suffix] for r in repeat[model]['compat_mts']['rounds'] for n in names))
                    theirs_s.append(sum(r[n + suffix] for r in repeat[model]['tf215']['rounds'] for n in names))
                    call_ratios.append(ours_s[-1] / theirs_s[-1])
                kept[(model, call)] = statistics.median(call_ratios)
                columns.append(
                    f'{statistics.median(ours_s):.2f} | {statistics.median(theirs_s):.2f} | {kept[(model, call)]:.3f}'
                )
            print(f'| {model} | {call} | {columns[0]} | {columns[1]} |')
    print()
    print('| model | side | exit lag s (worst) | RSS MB 2nd → last | eager functions 2nd → last |')
    print('|---|---|---:|---:|---:|')
    grows = False
    worst_lag = 0.0
    for model in models:
        for side in ('compat_mts', 'tf215'):
            reports = [repeat[model][side] for repeat in repeats]
            lag = max(report['exit_lag_s'] for report in reports)
            rounds = reports[-1]['rounds']
            second = rounds[min(1, len(rounds) - 1)]
            print(
                f'| {model} | {side} | {lag:.2f} | {second["rss_mb"]:.0f} → {rounds[-1]["rss_mb"]:.0f} | '
                f'{second["functions"]} → {rounds[-1]["functions"]} |'
            )
            if side == 'compat_mts':
                worst_lag = max(worst_lag, lag)
                grows = grows or any(
                    report['rounds'][-1]['functions'] > report['rounds'][min(1, args.calls - 1)]['functions']
                    for report in reports
                )
    worst = max(ratios.values())
    print()
    print(
        f'compat_mts / TF 2.15, the worst call: **{worst:.3f}** (median of repeats; goal <= 1.0); '
        f'of CPU time: {max(cpu_ratios.values()):.3f}'
    )
    print(f'compat_mts exit lag, worst: {worst_lag:.2f} s (goal <= 1 s); registered functions grow: {grows}')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as file:
            json.dump(
                {
                    'repeats': repeats,
                    'ratios': {f'{model}/{call}': ratio for (model, call), ratio in ratios.items()},
                    'cpu_ratios': {f'{model}/{call}': ratio for (model, call), ratio in cpu_ratios.items()},
                    'load_before': load_before,
                    'load_after': load_after,
                },
                file,
                indent=2,
            )
    if worst > 1.0 or worst_lag > 1.0 or grows:
        raise SystemExit(1)


def _per_step_run(python: str, env: dict, model: str, args, side: str) -> dict:
    """One side's child process for one round of `model`: its per-step report."""
    command = [python, os.path.abspath(__file__), '--child', '--side', side, '--models', model]
    command += ['--steps', str(args.steps), '--warmup', str(args.warmup)]
    child = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if child.returncode != 0 or 'RESULT:' not in child.stdout:
        raise SystemExit(
            f'the {side} child of {model} failed (exit status {child.returncode}):\n{child.stderr[-3000:]}'
        )
    return json.loads(child.stdout.split('RESULT:', 1)[1])


def _per_step_main(args, python: str, env: dict) -> None:
    """`--models` without `--calls`: each model's step time on both sides, a fresh process per side and round."""
    models = args.models.split(',')
    load_before = os.getloadavg()
    results = {model: [] for model in models}
    for index in range(args.rounds):
        for model in models:
            sides = {'compat_mts': (sys.executable, env), 'tf215': (python, env)}
            order = list(sides) if index % 2 else list(reversed(sides))  # Who goes first alternates.
            result = {side: _per_step_run(*sides[side], model, args, side) for side in order}
            result['ratio'] = result['compat_mts']['mean_us'] / result['tf215']['mean_us']
            result['load'] = os.getloadavg()[0]
            results[model].append(result)
    load_after = os.getloadavg()
    print(
        f'{args.rounds} alternating rounds x {args.steps} timed steps (+{args.warmup}) per side and model, a fresh '
        f'process each; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after'
    )
    print()
    print('| model | round | load | compat_mts mean µs | p50 µs | CPU µs | TF 2.15 mean µs | p50 µs | CPU µs | ratio |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for model in models:
        for index, result in enumerate(results[model]):
            ours, theirs = result['compat_mts'], result['tf215']
            print(
                f'| {model} | {index} | {result["load"]:.2f} | {ours["mean_us"]:.1f} | {ours["p50_us"]:.1f} | '
                f'{ours["cpu_us"]:.1f} | {theirs["mean_us"]:.1f} | {theirs["p50_us"]:.1f} | {theirs["cpu_us"]:.1f} | '
                f'{result["ratio"]:.3f} |'
            )
    print()
    print('| model | ratio (median of rounds) | range | p50 ratio | CPU ratio |')
    print('|---|---:|---|---:|---:|')
    summary = {}
    for model in models:
        rounds = results[model]
        ratios = [r['ratio'] for r in rounds]
        summary[model] = {
            'ratio': statistics.median(ratios),
            'min': min(ratios),
            'max': max(ratios),
            'p50': statistics.median(r['compat_mts']['p50_us'] / r['tf215']['p50_us'] for r in rounds),
            'cpu': statistics.median(r['compat_mts']['cpu_us'] / r['tf215']['cpu_us'] for r in rounds),
        }
        line = summary[model]
        print(
            f'| {model} | **{line["ratio"]:.3f}** | {line["min"]:.3f}-{line["max"]:.3f} | {line["p50"]:.3f} | '
            f'{line["cpu"]:.3f} |'
        )
    worst = max(line['ratio'] for line in summary.values())
    print()
    print(f'compat_mts / TF 2.15 per step, the worst model: **{worst:.3f}** (goal <= {args.goal})')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as file:
            json.dump(
                {'results': results, 'summary': summary, 'load_before': load_before, 'load_after': load_after},
                file,
                indent=2,
            )
    if worst > args.goal:
        raise SystemExit(1)


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
    parser.add_argument(
        '--calls',
        type=int,
        help='measure N rounds of train(steps=--call-steps), evaluate() and predict() per model (see --call-kinds)',
    )
    parser.add_argument(
        '--models',
        help='the models, of census, dnn, custom, bert (iterations_per_loop=2), bert1 (iterations_per_loop=1), '
        'separated by commas: with --calls, their calls (default: census,dnn,custom,bert); without, their step '
        'times (--steps, --warmup, --rounds), exiting non-zero when a median ratio is above --goal',
    )
    parser.add_argument(
        '--goal', type=float, default=0.9, help='with --models and no --calls: the worst ratio allowed (%(default)s)'
    )
    parser.add_argument('--call-steps', type=int, default=5, help='steps per train() with --calls (%(default)s)')
    parser.add_argument(
        '--call-kinds',
        nargs='+',
        choices=_CALLS,
        default=list(_CALLS),
        metavar='CALL',
        help='with --calls: the calls of a round, of train, evaluate, predict (run in that order; default: all '
        'three); without train, one untimed train() first gives the others a checkpoint',
    )
    parser.add_argument(
        '--stale-read-blocks',
        type=int,
        help='compat_mts only: N alternating blocks of the iris step with the stale global step read in its call '
        'and read eagerly before it',
    )
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--side', default='tf215', help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.call_kinds = [kind for kind in _CALLS if kind in args.call_kinds]
    per_step = args.models is not None and not args.calls
    args.models = args.models or 'census,dnn,custom,bert'
    unknown = sorted(set(args.models.split(',')) - set(_MODELS))
    if unknown:
        parser.error(f'--models: unknown {unknown}; the models are {", ".join(_MODELS)}, separated by commas')
    sys.path.insert(0, _REPO)
    if args.stale_read_blocks:
        load_before = os.getloadavg()
        report = _stale_read_blocks(args.stale_read_blocks)
        print(
            f'{args.stale_read_blocks} alternating blocks x 200 runs of the iris step; load average '
            f'{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after'
        )
        for way, times in report.items():
            print(f'stale step {way}: median {times["median_us"]:.1f} µs per run, min {times["min_us"]:.1f}')
        return
    if args.child and args.calls:
        report = _calls_side(args.side, args.models, args.calls, args.call_steps, args.call_kinds)
        report['last_line_time'] = time.time()
        print('RESULT:' + json.dumps(report), flush=True)
        return
    if args.child:  # One side's step times: the iris mode's child times `dnn`.
        print('RESULT:' + json.dumps(_side(args.side, args.steps, args.warmup, args.models if per_step else 'dnn')))
        return
    python = _tf215_python(args.tf215_python)
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env.update(PYTHONPATH=_REPO, TF_CPP_MIN_LOG_LEVEL='2')
    if args.calls:
        _calls_main(args, python, env)
        return
    if per_step:
        _per_step_main(args, python, env)
        return
    load_before = os.getloadavg()
    rounds = []
    for _ in range(args.rounds):
        theirs = _per_step_run(python, env, 'dnn', args, 'tf215')
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
