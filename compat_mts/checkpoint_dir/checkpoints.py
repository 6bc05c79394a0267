"""Checkpoint directories: which checkpoints they hold, the newest good one, whose program it is, who writes.

A session starts from the newest checkpoint that loads, as v1 did, with safeguards v1 lacked or that eager
restoring needs:

- **Damage falls back, never restarts.** A truncated or corrupt newest checkpoint (a crash in the middle of
  a copy, a full disk, a flipped bit) is skipped with a warning and the previous one is restored. Every value
  is checked against its checksum at restore, those that TensorFlow reads only later (a Keras optimizer's
  slots, at the first step) included. If every checkpoint of
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
  instead of both rotating each other's files away (`compat_mts.checkpoint_dir.directory_lock`).
- **A killed save leaves nothing that stays.** The `<prefix>-<step>_temp` folder of a save whose process was
  killed is removed by the next writer once it holds the lock (`remove_leftover_saves`), and a state file whose
  newest entry is missing does not hide a complete newer checkpoint: the newest complete one is restored.

Object-based (`tf.train.Checkpoint`) and v1 name-based (`tf.compat.v1.train.Saver`) files are both read; a
name-based file is matched by variable names, as `tf.train.Checkpoint.restore` does.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import glob
import itertools
import logging as python_logging
import os
import re
import shutil
import time
from typing import Iterable

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir.directory_lock import (  # noqa: F401 (the lock's names, where they always were)
    LOCK_FILE,
    CheckpointDirectoryInUseError,
    lock_directory,
    unlock_directory,
)

# What reading a damaged checkpoint raises: OpErrors from the restore, Python errors from the reader.
_RESTORE_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError, OSError)
# What reading an unreadable `checkpoint` state file raises (garbage text, binary garbage, an empty file).
_STATE_ERRORS = (tf.errors.OpError, ValueError, UnicodeDecodeError, text_format.ParseError)
_MISMATCH_MESSAGES = ('Received incompatible tensor', 'does not equal original dtype')
_NAMES_SHOWN = 5
# The first sentence of v1's `Saver.restore` error for a checkpoint that lacks a variable of the graph.
_V1_NOT_FOUND = (
    'Restoring from checkpoint failed. This is most likely due to a Variable name or other graph key that is '
    'missing from the checkpoint.'
)
_SAVE_COUNTER = 'save_counter'
_NUMBERED_INDEX = re.compile(r'^(?P<prefix>.+)-(?P<step>\d+)\.index$')


class CheckpointMismatchError(RuntimeError, tf.errors.NotFoundError):
    """A checkpoint does not fit the program's variables: it was written by another program.

    Raised when the checkpoint lacks variables of the program, or holds one with another shape or dtype. A
    session does not fall back to an older checkpoint of the directory (all would mismatch, and it would
    start afresh over them); it stops, as v1's `Saver.restore` did.

    It is a `tf.errors.NotFoundError`, what v1's `Saver.restore` raised for a variable missing from the
    checkpoint, so that a v1 program's `except tf.errors.NotFoundError:` around a restore still catches it
    (also for another shape or dtype, where v1 raised `tf.errors.InvalidArgumentError`); and a `RuntimeError`,
    as it was before.

    The message says what does not fit, then what to give instead, in the words of the argument the user gave
    the checkpoint as: a session's `checkpoint_dir`, an Estimator's `model_dir`, `evaluate`'s `checkpoint_path`,
    the Estimator's `warm_start_from` (`naming`).

    Args:
      problem: what does not fit, in sentences.
      partial: whether restoring what matches (`allow_partial_restore=True`) is a way out.
      owner: who was given the checkpoint, for the advice ("the session").
      argument: the argument it was given as (`checkpoint_dir`).
      directory: whether `argument` is a directory, which may also be given empty; else it names a checkpoint.
    """

    def __init__(
        self,
        problem: str,
        *,
        partial: bool = False,
        owner: str = 'the session',
        argument: str = 'checkpoint_dir',
        directory: bool = True,
    ):
        self.problem = problem
        self.partial = partial
        given = f"an empty {argument} or the program's own" if directory else f"a {argument} of the program's own"
        advice = f'Give {owner} {given}'
        if partial:
            advice += (
                ', or, to restore what matches and keep the rest as it is, pass '
                'compat_mts.Scaffold(..., allow_partial_restore=True)'
            )
        self._naming = (owner, argument, directory)
        message = f'{problem} {advice}.'
        tf.errors.NotFoundError.__init__(self, None, None, message)
        self.args = (message,)

    def __reduce__(self):
        # Pickled with its own arguments: `OpError`'s reduce passes the positional ones of `__init__` alone.
        owner, argument, directory = self._naming
        rebuild = functools.partial(
            CheckpointMismatchError, partial=self.partial, owner=owner, argument=argument, directory=directory
        )
        return rebuild, (self.problem,)

    def naming(self, owner: str, argument: str, *, directory: bool = True) -> 'CheckpointMismatchError':
        """The same error, its advice for the checkpoint given to `owner` as `argument` (a `directory` or not)."""
        return CheckpointMismatchError(
            self.problem, partial=self.partial, owner=owner, argument=argument, directory=directory
        )


class DamagedCheckpointsError(RuntimeError):
    """Checkpoint files that cannot be read: every checkpoint listed in a session's directory failed to load (the
    session refuses to start afresh over them), or a checkpoint `convert_checkpoint` was to rewrite is damaged."""


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
    if not tf.io.gfile.exists(newest + '.index'):
        return list(reversed(_with_complete_ones_on_disk(paths, directory)))
    paths.sort(key=lambda path: (path == newest, _step_of(path)))
    return list(reversed(paths))


def _with_complete_ones_on_disk(paths: list[str], directory: str) -> list[str]:
    """The complete checkpoints of `paths` (a state file's, whose newest is missing) and of the disk, by step.

    The state file's newest entry is gone (deleted, or never finished), so it says nothing of which of the rest is
    newest; a complete checkpoint on disk that it does not list (saved after the file was last written) counts
    as any listed one, and the highest step is tried first. Entries without their index file are left out.
    """
    listed = [path for path in paths if tf.io.gfile.exists(path + '.index')]
    on_disk = [path for path in _numbered_on_disk(directory) if path not in listed]
    logging.warning(
        'The checkpoint state file of %s names %s as the newest checkpoint, which is missing; restoring from the '
        'newest complete checkpoint instead, of those it lists and those on disk%s.',
        directory,
        os.path.basename(paths[-1]),
        f' ({", ".join(os.path.basename(path) for path in on_disk)} not listed)' if on_disk else '',
    )
    return sorted(listed + on_disk, key=_step_of)


def latest_checkpoint(directory: str) -> str | None:
    """The newest checkpoint of `directory` whose index file is there, or None: `tf.train.latest_checkpoint`,
    read as the session reads the directory.

    A missing or unreadable `checkpoint` state file (random bytes, which `tf.train.latest_checkpoint` meets
    with a bare `UnicodeDecodeError`) is read from the checkpoint files on disk, with a warning, and the
    state file's entries are found under `directory` (see `checkpoint_paths`).
    """
    for path in checkpoint_paths(directory):
        if tf.io.gfile.exists(path + '.index'):
            return path
    return None


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
    reader = tf.train.load_checkpoint(path)  # Fails fast on a missing or truncated index.
    try:
        status = checkpoint.restore(path)
    except tf.errors.DataLossError as error:
        raise _damaged_data(path, 'a value', error) from None
    except (ValueError, tf.errors.InvalidArgumentError) as error:
        if not any(message in str(error) for message in _MISMATCH_MESSAGES):
            raise
        raise CheckpointMismatchError(
            f"The checkpoint {path} does not fit the program's variables ({_first_lines(str(error), 1)}); it was "
            'written by another program.'
        ) from None
    _check_matched(status, path, allow_partial)
    _verify_values_read_later(reader, status, path)


def _verify_values_read_later(reader, status, path: str) -> None:
    """Reads the values of `path` that the restore left for later, so that their checksums are checked now.

    A restore reads (and checks) the values of the variables that exist; those of variables the first step
    creates, such as a Keras optimizer's slots, are read when they are created. A damaged one would then
    fail every first step of every restart, and the previous checkpoint would never be tried. Only those
    values are read here, one at a time: the others were read by the restore itself.

    Raises:
      tf.errors.DataLossError: a value does not match its checksum or cannot be read; the message names the
        checkpoint's data files.
    """
    later = [] if getattr(status, 'unmatched', None) is not None else tf_internals.checkpoint_keys_not_restored(status)
    if later is None:
        later = list(reader.get_variable_to_dtype_map())
    for key in later:
        try:
            reader.get_tensor(key)
        except tf.errors.OpError as error:
            raise _damaged_data(path, f'the value of {key}', error) from None


def _damaged_data(path: str, what: str, error: Exception) -> tf.errors.DataLossError:
    """The error for a checkpoint whose data files do not read back: it names them."""
    data_files = sorted(os.path.basename(name) for name in glob.glob(glob.escape(path) + '.data-*'))
    return tf.errors.DataLossError(
        None,
        None,
        f'The data file {", ".join(data_files) or path + ".data-*"} of the checkpoint {path} is damaged: {what} '
        f'cannot be read ({_first_lines(str(error), 1)}).',
    )


def _check_matched(status, path: str, allow_partial: bool) -> None:
    try:
        status.assert_existing_objects_matched()
    except AssertionError as unmatched:
        names = _unmatched_names(status, str(unmatched))
        if names and not allow_partial:
            raise CheckpointMismatchError(
                f'{_V1_NOT_FOUND} The checkpoint {path} does not hold these variables of the program: '
                f'{_listed(names)}. It was written by another program (it holds {_listed(_names_in(path))}).',
                partial=True,
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
    try:
        return sorted(keys_by_v1_name(tf.compat.v1.train.NewCheckpointReader(path).get_variable_to_shape_map()))
    except _RESTORE_ERRORS:
        return []


OBJECT_GRAPH_KEY = '_CHECKPOINTABLE_OBJECT_GRAPH'  # The key of an object-based file's serialized object graph.
_VALUE_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'
_ESCAPED = re.compile(r'\.(.)')  # TF's escaping of attribute names: '..' is '.', '.S' is '/'.


def keys_by_v1_name(keys: Iterable[str]) -> dict[str, str]:
    """The keys of one checkpoint file's tensors by the v1 name of their variable, whatever the file's format.

    Name-based files key tensors by v1 name already. In object-based files each variable's path of
    attributes is read as its name (`dense.Skernel/.ATTRIBUTES/VARIABLE_VALUE` is `dense/kernel`); the object
    graph, the save counter and tensors that hold no variable are left out.

    Args:
      keys: the tensor keys of the file, as its reader's `get_variable_to_shape_map()` lists them.

    Returns:
      v1 name -> key in the file.
    """
    keys = list(keys)
    if OBJECT_GRAPH_KEY not in keys:
        return {key: key for key in keys}
    names = {}
    for key in keys:
        if key.endswith(_VALUE_SUFFIX):
            path = key[: -len(_VALUE_SUFFIX)]
            name = '/'.join(_ESCAPED.sub(_unescape, part) for part in path.split('/'))
            if name != _SAVE_COUNTER:
                names[name] = key
    return names


def _unescape(match: re.Match) -> str:
    return '/' if match.group(1) == 'S' else match.group(1)


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
        except CheckpointMismatchError:  # A `tf.errors.OpError` too; older checkpoints would not fit either.
            raise
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
        if not tf.io.gfile.exists(newest + '.index'):  # Listed as they are restored: the complete ones, by step.
            paths = _with_complete_ones_on_disk(paths, directory)
            times = []
            if not paths:
                tf.io.gfile.remove(os.path.join(directory, 'checkpoint'))  # Lists nothing that exists.
                return
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


def record_kept_checkpoint(manager: tf.train.CheckpointManager, path: str) -> None:
    """Lists `path`, a checkpoint a session restored and keeps as it is rather than saving it again, as `manager`'s
    newest, saved now: v1's `Saver` saved it again, so it rotates out and is kept
    (`keep_checkpoint_every_n_hours`) as one saved at the session's start."""
    tf_internals.record_saved_now(manager, path, time.time())


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
    """Saves `manager`'s checkpoint as `<prefix>-<step>`; returns its path.

    A save that fails leaves no partial files: TensorFlow's `<prefix>-<step>_temp` folder, the new step's
    files and the state file's temporary copy are removed, so the directory holds its last good checkpoint
    as before. A full disk is said in one error that names the directory and that checkpoint.

    Raises:
      tf.errors.ResourceExhaustedError: the disk (or quota) is full.
      tf.errors.OpError, OSError: the save failed otherwise (TensorFlow's error, after the clean-up).
    """
    directory = manager.directory
    before = set(os.listdir(directory)) if '://' not in directory else None
    try:
        with root_logger_left_alone():
            return manager.save(checkpoint_number=step)
    except (tf.errors.OpError, OSError) as error:
        if before is not None:
            _remove_partial_save(directory, step, before)
        if not _disk_full(error):
            raise
        latest = manager.latest_checkpoint
        detail = _first_lines(str(error).split('}} ', 1)[-1], 1)  # Without TensorFlow's function-node prefix.
        raise tf.errors.ResourceExhaustedError(
            None,
            None,
            f'The checkpoint of step {step} could not be saved into {directory}: no space left on the device '
            f'({detail}). Its partial files were removed; the last good checkpoint ({latest or "none yet"}) is '
            'kept. Free some space and run again to resume from it.',
        ) from None


_LEFTOVER_SAVE = re.compile(r'^.+-\d+_temp(_[0-9a-f]+)?$')  # TensorFlow's folder for the shards of one save.


def remove_leftover_saves(directory: str) -> list[str]:
    """Removes the `<prefix>-<step>_temp` folders of saves that never finished in `directory`; returns them.

    TensorFlow writes a checkpoint's shards into that folder and merges them into `<prefix>-<step>.index` and
    `.data-*` at the end, removing it; a process killed during a save leaves it behind, and it stays for good.
    Called only by a writer that has just taken the directory's lock (`compat_mts.checkpoint_dir.directory_lock`),
    which no other session of its process held: no one else saves there then, so every such folder is a leftover.
    """
    if '://' in directory or not os.path.isdir(directory):
        return []
    removed = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if _LEFTOVER_SAVE.match(name) and os.path.isdir(path) and not os.path.islink(path):
            logging.warning('Removing %s, left by a save that never finished (its process was stopped).', path)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _disk_full(error: Exception) -> bool:
    if isinstance(error, tf.errors.ResourceExhaustedError):
        return True
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return 'No space left on device' in str(error) or 'Disk quota exceeded' in str(error)


def _remove_partial_save(directory: str, step: int, before: set[str]) -> None:
    """Removes what a failed save of `step` added to `directory`: the `_temp` folder, the step's files, the
    state file's temporary copy."""
    partial = re.compile(rf'^(.+-{step}(_temp|\.index|\.data-\d+-of-\d+)|checkpoint\.tmp[0-9a-f]+)$')
    for name in set(os.listdir(directory)) - before:
        if not partial.match(name):
            continue
        path = os.path.join(directory, name)
        logging.info('Removing %s, left by the failed save of step %d.', path, step)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


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
