"""What checking a checkpoint's checksums at restore costs (issue 20, item 2).

A restore reads, and checks, the values of the variables that exist; a Keras optimizer's slots are read only
when the first step creates them. `compat_mts.checkpoint_dir.checkpoints.restore` reads those later values once more at
restore, so that a damaged one falls back to the previous checkpoint instead of failing every first step.
This measures, on a Keras model trained with Adam (the slots are two thirds of the checkpoint):

1. `restore`: `tf.train.Checkpoint.restore` alone (what a restore cost before);
2. `restore + check`: `compat_mts.checkpoint_dir.checkpoints.restore` (the restore and the check of the slots' values);
3. `restore + check every value`: the restore, then reading every value of the checkpoint once more (the
   public fallback, used when the private restore status is unavailable).

The first step, which reads the slots' values again to fill them, costs the same in every variant and is
not timed.

Each is the best of ROUNDS rounds (wall clock; the files are in the page cache after the first round, so
this is the CPU cost of reading and checksumming, not the disk's).

Run: `PYTHONPATH=. python benchmarks/restore_verification.py [--units 2048] [--layers 4]`
"""

import argparse
import os
import tempfile
import time

import tensorflow as tf

from compat_mts.checkpoint_dir import checkpoints

ROUNDS = 5


def build(units: int, layers: int):
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(units,))] + [tf.keras.layers.Dense(units) for _ in range(layers)]
    )
    optimizer = tf.keras.optimizers.Adam(1e-3)
    features = tf.random.normal([8, units])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features)))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    return model, optimizer, step


def timed(restore, units: int, layers: int, path: str) -> float:
    """The best time of `restore(checkpoint, path)` into a fresh model."""
    best = float('inf')
    for _ in range(ROUNDS):
        model, optimizer, step = build(units, layers)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        start = time.perf_counter()
        restore(checkpoint, path)
        best = min(best, time.perf_counter() - start)
        step()  # Creates the slots, which reads their values (the deferred restore): the same in every variant.
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--units', type=int, default=2048)
    parser.add_argument('--layers', type=int, default=4)
    args = parser.parse_args()
    directory = tempfile.mkdtemp()
    model, optimizer, step = build(args.units, args.layers)
    step()
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(os.path.join(directory, 'ckpt'))
    size = sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory)) / 2**20
    reader = tf.train.load_checkpoint(path)

    def read_everything(checkpoint, path):
        checkpoint.restore(path).expect_partial()
        for key in reader.get_variable_to_dtype_map():
            reader.get_tensor(key)

    plain = timed(lambda checkpoint, path: checkpoint.restore(path).expect_partial(), args.units, args.layers, path)
    checked = timed(checkpoints.restore, args.units, args.layers, path)
    everything = timed(read_everything, args.units, args.layers, path)
    print(f'checkpoint: {size:.0f} MiB ({args.layers} Dense({args.units}) layers with Adam), best of {ROUNDS}')
    print()
    print('| variant | restore, s | × restore |')
    print('|---|---:|---:|')
    for name, seconds in (
        ('restore', plain),
        ('restore + check', checked),
        ('restore + check every value', everything),
    ):
        print(f'| {name} | {seconds:.3f} | {seconds / plain:.2f} |')


if __name__ == '__main__':
    main()
