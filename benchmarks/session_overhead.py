"""Per-step cost of compat_mts's `MonitoredTrainingSession` against a bare loop, hand-written TF2 and v1 graph mode.

Six variants train the same tiny model (`workload.py`) with the same `tf.function` train step (one
traced instance per variant, since a traced step keeps the summary writer it saw), each with its own
global step:

1. `bare_loop`: `for _ in range(n): train_step()`. No default summary writer, so the step's
   `tf.summary.scalar` is inert. The issue's baseline.
1b. `bare_concrete`: the same loop calling `train_step.get_concrete_function()` instead, which skips the
   `tf.function`'s per-call dispatch (argument binding, context, cache lookup). compat_mts goes one layer
   further, to the concrete function's atomic function (see `compat_mts.core.fetch`), so this row shows how
   much skipping the dispatch alone is worth.
1c. `concrete_record_if`: the floor a hand-written TF2 loop reaches with v1's default summaries: the step's
   concrete function traced inside `writer.as_default(step=gs)` and `tf.summary.record_if(lambda: gs % 100 ==
   0)`, called in a loop with no Python around it (no rate, no checkpoint). Issue 34's goal: compat_mts at most
   1.0x this, and at most 0.8x v1 graph mode; the benchmark exits 1 past either.
2. `hand_written_tf2`: what people write in TF2 instead of v1's default hooks: each call inside
   `writer.as_default(step=gs)` and `tf.summary.record_if(lambda: gs % 100 == 0)`, `gs.numpy()` read
   after every step to write `global_step/sec` every 100 steps, and a `tf.train.CheckpointManager` save
   whenever `time.time()` says 600 s have passed.
3. `compat_mts`: `compat_mts.MonitoredTrainingSession(checkpoint_dir=..., scaffold=Scaffold(saver=...))`
   with its v1 defaults (global_step/sec and summaries every 100 steps, a checkpoint every 600 s) and
   `session.run(train_step)` per step.
4. `v1_graph_mode`: the same model written for TF1 under the real `tf.compat.v1.train.MonitoredTrainingSession`,
   in a child process (`v1_graph_mode.py --serve`) that times one repeat whenever asked.

One repeat of a variant opens its session (or loop state), runs `--warmup` untimed steps, then times
`--steps` steps. Repeats are interleaved, and the order rotates each round (ABCD, BCDA, ...), so that
drift in the machine's load is shared by all variants. A variant's per-step time is the median over
repeats of the repeat's mean step time; its ratio to the bare loop is the median of the per-round ratios.
The ratio of the median single steps (p50) is printed too: on a shared machine, preemption by other
processes disturbs it less, but it leaves out the every-100-steps work that the means include.

Run: `PYTHONPATH=. python benchmarks/session_overhead.py [--steps 2000] [--repeats 15] [--out results.json]`

`--feed-dict` times a fed step instead (the features an argument of the step, the same NumPy batch fed on
every step): the bare loop `train_step(features=batch)` against compat_mts's `session.run(train_step,
feed_dict={'features': batch})`, whose feed keys are checked against the step's arguments on every run.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import gc
import math
import os
import platform
import shutil
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # Before TensorFlow is imported: no C++ info on stderr.

import numpy as np
import tensorflow as tf

from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import execute

import compat_mts as mts

import workload

BENCHMARKS_DIR = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ('bare_loop', 'bare_concrete', 'concrete_record_if', 'hand_written_tf2', 'compat_mts', 'v1_graph_mode')
# Issue 34's goals for compat_mts: at most these times the concrete-function loop under `record_if`, v1 graph mode.
GOALS = {'compat_mts_over_concrete_record_if': 1.0, 'compat_mts_over_v1_graph_mode': 0.8}
LABELS = {
    'bare_loop': 'bare loop',
    'bare_concrete': 'bare loop, concrete function',
    'concrete_record_if': 'concrete function under record_if (the TF2 floor)',
    'hand_written_tf2': 'hand-written TF2',
    'compat_mts': 'compat_mts (v1 default hooks)',
    'v1_graph_mode': 'v1 graph mode (tf.compat.v1 MTS)',
}


class Model:
    """The workload as TF2 objects: variables, a Keras SGD optimizer and the traced train step.

    The step is the one every eager variant runs: forward, gradients, `apply_gradients`,
    `global_step.assign_add(1)`, `tf.summary.scalar('loss', loss)`. It returns nothing, as v1's
    `train_op` fetched nothing, so no variant copies a value to the host because of the step itself.
    """

    def __init__(self, global_step: tf.Variable):
        self.global_step = global_step
        self.variables = {name: tf.Variable(value, name=name) for name, value in workload.initial_weights().items()}
        self.optimizer = tf.keras.optimizers.SGD(workload.LEARNING_RATE)
        features, targets = (tf.constant(array) for array in workload.synthetic_batch())
        variables = self.variables
        trainable = list(variables.values())

        def one_step(features):
            with tf.GradientTape() as tape:
                hidden = tf.nn.relu(tf.matmul(features, variables['kernel_1']) + variables['bias_1'])
                predictions = tf.matmul(hidden, variables['kernel_2']) + variables['bias_2']
                loss = tf.reduce_mean(tf.square(predictions - targets))
            self.optimizer.apply_gradients(zip(tape.gradient(loss, trainable), trainable))
            global_step.assign_add(1)
            tf.summary.scalar('loss', loss)

        @tf.function
        def train_step():
            one_step(features)

        @tf.function
        def fed_train_step(features):
            one_step(features)

        self.train_step = train_step
        self.fed_train_step = fed_train_step

    def checkpoint(self, **extra) -> tf.train.Checkpoint:
        return tf.train.Checkpoint(variables=self.variables, optimizer=self.optimizer, **extra)


def _new_global_step() -> tf.Variable:
    return tf.Variable(0, dtype=tf.int64, trainable=False, name='global_step')


class BareLoop:
    """Variant 1: the step called in a loop, nothing else."""

    def __init__(self, workdir: str):
        del workdir
        self.model = Model(_new_global_step())

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        train_step = self.model.train_step
        for _ in range(warmup_steps):
            train_step()
        return workload.time_steps_with_cpu(train_step, steps)


class BareConcreteLoop:
    """Variant 1b: the step's concrete function called in a loop, nothing else."""

    def __init__(self, workdir: str):
        del workdir
        self.model = Model(_new_global_step())

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        self.model.train_step()  # The first call creates the optimizer's variables.
        concrete = self.model.train_step.get_concrete_function()
        for _ in range(warmup_steps):
            concrete()
        return workload.time_steps_with_cpu(concrete, steps)


