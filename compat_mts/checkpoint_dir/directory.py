"""`CheckpointDirectory`: one checkpoint directory, checked where the user gave it and handed down as it is.

A session's `checkpoint_dir`, or an Estimator's `model_dir`, is validated once, where it is given (its type, NUL
bytes, what `''` means; `compat_mts.core.validation`'s messages) and its `~` expanded. `MonitoredTrainingSession`
and the Estimator hand the
object to the session creators and the `CheckpointSaverHook`, which use the one they are given. It knows the
argument it was given as and who was given it, for the messages (a `CheckpointMismatchError` of an Estimator
says `model_dir`), and does what the directory is for: making it writable before the first save
(`make_writable`), the writer's lock (`lock`, `unlock`; `compat_mts.checkpoint_dir.directory_lock`), the
`tf.train.CheckpointManager` that saves into it (`manager`) and the restore of its latest checkpoint
(`restore_latest`).

The checks of a directory that files are written in are here too (`check_directory_path`,
`ensure_writable_directory`): the summary directories, `compat-mts demo`'s and `convert`'s use them with the
argument they were given as.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import time
from typing import Any

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import validation

_SESSION = 'the session'
_WORKING_DIRECTORY = 'the working directory, as in v1'


# The longest name TensorFlow writes in a summary or checkpoint directory (a session's writer writes its events
# there too), beyond the directory's own path: an events file (`events.out.tfevents.<time>.<host>.<pid>.<n>.v2`);
# a checkpoint's temporary data file is `checkpoint_name_bytes`.
EVENTS_NAME_BYTES = len('events.out.tfevents.1234567890..4194304.18446744073709551615.v2') + len(socket.gethostname())
_DEFAULT_PATH_MAX = 4096


def check_utf8_path(directory: str, argument: str) -> None:
    """Raises a ValueError naming `argument` if `directory` is not valid UTF-8, which TensorFlow's file
    functions cannot take (Python gives such a name from the command line or `os.listdir` as surrogates)."""
    try:
        directory.encode('utf-8')
    except UnicodeEncodeError:
        raise ValueError(
            f"`{argument}` {directory!r} is not a valid UTF-8 path: TensorFlow's file functions take UTF-8 paths "
            'only. Rename the directory, or give another one.'
        ) from None


def check_directory_path(directory: str, argument: str, *, reserve: int = EVENTS_NAME_BYTES) -> None:
    """Raises a ValueError naming `argument` for a path where files cannot be written.

    That is a path that is not UTF-8, a file, a symlink to nothing or a symlink loop, one with a file
    for a parent, or one so long that the files written in it (`reserve` bytes more: an events file by
    default) would pass the file system's path limit: TensorFlow would fail only at the first save, with
    a raw error and a temporary folder left behind.
    """
    if '://' in directory:
        return
    check_utf8_path(directory, argument)
    try:
        status = os.stat(directory)
    except FileNotFoundError:
        # Created by the caller; unless it is a symlink to nothing, which creating would not mend.
        problem = ''
        if os.path.islink(directory):
            problem = f'is a symlink to {os.readlink(directory)!r}, which does not exist'
    except NotADirectoryError:
        problem = 'has a file where a parent directory should be'
    except OSError as error:
        if error.errno == errno.ELOOP:
            problem = 'is a symlink loop (or passes through one)'
        elif error.errno == errno.ENAMETOOLONG:
            problem = 'is longer than this file system allows'
        else:
            raise
    else:
        problem = '' if stat.S_ISDIR(status.st_mode) else 'is a file, not a directory'
    if problem:
        raise ValueError(f'`{argument}` {directory!r} {problem}. Give a directory path.')
    length = len(os.fsencode(os.path.abspath(directory)))
    limit = _path_max(directory)
    if length + 1 + reserve >= limit:
        raise ValueError(
            f'`{argument}` {directory[:40]!r}... is {length} bytes long: the files written in it would have paths '
            f'of up to {length + 1 + reserve} bytes, over the limit of {limit - 1} of this file system, and the '
            'first save would fail. Give a shorter path.'
        )


def _path_max(directory: str) -> int:
    """The file system's PATH_MAX (with its terminating NUL) at the nearest existing parent of `directory`."""
    existing = os.path.abspath(directory)
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    try:
        return os.pathconf(existing, 'PC_PATH_MAX')
    except (OSError, ValueError):
        return _DEFAULT_PATH_MAX


