"""Per-step cost of `compat_mts.keras.HooksCallback` inside `model.fit`, against bare `model.fit`.

Every variant fits its own copy of the same Keras model (the `workload.py` MLP, 32 -> 64 -> 1, SGD, MSE,
same starting weights) on the same batch, repeated by `tf.data`:

1. `bare_fit`: `model.fit` with no callback of ours; `bare_fit_control` is a second, identical one, whose
   ratio to the first shows how much the machine's noise alone moves a ratio.
2. `quiet_hooks`: `HooksCallback` of hooks that do nothing per batch (one that acts in `begin`/`end`
   only, and a plain `SessionRunHook`). The callback then does not override Keras's batch methods.
3. `v1_default_hooks`: `HooksCallback` of the hooks v1's `MonitoredTrainingSession` adds by default:
   `StepCounterHook` and `SummarySaverHook` every 100 steps, `CheckpointSaverHook` every 600 s. The hooks say
   on which batch they next act (`idle_until`) and are called only on those; `v1_default_hooks_every_batch`
   hides that from the callback, so the same hooks are called on every batch (as before `HookSchedule`).
4. `bare_fit_spe10` and `v1_default_hooks_spe10`: the same with `steps_per_execution=10`, where the
   hooks run once per execution of 10 steps.

The time is taken per epoch, by a callback that overrides only `on_epoch_begin`/`on_epoch_end` (so it
changes nothing in Keras's per-batch work): one repeat of a variant is one `fit` of `1 + --epochs`
epochs of `--steps` steps, the first epoch untimed (tracing, checkpoint at creation), the others timed.
Repeats are interleaved and their order rotates every round, so that drift in the machine's load is
shared. Two clocks are read:

- wall time: a variant's per-step time is the median over repeats of the repeat's mean, and its ratio to
  bare `fit` (with the same `steps_per_execution`) is the median of the per-round ratios. On a machine
  shared with other work, contention only ever adds wall time, so the ratio of the fast epochs (the 10th
  percentile of each variant's epoch times) is reported too;
- the process's CPU time (all its threads), which waiting for a busy CPU does not inflate: the same
  median-of-rounds ratio, on CPU time. It is the better measure of the work a callback adds.

Run: `PYTHONPATH=. python benchmarks/keras_overhead.py [--steps 100] [--epochs 3] [--repeats 25] [--out results.json]`
"""

from __future__ import annotations

import argparse
import datetime
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

import compat_mts as mts
from compat_mts.keras import HooksCallback

import workload

keras = tf.keras
VARIANTS = (
    'bare_fit',
    'bare_fit_control',
    'quiet_hooks',
    'v1_default_hooks',
    'v1_default_hooks_every_batch',
    'bare_fit_spe10',
    'v1_default_hooks_spe10',
)
LABELS = {
    'bare_fit': 'bare model.fit',
    'bare_fit_control': 'bare model.fit again (noise control)',
    'quiet_hooks': 'HooksCallback, hooks without per-batch work',
    'v1_default_hooks': 'HooksCallback, v1 default hooks',
    'v1_default_hooks_every_batch': 'HooksCallback, v1 default hooks, called on every batch',
    'bare_fit_spe10': 'bare model.fit, steps_per_execution=10',
    'v1_default_hooks_spe10': 'HooksCallback, v1 default hooks, steps_per_execution=10',
}
BASELINE = {
    'bare_fit': 'bare_fit',
    'bare_fit_control': 'bare_fit',
    'quiet_hooks': 'bare_fit',
    'v1_default_hooks': 'bare_fit',
    'v1_default_hooks_every_batch': 'bare_fit',
    'bare_fit_spe10': 'bare_fit_spe10',
    'v1_default_hooks_spe10': 'bare_fit_spe10',
}
BATCH_METHODS = ('on_batch_begin', 'on_batch_end', 'on_train_batch_begin', 'on_train_batch_end')


class EndOnlyHook(mts.SessionRunHook):
    """A hook with no per-batch work: it reads the final global step in `end`."""

    def begin(self):
        self.final_step = None

    def end(self, session):
        self.final_step = int(session.run('global_step'))


class EpochTimer(keras.callbacks.Callback):
    """Wall and CPU time of each epoch; overrides no batch method, so Keras's batch dispatch is unchanged."""

    def __init__(self):
        super().__init__()
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._start = (0.0, 0.0)

    def on_epoch_begin(self, epoch, logs=None):
        self._start = (time.perf_counter(), time.process_time())

    def on_epoch_end(self, epoch, logs=None):
        self.wall.append(time.perf_counter() - self._start[0])
        self.cpu.append(time.process_time() - self._start[1])


