"""v1 name-based checkpoints, eagerly: write and read them, map them onto TF2 objects.

A v1 `tf.compat.v1.train.Saver` stores each variable under its name (`dense/kernel`, `global_step`); a TF2
`tf.train.Checkpoint` stores it under the path of attributes that leads to it
(`model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`) next to a serialized object graph. The
files are otherwise the same (`<prefix>.index`, `<prefix>.data-00000-of-00001`), so the three pieces
here are about names:

- `NameBasedCheckpoint`: a `tf.train.Checkpoint` whose files carry v1 names, the default checkpoint of a
  `compat_mts.wrap_graph` program, so that the real v1 `MonitoredTrainingSession` and compat_mts can
  continue each other's `checkpoint_dir`;
- `restore_from_v1`: starts TF2 objects (Keras layers, `tf.Variable`s) from a v1 checkpoint through an
  explicit name → variable mapping, with a dry run that says what matches;
- `CheckpointNames`: the v1 names of one checkpoint file of either format, which `convert_checkpoint`
  (`compat_mts.legacy.convert`) reads to rewrite every checkpoint of a directory into the other format.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any, Iterable, Mapping

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts.checkpoint_dir import checkpoints as checkpoints_lib
from compat_mts.checkpoint_dir.checkpoints import CheckpointMismatchError

OBJECT_GRAPH_KEY = checkpoints_lib.OBJECT_GRAPH_KEY
FORMATS = ('name', 'object')


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One saved tensor: the v1 name, the slice spec of a partitioned variable ('' when whole), the variable."""

    name: str
    spec: str
    variable: Any


def _entries(var_list: Mapping[str, Any] | Iterable[Any]) -> list[_Entry]:
    if isinstance(var_list, Mapping):
        items = list(var_list.items())
    else:
        items = [(global_step_lib.variable_name(variable), variable) for variable in var_list]
    entries, seen = [], set()
    for name, variable in items:
        if not isinstance(name, str) or not name:
            raise TypeError(f'`var_list` names must be non-empty strings, got {name!r}.')
        if not hasattr(variable, 'assign'):
            raise TypeError(f'`var_list` entry {name!r} must be a variable, got {type(variable).__name__}.')
        if name in seen:
            raise ValueError(f'`var_list` names {name!r} twice; each v1 name holds one variable.')
        seen.add(name)
        entries.append(_Entry(name, '', variable))
    return entries


def _dtype_of(variable: Any) -> tf.DType:
    return tf.as_dtype(variable.dtype)


def _shape_of(variable: Any) -> tuple | None:
    """The variable's shape; None for a variable of unknown shape (`validate_shape=False`, as k-means' centers)."""
    shape = tf.TensorShape(variable.shape)
    return tuple(shape.as_list()) if shape.rank is not None else None


def write_name_based(file_prefix: str, entries: Iterable[_Entry]) -> str:
    """Writes `entries` under their v1 names to `<file_prefix>.index/.data-00000-of-00001`; returns the prefix."""
    entries = list(entries)
    directory = os.path.dirname(file_prefix)
    if directory and '://' not in directory and not tf.io.gfile.exists(directory):
        tf.io.gfile.makedirs(directory)
    tf.raw_ops.SaveV2(
        prefix=file_prefix,
        tensor_names=[entry.name for entry in entries],
        shape_and_slices=[entry.spec for entry in entries],
        tensors=[tf.convert_to_tensor(entry.variable) for entry in entries],
    )
    return file_prefix


