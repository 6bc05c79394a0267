"""Reading checkpoints back: the newest good one, the format it is in, what did not match, snapshots.

A session starts from the newest checkpoint that loads. A truncated or corrupt newest checkpoint (a
crash in the middle of a copy, a full disk) is skipped with a warning and the previous one is
restored, instead of failing the start. Object-based (`tf.train.Checkpoint`) and v1 name-based
(`tf.compat.v1.train.Saver`) files are both read; a name-based file is matched by variable names, as
`tf.train.Checkpoint.restore` does. What could not be matched either way is logged, not dropped silently.
"""

from __future__ import annotations

import contextlib
import itertools
import logging as python_logging
import os

import tensorflow as tf
from tensorflow.compat.v1 import logging

# What reading a damaged checkpoint raises: OpErrors from the restore, Python errors from the reader.
_RESTORE_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError, OSError)


def checkpoint_paths(directory: str) -> list[str]:
    """The checkpoints listed in `directory`'s state file, newest first (relative paths resolved)."""
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = list(state.all_model_checkpoint_paths)
    if state.model_checkpoint_path and state.model_checkpoint_path not in paths:
        paths.append(state.model_checkpoint_path)
    resolved = [p if os.path.isabs(p) else os.path.join(directory, p) for p in paths]
    newest = state.model_checkpoint_path
    newest = newest if os.path.isabs(newest) else os.path.join(directory, newest)
    resolved.sort(key=lambda p: (p == newest, _step_of(p)))
    return list(reversed(resolved))


def _step_of(path: str) -> int:
    tail = path.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else -1


def restore(checkpoint: tf.train.Checkpoint, path: str) -> None:
    """Restores `path` into `checkpoint` and logs what did not match.

    Raises:
      tf.errors.OpError, ValueError: the checkpoint cannot be read.
    """
    logging.info('Restoring parameters from %s', path)
    tf.train.load_checkpoint(path)  # Fails fast on a missing or truncated index.
    status = checkpoint.restore(path)
    _report_unmatched(status, path)


def _report_unmatched(status, path: str) -> None:
    try:
        status.assert_existing_objects_matched()
    except AssertionError as unmatched:
        logging.warning('Restoring %s left some objects of the program unmatched (they keep their '
                        'current values): %s', path, _first_lines(str(unmatched)))
    try:
        status.assert_consumed()
    except AssertionError as unused:
        logging.info('Some values in %s were not restored yet; those of objects not created yet '
                     '(such as optimizer slots before the first step) are restored when the objects '
                     'are created: %s', path, _first_lines(str(unused)))
    status.expect_partial()


def _first_lines(text: str, count: int = 6) -> str:
    lines = text.splitlines()
    more = len(lines) - count
    return '\n'.join(itertools.chain(lines[:count], [f'... ({more} more lines)'] if more > 0 else []))


def restore_latest(checkpoint: tf.train.Checkpoint, directory: str) -> str | None:
    """Restores the newest checkpoint of `directory` that loads; returns its path, or None if none does."""
    for path in checkpoint_paths(directory):
        try:
            restore(checkpoint, path)
        except _RESTORE_ERRORS as error:
            logging.warning('Could not restore checkpoint %s (%s: %s); trying the previous one.',
                            path, type(error).__name__, _first_lines(str(error), 2))
            continue
        return path
    return None


@contextlib.contextmanager
def root_logger_left_alone():
    """Keeps TensorFlow's checkpoint writer from configuring the root logger, which doubles the log lines.

    TensorFlow's eager saver logs through absl, and absl's first call runs `logging.basicConfig()` when the
    root logger has no handler. From then on each line of the `tensorflow` logger, which has a handler of its
    own in a program that configured no logging, is printed twice. While the root logger has no handler it
    gets Python's last-resort handler, which is what a root logger without handlers uses anyway.
    """
    root = python_logging.getLogger()
    if root.handlers or python_logging.lastResort is None:
        yield
        return
    root.addHandler(python_logging.lastResort)
    try:
        yield
    finally:
        root.removeHandler(python_logging.lastResort)


def save_numbered(manager: tf.train.CheckpointManager, step: int) -> str:
    """Saves `manager`'s checkpoint as `<prefix>-<step>`; returns its path."""
    with root_logger_left_alone():
        return manager.save(checkpoint_number=step)


class Snapshot:
    """An in-memory copy of a checkpoint's values, to re-initialize them as a fresh v1 session would.

    Written to TensorFlow's `ram://` file system, so it costs no disk and no file cleanup.
    """

    _counter = itertools.count()

    def __init__(self, checkpoint: tf.train.Checkpoint):
        self._checkpoint = checkpoint
        with root_logger_left_alone():
            self._path = checkpoint.write(f'ram://compat_mts/snapshot-{next(self._counter)}/values')

    def restore(self) -> None:
        self._checkpoint.read(self._path).expect_partial()
