"""`compat-mts upgrade`: makes the stage-1 edits of a v1 training script, and proves them with `--verify`.

`compat-mts check` lists what a script's migration needs; `upgrade` makes the stage-1 part of it: the edits of
migration_guide/legacy.md ("The stage-1 edits"), distributed.md ("Parameter-server clusters") and estimator.md,
in the script's own formatting (`edits`). A script still written for TensorFlow 1.x (`import tensorflow as
tf` with 1.x names) first gets TensorFlow's own `tf_upgrade_v2` renames. Then the script's blocking `check`
findings that no edit removed are listed for a person, with their lines. `--verify N` runs the original in v1 graph
mode and the upgraded script eagerly, N steps each, and compares them (`verify`).

Without `--in-place` or `-o DIR` nothing is written: the command prints the diff and the report. With them, the
files are written as `write` says: every output checked before the first write, each write atomic, the
originals kept as `FILE.orig`, and a list of what was written when anything fails. A directory stands for its
`*.py` files, and `-o DIR` keeps their paths below it.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import dataclasses
import functools
import difflib
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple, Sequence

from compat_mts import _tf_tools
from compat_mts.cli.check import checker as check_checker, names as check_names, report as check_report
from compat_mts.cli.upgrade import forked as upgrade_forked, splice as upgrade_splice, write as upgrade_write

if TYPE_CHECKING:
    from compat_mts.cli.upgrade.edits import Note


def _edits():
    """The edits module, imported when a script is upgraded: libcst loads in a second or two, which `--help` and
    the other subcommands do not wait for."""
    from compat_mts.cli.upgrade import edits as upgrade_edits

    return upgrade_edits


@dataclasses.dataclass
class Upgrade:
    """One script's upgrade: its text before and after, and the report's notes (lines of the input)."""

    path: str
    original: str
    upgraded: str
    notes: list[Note]

    @property
    def changed(self) -> bool:
        return self.upgraded != self.original

    def diff(self) -> str:
        return ''.join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.upgraded.splitlines(keepends=True),
                fromfile=f'a/{self.path}',
                tofile=f'b/{self.path}',
            )
        )

    def report(self) -> str:
        lines = [f'{self.path}: ' + ('upgraded' if self.changed else 'nothing to change')]
        for title, done in (('changed', True), ('left for you', False)):
            notes = [note for note in self.notes if note.done is done]
            if notes:
                lines.append(f'  {title}:')
                lines.extend(f'    {f"line {note.line}: " if note.line else ""}{note.text}' for note in notes)
        return '\n'.join(lines) + '\n'


def is_tf1_script(text: str) -> bool:
    """Whether `text` is written for TensorFlow 1.x: a bare `tensorflow` used with names TF2 moved or removed."""
    try:
        with check_checker.collector_paused():  # A large file's tree: see collector_paused.
            return _edits().parsed(text)[1].names.bare_tensorflow_is_v1
    except SyntaxError:
        return False


class TfUpgradeV2:
    """TensorFlow's `tf_upgrade_v2` renames of some texts (by name), in one run over a temporary tree.

    The run starts at once, in a process of its own; `result()` waits for it. In between, the caller upgrades the
    scripts that need no renames: the two take about as long, and a machine has two cores.
    """

    def __init__(self, texts: dict[str, str]):
        self._names = list(texts)
        self._scratch = tempfile.TemporaryDirectory(prefix='compat-mts-upgrade-')  # noqa: SIM115
        source, self._target = os.path.join(self._scratch.name, 'in'), os.path.join(self._scratch.name, 'out')
        os.makedirs(source)
        for index, text in enumerate(texts.values()):
            with open(os.path.join(source, f'script_{index}.py'), 'w', encoding='utf-8') as file:
                file.write(text)
        self._source, self._report = source, os.path.join(self._scratch.name, 'report.txt')
        self._process = subprocess.Popen(
            [sys.executable, '-m', 'tensorflow.tools.compatibility.tf_upgrade_v2_main']
            + ['--intree', source, '--outtree', self._target, '--reportfile', self._report],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
        )

    def result(self) -> dict[str, _tf_tools.Renamed] | None:
        """The renamed texts and the messages of its report file, or None when `tf_upgrade_v2` could not run
        (TensorFlow without it)."""
        try:
            if self._process.wait() != 0 or not os.path.isdir(self._target):
                return None
            with open(self._report, encoding='utf-8') as file:
                report = file.read().splitlines()
            renamed = {}
            for index, name in enumerate(self._names):
                with open(os.path.join(self._target, f'script_{index}.py'), encoding='utf-8') as file:
                    text = file.read()
                messages = _tf_tools.messages(report, os.path.join(self._source, f'script_{index}.py'))
                renamed[name] = _tf_tools.Renamed(text, messages)
            return renamed
        finally:
            self._scratch.cleanup()


def upgrade_source(
    text: str,
    path: str = '<string>',
    *,
    renamed: str | None = None,
    renamer_messages: Sequence[tuple[int, str]] = (),
    processes: int = 1,
) -> Upgrade:
    """The stage-1 upgrade of one script's `text`.

    Args:
      text: the script.
      path: its name, for the diff and the report.
      renamed: `text` after `tf_upgrade_v2`, for a TensorFlow 1.x script (see `upgrade_files`); the edits start
        from it.
      renamer_messages: `tf_upgrade_v2`'s errors and warnings on `text`, as (line, reason): each one the other
        notes do not cover (at its line, or naming a name a line left for a person names) is a line left for a
        person.
      processes: how many forked processes share the edits of a long script (`apply_edits`) and the check of the
        upgraded one (`check_checker.check_tree`).

    Returns:
      The `Upgrade`.

    Raises:
      SyntaxError: `text` is not valid Python.
    """
    try:
        _edits().check_syntax(text)  # The syntax check: `is_tf1_script` parsed the text already.
    except SyntaxError:
        ast.parse(text, filename=path)  # The same error, naming the file.
        raise
    notes = []
    start = text
    if renamed is not None and renamed != text:
        start = renamed
        renames = "tf_upgrade_v2's renames (tf.X -> tf.compat.v1.X where TensorFlow 2 moved X)"
        notes.append(_edits().Note(0, renames, True))
    upgraded, edit_notes = _edits().apply_edits(start, v1_script=renamed is not None, processes=processes)
    notes.extend(edit_notes)
    parsed = _edits().parsed_last(upgraded)  # The edited text's tree, made of the tree the edits started from.
    findings = (
        check_checker.check_source(upgraded, path)
        if parsed is None
        else check_checker.check_tree(
            parsed[0], parsed[1].nodes, parsed[1].names, path, **_check_parts(upgraded, processes)
        )
    )
    finding_notes = [
        _edits().Note(finding.line, f'{finding.construct}: {finding.replacement}', False)
        for finding in findings
        if finding.blocks
    ]
    notes.extend(_renamer_notes(renamer_messages, notes + finding_notes))
    if finding_notes:
        notes.extend(finding_notes)
        notes.append(_edits().Note(0, '(lines of the upgraded script; `compat-mts check` explains each)', False))
    return Upgrade(path, text, upgraded, notes)


def _check_parts(text: str, processes: int) -> dict:
    """`check_tree`'s arguments that share the check of a long `text` by `processes` forked processes (where
    this process can fork: `upgrade_forked.usable_processes`); none for a shorter text."""
    processes = min(processes, upgrade_forked.usable_processes())
    if processes <= 1 or text.count('\n') < upgrade_forked.MIN_LINES:
        return {}
    return {
        'parts': processes,
        'map_parts': lambda function, runs: upgrade_forked.forked_map(function, runs, processes),
    }


_TF_NAME = re.compile(r'\btf\.[\w.]*\w')


def _renamer_notes(messages: Sequence[tuple[int, str]], notes: list[Note]) -> list[Note]:
    """A note left for a person per reason of `tf_upgrade_v2`'s `messages` that `notes` do not cover, at the
    first line it is given for (the others named)."""
    lines = {note.line for note in notes if note.line}
    left = '\n'.join(note.text for note in notes if not note.done)
    named: dict[str, bool] = {}  # Whether `left` names a name: looked up once per name, not once per message.
    reasons: dict[str, list[int]] = {}
    for line, reason in messages:
        if line in lines:
            continue
        name = _TF_NAME.search(reason)
        names = (name[0], name[0].replace('tf.', 'tf.compat.v1.', 1)) if name else ()
        for each in names:
            if each not in named:
                named[each] = re.search(re.escape(each) + r'(?![\w.])', left) is not None
        if any(named[each] for each in names):
            continue
        reasons.setdefault(reason, []).append(line)
    result = []
    for reason, at in reasons.items():
        also = f' (also line{"s" if len(at) > 2 else ""} {", ".join(map(str, at[1:]))})' if len(at) > 1 else ''
        result.append(_edits().Note(at[0], f'tf_upgrade_v2: {reason}{also}', False))
    return result


class SourceError(ValueError):
    """Files that cannot be upgraded: `problems` holds one `(path, reason)` per file (`path:line` for a syntax
    error), all of them."""

    def __init__(self, problems: Sequence[tuple[str, str]]):
        super().__init__('\n'.join(f'{path}: {reason}' for path, reason in problems))
        self.problems = list(problems)


def read_sources(paths: Sequence[str]) -> dict[str, str]:
    """The text of each file (UTF-8), read as `compat-mts check` reads: regular files only, up to its cap.

    Raises:
      SourceError: one or more files cannot be read or are not UTF-8, each named with the reason.
    """
    texts, problems = {}, []
    for path in paths:
        try:
            data = check_checker.read_source(path)
        except check_report.CheckError as error:
            problems.append((path, error.message))
            continue
        try:
            texts[path] = data.decode('utf-8')
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b'\n') + 1
            problems.append((path, f'not UTF-8 (byte {data[error.start]:#04x} on line {line}): upgrade reads UTF-8'))
    if problems:
        raise SourceError(problems)
    return texts


def find_sources(paths: Sequence[str], exclude: str | None = None) -> list[upgrade_write.Source]:
    """The Python files of `paths`: a file as named, a directory as every `*.py` below it (in sorted order, not
    through links to directories, and not below `exclude`, the output directory), each with its tree."""
    sources = []
    excluded = os.path.realpath(exclude) if exclude else None
    for path in paths:
        if not os.path.isdir(path):
            sources.append(upgrade_write.Source(path, os.path.dirname(path) or os.curdir, os.path.basename(path)))
            continue
        for directory, subdirectories, files in os.walk(path):
            subdirectories[:] = sorted(
                name
                for name in subdirectories
                if os.path.realpath(os.path.join(directory, name)) != excluded and name != '__pycache__'
            )
            for name in sorted(files):
                if name.endswith('.py'):
                    file = os.path.join(directory, name)
                    sources.append(upgrade_write.Source(file, path, os.path.relpath(file, path)))
    return sources


def upgrade_files(paths: Sequence[str], renames: bool = True, *, processes: int | None = None) -> list[Upgrade]:
    """The stage-1 upgrade of each file; TensorFlow 1.x scripts get `tf_upgrade_v2`'s renames first.

    The renames run in this process, TensorFlow's tools loaded without TensorFlow (`compat_mts._tf_tools`); where
    they cannot be loaded, `tf_upgrade_v2` runs as a command, once for all the TensorFlow 1.x files. Many files
    are upgraded by a pool of processes, one per core: each file's upgrade is its own, so the result is the same.

    Args:
      paths: the scripts.
      renames: whether TensorFlow 1.x scripts get `tf_upgrade_v2`'s renames (else the report says to run it).
      processes: how many processes upgrade the files; None: one per core available, when there are enough
        files to repay starting them and TensorFlow is not running in this process (it is not fork-safe), and
        for fewer files, one per core for the parts of a long file (`upgrade_forked`).

    Returns:
      One `Upgrade` per path, in order.

    Raises:
      SourceError: files cannot be read (each named, all of them), or one is not valid Python.
    """
    texts = read_sources(paths)
    _edits()  # Imported once, before any process is forked.
    # The collector paused over the files upgraded here, not only over each one: a long file's tree, made while
    # it was paused, would else be walked by the next collections after each (check_checker.collector_paused).
    # The pool's workers pause it per file (`_upgrade_one_job`) and collect between files. The last tree is
    # dropped before the collector is on again: its first collection would else walk all of it, to free nothing.
    with check_checker.collector_paused():
        try:
            return _upgrade_files(texts, renames, processes)
        finally:
            _edits().forget_parsed()


def _upgrade_files(texts: dict[str, str], renames: bool, processes: int | None) -> list[Upgrade]:
    """`upgrade_files` of the texts read."""
    within = 1  # Processes for the parts of one file.
    if processes is None:
        processes = _default_processes(len(texts))
        within = upgrade_forked.usable_processes() if processes <= 1 else 1
    if processes > 1:
        # Each worker tells its own files' TensorFlow version (a parse each), not this process one after another.
        tf1 = None
        may_rename = renames and any(_may_be_tf1_script(text) for text in texts.values())
    else:
        tf1 = {path for path, text in texts.items() if is_tf1_script(text)}
        may_rename = renames and bool(tf1)
    rename = _tf_tools.renamer() if may_rename else None
    if may_rename and rename is None:
        tf1 = {path for path, text in texts.items() if is_tf1_script(text)} if tf1 is None else tf1
        if tf1:
            try:
                return _upgrade_with_the_command(texts, tf1)
            except SyntaxError as error:
                raise SourceError([(f'{error.filename}:{error.lineno}', error.msg)]) from None
    jobs = [(path, text, None if tf1 is None else path in tf1, renames) for path, text in texts.items()]
    if processes <= 1:
        results = [_upgrade_one_job(job, within) for job in jobs]
    else:
        # Fork: the workers start with libcst and the rename tables loaded. The costly TensorFlow 1.x files go first.
        order = sorted(range(len(jobs)), key=lambda index: not _may_be_tf1_script(jobs[index][1]))
        with upgrade_forked.pool(processes, collect=True) as workers:
            done = dict(zip(order, workers.map(_upgrade_one_job, [jobs[index] for index in order], chunksize=4)))
        results = [done[index] for index in range(len(jobs))]
    problems = [result for result in results if not isinstance(result, Upgrade)]
    if problems:
        raise SourceError(problems)
    return results


_FILES_PER_PROCESS = 8  # Fewer files than this per process: starting the process costs more than it saves.


def _default_processes(files: int) -> int:
    return max(1, min(upgrade_forked.usable_processes(), files // _FILES_PER_PROCESS))


def _may_be_tf1_script(text: str) -> bool:
    """False only where `is_tf1_script(text)` is: a script written for TensorFlow 1.x imports `tensorflow` (spelled
    so unless a name of other characters stands for it, which Python's normalization of names allows)."""
    return 'tensorflow' in text or not text.isascii()


def _upgrade_one_job(job: tuple[str, str, bool | None, bool], processes: int = 1) -> Upgrade | tuple[str, str]:
    """The file's `Upgrade`, or `('path:line', reason)` when it is not valid Python; `processes`: how many
    forked processes share a long file's renames and edits. The job is (path, text, whether it is a TensorFlow 1.x
    script (None: not told yet), whether to rename)."""
    path, text, tf1, renames = job
    try:
        with check_checker.collector_paused():
            if tf1 is None:
                tf1 = is_tf1_script(text)
            return _upgrade_one(path, text, tf1, renames, processes=processes)
    except SyntaxError as error:
        return f'{job[0]}:{error.lineno}', error.msg


def _upgrade_one(path: str, text: str, tf1: bool, renames: bool, *, processes: int = 1) -> Upgrade:
    """One file's upgrade: a TensorFlow 1.x script's renames first (in this process), then the edits."""
    if not tf1:
        return upgrade_source(text, path, processes=processes)
    if not renames:
        return _without_renames(upgrade_source(text, path, processes=processes))
    renamed, v1_module_notes = _edits().v1_modules(text)
    renamed = renamed_in_pieces(renamed, _tf_tools.renamer(), triggers=_tf_tools.rename_triggers(), processes=processes)
    if renamed is None:
        return _without_renames(upgrade_source(text, path, processes=processes))
    upgrade = upgrade_source(text, path, renamed=renamed.text, renamer_messages=renamed.messages, processes=processes)
    upgrade.notes[:0] = v1_module_notes
    return upgrade


_LINES_PER_PIECE = 300


def renamed_in_pieces(
    text: str,
    rename: Callable[[str], _tf_tools.Renamed | None],
    lines_per_piece: int = _LINES_PER_PIECE,
    triggers: _tf_tools.RenameTriggers | None = None,
    processes: int = 1,
) -> _tf_tools.Renamed | None:
    """`rename(text)` (`tf_upgrade_v2`'s renames), made on pieces of about `lines_per_piece` lines cut between
    top-level statements, and joined (the messages' lines those of `text`).

    `tf_upgrade_v2` renames each name where it stands, whatever else the file holds, so the pieces give the text
    the whole does (`tests/test_upgrade.py` compares them on every v1 script of the suite); but its formatting
    library looks ahead through the rest of the file for each token it places, which costs time in the square of
    the file's length: 37 s for 12,000 lines, against 7 s in pieces. With `triggers` (`_tf_tools.rename_triggers`),
    a piece is renamed statement by statement (`upgrade_edits.StatementEdits`): only the statements that hold a
    name it changes or warns about, unless an import of the piece (`triggers.imports`) changes what it does in the
    whole piece; and a statement where it would only rename names, on its text (`_plain_renames`). None when a
    piece cannot be renamed. The pieces of a text of `upgrade_forked.MIN_LINES` lines or more are shared by
    `processes` forked processes.
    """
    one_piece = len(text.splitlines()) <= lines_per_piece
    tree = None if one_piece and triggers is None else _edits().parsed_tree(text)
    pieces = _PieceRenames(text, tree, rename, triggers, lines_per_piece=None if one_piece else lines_per_piece)
    renamed_pieces = upgrade_forked.forked_map(
        pieces.renamed,
        range(len(pieces.cuts)),
        processes if len(pieces.lines) >= upgrade_forked.MIN_LINES else 1,
    )
    if any(renamed is None for renamed in renamed_pieces):
        return None
    segments = [segment for renamed in renamed_pieces for segment in renamed.segments]
    result = ''.join(segment for _, _, segment in segments)
    if tree is not None:
        _edits().record_edit(result, text, segments)  # The tree of the result is made of this one.
    return _tf_tools.Renamed(result, tuple(message for renamed in renamed_pieces for message in renamed.messages))


class _RenamedPiece(NamedTuple):
    """A piece of a text renamed (`_PieceRenames.renamed`): its text as segments (`upgrade_edits.record_edit`),
    and `tf_upgrade_v2`'s messages, at the text's lines."""

    segments: list[tuple[int, int, str]]
    messages: tuple[tuple[int, str], ...]


class _NotRenamed(Exception):
    """`tf_upgrade_v2` could not parse a statement."""


class _PieceRenames:
    """The renames of the pieces of one text (`renamed_in_pieces`), each piece's statements those of the text's
    syntax tree (`tree`; None without `triggers` and with one piece): `cuts` holds each piece's first and last
    lines (0-based, the last excluded), cut before top-level statements (`upgrade_edits.top_level_cuts`) every
    `lines_per_piece` lines (None: one piece)."""

    def __init__(
        self,
        text: str,
        tree: ast.Module | None,
        rename: Callable[[str], _tf_tools.Renamed | None],
        triggers: _tf_tools.RenameTriggers | None,
        lines_per_piece: int | None,
    ):
        self.lines = io.StringIO(text, newline='').readlines()  # Python's line ends only, as `ast` counts them.
        self._rename, self._triggers = rename, triggers
        self.cuts = [(0, len(self.lines))]
        if lines_per_piece is not None:
            self.cuts = _edits().top_level_cuts(tree.body, lines_per_piece, len(self.lines))
        self._bodies: list[list[ast.stmt]] = [[] for _ in self.cuts]
        if tree is not None:
            starts = [start for start, _ in self.cuts]
            for statement in tree.body:
                self._bodies[bisect.bisect_right(starts, _edits().first_line(statement) - 1) - 1].append(statement)
        self._messages: list[tuple[int, str]] = []  # The messages of the piece being renamed.
        self._statements = None
        if triggers is not None:
            self._statements = _edits().StatementEdits(
                text,
                functools.partial(_renamed_by, triggers),
                # Not the bound method: no cycle through `self`, so that the pieces and their tree go as soon as
                # `renamed_in_pieces` returns, not at a later collection of cyclic garbage.
                functools.partial(_renamed_statements, rename, self._messages),
                header_after_body=True,
                runs=True,
                plain=lambda source, lines_before: _plain_renames(source, triggers),
                levels=_edits().statement_levels(text) if tree is not None else None,
            )

    def renamed(self, index: int) -> _RenamedPiece | None:
        """The piece renamed, its messages at the text's lines; None when a statement cannot be renamed."""
        start, stop = self.cuts[index]
        if self._statements is None or self._imports_trigger(self._bodies[index]):
            renamed = self._rename(''.join(self.lines[start:stop]))
            if renamed is None:
                return None
            messages = tuple((start + line, reason) for line, reason in renamed.messages)
            return _RenamedPiece([(start, stop, renamed.text)], messages)
        self._messages.clear()
        try:
            segments = self._statements.lines_segments(self._bodies[index], start, stop)
        except _NotRenamed:
            return None
        return _RenamedPiece(segments, tuple(self._messages))

    def _imports_trigger(self, body: list[ast.stmt]) -> bool:
        """Whether an import among the statements makes `tf_upgrade_v2` change the whole piece (`triggers.imports`)."""
        imports = self._triggers.imports
        for statement in body:
            if 'import' not in ''.join(self.lines[_edits().first_line(statement) - 1 : statement.end_lineno]):
                continue  # No import in its text: no walk of its nodes.
            for node in check_names.walk(statement):
                if isinstance(node, ast.Import) and any((alias.name, alias.asname) in imports for alias in node.names):
                    return True
                if isinstance(node, ast.ImportFrom) and any(
                    (f'{node.module}.{alias.name}', alias.asname) in imports for alias in node.names
                ):
                    return True
        return False


def _renamed_statements(
    rename: Callable[[str], _tf_tools.Renamed | None],
    messages: list[tuple[int, str]],
    source: str,
    lines_before: int,
) -> str:
    """`rename(source)`'s text (statements, the text's after its first `lines_before` lines), its messages added
    to `messages` at the text's lines."""
    renamed = rename(source)
    if renamed is None:
        raise _NotRenamed
    messages.extend((lines_before + line, reason) for line, reason in renamed.messages)
    return renamed.text


def _renamed_by(triggers: _tf_tools.RenameTriggers, nodes: Iterable[ast.AST]) -> bool:
    """Whether `tf_upgrade_v2` may change or warn about a statement of these `ast` nodes (every node of it)."""
    imports, call, attribute = (ast.Import, ast.ImportFrom), ast.Call, ast.Attribute
    for node in nodes:
        kind = node.__class__  # The classes compared, not `isinstance`: a statement's nodes are many.
        if kind in imports:
            return True
        if kind is call:
            if triggers.every_call:
                return True
            full = _tf_tools.dotted_name(node.func)
            if full is not None:
                name = full.rpartition('.')[2]
            else:
                name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if full in triggers.names or name in triggers.methods:
                return True
        elif kind is attribute and _tf_tools.dotted_name(node) in triggers.names:
            return True
    return False


# Syntax newer than `tf_upgrade_v2`'s formatting library (pasta), which may not parse it: such a statement goes to
# `tf_upgrade_v2` itself, which says whether it can rename it.
_NEWER_SYNTAX = tuple(
    getattr(ast, name) for name in ('NamedExpr', 'Match', 'TryStar', 'TypeAlias') if hasattr(ast, name)
)


def _plain_renames(source: str, triggers: _tf_tools.RenameTriggers) -> str | None:
    """`tf_upgrade_v2`'s text of `source` (statements) when all it does there is rename names, with no message
    (`_tf_tools.plain_renames`): the names replaced in the text (`splice`); else None."""
    nodes = upgrade_splice.statement_nodes(source)
    if nodes is None or any(
        isinstance(node, _NEWER_SYNTAX) or (isinstance(node, ast.arguments) and node.posonlyargs) for node in nodes
    ):
        return None
    renames = _tf_tools.plain_renames(nodes[0], triggers)
    return None if renames is None else upgrade_splice.spliced(source, renames, nodes)


def _without_renames(upgrade: Upgrade) -> Upgrade:
    command = f'tf_upgrade_v2 --infile {upgrade.path} --inplace'
    upgrade.notes.insert(0, _edits().Note(0, f'TensorFlow 1.x: run `{command}` first', False))
    return upgrade


def _upgrade_with_the_command(texts: dict[str, str], tf1: set[str]) -> list[Upgrade]:
    """`upgrade_files` with `tf_upgrade_v2` run as a command over the TensorFlow 1.x files, beside the edits of
    the others: where TensorFlow's tools cannot be loaded in this process."""
    v1_module_notes, renaming = {}, {}
    for path in tf1:
        renaming[path], v1_module_notes[path] = _edits().v1_modules(texts[path])
    renames_run = TfUpgradeV2(renaming)
    upgrades = {path: upgrade_source(text, path) for path, text in texts.items() if path not in tf1}
    renamed = renames_run.result()
    for path in tf1:
        if renamed:
            upgrade = upgrade_source(
                texts[path], path, renamed=renamed[path].text, renamer_messages=renamed[path].messages
            )
            upgrade.notes[:0] = v1_module_notes[path]
        else:
            upgrade = _without_renames(upgrade_source(texts[path], path))
        upgrades[path] = upgrade
    return [upgrades[path] for path in texts]


def add_upgrade_command(subcommands: argparse._SubParsersAction) -> None:
    """Adds `compat-mts upgrade` to the command line's subcommands."""
    parser = subcommands.add_parser(
        'upgrade',
        help="make a v1 script's stage-1 edits (prints the diff); --verify N compares it with v1 graph mode",
        description=(
            'Make the stage-1 edits of migration_guide/legacy.md to each FILE, keeping its formatting and '
            'comments, and print a unified diff and a report of what changed and what is left to do. Nothing is '
            'written without --in-place or -o DIR. With --verify N, run the original in v1 graph mode and the '
            'upgraded program (a directory: all its files upgraded; --main names the script to run), N steps '
            'each in fresh processes, and compare their losses, checkpoints and summaries.'
        ),
    )
    parser.add_argument(
        'files', nargs='+', metavar='FILE', help='Python scripts to upgrade (a directory: every *.py file below it)'
    )
    parser.add_argument('--stage', type=int, choices=(1,), default=1, help='the stage to upgrade to (only 1)')
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        '--in-place', action='store_true', help='rewrite each FILE that changes, keeping its original as FILE.orig'
    )
    where.add_argument(
        '-o',
        '--output-dir',
        metavar='DIR',
        help="write the upgraded files to DIR: a directory's files at their paths below it, a FILE by base name",
    )
    parser.add_argument(
        '--overwrite', action='store_true', help='with -o: replace files in DIR that hold other text (else refused)'
    )
    parser.add_argument(
        '--no-backup', action='store_true', help='with --in-place: keep no FILE.orig (for a tree under version control)'
    )
    parser.add_argument('--diff', action='store_true', help='print the diff also when writing files')
    parser.add_argument('--no-renames', action='store_true', help="do not run tf_upgrade_v2's renames first")
    parser.add_argument(
        '--verify',
        type=_positive_int,
        metavar='N',
        help='run the original (v1 graph mode) and the upgraded script N steps each and compare them',
    )
    parser.add_argument(
        '--args',
        default='',
        metavar='ARGS',
        help='with --verify: the script\'s arguments, split as a shell would; "{dir}" stands for a fresh '
        'directory per run (e.g. --args "{dir}/ckpt 100")',
    )
    parser.add_argument(
        '--v1-python',
        default=sys.executable,
        metavar='PYTHON',
        help='with --verify: the interpreter that runs the original (one with tf.estimator, TensorFlow <= 2.15, '
        'for an Estimator script; default: this one)',
    )
    parser.add_argument(
        '--main',
        metavar='FILE',
        help='with --verify of a directory or of several files: the script to run (one of them)',
    )
    parser.add_argument(
        '--report-dir',
        metavar='DIR',
        help='with --verify: where the runs, the loss of every step (losses.txt) and loss.png go',
    )
    parser.set_defaults(run=run_upgrade)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f'must be a positive integer, got {text!r}')
    return value