class ConcreteRecordIf:
    """Variant 1c: the step's concrete function traced under a writer and `record_if`, called in a loop."""

    def __init__(self, workdir: str):
        self.model = Model(_new_global_step())
        self.writer = tf.summary.create_file_writer(os.path.join(workdir, 'concrete_record_if'))
        global_step = self.model.global_step
        with (
            self.writer.as_default(step=global_step),
            tf.summary.record_if(lambda: global_step % workload.SUMMARY_EVERY_STEPS == 0),
        ):
            self.model.train_step()  # The first call creates the optimizer's variables.
            self.concrete = self.model.train_step.get_concrete_function()

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        concrete = self.concrete
        for _ in range(warmup_steps):
            concrete()
        result = workload.time_steps_with_cpu(concrete, steps)
        self.writer.flush()
        return result


class HandWrittenTF2:
    """Variant 2: the naive TF2 equivalent of v1's default hooks, written out by hand."""

    def __init__(self, workdir: str):
        self.model = Model(_new_global_step())
        self.directory = os.path.join(workdir, 'hand_written_tf2')
        self.manager = tf.train.CheckpointManager(
            self.model.checkpoint(global_step=self.model.global_step), self.directory, max_to_keep=5
        )
        self.writer = tf.summary.create_file_writer(self.directory)

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        global_step, writer, manager = self.model.global_step, self.writer, self.manager
        train_step = self.model.train_step
        manager.save(checkpoint_number=int(global_step.numpy()))
        state = {'last_save_time': time.time(), 'rate_time': time.time(), 'rate_step': int(global_step.numpy())}

        def one_step():
            with (
                writer.as_default(step=global_step),
                tf.summary.record_if(lambda: global_step % workload.SUMMARY_EVERY_STEPS == 0),
            ):
                train_step()
            step = int(global_step.numpy())
            if step % workload.STEP_RATE_EVERY_STEPS == 0:
                now = time.time()
                steps_per_sec = (step - state['rate_step']) / (now - state['rate_time'])
                with writer.as_default(step=step):
                    tf.summary.scalar('global_step/sec', steps_per_sec)
                state['rate_time'], state['rate_step'] = now, step
            if time.time() - state['last_save_time'] >= workload.CHECKPOINT_EVERY_SECS:
                manager.save(checkpoint_number=step)
                state['last_save_time'] = time.time()

        for _ in range(warmup_steps):
            one_step()
        result = workload.time_steps_with_cpu(one_step, steps)
        manager.save(checkpoint_number=int(global_step.numpy()))
        writer.flush()
        return result