class CheckpointNames:
    """The variables of one checkpoint file by v1 name, whatever its format.

    Name-based files list v1 names directly. In object-based files each variable's path of attributes is
    read as its name (`global_step/.ATTRIBUTES/VARIABLE_VALUE` → `global_step`), which is what
    `convert_checkpoint(..., to='object')` writes; the save counter is left out.
    """

    def __init__(self, path: str):
        self.path = path
        # The reader itself: `tf.train.load_checkpoint` takes a `ram://` prefix (the session's snapshot) for a
        # directory.
        reader = tf.compat.v1.train.NewCheckpointReader(path)
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
        self.object_based = OBJECT_GRAPH_KEY in shapes
        self.keys: dict[str, str] = checkpoints_lib.keys_by_v1_name(shapes)
        self.shapes = {name: tuple(shapes[key]) for name, key in self.keys.items()}
        self.dtypes = {name: dtypes[key] for name, key in self.keys.items()}

    def mismatch(self, entry: _Entry) -> str | None:
        """Why `entry` cannot take this checkpoint's value, or None if it can (the name must be present)."""
        saved_shape, saved_dtype = self.shapes[entry.name], self.dtypes[entry.name]
        shape = _full_shape(entry)
        if saved_dtype != _dtype_of(entry.variable):
            return f'dtype {saved_dtype.name} in the checkpoint, {_dtype_of(entry.variable).name} in the program'
        if shape is not None and saved_shape != shape:
            return f'shape {list(saved_shape)} in the checkpoint, {list(shape)} in the program'
        return None

    def read(self, entries: list[_Entry]) -> list[tf.Tensor]:
        """Reads the values of `entries` (all present and matching) in one op."""
        if not entries:
            return []
        return tf.raw_ops.RestoreV2(
            prefix=self.path,
            tensor_names=[self.keys[entry.name] for entry in entries],
            shape_and_slices=[entry.spec for entry in entries],
            dtypes=[_dtype_of(entry.variable) for entry in entries],
        )


def _full_shape(entry: _Entry) -> tuple:
    if entry.spec:
        return tuple(int(size) for size in entry.spec.split(' ')[:-1])
    return _shape_of(entry.variable)


class NameBasedRestoreStatus:
    """What `NameBasedCheckpoint.restore` did, with the assertions of TF2's restore status objects.

    The values were assigned when `restore` returned; `unmatched` lists the program's names that the file
    does not hold (those variables keep their values), `unused` the file's names no variable took.
    """

    def __init__(self, path: str, matched: list[str], unmatched: list[str], unused: list[str]):
        self.path = path
        self.matched = matched
        self.unmatched = unmatched
        self.unused = unused

    def assert_existing_objects_matched(self) -> 'NameBasedRestoreStatus':
        if self.unmatched:
            raise AssertionError(
                f'Variables of the program were not found in the checkpoint {self.path}: {self.unmatched}'
            )
        return self

    def assert_consumed(self) -> 'NameBasedRestoreStatus':
        self.assert_existing_objects_matched()
        if self.unused:
            raise AssertionError(f'Values in the checkpoint {self.path} were not restored: {self.unused}')
        return self

    def assert_nontrivial_match(self) -> 'NameBasedRestoreStatus':
        if not self.matched:
            raise AssertionError(f"Nothing of the checkpoint {self.path} matched the program's variables.")
        return self

    def expect_partial(self) -> 'NameBasedRestoreStatus':
        return self

    def run_restore_ops(self, session=None) -> None:
        """Nothing to run: the values were assigned eagerly."""

    def initialize_or_restore(self, session=None) -> None:
        """Nothing to run: the values were assigned eagerly."""