def ensure_writable_directory(directory: str, argument: str, *, reserve: int = EVENTS_NAME_BYTES) -> None:
    """Creates `directory`; raises an error naming it when it cannot be created or written.

    Args:
      directory: the directory.
      argument: its argument's name, for the messages.
      reserve: how much longer than the directory's path the paths of the files written in it get.

    Raises:
      ValueError: the path cannot hold files (see `check_directory_path`).
      PermissionError: the directory cannot be created or written.
    """
    directory = os.path.expanduser(directory)
    check_directory_path(directory, argument, reserve=reserve)
    try:
        if '://' in directory:
            tf.io.gfile.makedirs(directory)
        else:  # The OSError names the part of the path that failed, and why.
            os.makedirs(directory, exist_ok=True)
    except tf.errors.OpError as error:
        raise PermissionError(f'`{argument}` {directory!r} cannot be created: {error}') from error
    except OSError as error:
        raise PermissionError(_cannot_create(directory, argument, error)) from error
    if '://' not in directory and not os.access(directory, os.W_OK):
        raise PermissionError(f'`{argument}` {directory!r} is not writable.')


# Why making a directory in an existing one fails, by errno, in words.
_CREATE_PROBLEMS = {
    errno.EACCES: 'this user may not write in {parent!r}',
    errno.EPERM: '{parent!r} does not allow new directories',
    errno.EROFS: '{parent!r} is on a read-only file system',
    errno.ENOSPC: 'the file system of {parent!r} is full',
    errno.EDQUOT: "this user's disk quota on {parent!r} is used up",
    # mkdir in a virtual file system (/proc) that has no such entry: the directory is not missing, the
    # file system makes none.
    errno.ENOENT: '{parent!r} does not allow new directories (a virtual file system, such as /proc)',
}


def _cannot_create(directory: str, argument: str, error: OSError) -> str:
    """The message for `directory` that `os.makedirs` could not create: which part failed, and why."""
    failed = error.filename if isinstance(error.filename, str) else directory
    parent = os.path.dirname(os.path.abspath(failed))
    problem = _CREATE_PROBLEMS.get(error.errno, '{parent!r} refused it').format(parent=parent)
    where = '' if os.path.abspath(failed) == os.path.abspath(directory) else f' (at {failed!r})'
    return (
        f'`{argument}` {directory!r} cannot be created{where}: {problem} ({error.strerror}). Give a directory '
        'that can be created and written, or create this one with write permission first.'
    )


def save_name_bytes(prefix_name: str) -> int:
    """The length of the longest path a save to the checkpoint prefix `prefix_name` (a name, no directory)
    writes under its directory: the temporary data file of its shard, before the save renames it."""
    return len(os.fsencode(f'{prefix_name}_temp/part-00000-of-00001.data-00000-of-00001'))


def checkpoint_name_bytes(basename: str) -> int:
    """The length of the longest path a checkpoint save of `basename` (numbered by its step) writes under its
    directory."""
    return save_name_bytes(f'{basename}-9223372036854775807')