class CompatMTS:
    """Variant 3: compat_mts's `MonitoredTrainingSession` with its v1 default hooks."""

    def __init__(self, workdir: str):
        mts.reset_global_step()
        self.model = Model(mts.get_or_create_global_step())
        self.saver = self.model.checkpoint()
        self.directory = os.path.join(workdir, 'compat_mts')

    def session(self) -> mts.MonitoredSession:
        mts.set_global_step(self.model.global_step)
        return mts.MonitoredTrainingSession(checkpoint_dir=self.directory, scaffold=mts.Scaffold(saver=self.saver))

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        with self.session() as session:
            run_train_step = functools.partial(session.run, self.model.train_step)
            for _ in range(warmup_steps):
                run_train_step()
            return workload.time_steps_with_cpu(run_train_step, steps)

    def count_executions(self, steps: int) -> collections.Counter:
        """How many TensorFlow executions (eager ops and function calls) each run makes, as {executions: runs}.

        A bare loop makes one per step, the step's function call; anything more is host work of the session
        (a separate read of the global step, the summary switches, a checkpoint save).
        """
        executions = [0]
        originals = (pywrap_tfe.TFE_Py_FastPathExecute, execute.execute)

        def counted(function):
            def wrapper(*args, **kwargs):
                executions[0] += 1
                return function(*args, **kwargs)

            return wrapper

        per_run = collections.Counter()
        with self.session() as session:
            pywrap_tfe.TFE_Py_FastPathExecute, execute.execute = (counted(f) for f in originals)
            try:
                for _ in range(steps):
                    before = executions[0]
                    session.run(self.model.train_step)
                    per_run[executions[0] - before] += 1
            finally:
                pywrap_tfe.TFE_Py_FastPathExecute, execute.execute = originals
        return per_run


class V1GraphModeChild(workload.ServedChild):
    """Variant 4, driven in a child process: one `run` line on its stdin, one timed repeat back."""

    def __init__(self, warmup_steps: int, steps: int, stderr_path: str):
        super().__init__(
            'v1_graph_mode.py',
            [
                os.path.join(BENCHMARKS_DIR, 'v1_graph_mode.py'),
                '--serve',
                '--warmup',
                str(warmup_steps),
                '--steps',
                str(steps),
            ],
            stderr_path,
        )

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        del warmup_steps, steps  # Fixed when the child was started.
        result = self.request('run')
        return {**result, 'step_times_s': np.asarray(result['step_times_s'])}