class NameBasedCheckpoint(tf.train.Checkpoint):
    """A `tf.train.Checkpoint` whose files carry v1 variable names, as `tf.compat.v1.train.Saver` wrote them.

    It fits wherever compat_mts takes a checkpoint (`Scaffold(saver=...)`, `CheckpointSaverHook(saver=...)`)
    and `tf.train.CheckpointManager` numbers and rotates its files as usual. `write`/`save` store each
    variable under its v1 name, so `tf.train.load_variable(directory, 'dense/kernel')` reads it and a
    v1 program with the same variables restores it; `restore`/`read` read name-based files (and
    object-based ones whose attribute paths are the names, as `convert_checkpoint` writes them).

    Unlike a v1 `Saver`, a variable the file lacks is not an error: it keeps its value and the returned
    status says so (`assert_existing_objects_matched()` raises), which is what compat_mts logs. A value
    whose shape or dtype differs from the variable's raises `CheckpointMismatchError` before anything is
    assigned. A `global_step` attribute, which `compat_mts.Scaffold` sets, is saved under its own name too.

    Example:

    ```python
    checkpoint = NameBasedCheckpoint({'dense/kernel': kernel, 'global_step': step})
    ```

    Args:
      var_list: a dict of v1 name → variable, or a list of variables saved under their own names.
      partitions: the slices of partitioned variables, each saved under the full variable's name (what
        `wrap_graph` passes for `tf.compat.v1.get_variable(..., partitioner=...)`).
    """

    def __init__(self, var_list: Mapping[str, Any] | Iterable[Any], *, partitions: Iterable[_Entry] = ()):
        super().__init__()
        # Not object-graph dependencies: the file format is the names.
        self._v1_entries = tf_internals.untracked(_entries(var_list) + list(partitions))

    def add(self, var_list: Mapping[str, Any] | Iterable[Any], partitions: Iterable[_Entry] = ()) -> None:
        """Saves and restores the variables of `var_list` and `partitions` too (as the constructor takes them).

        Raises:
          ValueError: a name is one this checkpoint saves already.
        """
        entries = _entries(var_list) + list(partitions)
        taken = {entry.name for entry in self._v1_entries}
        twice = sorted(entry.name for entry in entries if entry.name in taken)
        if twice:
            raise ValueError(f'The checkpoint saves {twice} already; each v1 name holds one variable.')
        self._v1_entries = tf_internals.untracked(list(self._v1_entries) + entries)

    @property
    def names(self) -> list[str]:
        """The v1 names this checkpoint saves (partitioned variables once per slice)."""
        return [entry.name for entry in self._all_entries()]

    def _all_entries(self) -> list[_Entry]:
        entries = list(self._v1_entries)
        step = getattr(self, 'global_step', None)
        if step is not None and not any(getattr(entry.variable, 'first', entry.variable) is step for entry in entries):
            entries.append(_Entry(global_step_lib.variable_name(step), '', step))
        return entries

    def _write(self, file_prefix, options=None):
        save_path = write_name_based(os.fspath(file_prefix), self._all_entries())
        callbacks = getattr(options, 'experimental_write_callbacks', None) or []
        for callback in callbacks:
            if inspect.signature(callback).parameters:
                callback(save_path)
            else:
                callback()
        return save_path

    def write(self, file_prefix, options=None):
        return self._write(file_prefix, options)

    def restore(self, save_path, options=None) -> NameBasedRestoreStatus:
        """Assigns the values of the checkpoint at `save_path` (a prefix) to the variables it names.

        Raises:
          CheckpointMismatchError: a value's shape or dtype does not fit its variable (nothing is assigned).
          tf.errors.NotFoundError: there is no checkpoint at `save_path`.
        """
        del options
        save_path = os.fspath(save_path)
        names = CheckpointNames(save_path)
        entries = self._all_entries()
        present = [entry for entry in entries if entry.name in names.keys]
        mismatches = {entry.name: names.mismatch(entry) for entry in present}
        mismatches = {name: reason for name, reason in mismatches.items() if reason}
        if mismatches:
            details = '; '.join(f'{name}: {reason}' for name, reason in sorted(mismatches.items()))
            raise CheckpointMismatchError(
                f"The checkpoint {save_path} does not fit the program's variables ({details}); it was written by "
                'another program.'
            )
        for entry, value in zip(present, names.read(present)):
            entry.variable.assign(value)
        taken = {entry.name for entry in present}
        return NameBasedRestoreStatus(
            save_path,
            matched=sorted(taken),
            unmatched=sorted(entry.name for entry in entries if entry.name not in names.keys),
            unused=sorted(name for name in names.keys if name not in taken),
        )

    def read(self, save_path, options=None) -> NameBasedRestoreStatus:
        return self.restore(save_path, options)