_SIGNAL_STATUS = 128  # A command stopped by signal N exits with 128 + N, as a shell reports it.


def _print_failure(error: upgrade_write.WriteFailed) -> None:
    lines = [f'compat-mts upgrade: stopped: {error.reason}']
    lines.append(f'  written ({len(error.written)}, each whole):' + ''.join(f'\n    {path}' for path in error.written))
    lines.append(
        f'  not written ({len(error.not_written)}, each as it was):'
        + ''.join(f'\n    {path}' for path in error.not_written)
    )
    if error.backups:
        lines.append(f'  originals kept: {", ".join(error.backups)}')
    print('\n'.join(lines), file=sys.stderr)


def _write_all(upgrades: list[Upgrade], sources: list[upgrade_write.Source], args: argparse.Namespace) -> int | None:
    """Writes the upgrades as asked; prints each file's report. None when done, else the exit status."""
    outputs: dict[str, upgrade_write.Output] = {}
    backups: dict[str, str] = {}
    if args.in_place or args.output_dir:
        try:
            planned = upgrade_write.plan(
                [(source, upgrade.upgraded, upgrade.changed) for source, upgrade in zip(sources, upgrades)],
                in_place=args.in_place,
                output_dir=args.output_dir,
                overwrite=args.overwrite,
            )
        except upgrade_write.WriteRefused as error:
            problems = ''.join(f'\n  {path}: {reason}' for path, reason in error.problems)
            print(f'compat-mts upgrade: nothing written:{problems}', file=sys.stderr)
            return 2
        outputs = {output.source: output for output in planned}
        try:
            made = upgrade_write.write(planned, backup=args.in_place and not args.no_backup)
        except upgrade_write.WriteFailed as error:
            _print_failure(error)
            cause = error.__cause__
            return _SIGNAL_STATUS + cause.signal_number if isinstance(cause, upgrade_write.Interrupted) else 2
        backups = dict(zip((output.shown for output in planned if output.needed and output.replaces), made))
    try:
        for upgrade in upgrades:
            output = outputs.get(upgrade.path)
            if output is None or args.diff:
                sys.stdout.write(upgrade.diff())
            sys.stdout.write(upgrade.report())
            if output is not None:
                kept = f' (original kept as {backups[output.shown]})' if output.shown in backups else ''
                sys.stdout.write(f'  written to {output.shown}{kept}\n')
    except KeyboardInterrupt:
        done = f'all {len(outputs)} files were written' if outputs else 'nothing was to be written'
        print(f'compat-mts upgrade: interrupted while reporting; {done}', file=sys.stderr)
        return _SIGNAL_STATUS + signal.SIGINT
    return None