def _model(steps_per_execution: int) -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((workload.INPUT_SIZE,)),
            keras.layers.Dense(workload.HIDDEN_SIZE, activation='relu'),
            keras.layers.Dense(1),
        ]
    )
    weights = workload.initial_weights()
    model.set_weights([weights['kernel_1'], weights['bias_1'], weights['kernel_2'], weights['bias_2']])
    model.compile(
        optimizer=keras.optimizers.SGD(workload.LEARNING_RATE), loss='mse', steps_per_execution=steps_per_execution
    )
    return model


def _v1_default_hooks(directory: str) -> list:
    return [
        mts.StepCounterHook(every_n_steps=workload.STEP_RATE_EVERY_STEPS, output_dir=directory),
        mts.SummarySaverHook(save_steps=workload.SUMMARY_EVERY_STEPS, output_dir=directory, scaffold=mts.Scaffold()),
        mts.CheckpointSaverHook(directory, save_secs=workload.CHECKPOINT_EVERY_SECS),
    ]


class Variant:
    """One variant: its model, its callbacks, and `run_repeat`, which fits once and times the epochs."""

    def __init__(self, name: str, workdir: str):
        self.name = name
        self.model = _model(10 if name.endswith('_spe10') else 1)
        directory = os.path.join(workdir, name)
        if name == 'quiet_hooks':
            self.hooks = [EndOnlyHook(), mts.SessionRunHook()]
        elif name.startswith('v1_default_hooks'):
            self.hooks = _v1_default_hooks(directory)
            if name == 'v1_default_hooks_every_batch':
                for hook in self.hooks:
                    hook.idle_until = None  # Withdrawn (HookCapabilities): called on every batch.
        else:
            self.hooks = None

    def callbacks(self, timer: EpochTimer) -> list:
        return [timer] if self.hooks is None else [timer, HooksCallback(self.hooks)]

    def run_repeat(self, dataset: tf.data.Dataset, steps: int, epochs: int) -> tuple[np.ndarray, np.ndarray]:
        """Fits `1 + epochs` epochs of `steps` steps; returns the per-step wall and CPU time of each timed epoch."""
        timer = EpochTimer()
        self.model.fit(
            dataset, epochs=1 + epochs, steps_per_epoch=steps, shuffle=False, verbose=0, callbacks=self.callbacks(timer)
        )
        return np.asarray(timer.wall[1:]) / steps, np.asarray(timer.cpu[1:]) / steps


def run_benchmark(steps: int, epochs: int, repeats: int) -> dict:
    """Builds the variants, runs `repeats` interleaved rounds and returns the results as a dict."""
    workdir = tempfile.mkdtemp(prefix='keras_overhead_')
    try:
        dataset = tf.data.Dataset.from_tensors(workload.synthetic_batch()).repeat()
        variants = {name: Variant(name, workdir) for name in VARIANTS}
        quiet = HooksCallback(variants['quiet_hooks'].hooks)
        busy = HooksCallback(variants['v1_default_hooks'].hooks)
        load_before = os.getloadavg()
        started = time.perf_counter()
        repeat_means: dict[str, list[float]] = {name: [] for name in VARIANTS}
        repeat_cpu_means: dict[str, list[float]] = {name: [] for name in VARIANTS}
        epoch_times: dict[str, list[np.ndarray]] = {name: [] for name in VARIANTS}
        for round_index in range(repeats):
            order = VARIANTS[round_index % len(VARIANTS) :] + VARIANTS[: round_index % len(VARIANTS)]
            for name in order:
                mts.reset_global_step()
                wall, cpu = variants[name].run_repeat(dataset, steps, epochs)
                repeat_means[name].append(float(wall.mean()))
                repeat_cpu_means[name].append(float(cpu.mean()))
                epoch_times[name].append(wall)
            print(
                f'round {round_index + 1}/{repeats}: '
                + ', '.join(
                    f'{name} {repeat_means[name][-1] * 1e6:.0f} us ({repeat_cpu_means[name][-1] * 1e6:.0f} us CPU)'
                    for name in VARIANTS
                ),
                file=sys.stderr,
            )
        elapsed_s = time.perf_counter() - started
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    fast_epoch = {name: float(np.percentile(np.concatenate(epoch_times[name]), 10)) for name in VARIANTS}
    results = {}
    for name in VARIANTS:
        baseline = BASELINE[name]
        per_epoch = np.concatenate(epoch_times[name])
        results[name] = {
            'median_of_repeat_means_s': float(np.median(repeat_means[name])),
            'repeat_means_s': repeat_means[name],
            'p10_epoch_step_s': fast_epoch[name],
            'p50_epoch_step_s': float(np.percentile(per_epoch, 50)),
            'p90_epoch_step_s': float(np.percentile(per_epoch, 90)),
            'median_of_repeat_cpu_means_s': float(np.median(repeat_cpu_means[name])),
            'repeat_cpu_means_s': repeat_cpu_means[name],
            'baseline': baseline,
            'ratio_to_baseline': float(np.median(np.asarray(repeat_means[name]) / np.asarray(repeat_means[baseline]))),
            'fast_epoch_ratio_to_baseline': fast_epoch[name] / fast_epoch[baseline],
            'cpu_ratio_to_baseline': float(
                np.median(np.asarray(repeat_cpu_means[name]) / np.asarray(repeat_cpu_means[baseline]))
            ),
        }
    return {
        'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        'command': ' '.join([os.path.basename(sys.executable)] + sys.argv),
        'tensorflow': tf.__version__,
        'keras': f'{keras.__name__} {getattr(keras, "__version__", "")}'.strip(),
        'python': platform.python_version(),
        'machine': f'{platform.machine()}, {os.cpu_count()} CPUs',
        'load_average_before': load_before,
        'load_average_after': load_after,
        'timed_loop_seconds': elapsed_s,
        'steps_per_epoch': steps,
        'timed_epochs': epochs,
        'repeats': repeats,
        'quiet_hooks_batch_methods_default': {
            method: bool(getattr(getattr(quiet, method), '_is_default', False)) for method in BATCH_METHODS
        },
        'v1_hooks_batch_methods_default': {
            method: bool(getattr(getattr(busy, method), '_is_default', False)) for method in BATCH_METHODS
        },
        'variants': results,
    }


