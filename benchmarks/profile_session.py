"""Where compat_mts's per-step time goes: a timed breakdown and ranked profiles of the session's own code.

On `session_overhead.py`'s model and its `compat_mts` variant (v1 default hooks):

1. **Breakdown**, timed in short interleaved blocks (so that load drift is shared), inside one open session,
   layer by layer; each row says which row it adds to, and the difference is what its layer costs:
   - `bare step`: the train step traced without a summary writer, called as a `tf.function`;
   - `session's step`: the same step traced inside the session (its `tf.summary.scalar` is now a
     recording-gated write), called as a `tf.function`, without `session.run`;
   - `session's step, concrete function`: its `get_concrete_function()` called (no `tf.function` dispatch);
   - `direct call`: how compat_mts calls a step from its second run on (`fetches._DirectStep.call`: the
     atomic function by name, its inputs and output packing worked out once);
   - `direct call with the global-step read`: the same, in the function that also returns the global step
     read before the step (what the hooks' `STALE_GLOBAL_STEP` costs);
   - `fetch model`: `fetches.Run` of the step and three `STALE_GLOBAL_STEP` requests, as the default hooks
     make them, without a session (what resolving the fetches costs);
   - `run, no hooks`: `session.run(step)` on a second `MonitoredSession` that has no hooks;
   - `run, default hooks`: `session.run(step)` on the `MonitoredTrainingSession` (what the hooks and the
     session's own dispatch add to the fetch model).
   Then, on the bare step alone, what host work *between* steps costs: the step with an eager read of
   the global step before it (what the built-in hooks' `STALE_GLOBAL_STEP` costs), with a 30 µs
   busy-wait before it, and inside a `tf.function` that also reads the global step and returns it (the
   read folded into the step's own execution). On the 2-core machine of RESULTS.md, an eager op between
   two steps cost two to four times its own duration (the step runs slower after it); Python work, about
   its own duration.
2. **cProfile** of `--profile-steps` runs: for each function of `compat_mts/`, its own time plus the time
   of what it calls outside compat_mts (TensorFlow ops, protos, logging), the step itself excluded, in µs
   per run, ranked. cProfile's per-call cost inflates Python-heavy code, so its µs overstate small
   Python functions against TensorFlow calls.
3. **py-spy** (if the `py-spy` command is installed; `pip install py-spy`): a child process alternates
   blocks of `session.run(step)` and of the bare step for `--py-spy-seconds`, and py-spy samples it from
   outside, without slowing it. Each sample is charged to the step when the step's `tf.function` is on
   the stack, else to the innermost compat_mts function (TensorFlow code below it included). A share of
   the samples times the block's measured µs per run gives µs per run. This is the measure to rank by:
   it sees the runs as they really run, and the bare blocks show whether the step itself got slower
   inside `session.run`.

Run: `PYTHONPATH=. python benchmarks/profile_session.py [--blocks 30] [--profile-steps 3000] [--py-spy-seconds 30]`
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import session_overhead  # Sets TF_CPP_MIN_LOG_LEVEL before TensorFlow is imported.
import workload

import tensorflow as tf

import compat_mts as mts
from compat_mts.core import global_step as global_step_lib

COMPAT_MTS_DIR = os.path.dirname(os.path.abspath(mts.__file__)) + os.sep
READ_ALONE = 'the eager global-step read alone (what STALE_GLOBAL_STEP costs)'
# A tf.function call, a call of its concrete function, or of its atomic function by name (how compat_mts calls a
# step from its second run on); per run, compat_mts calls none but the step.
_STEP_FRAMES = ('polymorphic_function.py', 'concrete_function.py')
_STEP_FUNCTION = '_call_atomic'  # compat_mts's call of a step's atomic function (_tf_internals.ConcreteCall).
_PY_SPY_FRAME = re.compile(r'^(?P<function>.*) \((?P<path>[^()]*?)(?::(?P<line>\d+))?\)$')


def _is_compat_mts(function_key: tuple) -> bool:
    return function_key[0].startswith(COMPAT_MTS_DIR)


def _label(path: str, name: str) -> str:
    relative = path[len(COMPAT_MTS_DIR) :] if path.startswith(COMPAT_MTS_DIR) else path.split('compat_mts/', 1)[-1]
    return f'compat_mts/{relative}:{name}'


# Each layer of a run, and the layer it adds to: the difference between the two is what that layer costs.
LAYERS = (
    ('bare step', None),
    ("session's step", 'bare step'),
    ("session's step, concrete function", "session's step"),
    ('direct call (how compat_mts calls a step)', "session's step, concrete function"),
    ('direct call with the global-step read', 'direct call (how compat_mts calls a step)'),
    ("fetch model: the step and three hooks' STALE_GLOBAL_STEP", 'direct call with the global-step read'),
    ('run, no hooks', 'direct call (how compat_mts calls a step)'),
    ('run, default hooks', "fetch model: the step and three hooks' STALE_GLOBAL_STEP"),
)


def breakdown(model_session, blocks: int, block_steps: int) -> dict[str, tuple[float, float]]:
    """Median over `blocks` rounds of each layer's mean wall and main-thread CPU µs per step (see `LAYERS`)."""
    from compat_mts.core import fetch as fetches_lib

    bare = session_overhead.BareLoop('')
    hookless = mts.MonitoredSession(hooks=[])
    try:
        with model_session.session() as session:
            step = model_session.model.train_step
            global_step = model_session.model.global_step
            session.run(step)
            session.run(step)
            direct = fetches_lib._direct_step(step)  # The session's own.
            stale = fetches_lib.STALE_GLOBAL_STEP
            configurations = {
                'bare step': bare.model.train_step,
                "session's step": step,
                "session's step, concrete function": step.get_concrete_function(),
                'direct call (how compat_mts calls a step)': direct.call,
                'direct call with the global-step read': functools.partial(direct.call_after_read, global_step, {}),
                "fetch model: the step and three hooks' STALE_GLOBAL_STEP": lambda: fetches_lib.Run(
                    [step, stale, stale, stale], None, global_step, session_step=True
                ).execute(),
                'run, no hooks': functools.partial(hookless.run, step),
                'run, default hooks': functools.partial(session.run, step),
            }
            for run_one in configurations.values():
                for _ in range(50):
                    run_one()
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in configurations}
            for _ in range(blocks):
                for name, run_one in configurations.items():
                    cpu_start = time.thread_time()
                    mean_s, _ = workload.time_steps(run_one, block_steps)
                    samples[name].append((mean_s, (time.thread_time() - cpu_start) / block_steps))
    finally:
        hookless.close()
    return {
        name: tuple(float(value) * 1e6 for value in np.median(np.asarray(values), axis=0))
        for name, values in samples.items()
    }


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def between_steps(blocks: int, block_steps: int) -> dict[str, float]:
    """Median over `blocks` rounds of the wall µs per step of the bare step with host work between steps."""
    bare = session_overhead.BareLoop('')
    train_step, global_step = bare.model.train_step, bare.model.global_step

    @tf.function
    def step_reading_global_step():
        stale = global_step.read_value()
        train_step()
        return stale

    configurations = {
        'bare step': train_step,
        READ_ALONE: lambda: global_step_lib.read_value(global_step),
        'read, then the step': lambda: (global_step_lib.read_value(global_step), train_step()),
        '30 µs busy-wait, then the step': lambda: (_busy_wait(30e-6), train_step()),
        "the read inside the step's tf.function, returned": lambda: step_reading_global_step()._numpy(),
    }
    for run_one in configurations.values():
        for _ in range(50):
            run_one()
    samples: dict[str, list[float]] = {name: [] for name in configurations}
    for _ in range(blocks):
        for name, run_one in configurations.items():
            samples[name].append(workload.time_steps(run_one, block_steps)[0])
    return {name: float(np.median(values)) * 1e6 for name, values in samples.items()}


