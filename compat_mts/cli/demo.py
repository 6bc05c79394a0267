"""The `compat-mts demo` training run: a v1-style session loop, eagerly, on synthetic data.

The demo is the program a TF1 user knows: a global step, a `Scaffold` with a saver, `StopAtStepHook` and
`LoggingTensorHook`, `MonitoredTrainingSession` with a checkpoint directory and its default hooks (step
counter, summaries, checkpoints), and `while not sess.should_stop(): sess.run(train_op, feed_dict=...)`.
Only the model is TF2: a small Keras MLP and a `tf.function` step. Nothing is downloaded; the regression
data is generated with NumPy. Each run trains `steps` more steps, so running it again resumes from the
checkpoint the previous run left behind.
"""

from __future__ import annotations

import glob
import os
import time
from typing import Any, Callable, TextIO

import numpy as np
import tensorflow as tf

import compat_mts as mts
from compat_mts.checkpoint_dir import checkpoints as checkpoints_lib
from compat_mts.core import progress
from compat_mts.checkpoint_dir import directory as directory_lib

_FEATURES = 8
_BATCH_SIZE = 64
_EXAMPLES = 4096
_LOG_EVERY_N_ITER = 100
RUN_NAME = 'train'
"""The subdirectory of the demo's directory that holds its run (checkpoints, events): the run's name in TensorBoard."""
_CHECKPOINT_BASENAME = 'model.ckpt'  # The default `CheckpointSaverHook`'s, which the demo's session uses.


def ensure_demo_directory(directory: str, argument: str) -> None:
    """Creates the demo's `directory`, or raises an error naming `argument` when its run cannot be written there.

    The run's files go one level down (`RUN_NAME`): the room reserved is for that subdirectory and the longest of
    its files, an events file or a checkpoint's temporary data file.

    Raises:
      ValueError: the path cannot hold the run's files (`directory.check_directory_path`).
      PermissionError: the directory cannot be created or written.
    """
    run_files = max(directory_lib.EVENTS_NAME_BYTES, directory_lib.checkpoint_name_bytes(_CHECKPOINT_BASENAME))
    reserve = len(os.fsencode(os.sep + RUN_NAME)) + run_files
    directory_lib.ensure_writable_directory(os.path.abspath(directory), argument, reserve=reserve)


def _synthetic_regression() -> tuple[np.ndarray, np.ndarray]:
    """A fixed, smooth regression problem: the same examples on every run, so resumed runs keep improving."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(_EXAMPLES, _FEATURES)).astype(np.float32)
    weights = rng.normal(size=(_FEATURES, 1)).astype(np.float32)
    targets = np.sin(features @ weights) + 0.1 * features[:, :1] ** 2
    targets += 0.05 * rng.normal(size=targets.shape)
    return features, targets.astype(np.float32)


def _checkpoint_prefixes(directory: str) -> list[str]:
    """The checkpoint prefixes listed in `directory`'s `checkpoint` state file, oldest first."""
    return list(reversed(checkpoints_lib.checkpoint_paths(directory)))