def run_benchmark(steps: int, repeats: int, warmup_steps: int, count_steps: int) -> dict:
    """Builds the five variants, runs `repeats` interleaved rounds and returns the results as a dict."""
    workdir = tempfile.mkdtemp(prefix='session_overhead_')
    child = V1GraphModeChild(warmup_steps, steps, os.path.join(workdir, 'v1_graph_mode.stderr'))
    try:
        variants: dict[str, object] = {
            'bare_loop': BareLoop(workdir),
            'bare_concrete': BareConcreteLoop(workdir),
            'concrete_record_if': ConcreteRecordIf(workdir),
            'hand_written_tf2': HandWrittenTF2(workdir),
            'compat_mts': CompatMTS(workdir),
            'v1_graph_mode': child,
        }
        child.wait_until_ready()
        load_before = os.getloadavg()
        repeat_means: dict[str, list[float]] = {name: [] for name in VARIANTS}
        repeat_cpu_means: dict[str, list[float]] = {name: [] for name in VARIANTS}
        step_times: dict[str, list[np.ndarray]] = {name: [] for name in VARIANTS}
        started = time.perf_counter()
        for round_index in range(repeats):
            rotation = round_index % len(VARIANTS)
            for name in VARIANTS[rotation:] + VARIANTS[:rotation]:
                gc.collect()
                timing = variants[name].run_repeat(warmup_steps, steps)
                repeat_means[name].append(timing['mean_step_s'])
                repeat_cpu_means[name].append(timing['cpu_step_s'])
                step_times[name].append(timing['step_times_s'])
            print(
                f'round {round_index + 1}/{repeats}: '
                + ', '.join(f'{name} {repeat_means[name][-1] * 1e6:.0f} us' for name in VARIANTS),
                file=sys.stderr,
            )
        elapsed_s = time.perf_counter() - started
        load_after = os.getloadavg()
        executions_per_run = variants['compat_mts'].count_executions(count_steps) if count_steps else None
        tensorflow_in_child = child.tensorflow_version
    finally:
        child.close()
        shutil.rmtree(workdir, ignore_errors=True)

    results = {
        name: workload.summarize_step_times(
            repeat_means[name], np.concatenate(step_times[name]), repeat_cpu_means[name]
        )
        for name in VARIANTS
    }

    def ratios(name: str, baseline: str) -> dict[str, float]:
        """`name` over `baseline`: medians of the per-round ratios of means and CPU, and the ratio of p50s."""
        return {
            'mean': float(np.median(np.asarray(repeat_means[name]) / np.asarray(repeat_means[baseline]))),
            'p50': results[name]['p50_step_s'] / results[baseline]['p50_step_s'],
            'cpu': float(np.median(np.asarray(repeat_cpu_means[name]) / np.asarray(repeat_cpu_means[baseline]))),
        }

    for name in VARIANTS:
        results[name]['ratios_to_bare_loop'] = ratios(name, 'bare_loop')
    return {
        'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        'command': ' '.join([os.path.basename(sys.executable)] + sys.argv),
        'tensorflow': tf.__version__,
        'tensorflow_v1_child': tensorflow_in_child,
        'python': platform.python_version(),
        'machine': f'{platform.machine()}, {os.cpu_count()} CPUs',
        'load_average_before': load_before,
        'load_average_after': load_after,
        'timed_loop_seconds': elapsed_s,
        'steps': steps,
        'repeats': repeats,
        'warmup_steps': warmup_steps,
        'variants': results,
        'compat_mts_over_hand_written_tf2': ratios('compat_mts', 'hand_written_tf2'),
        'compat_mts_over_v1_graph_mode': ratios('compat_mts', 'v1_graph_mode'),
        'compat_mts_over_bare_concrete': ratios('compat_mts', 'bare_concrete'),
        'compat_mts_over_concrete_record_if': ratios('compat_mts', 'concrete_record_if'),
        'compat_mts_executions_per_run': (
            {str(count): runs for count, runs in sorted(executions_per_run.items())} if executions_per_run else None
        ),
        'compat_mts_executions_counted_over_runs': count_steps,
    }


FED_VARIANTS = ('bare_loop_fed', 'compat_mts_fed')
FED_LABELS = {
    'bare_loop_fed': 'bare loop, `train_step(features=batch)`',
    'compat_mts_fed': "compat_mts, `session.run(train_step, feed_dict={'features': batch})`",
}


class BareFedLoop:
    """`--feed-dict`, the baseline: the fed step called in a loop with the NumPy batch."""

    def __init__(self, workdir: str):
        del workdir
        self.model = Model(_new_global_step())
        self.batch = workload.synthetic_batch()[0]

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        run_one = functools.partial(self.model.fed_train_step, features=self.batch)
        for _ in range(warmup_steps):
            run_one()
        return workload.time_steps_with_cpu(run_one, steps)