def format_table(report: dict) -> str:
    """The results as a Markdown table."""
    lines = [
        '| variant | wall µs/step (median of repeats) | repeats min-max µs | fast epochs (p10) µs | CPU µs/step '
        '| × baseline, wall | × baseline, wall, fast epochs | × baseline, CPU |',
        '|---|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for name in VARIANTS:
        result = report['variants'][name]
        lines.append(
            f'| {LABELS[name]} | {result["median_of_repeat_means_s"] * 1e6:.1f} '
            f'| {min(result["repeat_means_s"]) * 1e6:.0f}-{max(result["repeat_means_s"]) * 1e6:.0f} '
            f'| {result["p10_epoch_step_s"] * 1e6:.1f} | {result["median_of_repeat_cpu_means_s"] * 1e6:.1f} '
            f'| {result["ratio_to_baseline"]:.3f} | {result["fast_epoch_ratio_to_baseline"]:.3f} '
            f'| {result["cpu_ratio_to_baseline"]:.3f} |'
        )
    quiet_default = all(report['quiet_hooks_batch_methods_default'].values())
    lines += [
        '',
        f"HooksCallback without per-batch hooks leaves Keras's batch methods at their defaults: {quiet_default}",
    ]
    return '\n'.join(lines)


def _check_finite(report: dict) -> None:
    for name in VARIANTS:
        for key, value in report['variants'][name].items():
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(v, str) or math.isfinite(v) for v in values):
                raise RuntimeError(f'{name}: {key} is not finite: {value!r}')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=100, help='steps per epoch (default: %(default)s)')
    parser.add_argument(
        '--epochs', type=int, default=3, help='timed epochs per repeat, after one untimed epoch (default: %(default)s)'
    )
    parser.add_argument(
        '--repeats',
        type=int,
        default=25,
        help='interleaved rounds, each fitting every variant once (default: %(default)s)',
    )
    parser.add_argument('--out', help='write the full results (every repeat, the environment) to this JSON file')
    args = parser.parse_args(argv)
    if args.steps < 10 or args.epochs < 1 or args.repeats < 1:
        parser.error('--steps must be at least 10 (one execution of 10 steps), --epochs and --repeats positive.')

    report = run_benchmark(args.steps, args.epochs, args.repeats)
    _check_finite(report)
    workload.publish(
        report,
        [
            f'{report["date"]}  TensorFlow {report["tensorflow"]}  {report["keras"]}  Python {report["python"]}  '
            f'{report["machine"]}',
            f'{args.repeats} interleaved repeats x {args.epochs} timed epochs of {args.steps} steps (+1 untimed epoch) '
            f'per variant; load average {report["load_average_before"][0]:.2f} before, '
            f'{report["load_average_after"][0]:.2f} after',
        ],
        format_table(report),
        args.out,
    )


if __name__ == '__main__':
    main()
