"""Host CPU time of calling v1's default hooks, per run: the session's `run`, and `HooksCallback`'s batch methods.

For comparing two versions of the hook driver (ARCHITECTURE.md, "The hook-driver seam") more finely than
`session_overhead.py` and `keras_overhead.py` can on a shared machine: the code on `PYTHONPATH` is measured,
so run it alternately with the two checkouts.

- `session`: `MonitoredSession.run` of a one-op `tf.function` step with `StopAtStepHook`, `StepCounterHook` and
  `SummarySaverHook` every 100 steps and `CheckpointSaverHook` every 600 s; CPU time per run, step included.
- `fit` and `fit_every_batch`: `HooksCallback`'s `on_train_batch_begin`/`on_train_batch_end` with
  `StepCounterHook`, `SummarySaverHook` and `CheckpointSaverHook` as above, outside `fit` (the optimizer's
  `iterations` moved by one between them, not timed); `fit_every_batch` withdraws the hooks' `idle_until`, so
  they are called on every batch, as a program's own hooks are.

Each prints the smallest and the median of `--blocks` blocks' mean CPU µs per run.

Run: `PYTHONPATH=. python benchmarks/hook_calls.py {session,fit,fit_every_batch} [--blocks 6]`
"""

from __future__ import annotations

import argparse
import tempfile
import time

import tensorflow as tf

import compat_mts as mts
from compat_mts.keras import HooksCallback


def session_blocks(blocks: int, directory: str) -> list[float]:
    global_step = mts.get_or_create_global_step()

    @tf.function
    def step():
        global_step.assign_add(1)
        return {'loss': tf.constant(1.0)}

    hooks = [
        mts.StopAtStepHook(last_step=10**9),
        mts.StepCounterHook(every_n_steps=100, output_dir=directory),
        mts.SummarySaverHook(save_steps=100, output_dir=directory, scaffold=mts.Scaffold()),
        mts.CheckpointSaverHook(directory, save_secs=600),
    ]
    means = []
    with mts.MonitoredSession(hooks=hooks) as session:
        for _ in range(500):
            session.run(step)
        for _ in range(blocks):
            start = time.process_time()
            for _ in range(2000):
                session.run(step)
            means.append((time.process_time() - start) / 2000 * 1e6)
    return means


def fit_blocks(blocks: int, directory: str, every_batch: bool) -> list[float]:
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer='sgd', loss='mse')
    hooks = [
        mts.StepCounterHook(every_n_steps=100, output_dir=directory),
        mts.SummarySaverHook(save_steps=100, output_dir=directory, scaffold=mts.Scaffold()),
        mts.CheckpointSaverHook(directory, save_secs=600),
    ]
    if every_batch:
        for hook in hooks:
            hook._idle_until = None  # The name both versions read; withdraws the capability.
    callback = HooksCallback(hooks)
    callback.set_model(model)
    callback.on_train_begin()
    callback.on_epoch_begin(0)
    iterations, logs, batch = model.optimizer.iterations, {'loss': 0.5}, 0
    means = []
    for block in range(blocks + 1):
        spent = 0.0
        for _ in range(5000):
            start = time.process_time()
            callback.on_train_batch_begin(batch)
            middle = time.process_time()
            iterations.assign_add(1)
            again = time.process_time()
            callback.on_train_batch_end(batch, logs)
            spent += (middle - start) + (time.process_time() - again)
            batch += 1
        if block:  # The first block warms up.
            means.append(spent / 5000 * 1e6)
    callback.on_train_end()
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('mode', choices=['session', 'fit', 'fit_every_batch'])
    parser.add_argument('--blocks', type=int, default=6)
    args = parser.parse_args()
    directory = tempfile.mkdtemp()
    if args.mode == 'session':
        means = session_blocks(args.blocks, directory)
    else:
        means = fit_blocks(args.blocks, directory, every_batch=args.mode == 'fit_every_batch')
    means.sort()
    print(f'{args.mode}: min {means[0]:.2f} µs, median {means[len(means) // 2]:.2f} µs CPU per run')


if __name__ == '__main__':
    main()