def run_upgrade(args: argparse.Namespace) -> int:
    """`compat-mts upgrade`: 0 when done (or nothing to do), 2 on a bad file or argument or a refused or failed
    write (nothing written, or a list of what was), 128 + N when signal N stopped the writes.

    Raises:
      Nothing: every error is printed with the file it concerns, and the exit status says it.
    """
    if args.overwrite and not args.output_dir:
        print(
            'compat-mts upgrade: --overwrite goes with -o DIR (--in-place replaces its files anyway)', file=sys.stderr
        )
        return 2
    if args.no_backup and not args.in_place:
        print('compat-mts upgrade: --no-backup goes with --in-place (only it replaces files)', file=sys.stderr)
        return 2
    sources = find_sources(args.files, exclude=args.output_dir)
    if not sources:
        print(f'compat-mts upgrade: no *.py file in {", ".join(args.files)}', file=sys.stderr)
        return 2
    if args.main and not args.verify:
        print('compat-mts upgrade: --main goes with --verify N (it names the script --verify runs)', file=sys.stderr)
        return 2
    if args.verify:
        main, problem = _verify_main(sources, args.main)
        if problem:
            print(f'compat-mts upgrade: {problem}', file=sys.stderr)
            return 2
    try:
        upgrades = upgrade_files([source.path for source in sources], renames=not args.no_renames)
    except KeyboardInterrupt:
        print('compat-mts upgrade: interrupted; nothing written', file=sys.stderr)
        return _SIGNAL_STATUS + signal.SIGINT
    except SourceError as error:
        problems = ''.join(f'\n  {path}: {reason}' for path, reason in error.problems)
        print(
            f'compat-mts upgrade: nothing written, {len(error.problems)} file(s) not upgraded:{problems}',
            file=sys.stderr,
        )
        return 2
    status = _write_all(upgrades, sources, args)
    if status is not None:
        return status
    if not args.verify:
        return 0
    from compat_mts.cli.upgrade import verify as upgrade_verify  # Starts TensorFlow processes: only when asked.

    upgrade = upgrades[sources.index(main)]
    tree = None
    if len(sources) > 1 or os.path.isdir(args.files[0]):
        texts = {source.relative: result.upgraded for source, result in zip(sources, upgrades)}
        tree = upgrade_verify.Tree(main.tree, texts)
    return upgrade_verify.verify_command(upgrade, args, tf1=is_tf1_script(upgrade.original), tree=tree)


def _verify_main(
    sources: list[upgrade_write.Source], main: str | None
) -> tuple[upgrade_write.Source | None, str | None]:
    """The source `--verify` runs (`--main`, or the one file), or the problem with `--main`."""
    trees = {os.path.realpath(source.tree) for source in sources}
    if len(trees) > 1:
        return None, f'--verify takes one program: one directory, or files of one directory (got {len(trees)})'
    if main is None:
        if len(sources) == 1:
            return sources[0], None
        return None, '--verify of several files needs --main FILE, the script to run: one of ' + _listed(sources)
    for source in sources:
        if os.path.realpath(source.path) == os.path.realpath(main):
            return source, None
    return None, f'--main {main}: not one of the files upgraded; one of ' + _listed(sources)


def _listed(sources: list[upgrade_write.Source], most: int = 10) -> str:
    names = [source.path for source in sources[:most]]
    return ', '.join(names) + (f' (and {len(sources) - most} more)' if len(sources) > most else '')
