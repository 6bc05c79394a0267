"""`CheckpointDirectory`: one checkpoint directory, checked where the user gave it and handed down as it is.

A session's `checkpoint_dir`, or an Estimator's `model_dir`, is validated once, where it is given (its type, NUL
bytes, what `''` means; `compat_mts.core.validation`'s messages), and its path expanded, so that relative, `~`
and symlinked directories resume as absolute ones do. `MonitoredTrainingSession` and the Estimator hand the
object to the session creators and the `CheckpointSaverHook`, which use the one they are given. It knows the
argument it was given as and who was given it, for the messages (a `CheckpointMismatchError` of an Estimator
says `model_dir`), and does what the directory is for: making it writable before the first save
(`make_writable`), the writer's lock (`lock`, `unlock`; `compat_mts.checkpoint_dir.directory_lock`), the
`tf.train.CheckpointManager` that saves into it (`manager`) and the restore of its latest checkpoint
(`restore_latest`).
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from compat_mts import summary as summary_lib
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.core import validation

_SESSION = 'the session'
_WORKING_DIRECTORY = 'the working directory, as in v1'


def checkpoint_name_bytes(basename: str) -> int:
    """The length of the longest path a checkpoint save of `basename` writes under its directory: the
    temporary data file of its shard, before the save renames it."""
    return len(os.fsencode(f'{basename}-9223372036854775807_temp/part-00000-of-00001.data-00000-of-00001'))


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
    def of(cls, value: Any, argument: str = 'checkpoint_dir') -> CheckpointDirectory:
        """`value` if it is a `CheckpointDirectory`, else one made of the path `value` (`''`: the working
        directory, as in v1)."""
        return value if isinstance(value, cls) else cls(value, argument=argument)

    @classmethod
    def optional(cls, value: Any, argument: str = 'checkpoint_dir') -> CheckpointDirectory | None:
        """v1's `if checkpoint_dir:`: None for None and `''`, `value` if it is a `CheckpointDirectory`, else one
        made of the path `value`.

        Raises:
          TypeError: not None, a str, bytes or an os.PathLike (`compat_mts.core.validation.optional_directory`).
        """
        if value is None or isinstance(value, cls):
            return value
        path = validation.optional_directory(value, argument)
        return None if path is None else cls(path, argument=argument)

    @property
    def path(self) -> str:
        """The directory's path, expanded (`~`, relative and symlinked paths made absolute)."""
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
          ValueError: the path cannot hold those files (`compat_mts.summary.check_directory_path`).
          PermissionError: the directory cannot be created or written.
        """
        reserve = max(summary_lib.EVENTS_NAME_BYTES, checkpoint_name_bytes(basename))
        summary_lib.ensure_writable_directory(self._path, self._argument, reserve=reserve)

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
        return tf.train.CheckpointManager(
            checkpoint,
            self._path,
            max_to_keep=max_to_keep,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            checkpoint_name=basename,
        )

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
