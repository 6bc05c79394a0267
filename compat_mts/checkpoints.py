"""Checkpoint directories: which checkpoints they hold, the newest good one, whose program it is, who writes.

A session starts from the newest checkpoint that loads, as v1 did, with safeguards v1 lacked or that eager
restoring needs:

- **Damage falls back, never restarts.** A truncated or corrupt newest checkpoint (a crash in the middle of
  a copy, a full disk) is skipped with a warning and the previous one is restored. If every checkpoint of
  the directory is damaged the session does not start afresh over them: `DamagedCheckpointsError` names
  them.
- **Another program's checkpoint is refused.** A checkpoint that lacks variables of the program, or holds
  them with another shape or dtype, raises `CheckpointMismatchError` naming the directory and the first
  variables, as v1's `Saver.restore` raised `NotFoundError`, instead of training on from a step counter
  that alone matched. `Scaffold(allow_partial_restore=True)` asks for a partial restore explicitly; then
  what did not match is logged.
- **Paths are the directory's.** The `checkpoint` state file's entries are read as TensorFlow resolves them
  (relative to the directory), and an entry whose directory was moved or reached through a symlink is found
  under the directory given, so relative, `~` and symlinked `checkpoint_dir`s resume as absolute ones do.
- **One writer.** A live process saving into a directory holds a lock file there, so a second one is refused
  instead of both rotating each other's files away (`lock_directory`).

Object-based (`tf.train.Checkpoint`) and v1 name-based (`tf.compat.v1.train.Saver`) files are both read; a
name-based file is matched by variable names, as `tf.train.Checkpoint.restore` does.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import json
import logging as python_logging
import os
import re
import socket
import time

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.compat.v1 import logging

# What reading a damaged checkpoint raises: OpErrors from the restore, Python errors from the reader.
_RESTORE_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError, OSError)
# What reading an unreadable `checkpoint` state file raises (garbage text, binary garbage, an empty file).
_STATE_ERRORS = (tf.errors.OpError, ValueError, UnicodeDecodeError, text_format.ParseError)
_MISMATCH_MESSAGES = ('Received incompatible tensor', 'does not equal original dtype')
_NAMES_SHOWN = 5
_SAVE_COUNTER = 'save_counter'
_NUMBERED_INDEX = re.compile(r'^(?P<prefix>.+)-(?P<step>\d+)\.index$')


class CheckpointMismatchError(RuntimeError):
    """A checkpoint does not fit the program's variables: it was written by another program.

    Raised when the checkpoint lacks variables of the program, or holds one with another shape or dtype. A
    session does not fall back to an older checkpoint of the directory (all would mismatch, and it would
    start afresh over them); it stops, as v1's `Saver.restore` did.
    """


class CheckpointDirectoryInUseError(RuntimeError):
    """Another live process is saving checkpoints into the same directory (its lock file says which)."""


class DamagedCheckpointsError(RuntimeError):
    """Checkpoint files that cannot be read: every checkpoint listed in a session's directory failed to load (the
    session refuses to start afresh over them), or a checkpoint `convert_checkpoint` was to rewrite is damaged."""


LOCK_FILE = 'compat_mts.lock'
_held_locks: set[str] = set()  # Process-wide, as the lock files are: they name this process, not a session.


def lock_directory(directory: str) -> None:
    """Marks `directory` as written by this process, or raises if another live process writes there.

    Two processes saving into one `checkpoint_dir` rotate each other's files away and interleave the state
    file; neither v1 nor `tf.train.CheckpointManager` notices. The lock is a file holding the writer's pid and
    host. A lock of this process is taken again; a lock whose process is gone (same host, no such pid, as after
    kill -9) is taken over with a warning. Remote file systems (`gs://...`) are not locked. The lock goes when
    the process exits or `unlock_directory` is called.

    Raises:
      CheckpointDirectoryInUseError: another live process (or one on another host) holds the lock.
    """
    if '://' in directory:
        return
    path = os.path.join(directory, LOCK_FILE)
    me = {'pid': os.getpid(), 'host': socket.gethostname()}
    while True:
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _lock_holder(path)
            if holder == me:
                _held_locks.add(path)
                return
            if holder is not None and not _gone(holder):
                raise CheckpointDirectoryInUseError(
                    f'Another process (pid {holder["pid"]} on {holder["host"]}) is saving checkpoints into '
                    f"{directory}: two writers would delete each other's checkpoints. Give this session its own "
                    f'checkpoint_dir; if that process is gone, delete {path}. To share the directory anyway, '
                    'pass CheckpointSaverHook(..., allow_other_writers=True).'
                )
            logging.warning(
                'Taking over the lock of %s from %s, whose process is gone.',
                directory,
                holder or 'an unreadable lock file',
            )
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            continue
        with os.fdopen(descriptor, 'w', encoding='utf-8') as lock:
            json.dump(me, lock)
        if not _held_locks:
            atexit.register(_unlock_all)
        _held_locks.add(path)
        return


def unlock_directory(directory: str) -> None:
    """Removes this process's lock of `directory` (see `lock_directory`)."""
    path = os.path.join(directory, LOCK_FILE)
    if path in _held_locks:
        _held_locks.discard(path)
        if _lock_holder(path) == {'pid': os.getpid(), 'host': socket.gethostname()}:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def _unlock_all() -> None:
    for path in list(_held_locks):
        unlock_directory(os.path.dirname(path))