def cprofile_ranking(model_session, steps: int) -> tuple[list[tuple[str, float, float]], float]:
    """Profiles `steps` runs; returns [(function, µs/run, calls/run)] ranked, and the step's µs/run."""
    profiler = cProfile.Profile()
    with model_session.session() as session:
        step = model_session.model.train_step
        for _ in range(50):
            session.run(step)
        profiler.enable()
        for _ in range(steps):
            session.run(step)
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # {function: (primitive calls, calls, own time, cumulative, callers)}

    costs: dict[tuple, float] = collections.defaultdict(float)
    calls: dict[tuple, int] = {}
    step_total = 0.0
    for function, (_, count, own_time, _, callers) in stats.items():
        if _is_compat_mts(function):
            costs[function] += own_time
            calls[function] = count
            continue
        for caller, (_, _, _, edge_cumulative) in callers.items():
            if not _is_compat_mts(caller):
                continue
            if caller[2] in ('_call_callables', '_call', '_call_atomic') and function[0] != '~':  # The step.
                step_total += edge_cumulative
            else:
                costs[caller] += edge_cumulative
    ranked = sorted(
        (
            (_label(path, name), cost / steps * 1e6, calls.get((path, line, name), 0) / steps)
            for (path, line, name), cost in costs.items()
        ),
        key=lambda row: -row[1],
    )
    return ranked, step_total / steps * 1e6


