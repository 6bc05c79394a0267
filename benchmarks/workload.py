"""The benchmarks' shared parts: the workload (a tiny 2-layer MLP on a fixed batch) and the step timer.

The model (32 -> 64 -> 1, batch 32, SGD) is deliberately small, so that a step costs a few hundred
microseconds on a CPU and the per-step host work of the training loop around it shows. Both benchmark
processes (the eager one and the v1 graph-mode child) build it from the same NumPy arrays, so every
variant trains the same model from the same starting weights on the same data. This module imports
NumPy only (and the standard library): the v1 child must be able to import it before it turns eager
execution off.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Callable

import numpy as np

INPUT_SIZE = 32
HIDDEN_SIZE = 64
BATCH_SIZE = 32
LEARNING_RATE = 0.01
SEED = 0

# What v1's MonitoredTrainingSession defaults to, and what the hand-written TF2 loop copies.
SUMMARY_EVERY_STEPS = 100
STEP_RATE_EVERY_STEPS = 100
CHECKPOINT_EVERY_SECS = 600


def synthetic_batch() -> tuple[np.ndarray, np.ndarray]:
    """The fixed `(features, targets)` batch, float32, shapes `(32, 32)` and `(32, 1)`."""
    rng = np.random.default_rng(SEED)
    features = rng.standard_normal((BATCH_SIZE, INPUT_SIZE)).astype(np.float32)
    targets = (features.sum(axis=1, keepdims=True) / INPUT_SIZE).astype(np.float32)
    return features, targets


def initial_weights() -> dict[str, np.ndarray]:
    """Glorot-uniform kernels and zero biases, by name (`kernel_1`, `bias_1`, `kernel_2`, `bias_2`)."""
    rng = np.random.default_rng(SEED + 1)

    def glorot(fan_in: int, fan_out: int) -> np.ndarray:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)

    return {
        'kernel_1': glorot(INPUT_SIZE, HIDDEN_SIZE),
        'bias_1': np.zeros(HIDDEN_SIZE, np.float32),
        'kernel_2': glorot(HIDDEN_SIZE, 1),
        'bias_2': np.zeros(1, np.float32),
    }


def summarize_step_times(repeat_means: list[float], step_times: np.ndarray, repeat_cpu_means: list[float]) -> dict:
    """Median and spread of the per-repeat mean step times, percentiles of individual steps, and the median
    per-repeat process CPU time per step (seconds)."""
    return {
        'median_of_repeat_means_s': float(np.median(repeat_means)),
        'repeat_means_s': [float(mean) for mean in repeat_means],
        'p50_step_s': float(np.percentile(step_times, 50)),
        'p99_step_s': float(np.percentile(step_times, 99)),
        'steps_timed': int(step_times.size),
        'median_cpu_per_step_s': float(np.median(repeat_cpu_means)),
        'repeat_cpu_means_s': [float(mean) for mean in repeat_cpu_means],
    }


def time_steps(run_one_step: Callable[[], object], steps: int) -> tuple[float, np.ndarray]:
    """Runs `run_one_step` `steps` times; returns the mean seconds per step (wall time of the whole loop
    over `steps`) and each step's own duration."""
    clock = time.perf_counter
    durations = np.empty(steps)
    loop_start = clock()
    for index in range(steps):
        start = clock()
        run_one_step()
        durations[index] = clock() - start
    return (clock() - loop_start) / steps, durations


def time_steps_with_cpu(run_one_step: Callable[[], object], steps: int) -> dict:
    """`time_steps`, plus the CPU time of the whole process (all its threads) per step.

    CPU time is less disturbed than wall time when other processes compete for the cores. Returns
    `{'mean_step_s', 'cpu_step_s', 'step_times_s'}` (the last a NumPy array).
    """
    cpu_start = time.process_time()
    mean_step_s, step_times = time_steps(run_one_step, steps)
    return {
        'mean_step_s': mean_step_s,
        'cpu_step_s': (time.process_time() - cpu_start) / steps,
        'step_times_s': step_times,
    }


def publish(report: dict, heading: list[str], table: str, out: str | None) -> None:
    """Prints a benchmark's heading lines and its table, and writes `report` as JSON to `out` when given."""
    print('\n'.join(heading))
    print()
    print(table)
    if out:
        with open(out, 'w', encoding='utf-8') as file:
            json.dump(report, file, indent=2)
            file.write('\n')


class ServedChild:
    """A benchmark side in a child process of its own, which answers one JSON line per request line.

    The protocol of `v1_graph_mode.py --serve` and `trainers_overhead.py --child`: the child prints one JSON
    line when it is ready (with its `tensorflow` version), then one per request line read on its stdin, until
    `quit`. Its stderr goes to `stderr_path`, whose end is shown if the child dies.
    """

    def __init__(self, name: str, argv: list[str], stderr_path: str, close_timeout_s: float = 60):
        self.name = name
        self._close_timeout_s = close_timeout_s
        self._stderr = open(stderr_path, 'w+', encoding='utf-8')
        self._process = subprocess.Popen(
            [sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True
        )
        self.tensorflow_version: str | None = None

    def wait_until_ready(self) -> None:
        self.tensorflow_version = self._read()['tensorflow']

    def request(self, line: str) -> dict:
        """Sends `line`; returns the child's answer."""
        self._process.stdin.write(line + '\n')
        self._process.stdin.flush()
        return self._read()

    def _read(self) -> dict:
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            self._stderr.seek(0)
            raise RuntimeError(
                f'{self.name} exited with status {self._process.returncode}:\n{self._stderr.read()[-4000:]}'
            )
        return json.loads(line)

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.write('quit\n')
            self._process.stdin.close()
            self._process.wait(timeout=self._close_timeout_s)
        self._stderr.close()