def _lock_holder(path: str) -> dict | None:
    try:
        with open(path, encoding='utf-8') as lock:
            holder = json.load(lock)
        return {'pid': int(holder['pid']), 'host': str(holder['host'])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _gone(holder: dict) -> bool:
    """Whether the lock's process has ended: known only on this host."""
    if holder['host'] != socket.gethostname():
        return False
    try:
        os.kill(holder['pid'], 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # Alive, another user's.
        return False
    return False


def expand_directory(directory: str) -> str:
    """`directory` as a path to use: `~` expanded; relative paths stay relative, as v1 kept them."""
    return os.path.expanduser(os.fspath(directory))


def checkpoint_paths(directory: str) -> list[str]:
    """The checkpoints of `directory`, newest first.

    They are those of the `checkpoint` state file, each found under `directory` (see the module docstring).
    Without a readable state file they are the numbered checkpoints on disk (`<prefix>-<step>.index`), and
    a warning says so.
    """
    directory = expand_directory(directory)
    state = _read_state(directory)
    if state is None:
        found = _numbered_on_disk(directory)
        if found:
            logging.warning(
                '%s has no readable `checkpoint` state file, but holds the checkpoints %s; restoring from them.',
                directory,
                ', '.join(os.path.basename(p) for p in found),
            )
        return list(reversed(found))
    paths = [_in_directory(path, directory) for path in state.all_model_checkpoint_paths]
    newest = _in_directory(state.model_checkpoint_path, directory)
    if newest not in paths:
        paths.append(newest)
    paths.sort(key=lambda path: (path == newest, _step_of(path)))
    return list(reversed(paths))


def _read_state(directory: str):
    """The directory's CheckpointState (paths as TensorFlow resolves them), or None: missing or unreadable."""
    state_file = os.path.join(directory, 'checkpoint')
    if not tf.io.gfile.exists(state_file):
        return None
    try:
        return tf.train.get_checkpoint_state(directory)
    except _STATE_ERRORS as error:
        logging.warning(
            'The checkpoint state file %s cannot be read (%s: %s).',
            state_file,
            type(error).__name__,
            _first_lines(str(error), 1),
        )
        return None


def _in_directory(path: str, directory: str) -> str:
    """`path` of the state file of `directory`, as a path under `directory`.

    An entry in the same directory reached another way (a symlink, an absolute path of a relative
    directory) or in a directory that has since moved is the file of that name under `directory`.
    """
    local = os.path.join(directory, os.path.basename(path))
    if os.path.realpath(os.path.dirname(path) or '.') == os.path.realpath(directory):
        return local
    if not tf.io.gfile.exists(path + '.index') and tf.io.gfile.exists(local + '.index'):
        return local
    return path


def _numbered_on_disk(directory: str) -> list[str]:
    """The `<prefix>-<step>` checkpoints whose index is in `directory`, oldest first."""
    found = []
    for index in glob.glob(os.path.join(glob.escape(directory), '*.index')):
        match = _NUMBERED_INDEX.match(os.path.basename(index))
        if match:
            found.append((int(match.group('step')), os.path.getmtime(index), index[: -len('.index')]))
    return [path for _, _, path in sorted(found)]


def _step_of(path: str) -> int:
    tail = path.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else -1


def restore(checkpoint: tf.train.Checkpoint, path: str, *, allow_partial: bool = False) -> None:
    """Restores `path` into `checkpoint`, logging v1's "Restoring parameters from <path>".

    Raises:
      CheckpointMismatchError: the checkpoint lacks variables of the program (unless `allow_partial`, which
        logs them instead) or holds one with another shape or dtype.
      tf.errors.OpError, ValueError: the checkpoint cannot be read.
    """
    logging.info('Restoring parameters from %s', path)
    tf.train.load_checkpoint(path)  # Fails fast on a missing or truncated index.
    try:
        status = checkpoint.restore(path)
    except (ValueError, tf.errors.InvalidArgumentError) as error:
        if not any(message in str(error) for message in _MISMATCH_MESSAGES):
            raise
        raise CheckpointMismatchError(
            f"The checkpoint {path} does not fit the program's variables ({_first_lines(str(error), 1)}); it was "
            "written by another program. Give the session an empty checkpoint_dir or the program's own."
        ) from None
    _check_matched(status, path, allow_partial)


def _check_matched(status, path: str, allow_partial: bool) -> None:
    try:
        status.assert_existing_objects_matched()
    except AssertionError as unmatched:
        names = _unmatched_names(status, str(unmatched))
        if names and not allow_partial:
            raise CheckpointMismatchError(
                f'The checkpoint {path} does not hold these variables of the program: {_listed(names)}. It was '
                f'written by another program (it holds {_listed(_names_in(path))}). Give the session an empty '
                "checkpoint_dir or the program's own, or, to restore what matches and keep the rest as it is, "
                'pass compat_mts.Scaffold(..., allow_partial_restore=True).'
            ) from None
        if names and allow_partial:
            logging.warning(
                'Restoring %s left these variables of the program unmatched; they keep their current '
                'values (allow_partial_restore=True): %s.',
                path,
                _listed(names),
            )
    try:
        status.assert_consumed()
    except AssertionError as unused:
        logging.debug(  # A line v1 never printed: at DEBUG, for who looks.
            'Some values in %s have no object of the program yet: those of objects created later (such '
            'as optimizer slots before the first step) are restored when they are created; others (a '
            'graph that does not train has no slots) stay unused: %s',
            path,
            _first_lines(str(unused), 3),
        )
    status.expect_partial()


def _unmatched_names(status, message: str) -> list[str]:
    """The names of the program's variables that a restore left unmatched (`tf.train.Checkpoint`'s own
    save counter, which a checkpoint written with `write()` lacks, does not count)."""
    unmatched = getattr(status, 'unmatched', None)  # compat_mts's name-based checkpoints say it directly.
    if unmatched is not None:
        return list(unmatched)
    # TensorFlow's statuses say it in their message, with each object's repr: Keras 3 variables show
    # `path=<path>`, tf.Variables `'<name>:0'`.
    found = re.findall(r"<Variable path=([^\s,>]+)|<tf\.Variable '([^']+?)(?::\d+)?'", message)
    if not found:
        return [_first_lines(message, 1)]
    names = dict.fromkeys(keras or plain for keras, plain in found)
    return [name for name in names if name != _SAVE_COUNTER]


def _names_in(path: str) -> list[str]:
    """The variable names a checkpoint holds, whatever its format."""
    from compat_mts.legacy.checkpoints import CheckpointNames  # Imports this module; read the names lazily.

    try:
        return sorted(CheckpointNames(path).keys)
    except _RESTORE_ERRORS:
        return []


def _listed(names: list[str]) -> str:
    """The first few `names`, and how many more: a short list for an error message, never values."""
    if not names:
        return 'no variables'
    more = f' and {len(names) - _NAMES_SHOWN} more' if len(names) > _NAMES_SHOWN else ''
    return ', '.join(names[:_NAMES_SHOWN]) + more


def _first_lines(text: str, count: int = 6) -> str:
    lines = text.splitlines()
    more = len(lines) - count
    return '\n'.join(itertools.chain(lines[:count], [f'... ({more} more lines)'] if more > 0 else []))


def restore_latest(checkpoint: tf.train.Checkpoint, directory: str, *, allow_partial: bool = False) -> str | None:
    """Restores the newest checkpoint of `directory` that loads; returns its path, or None if it holds none.

    Raises:
      CheckpointMismatchError: the newest readable checkpoint belongs to another program.
      DamagedCheckpointsError: the directory holds checkpoints and none of them loads.
    """
    failures = []
    for path in checkpoint_paths(directory):
        try:
            restore(checkpoint, path, allow_partial=allow_partial)
        except _RESTORE_ERRORS as error:
            logging.warning(
                'Could not restore checkpoint %s (%s: %s); trying the previous one.',
                path,
                type(error).__name__,
                _first_lines(str(error), 2),
            )
            failures.append(f'{os.path.basename(path)} ({type(error).__name__})')
            continue
        return path
    if failures:
        raise DamagedCheckpointsError(
            f'No checkpoint of {directory} could be restored: {", ".join(failures)}. The session does not start '
            'afresh over them; repair the files, or move them away to start training from the beginning.'
        )
    return None


def prepare_directory_state(directory: str) -> None:
    """Rewrites `directory`'s `checkpoint` state file, if needed, so a `tf.train.CheckpointManager` keeps its entries.

    A manager lists (and rotates) only entries that have a save time later than the state's
    `last_preserved_timestamp`. v1's `Saver` kept every listed entry (`recover_last_checkpoints`) and wrote no
    save times, so a manager would drop v1's earlier checkpoints from the list; entries of a moved directory
    would point elsewhere; and a missing or unreadable state file would hide the checkpoints on disk. The
    rewritten file lists the same checkpoints (or those on disk), by their names in `directory`, with their
    files' save times, as the manager expects.
    """
    directory = expand_directory(directory)
    state = _read_state(directory)
    if state is None:
        paths = _numbered_on_disk(directory)
        if not paths:
            if tf.io.gfile.exists(os.path.join(directory, 'checkpoint')):
                tf.io.gfile.remove(os.path.join(directory, 'checkpoint'))  # Unreadable, and lists nothing.
            return
        times = [_save_time(path) for path in paths]
    else:
        paths = [_in_directory(path, directory) for path in state.all_model_checkpoint_paths]
        newest = _in_directory(state.model_checkpoint_path, directory)
        paths = [path for path in paths if path != newest] + [newest]
        times = list(state.all_model_checkpoint_timestamps)
        local = all(os.path.realpath(os.path.dirname(path)) == os.path.realpath(directory) for path in paths)
        if local and len(times) == len(paths) and min(times) > state.last_preserved_timestamp:
            return
        if len(times) != len(paths):
            times = [_save_time(path) for path in paths]
    # Full paths: TensorFlow writes those of a relative `directory` relative to it, and keeps absolute ones.
    tf.compat.v1.train.update_checkpoint_state(
        directory,
        paths[-1],
        all_model_checkpoint_paths=paths,
        all_model_checkpoint_timestamps=times,
        last_preserved_timestamp=min(times) - 1,
    )


def _save_time(path: str) -> float:
    try:
        return os.path.getmtime(path + '.index')
    except OSError:
        return time.time()


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