class CheckpointDirectory:
    """A checkpoint directory, validated once: where a session restores from and saves to.

    Args:
      path: the directory (str or os.PathLike); `''` is what `empty` says, the working directory by default.
      argument: the argument the user gave it as, for the messages (`checkpoint_dir`, `model_dir`).
      owner: who the user gave it to, for the messages ("the session", "the Estimator").
      empty: what `''` means for `argument`, or None where `''` is refused.

    Raises:
      TypeError: `path` is not a str, bytes or os.PathLike.
      ValueError: `path` holds a NUL byte, or is `''` where `empty` is None.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        argument: str = 'checkpoint_dir',
        owner: str = _SESSION,
        empty: str | None = _WORKING_DIRECTORY,
    ):
        self._path = checkpoints.expand_directory(validation.path(path, argument, empty=empty) or os.curdir)
        self._argument = argument
        self._owner = owner

    @classmethod
    def of(cls, value: Any) -> CheckpointDirectory:
        """`value` if it is a `CheckpointDirectory`, else one made of the `checkpoint_dir` path `value` (`''`: the
        working directory, as in v1)."""
        return value if isinstance(value, cls) else cls(value)

    @classmethod
    def optional(cls, value: Any) -> CheckpointDirectory | None:
        """v1's `if checkpoint_dir:`: None for None and `''`, `value` if it is a `CheckpointDirectory`, else one
        made of the `checkpoint_dir` path `value`.

        Raises:
          TypeError: not None, a str, bytes or an os.PathLike (`compat_mts.core.validation.optional_directory`).
        """
        if value is None or isinstance(value, cls):
            return value
        path = validation.optional_directory(value, 'checkpoint_dir')
        return None if path is None else cls(path)

    @property
    def path(self) -> str:
        """The directory's path, `~` expanded; a relative path stays relative, as v1 kept it."""
        return self._path

    @property
    def argument(self) -> str:
        """The argument the user gave the directory as (`checkpoint_dir`, `model_dir`)."""
        return self._argument

    def __repr__(self) -> str:
        return f'CheckpointDirectory({self._path!r}, argument={self._argument!r})'

    def make_writable(self, basename: str = 'model.ckpt') -> None:
        """Creates the directory; raises an error naming its argument when it cannot be created or written, or
        its path is too long for the files that the saves of `basename` and the events file write in it.

        Raises:
          ValueError: the path cannot hold those files (`check_directory_path`).
          PermissionError: the directory cannot be created or written.
        """
        ensure_writable_directory(
            self._path, self._argument, reserve=max(EVENTS_NAME_BYTES, checkpoint_name_bytes(basename))
        )

    def lock(self) -> None:
        """Takes the directory's lock for this process; a writer that took it removes the folders of the saves
        killed midway (`checkpoints.remove_leftover_saves`).

        Raises:
          CheckpointDirectoryInUseError: another live process writes into the directory.
        """
        if checkpoints.lock_directory(self._path):
            checkpoints.remove_leftover_saves(self._path)

    def unlock(self) -> None:
        """Releases the directory's lock (`compat_mts.checkpoint_dir.directory_lock.unlock_directory`)."""
        checkpoints.unlock_directory(self._path)

    def manager(
        self,
        checkpoint: tf.train.Checkpoint,
        *,
        max_to_keep: int | None,
        keep_checkpoint_every_n_hours: float | None,
        basename: str = 'model.ckpt',
        writes_files: bool = True,
    ) -> tf.train.CheckpointManager:
        """The `tf.train.CheckpointManager` saving `checkpoint` into the directory as `<basename>-<step>`.

        The manager reads the state file at once, so a writer (`writes_files`) first rebuilds an unreadable one
        (`checkpoints.prepare_directory_state`); in a multi-worker cluster the other workers' saves go to
        directories of their own, and leave it alone.
        """
        if writes_files:
            checkpoints.prepare_directory_state(self._path)
        manager = tf.train.CheckpointManager(
            checkpoint,
            self._path,
            max_to_keep=max_to_keep,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            checkpoint_name=basename,
        )
        if keep_checkpoint_every_n_hours:  # v1's `Saver` counted the hours from its creation, in every run.
            tf_internals.keep_hours_counted_from(manager, time.time())
        return manager

    def restore_latest(self, checkpoint: tf.train.Checkpoint, *, allow_partial: bool = False) -> str | None:
        """Restores the directory's latest checkpoint into `checkpoint` (`checkpoints.restore_latest`); returns
        its path, or None when there is none.

        Raises:
          CheckpointMismatchError: the checkpoint does not fit `checkpoint`; the advice names the directory's
            argument and owner.
        """
        try:
            return checkpoints.restore_latest(checkpoint, self._path, allow_partial=allow_partial)
        except checkpoints.CheckpointMismatchError as error:
            if (self._owner, self._argument) == (_SESSION, 'checkpoint_dir'):
                raise
            raise error.naming(self._owner, self._argument) from None