class CompatMTSFed(CompatMTS):
    """`--feed-dict`: compat_mts's session with its v1 default hooks, the batch fed by `feed_dict`."""

    def __init__(self, workdir: str):
        super().__init__(workdir)
        self.feed_dict = {'features': workload.synthetic_batch()[0]}

    def run_repeat(self, warmup_steps: int, steps: int) -> dict:
        with self.session() as session:
            run_one = functools.partial(session.run, self.model.fed_train_step, feed_dict=self.feed_dict)
            for _ in range(warmup_steps):
                run_one()
            return workload.time_steps_with_cpu(run_one, steps)


def run_feed_benchmark(steps: int, repeats: int, warmup_steps: int) -> dict:
    """The `--feed-dict` benchmark: the two fed variants, interleaved as `run_benchmark`'s."""
    workdir = tempfile.mkdtemp(prefix='session_overhead_fed_')
    try:
        variants = {'bare_loop_fed': BareFedLoop(workdir), 'compat_mts_fed': CompatMTSFed(workdir)}
        load_before = os.getloadavg()
        means: dict[str, list[float]] = {name: [] for name in FED_VARIANTS}
        cpu_means: dict[str, list[float]] = {name: [] for name in FED_VARIANTS}
        step_times: dict[str, list[np.ndarray]] = {name: [] for name in FED_VARIANTS}
        for round_index in range(repeats):
            order = FED_VARIANTS if round_index % 2 == 0 else FED_VARIANTS[::-1]
            for name in order:
                gc.collect()
                timing = variants[name].run_repeat(warmup_steps, steps)
                means[name].append(timing['mean_step_s'])
                cpu_means[name].append(timing['cpu_step_s'])
                step_times[name].append(timing['step_times_s'])
            print(
                f'round {round_index + 1}/{repeats}: '
                + ', '.join(f'{name} {means[name][-1] * 1e6:.0f} us' for name in FED_VARIANTS),
                file=sys.stderr,
            )
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = {
        name: workload.summarize_step_times(means[name], np.concatenate(step_times[name]), cpu_means[name])
        for name in FED_VARIANTS
    }
    return {
        'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        'command': ' '.join([os.path.basename(sys.executable)] + sys.argv),
        'tensorflow': tf.__version__,
        'python': platform.python_version(),
        'machine': f'{platform.machine()}, {os.cpu_count()} CPUs',
        'load_average_before': load_before,
        'load_average_after': load_after,
        'steps': steps,
        'repeats': repeats,
        'warmup_steps': warmup_steps,
        'variants': results,
        'compat_mts_fed_over_bare_loop_fed': {
            'mean': float(np.median(np.asarray(means['compat_mts_fed']) / np.asarray(means['bare_loop_fed']))),
            'p50': results['compat_mts_fed']['p50_step_s'] / results['bare_loop_fed']['p50_step_s'],
            'cpu': float(np.median(np.asarray(cpu_means['compat_mts_fed']) / np.asarray(cpu_means['bare_loop_fed']))),
        },
    }


def format_feed_table(report: dict) -> str:
    """The `--feed-dict` results as a Markdown table, and compat_mts's ratio to the bare fed loop."""
    lines = [
        '| variant | per-step µs (median of repeat means) | p50 µs | p99 µs | CPU µs/step |',
        '|---|---:|---:|---:|---:|',
    ]
    for name in FED_VARIANTS:
        result = report['variants'][name]
        lines.append(
            f'| {FED_LABELS[name]} | {result["median_of_repeat_means_s"] * 1e6:.1f} | {result["p50_step_s"] * 1e6:.1f} '
            f'| {result["p99_step_s"] * 1e6:.1f} | {result["median_cpu_per_step_s"] * 1e6:.1f} |'
        )
    ratios = report['compat_mts_fed_over_bare_loop_fed']
    lines += [
        '',
        f'compat_mts fed / bare loop fed: {ratios["mean"]:.3f}   (p50: {ratios["p50"]:.3f}, CPU: {ratios["cpu"]:.3f})',
    ]
    return '\n'.join(lines)


