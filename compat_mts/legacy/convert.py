"""`convert_checkpoint`: every checkpoint of a directory rewritten into the other format, names and steps kept.

What `compat-mts convert` runs. Its own module because it reads and writes whole directories (the state file,
progress, clean-up after a damaged file), while `compat_mts.legacy.checkpoints` is about the names of one
checkpoint; it is re-exported as `compat_mts.legacy.convert_checkpoint`.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Mapping

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.checkpoint_dir import directory as directory_lib
from compat_mts.legacy.checkpoints import FORMATS, CheckpointNames, _Entry, write_name_based


# Read at most about this much per RestoreV2 call, so that progress moves within a large checkpoint.
_READ_GROUP_BYTES = 64 << 20


def _tensor_bytes(names: CheckpointNames, name: str) -> int:
    """The size of variable `name` in memory (at least 1, so string variables count too)."""
    return max(1, math.prod(names.shapes[name]) * tf.as_dtype(names.dtypes[name]).size)


def _variables_of(names: CheckpointNames, on_read: Callable[[int], Any] | None = None) -> dict[str, tf.Tensor]:
    """Every variable of `names` by name; `on_read(bytes)` is called after each group of them is read."""
    ordered = sorted(names.keys)
    groups, group, group_bytes = [], [], 0
    for name in ordered:
        group.append(name)
        group_bytes += _tensor_bytes(names, name)
        if group_bytes >= _READ_GROUP_BYTES:
            groups.append((group, group_bytes))
            group, group_bytes = [], 0
    if group:
        groups.append((group, group_bytes))
    values = {}
    for group, group_bytes in groups:
        read = tf.raw_ops.RestoreV2(
            prefix=names.path,
            tensor_names=[names.keys[name] for name in group],
            shape_and_slices=[''] * len(group),
            dtypes=[names.dtypes[name] for name in group],
        )
        values.update(zip(group, read))
        if on_read is not None:
            on_read(group_bytes)
    return values


# What reading a truncated or corrupt checkpoint file raises: OpErrors from TensorFlow, Python errors from the reader.
_READ_ERRORS = (tf.errors.OpError, ValueError, OSError)
_OP_CONTEXT = re.compile(r'\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\]$')


def _unreadable(file: str, error: Exception) -> checkpoints.DamagedCheckpointsError:
    reason = _OP_CONTEXT.sub('', (str(error).strip().splitlines() or [''])[0])
    return checkpoints.DamagedCheckpointsError(
        f'{file} cannot be read ({type(error).__name__}: {reason}); nothing was converted.'
    )


def _remove_written(prefixes: list[str], directory: str, created: bool) -> None:
    """Removes the files of `prefixes`, and `directory` too when this conversion created it."""
    for prefix in prefixes:
        for path in tf.io.gfile.glob(f'{prefix}.*'):
            tf.io.gfile.remove(path)
    if created and not tf.io.gfile.listdir(directory):
        tf.io.gfile.rmtree(directory)


def _write_object_based(file_prefix: str, values: Mapping[str, tf.Tensor]) -> str:
    checkpoint = tf.train.Checkpoint()
    for name, value in values.items():
        setattr(checkpoint, name, tf.Variable(value, name=name.replace('/', '_'), trainable=False))
    with checkpoints.root_logger_left_alone():
        return checkpoint.write(file_prefix)


def convert_checkpoint(
    src_dir: str, dst_dir: str, to: str, *, on_progress: Callable[[int, int, str], Any] | None = None
) -> list[str]:
    """Rewrites every checkpoint of `src_dir` into `dst_dir` in the format `to`, keeping names and steps.

    - `to='name'`: v1 name-based files (what `tf.compat.v1.train.Saver` and a `wrap_graph` program read).
      An object-based variable is named by its path of attributes (`model/dense/kernel`).
    - `to='object'`: TF2 object-based files (what `tf.train.Checkpoint` reads), one attribute of the root
      per v1 name: `dense/kernel` becomes the key `dense.Skernel/.ATTRIBUTES/VARIABLE_VALUE` and
      `global_step` the key compat_mts's own checkpoints use, so a compat_mts session resumes its step.

    The `checkpoint` state file of `dst_dir` lists the converted checkpoints in the same order, with
    relative paths. Either conversion followed by the other gives back the same names and values.

    Every checkpoint's index is read before anything is written; one whose files cannot be read stops the
    conversion, and what it had written is removed, so `dst_dir` is left as it was.

    Args:
      src_dir: a directory with checkpoints (those of its `checkpoint` state file, found as a session finds
        them: a relative, moved or symlinked directory works).
      dst_dir: where to write; created if needed; must not hold checkpoints already.
      to: 'name' or 'object'.
      on_progress: Called as `on_progress(bytes_done, bytes_total, detail)` as the variables are read, and
        after each checkpoint is written (`detail` says which: `'model.ckpt-20 (2/3 checkpoints)'`). The
        bytes are those of the variables in memory, over all checkpoints. `compat-mts convert` shows them
        through `compat_mts.core.progress`.

    Returns:
      The prefixes written, oldest first.

    Raises:
      ValueError: a bad `to`, no checkpoints in `src_dir`, `dst_dir` already holding a state file, or a
        directory path that cannot hold files (not UTF-8, a file, a dangling symlink or loop, too long).
      DamagedCheckpointsError: a checkpoint file of `src_dir` is truncated, corrupt or missing; the message
        names the file.
      PermissionError: `dst_dir` cannot be created or written.
    """
    if to not in FORMATS:
        raise ValueError(f'`to` must be one of {FORMATS}, got {to!r}.')
    src_dir, dst_dir = os.fsdecode(src_dir), os.fsdecode(dst_dir)
    directory_lib.check_utf8_path(src_dir, 'src_dir')
    directory_lib.check_utf8_path(dst_dir, 'dst_dir')
    sources = list(reversed(checkpoints.checkpoint_paths(src_dir)))
    if not sources:
        raise ValueError(
            f'`src_dir` {src_dir!r} holds no checkpoint (no `checkpoint` state file, no <prefix>-<step>.index files).'
        )
    if os.path.abspath(src_dir) == os.path.abspath(dst_dir):
        raise ValueError('`dst_dir` must differ from `src_dir`.')
    if checkpoints.checkpoint_paths(dst_dir) or tf.io.gfile.exists(os.path.join(dst_dir, 'checkpoint')):
        raise ValueError(f'`dst_dir` {dst_dir!r} already holds checkpoints; give an empty directory.')
    names = {}
    for source in sources:
        try:
            names[source] = CheckpointNames(source)
        except _READ_ERRORS as error:
            raise _unreadable(f'{source}.index', error) from None
    created = not tf.io.gfile.isdir(dst_dir)
    reserve = max(directory_lib.save_name_bytes(os.path.basename(source)) for source in sources)
    directory_lib.ensure_writable_directory(dst_dir, 'dst_dir', reserve=reserve)
    total_bytes = sum(_tensor_bytes(names[source], name) for source in sources for name in names[source].keys)
    done_bytes = 0
    written = []
    for number, source in enumerate(sources, 1):
        detail = f'{os.path.basename(source)} ({number}/{len(sources)} checkpoints)'

        def on_read(group_bytes, detail=detail):
            nonlocal done_bytes
            done_bytes += group_bytes
            if on_progress is not None and done_bytes < total_bytes:  # The last report follows the last write.
                on_progress(done_bytes, total_bytes, detail)

        try:
            values = _variables_of(names[source], on_read)
        except _READ_ERRORS as error:
            _remove_written(written, dst_dir, created)
            raise _unreadable(f'{source}.data-*', error) from None
        target = os.path.join(dst_dir, os.path.basename(source))
        if to == 'name':
            entries = [_Entry(name, '', value) for name, value in values.items()]
            written.append(write_name_based(target, entries))
        else:
            written.append(_write_object_based(target, values))
        if on_progress is not None and done_bytes == total_bytes:
            on_progress(done_bytes, total_bytes, detail)
    tf_internals.write_relative_checkpoint_state(dst_dir, written)
    return written
