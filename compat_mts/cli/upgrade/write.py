"""How `compat-mts upgrade` writes what it upgraded: every output checked before the first write, each write
atomic, the originals backed up, and a report of what was written when anything fails.

The users' source files are often their only copy, so a write never leaves a file half written, and never one
the user did not ask for:

1. **Plan** (`plan`): each upgraded file gets its target (`--in-place`: the file itself; `-o DIR`: DIR and the
   file's path under the directory it was found in, or its base name for a file named on the command line). The
   whole set is refused, before anything is written, when a target is read-only (a read-only mount or an
   immutable file refuses root too), two files would be written to one target, a target exists and holds other
   text (unless `overwrite`), or a target lies outside its tree: a symbolic link of `--in-place` is written at its
   target when that is inside the tree it was found in (the directory named, or the file's own directory), and
   refused when it leads out; `-o DIR` never writes through a link (a link at a target is replaced by the file,
   with `overwrite`) nor into a directory that leads out of DIR.
2. **Stage**: each new text is written to a temporary file in its target's directory (`.NAME.*.compat-mts-tmp`)
   and fsynced, with the original's permission bits (and owner, when run as root). A full disk or any error
   here removes the temporary files and leaves every target as it was.
3. **Back up** (`--in-place`, unless `backup=False`): each original's bytes go to `FILE.orig` (`FILE.orig.1`, ...
   when that exists: a backup is never overwritten), fsynced, before any target is replaced; if one cannot be
   made, nothing is replaced.
4. **Commit**: each temporary file is renamed over its target (`os.replace`, atomic), then each directory is
   fsynced. A failure here stops the renames; each target is then its original or its whole upgraded text,
   never a part of it, and `WriteFailed` lists which were written and which not. SIGINT and SIGTERM, in any
   step, are acted on between two files (what was begun is finished, or undone before the first rename), with
   the same list. A SIGKILL leaves the same (each rename is atomic), without the list, and perhaps a
   `.compat-mts-tmp` file.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import stat
import tempfile
from typing import Iterator, Sequence

TEMPORARY_SUFFIX = '.compat-mts-tmp'
BACKUP_SUFFIX = '.orig'


@dataclasses.dataclass(frozen=True)
class Source:
    """A file to upgrade, and where it was found: `tree` is the directory named on the command line that holds
    it (or the file's own directory), `relative` its path under `tree` (the base name for a file named)."""

    path: str
    tree: str
    relative: str


@dataclasses.dataclass(frozen=True)
class Output:
    """One planned write: the upgraded `text` of `source` to `target` (a real path, links resolved where they are
    followed; `shown` as the command line spells it), in the mode of the file it replaces or of `source`;
    `replaces` when a file is there already; not `needed` when the target holds that text already (an earlier
    run's output)."""

    source: str
    target: str
    shown: str
    text: str
    replaces: bool
    needed: bool = True


class WriteRefused(Exception):
    """Nothing was written: the planned outputs break a rule (`problems`: one `(path, reason)` per file)."""

    def __init__(self, problems: Sequence[tuple[str, str]]):
        super().__init__('\n'.join(f'{path}: {reason}' for path, reason in problems))
        self.problems = list(problems)


class WriteFailed(Exception):
    """A write stopped midway: `written` were replaced (whole), `not_written` are as they were; `backups` were
    made; `reason` names the file and the error (or the signal)."""

    def __init__(self, reason: str, written: Sequence[str], not_written: Sequence[str], backups: Sequence[str]):
        super().__init__(reason)
        self.reason = reason
        self.written = list(written)
        self.not_written = list(not_written)
        self.backups = list(backups)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while files were being written (`signal_number`)."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def _inside(path: str, tree: str) -> bool:
    return os.path.commonpath([path, tree]) == tree


def _read_only(path: str) -> bool:
    """Whether writing `path` (a file, or a directory to create a file in) would be refused, root included: a
    read-only mount, an immutable file, or mode bits without write permission."""
    if not os.access(path, os.W_OK):
        return True
    return not os.path.isdir(path) and not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _existing_ancestor(directory: str) -> str:
    while not os.path.exists(directory):
        directory = os.path.dirname(directory)
    return directory


def _same_text(path: str, text: str) -> bool:
    try:
        with open(path, 'rb') as file:
            return file.read() == text.encode('utf-8')
    except OSError:
        return False


def plan(
    upgraded: Sequence[tuple[Source, str, bool]],
    *,
    in_place: bool,
    output_dir: str | None,
    overwrite: bool = False,
) -> list[Output]:
    """The writes of `upgraded` (each `(source, upgraded text, changed)`), every one checked before any is made.

    `--in-place` writes only the files that changed; `-o DIR` writes every file, so that DIR holds the whole tree.

    Raises:
      WriteRefused: a write would break a rule (see the module docstring); nothing was written.
    """
    problems: list[tuple[str, str]] = []
    outputs: list[Output] = []
    claimed: dict[str, str] = {}
    out_root = os.path.realpath(output_dir) if output_dir else None
    for source, text, changed in upgraded:
        if in_place:
            if not changed:
                continue
            shown = source.path
            target = os.path.realpath(source.path)
            tree = os.path.realpath(source.tree)
            if not _inside(target, tree):
                problems.append(
                    (
                        source.path,
                        f'a symbolic link to {target}, outside {source.tree}: not written through; upgrade '
                        'the file it points to itself',
                    )
                )
                continue
        else:
            shown = os.path.join(output_dir, source.relative)
            target = os.path.join(out_root, source.relative)
            directory = os.path.realpath(os.path.dirname(target))
            if not _inside(directory, out_root):
                problems.append((shown, f'its directory leads out of {output_dir} (a symbolic link): not written'))
                continue
            target = os.path.join(directory, os.path.basename(target))
            if os.path.realpath(target) == os.path.realpath(source.path):
                problems.append((source.path, f'-o {output_dir} would rewrite it: use --in-place for that'))
                continue
        if target in claimed:
            if os.path.realpath(claimed[target]) != os.path.realpath(source.path):
                problems.append((shown, f'both {claimed[target]} and {source.path} would be written to it'))
            continue
        claimed[target] = source.path
        exists = os.path.lexists(target)
        if exists and not in_place:
            if os.path.isdir(target) and not os.path.islink(target):
                problems.append((shown, 'is a directory'))
                continue
            if not overwrite and (os.path.islink(target) or not _same_text(target, text)):
                problems.append((shown, 'exists, with other text: not overwritten (pass --overwrite to replace it)'))
                continue
            if not os.path.islink(target) and _same_text(target, text):
                outputs.append(Output(source.path, target, shown, text, True, needed=False))  # An earlier run's output.
                continue
        directory = _existing_ancestor(os.path.dirname(target))
        if not os.path.isdir(directory):
            problems.append((shown, f'{directory} is not a directory'))
        elif _read_only(directory):
            problems.append((shown, f'its directory {directory} is read-only: not written'))
        elif exists and not os.path.islink(target) and _read_only(target):
            problems.append((shown, 'is read-only: not written (make it writable, or leave it out)'))
        else:
            outputs.append(Output(source.path, target, shown, text, exists))
    if problems:
        raise WriteRefused(problems)
    return outputs


class _Signals:
    """SIGINT and SIGTERM noted while files are written (in the main thread), and raised as `Interrupted` by
    `check()` between two files: never inside one file's write, so what was begun is finished or undone."""

    def __enter__(self) -> _Signals:
        self._saved = {}
        self.received: int | None = None
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                self._saved[number] = signal.signal(number, self._note)
            except ValueError:  # Not the main thread: the signals stay as they are.
                break
        return self

    def _note(self, number: int, frame) -> None:
        self.received = self.received or number

    def check(self) -> None:
        if self.received is not None:
            raise Interrupted(self.received)

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._saved.items():
            signal.signal(number, handler)


def _write_temporary(directory: str, name: str, data: bytes, like: str, keep_owner: bool) -> str:
    """`data` in a new fsynced file in `directory`, with the mode of the file `like` (and its owner, when
    `keep_owner` and this process may set it: as root)."""
    descriptor, path = tempfile.mkstemp(prefix=f'.{name}.', suffix=TEMPORARY_SUFFIX, dir=directory)
    try:
        status = os.stat(like)
        os.fchmod(descriptor, stat.S_IMODE(status.st_mode))
        if keep_owner and os.geteuid() == 0:
            os.fchown(descriptor, status.st_uid, status.st_gid)
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    except OSError:
        os.close(descriptor)
        os.unlink(path)
        raise
    os.close(descriptor)
    return path


def _mode_of(output: Output) -> str:
    """The file whose mode a write keeps: the one it replaces (not a link), else its source."""
    return output.target if output.replaces and not os.path.islink(output.target) else output.source


def _backup(path: str) -> str:
    """A copy of `path` as `path.orig` (or `.orig.N`, never over an existing file); its name."""
    with open(path, 'rb') as file:
        data = file.read()
    directory, name = os.path.split(path)
    temporary = _write_temporary(directory, name, data, path, keep_owner=True)
    try:
        for number in range(1000):
            backup = path + BACKUP_SUFFIX + (f'.{number}' if number else '')
            try:
                os.link(temporary, backup)  # Fails when `backup` exists: a backup is never replaced.
            except FileExistsError:
                continue
            return backup
        raise FileExistsError(f'{path}{BACKUP_SUFFIX} to {path}{BACKUP_SUFFIX}.999 all exist')
    finally:
        os.unlink(temporary)


def _fsync_directory(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _describe(error: BaseException) -> str:
    if isinstance(error, Interrupted):
        return f'interrupted by {error}'
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)


def _made_directories(target: str) -> Iterator[str]:
    """Creates the missing directories above `target`; yields each one made (outermost first)."""
    missing = []
    directory = os.path.dirname(target)
    while not os.path.exists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for directory in reversed(missing):
        os.mkdir(directory)
        yield directory


def write(outputs: Sequence[Output], *, backup: bool) -> list[str]:
    """Makes the planned writes (see the module docstring): staged, backed up (`backup`), then renamed into place.

    Returns:
      The backups made (as `Output.shown` spells their files), one per replaced file when `backup`.

    Raises:
      WriteFailed: a write failed or a signal came; nothing, or only the files it lists as written, changed.
    """
    outputs = [output for output in outputs if output.needed]
    staged: dict[str, str] = {}
    made: list[str] = []
    backups: list[tuple[str, Output]] = []
    written: list[str] = []
    with _Signals() as signals:
        current = None
        try:
            for output in outputs:
                signals.check()
                current = output.shown
                made.extend(_made_directories(output.target))
                directory, name = os.path.split(output.target)
                staged[output.target] = _write_temporary(
                    directory, name, output.text.encode('utf-8'), _mode_of(output), keep_owner=output.replaces
                )
            if backup:
                for output in outputs:
                    signals.check()
                    current = output.shown
                    if output.replaces:
                        backups.append((_backup(output.target), output))
            for output in outputs:
                signals.check()
                current = output.shown
                os.replace(staged.pop(output.target), output.target)
                written.append(output.shown)
            for directory in sorted({os.path.dirname(output.target) for output in outputs}):
                current = directory
                _fsync_directory(directory)
            signals.check()
        except (OSError, Interrupted) as error:
            for temporary in staged.values():
                os.unlink(temporary)
            if not written:
                for path, _ in backups:
                    os.unlink(path)
                backups = []
                for directory in reversed(made):
                    if not os.listdir(directory):
                        os.rmdir(directory)
            not_written = [output.shown for output in outputs if output.shown not in written]
            raise WriteFailed(f'{current}: {_describe(error)}', written, not_written, _shown(backups)) from error
    return _shown(backups)


def _shown(backups: Sequence[tuple[str, Output]]) -> list[str]:
    """Each backup's path as the command line spells its file (`train.py.orig`, not the real path)."""
    return [output.shown + path[len(output.target) :] for path, output in backups]