@dataclasses.dataclass
class RestoreReport:
    """What `restore_from_v1` matched: each list holds v1 names.

    Attributes:
      path: the checkpoint read.
      matched: names restored (or, in a dry run, that would be).
      missing: names of the mapping that the checkpoint does not hold.
      mismatched: names of the mapping whose saved shape or dtype does not fit, with the reason.
      unused: names of the checkpoint that the mapping does not mention (optimizer slots, often).
      restored: False in a dry run.
    """

    path: str
    matched: list[str]
    missing: list[str]
    mismatched: dict[str, str]
    unused: list[str]
    restored: bool

    @property
    def ok(self) -> bool:
        """True when every name of the mapping can be restored."""
        return not self.missing and not self.mismatched

    def __str__(self) -> str:
        lines = [f'{"Restored" if self.restored else "Dry run of"} {self.path}:']
        lines += [f'  matched     {name}' for name in self.matched]
        lines += [f'  missing     {name} (not in the checkpoint)' for name in self.missing]
        lines += [f'  mismatched  {name} ({reason})' for name, reason in sorted(self.mismatched.items())]
        lines += [f'  unused      {name}' for name in self.unused]
        return '\n'.join(lines)


def resolve_checkpoint_path(checkpoint_path: str) -> str:
    """A checkpoint prefix from a prefix or a directory (its latest checkpoint).

    Raises:
      ValueError: a directory without checkpoints, or a path that is neither.
    """
    checkpoint_path = os.fspath(checkpoint_path)
    if tf.io.gfile.isdir(checkpoint_path):
        latest = checkpoints_lib.latest_checkpoint(checkpoint_path)  # An unreadable state file read from the files.
        if latest is None:
            raise ValueError(f'The directory {checkpoint_path!r} holds no checkpoint (no `checkpoint` state file).')
        return latest
    if not tf.io.gfile.exists(checkpoint_path + '.index'):
        raise ValueError(
            f'{checkpoint_path!r} is neither a checkpoint directory nor a checkpoint prefix '
            f'(no {checkpoint_path}.index).'
        )
    return checkpoint_path


def restore_from_v1(checkpoint_path: str, mapping: Mapping[str, Any], dry_run: bool = False) -> RestoreReport:
    """Starts TF2 objects from a v1 checkpoint, through an explicit map of v1 names to variables.

    The stage-2 path off a v1 checkpoint: the model is Keras or `tf.Module` code now, and its variables'
    names no longer say which v1 variable they were. Name them once, check with `dry_run=True`, then
    restore. All or nothing: if any name of the mapping is missing from the checkpoint or does not fit,
    nothing is assigned.

    Example:

    ```python
    report = restore_from_v1(v1_dir, {'dense/kernel': layer.kernel, 'dense/bias': layer.bias}, dry_run=True)
    print(report)
    ```

    Args:
      checkpoint_path: a checkpoint prefix (`.../model.ckpt-100`) or a directory (its latest checkpoint).
      mapping: v1 name → variable (`tf.Variable` or Keras variable).
      dry_run: only report what would be restored.

    Returns:
      A `RestoreReport`: matched, missing, mismatched and unused names.

    Raises:
      TypeError: `mapping` is not a dict of names to variables.
      ValueError: no checkpoint at `checkpoint_path`; or, unless `dry_run`, some names of the mapping
        cannot be restored (the message is the report).
    """
    if not isinstance(mapping, Mapping):
        raise TypeError(f'`mapping` must be a dict of v1 names to variables, got {type(mapping).__name__}.')
    entries = _entries(mapping)
    path = resolve_checkpoint_path(checkpoint_path)
    names = CheckpointNames(path)
    present = [entry for entry in entries if entry.name in names.keys]
    mismatched = {entry.name: names.mismatch(entry) for entry in present}
    mismatched = {name: reason for name, reason in mismatched.items() if reason}
    fitting = [entry for entry in present if entry.name not in mismatched]
    report = RestoreReport(
        path=path,
        matched=[entry.name for entry in fitting],
        missing=[entry.name for entry in entries if entry.name not in names.keys],
        mismatched=mismatched,
        unused=sorted(set(names.keys) - set(mapping)),
        restored=False,
    )
    if dry_run:
        return report
    if not report.ok:
        raise ValueError(f'Nothing was restored, because some names cannot be.\n{report}')
    for entry, value in zip(fitting, names.read(fitting)):
        entry.variable.assign(value)
    report.restored = True
    return report