def _timed_session_runs(run_step, runs: int) -> None:
    for _ in range(runs):
        run_step()


def _timed_bare_steps(train_step, steps: int) -> None:
    for _ in range(steps):
        train_step()


def _sampled_loop(seconds: float) -> None:
    """What py-spy samples (in a child process): blocks of `session.run(step)` and of the bare step, alternating.

    Prints the measured µs per run of each as JSON.
    """
    workdir = tempfile.mkdtemp(prefix='profile_session_')
    try:
        model_session = session_overhead.CompatMTS(workdir)
        bare_step = session_overhead.BareLoop('').model.train_step
        elapsed = {'session': 0.0, 'bare': 0.0}
        runs = 0
        with model_session.session() as session:
            run_step = functools.partial(session.run, model_session.model.train_step)
            for _ in range(200):
                run_step()
                bare_step()
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                block_start = time.perf_counter()
                _timed_session_runs(run_step, 200)
                middle = time.perf_counter()
                _timed_bare_steps(bare_step, 200)
                elapsed['session'] += middle - block_start
                elapsed['bare'] += time.perf_counter() - middle
                runs += 200
        print(json.dumps({name: seconds_spent / runs * 1e6 for name, seconds_spent in elapsed.items()}), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def py_spy_ranking(seconds: float, rate: int) -> dict:
    """Samples `_sampled_loop` with py-spy.

    Returns `{'session': µs/run, 'bare': µs/step, 'step_in_session': µs, 'step_in_bare': µs,
    'compat_mts': [(function, µs/run)] ranked, 'samples': n}`: the loop's measured times, split by the
    samples' shares between the step's `tf.function` call and each compat_mts function.
    """
    with tempfile.TemporaryDirectory(prefix='profile_session_') as directory:
        raw_path = os.path.join(directory, 'samples.txt')
        command = [
            'py-spy',
            'record',
            '--idle',
            '--nonblocking',
            '--rate',
            str(rate),
            '--format',
            'raw',
            '--output',
            raw_path,
            '--',
            sys.executable,
            os.path.abspath(__file__),
            '--sampled-loop-seconds',
            str(seconds),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not os.path.exists(raw_path):
            raise RuntimeError(f'py-spy failed ({result.returncode}):\n{result.stderr[-3000:]}')
        measured = json.loads([line for line in result.stdout.splitlines() if line.startswith('{')][-1])
        with open(raw_path, encoding='utf-8') as file:
            lines = file.read().splitlines()

    charged = {'session': collections.Counter(), 'bare': collections.Counter()}
    for line in lines:
        stack, _, count = line.rpartition(' ')
        frames = stack.split(';')
        for loop, marker in (('session', '_timed_session_runs ('), ('bare', '_timed_bare_steps (')):
            starts = [index for index, frame in enumerate(frames) if frame.startswith(marker)]
            if starts:
                break
        else:
            continue
        owner = 'loop'
        previous_path = ''
        for frame in frames[starts[0] + 1 :]:
            match = _PY_SPY_FRAME.match(frame)
            path = match.group('path') if match else ''
            # The step's call: its tf.function, or TensorFlow's traceback filter around it (which the
            # bare loop pays too), entered straight from the loop or from the fetch model.
            if (
                any(frame in path for frame in _STEP_FRAMES)
                or (match and match.group('function').endswith(_STEP_FUNCTION))
                or (
                    'traceback_utils' in path
                    and (
                        loop == 'bare'
                        and owner == 'loop'
                        or previous_path.endswith(
                            ('compat_mts/core/fetch/__init__.py', 'compat_mts/core/fetch/fast_paths.py')
                        )
                    )
                )
            ):
                owner = 'step'
                break
            if 'compat_mts/' in path:
                owner = _label(path, match.group('function'))
            previous_path = path
        charged[loop][owner] += int(count)
    if not sum(charged['session'].values()) or not sum(charged['bare'].values()):
        raise RuntimeError('py-spy recorded no sample of the timed loops.')

    def us(loop: str, owner: str) -> float:
        return charged[loop][owner] / sum(charged[loop].values()) * measured[loop]

    return {
        'session': measured['session'],
        'bare': measured['bare'],
        'step_in_session': us('session', 'step'),
        'step_in_bare': us('bare', 'step'),
        'compat_mts': [
            (owner, us('session', owner))
            for owner, _ in charged['session'].most_common()
            if owner.startswith('compat_mts/')
        ],
        'samples': sum(charged['session'].values()) + sum(charged['bare'].values()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--blocks', type=int, default=30, help='interleaved rounds of the breakdown (default: %(default)s)'
    )
    parser.add_argument('--block-steps', type=int, default=200, help='steps per block (default: %(default)s)')
    parser.add_argument(
        '--profile-steps', type=int, default=3000, help='runs profiled by cProfile, 0 to skip (default: %(default)s)'
    )
    parser.add_argument(
        '--py-spy-seconds', type=float, default=30, help='seconds sampled by py-spy, 0 to skip (default: %(default)s)'
    )
    parser.add_argument('--py-spy-rate', type=int, default=500, help='py-spy samples per second (default: %(default)s)')
    parser.add_argument('--top', type=int, default=20, help='profile rows to print (default: %(default)s)')
    parser.add_argument('--sampled-loop-seconds', type=float, help=argparse.SUPPRESS)  # py-spy's child.
    args = parser.parse_args(argv)
    if args.sampled_loop_seconds:
        _sampled_loop(args.sampled_loop_seconds)
        return

    workdir = tempfile.mkdtemp(prefix='profile_session_')
    try:
        model_session = session_overhead.CompatMTS(workdir)
        load_before = os.getloadavg()[0]
        timings = breakdown(model_session, args.blocks, args.block_steps)
        gaps = between_steps(args.blocks, args.block_steps)
        cprofile_rows = cprofile_ranking(model_session, args.profile_steps) if args.profile_steps else None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f'Breakdown: median of {args.blocks} interleaved blocks of {args.block_steps} steps; load average '
        f'{load_before:.2f} before, {os.getloadavg()[0]:.2f} after'
    )
    print('| layer | wall µs/step | main-thread CPU µs/step | on top of | Δ wall µs | Δ CPU µs |')
    print('|---|---:|---:|---|---:|---:|')
    for name, reference in LAYERS:
        wall, cpu = timings[name]
        if reference is None:
            print(f'| {name} | {wall:.1f} | {cpu:.1f} |  |  |  |')
            continue
        print(
            f'| {name} | {wall:.1f} | {cpu:.1f} | {reference} | {wall - timings[reference][0]:+.1f} '
            f'| {cpu - timings[reference][1]:+.1f} |'
        )
    print()
    bare_step_us = gaps['bare step']
    print('| host work between steps (bare step) | wall µs/step | Δ from the bare step |')
    print('|---|---:|---:|')
    for name, wall in gaps.items():
        delta = f'{wall - bare_step_us:+.1f}' if name not in ('bare step', READ_ALONE) else ''
        print(f'| {name} | {wall:.1f} | {delta} |')
    sys.stdout.flush()

    if cprofile_rows:
        ranked, step_us = cprofile_rows
        print(
            f'\ncProfile of {args.profile_steps} runs: compat_mts code and what it calls, step excluded: '
            f'{sum(cost for _, cost, _ in ranked):.1f} µs/run in all (the step: {step_us:.1f} µs/run)'
        )
        print('| function | µs/run | calls/run |')
        print('|---|---:|---:|')
        for label, cost, count in ranked[: args.top]:
            print(f'| {label} | {cost:.1f} | {count:.2f} |')
        sys.stdout.flush()

    if args.py_spy_seconds:
        if shutil.which('py-spy') is None:
            print('\npy-spy: not installed (pip install py-spy); skipped.')
            return
        load_before = os.getloadavg()[0]
        sampled = py_spy_ranking(args.py_spy_seconds, args.py_spy_rate)
        compat_total = sum(cost for _, cost in sampled['compat_mts'])
        print(
            f'\npy-spy: {sampled["samples"]} samples over {args.py_spy_seconds:g} s of alternating blocks; load '
            f'average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after'
        )
        print("| loop | µs/run (measured) | the step's tf.function call | compat_mts code | the rest (loop, Python) |")
        print('|---|---:|---:|---:|---:|')
        print(
            f'| bare step | {sampled["bare"]:.1f} | {sampled["step_in_bare"]:.1f} | 0 '
            f'| {sampled["bare"] - sampled["step_in_bare"]:.1f} |'
        )
        print(
            f'| session.run(step) | {sampled["session"]:.1f} | {sampled["step_in_session"]:.1f} | {compat_total:.1f} '
            f'| {sampled["session"] - sampled["step_in_session"] - compat_total:.1f} |'
        )
        print('\n| compat_mts function (innermost compat_mts frame; TensorFlow calls below it included) | µs/run |')
        print('|---|---:|')
        for label, cost in sampled['compat_mts'][: args.top]:
            print(f'| {label} | {cost:.1f} |')


if __name__ == '__main__':
    main()