def run_demo(directory: str, steps: int, out: Callable[[str], Any] = print, *, live: TextIO | None = None) -> dict:
    """Trains `steps` more steps of the demo model, checkpointing and writing summaries under `directory`.

    A first run starts at global step 0; a later run with the same `directory` restores the latest checkpoint
    there and continues from its global step.

    Args:
        directory: The TensorBoard log directory: checkpoints (`model.ckpt-<step>`) and events are written in its
            `train` subdirectory (`RUN_NAME`), the run's name in TensorBoard. Created if missing.
        steps: How many steps this run trains (`StopAtStepHook(num_steps=steps)`), a positive integer.
        out: Called with each line of the report the demo prints, progress lines included (one at each
            quarter of the run: steps done, steps/s, ETA, global step and loss).
        live: A terminal stream to redraw one progress line on in place instead (`compat_mts.core.progress`).

    Returns:
        A dict with `directory` (the run's, absolute: `directory`/`train`), `resumed` (bool), `start_step`,
        `final_step`, `final_loss`, `checkpoints` (the prefixes kept in the `checkpoint` state file, oldest
        first), `event_files` and `seconds` (wall time of the training loop).

    Raises:
        ValueError: `steps` is not a positive integer, or `directory` cannot hold files (a regular file, a path
            below one, a dangling symlink); nothing has been written then.
        PermissionError: `directory` cannot be created or written (no write permission); nothing has been
            written then.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f'`steps` ({steps!r}) must be a positive integer.')
    ensure_demo_directory(directory, 'directory')
    logdir = os.path.abspath(directory)
    directory = os.path.join(logdir, RUN_NAME)  # TensorBoard names the run after it (else `.`).
    out(f'Writing checkpoints and TensorBoard events to {directory}')
    previous_checkpoint = checkpoints_lib.latest_checkpoint(directory)

    features, targets = _synthetic_regression()
    mts.reset_global_step()
    global_step = mts.get_or_create_global_step()
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(_FEATURES,)),
            tf.keras.layers.Dense(32, activation='relu'),
            tf.keras.layers.Dense(32, activation='relu'),
            tf.keras.layers.Dense(1),
        ]
    )
    optimizer = tf.keras.optimizers.Adam(1e-2)
    # Create the optimizer's slots now, so the restore on session creation finds every variable.
    optimizer.build(model.trainable_variables)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, _FEATURES], tf.float32),
            tf.TensorSpec([None, 1], tf.float32),
        ]
    )
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        global_step.assign_add(1)
        # Recorded every `save_summaries_steps` by the default SummarySaverHook, stamped with the global step.
        tf.summary.scalar('loss', loss)
        return {'loss': loss}

    scaffold = mts.Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=optimizer))
    hooks = [
        mts.StopAtStepHook(num_steps=steps),
        mts.LoggingTensorHook({'loss': 'loss', 'step': 'global_step'}, every_n_iter=_LOG_EVERY_N_ITER),
    ]

    started = time.monotonic()
    with mts.MonitoredTrainingSession(
        checkpoint_dir=directory,
        scaffold=scaffold,
        hooks=hooks,
        save_checkpoint_steps=100,
        save_summaries_steps=50,
        log_step_count_steps=100,
    ) as sess:
        start_step = int(global_step.numpy())
        if previous_checkpoint:
            out(f'Resumed from step {start_step} ({previous_checkpoint})')
        else:
            out(f'Started fresh at step {start_step}')
        out(f'Training {steps} steps, to global step {start_step + steps}')
        # A different stream of batches on every run, so a resumed run does not replay the previous one.
        batches = np.random.default_rng(start_step)
        loss = float('nan')
        report = progress.Progress(steps, out=out, live=live)
        while not sess.should_stop():
            batch = batches.integers(0, _EXAMPLES, size=_BATCH_SIZE)
            results = sess.run(train_step, feed_dict={'x': features[batch], 'y': targets[batch]})
            loss = float(results['loss'])
            step = int(global_step.numpy())
            report.update(step - start_step, f'global step {step}, loss {loss:.4f}')
        report.finish()
    seconds = time.monotonic() - started
    final_step = int(global_step.numpy())

    checkpoints = _checkpoint_prefixes(directory)
    event_files = sorted(glob.glob(os.path.join(directory, 'events.out.tfevents.*')), key=os.path.getmtime)
    out(f'Finished at step {final_step}, loss {loss:.4f} ({final_step - start_step} steps in {seconds:.1f} s)')
    out('Checkpoints kept: ' + ', '.join(os.path.basename(prefix) for prefix in checkpoints))
    if event_files:
        out(f'Event file: {event_files[-1]}')
    out(f'See the loss curve (the run {RUN_NAME!r}): tensorboard --logdir {logdir}')
    out(f'Run the same command again to continue from step {final_step}.')
    return {
        'directory': directory,
        'resumed': bool(previous_checkpoint),
        'start_step': start_step,
        'final_step': final_step,
        'final_loss': loss,
        'checkpoints': checkpoints,
        'event_files': event_files,
        'seconds': seconds,
    }