def format_table(report: dict) -> str:
    """The results as a Markdown table, followed by the compat_mts ratios and the step-read count."""
    lines = [
        '| variant | per-step µs (median of repeat means) | repeat means min-max µs | p50 µs | p99 µs | steps/s '
        '| × bare loop | × bare (p50) | CPU µs/step | × bare (CPU) |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for name in VARIANTS:
        result = report['variants'][name]
        median = result['median_of_repeat_means_s']
        ratios = result['ratios_to_bare_loop']
        lines.append(
            f'| {LABELS[name]} | {median * 1e6:.1f} | {min(result["repeat_means_s"]) * 1e6:.0f}-'
            f'{max(result["repeat_means_s"]) * 1e6:.0f} | {result["p50_step_s"] * 1e6:.1f} '
            f'| {result["p99_step_s"] * 1e6:.1f} | {1 / median:.0f} | {ratios["mean"]:.3f} | {ratios["p50"]:.3f} '
            f'| {result["median_cpu_per_step_s"] * 1e6:.1f} | {ratios["cpu"]:.3f} |'
        )
    lines.append('')
    for key, label in (
        ('compat_mts_over_hand_written_tf2', 'compat_mts / hand-written TF2:       '),
        ('compat_mts_over_v1_graph_mode', 'compat_mts / v1 graph mode:          '),
        ('compat_mts_over_bare_concrete', 'compat_mts / bare concrete function: '),
        ('compat_mts_over_concrete_record_if', 'compat_mts / concrete under record_if:'),
    ):
        ratios = report[key]
        lines.append(f'{label} {ratios["mean"]:.3f}   (p50: {ratios["p50"]:.3f}, CPU: {ratios["cpu"]:.3f})')
    executions = report['compat_mts_executions_per_run']
    if executions:
        counted = report['compat_mts_executions_counted_over_runs']
        usual = max(executions, key=executions.get)
        lines.append(
            f'compat_mts TensorFlow executions (ops and function calls) per run: {usual} on most runs '
            f'(executions: runs over {counted} runs = {executions})'
        )
    return '\n'.join(lines)


def _check_finite(report: dict) -> None:
    for name in VARIANTS:
        for key, value in report['variants'][name].items():
            values = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
            if not all(math.isfinite(v) for v in values):
                raise RuntimeError(f'{name}: {key} is not finite: {value!r}')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--steps', type=int, default=2000, help='timed steps per repeat of each variant (default: %(default)s)'
    )
    parser.add_argument(
        '--repeats',
        type=int,
        default=15,
        help='interleaved rounds, each timing every variant once (default: %(default)s)',
    )
    parser.add_argument(
        '--warmup', type=int, default=100, help='untimed steps at the start of each repeat (default: %(default)s)'
    )
    parser.add_argument(
        '--count-steps',
        type=int,
        default=300,
        help="runs over which compat_mts's TensorFlow executions are counted, 0 to skip (default: %(default)s)",
    )
    parser.add_argument('--feed-dict', action='store_true', help='time the fed step (bare loop and compat_mts) instead')
    parser.add_argument('--out', help='write the full results (every repeat, the environment) to this JSON file')
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0 or args.count_steps < 0:
        parser.error('--steps and --repeats must be positive, --warmup and --count-steps non-negative.')
    if args.feed_dict:
        report = run_feed_benchmark(args.steps, args.repeats, args.warmup)
        workload.publish(
            report,
            [
                f'{report["date"]}  TensorFlow {report["tensorflow"]}  Python {report["python"]}  {report["machine"]}',
                f'--feed-dict: {args.repeats} interleaved repeats x {args.steps} timed steps (+{args.warmup} warm-up); '
                f'load average {report["load_average_before"][0]:.2f} before, {report["load_average_after"][0]:.2f} '
                'after',
            ],
            format_feed_table(report),
            args.out,
        )
        return

    report = run_benchmark(args.steps, args.repeats, args.warmup, args.count_steps)
    _check_finite(report)
    workload.publish(
        report,
        [
            f'{report["date"]}  TensorFlow {report["tensorflow"]}  Python {report["python"]}  {report["machine"]}',
            f'{args.repeats} interleaved repeats x {args.steps} timed steps (+{args.warmup} warm-up) per variant; '
            f'load average {report["load_average_before"][0]:.2f} before, {report["load_average_after"][0]:.2f} after',
        ],
        format_table(report),
        args.out,
    )
    missed = [f'{key} {report[key]["mean"]:.3f} > {goal}' for key, goal in GOALS.items() if report[key]['mean'] > goal]
    if missed:
        print(f'Goal missed (ratio of means): {"; ".join(missed)}', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
