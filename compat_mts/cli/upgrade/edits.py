"""The stage-1 edits of `compat-mts upgrade`, made on a script's concrete syntax tree (libcst).

The edits are the ones migration_guide/legacy.md, distributed.md and estimator.md list, in the script's own
spelling and formatting: comments, blank lines and quotes stay as they were. Which name is what comes from
`compat-mts check`'s catalogue and name resolution (`check.catalogue`, `check.names`), so the two commands agree
on what a construct is. Each edit is recorded with the line it was made at; what a person has to do is recorded
the same way, as a note. A statement whose only edits replace dotted names is edited on its text instead
(`splice`, `_StageOneEdits.plain_edit`), with the text and the notes libcst's edit gives.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import io
import itertools
import os
import re
import tokenize
from typing import Callable, Iterable, NamedTuple

import libcst as cst
from libcst import helpers
from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

from compat_mts.core import program as program_lib
from compat_mts.cli.check import catalogue
from compat_mts.cli.check import checker as check_checker
from compat_mts.cli.check import names as check_names
from compat_mts.cli.upgrade import forked as upgrade_forked, splice as upgrade_splice

# `tf.compat.v1.train.<X>` names that become `compat_mts.<X>` at stage 1: the catalogue's, where its
# replacement is the same name in compat_mts.
SESSION_AND_HOOK_NAMES = frozenset(
    key[len('train.') :]
    for key, rule in catalogue.V1_RULES.items()
    if key.startswith('train.') and rule.stage == 1 and rule.replacement == f'compat_mts.{key[len("train.") :]}'
)
_SESSIONS = frozenset({'MonitoredTrainingSession', 'MonitoredSession', 'SingularMonitoredSession'})
_EAGER_SWITCHES = frozenset({'disable_eager_execution', 'disable_v2_behavior'})
_SLIM_TRAIN = frozenset({'tf_slim.learning.train', 'tensorflow.contrib.slim.learning.train'})
_ITERATOR_METHODS = frozenset({'make_one_shot_iterator', 'make_initializable_iterator'})
_LEGACY_KERAS_LINE = (
    "os.environ['TF_USE_LEGACY_KERAS'] = '1'  # Before TensorFlow is imported: tf.layers are tf-keras's (Keras 2)."
)
# TensorFlow names that build nothing in a graph: a statement made of these alone stays outside the
# `with tf.Graph().as_default():` block that the graph code goes into.
_NOT_GRAPH = (
    'logging',
    'app',
    'flags',
    'gfile',
    'io.gfile',
    'train.ClusterSpec',
    'train.Server',
    'distribute.Server',
    'distribute.cluster_resolver',
    'disable_',
    'enable_',
    'config',
)
_V1_GRAPH_NAMES = re.compile(
    r'\b(placeholder|get_variable|variable_scope|layers\.|Optimizer|get_or_create_global_step|'
    r'make_one_shot_iterator|make_initializable_iterator|summary\.merge_all)\b'
)


_HOROVOD_MODULE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'legacy', 'horovod.py'
)


@functools.cache
def horovod_names() -> frozenset:
    """What compat_mts.legacy.horovod provides of horovod.tensorflow: its `__all__`, read from its source (importing
    it would start TensorFlow, which an upgrade does not need)."""
    with open(_HOROVOD_MODULE, encoding='utf-8') as source:
        tree = ast.parse(source.read())
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == '__all__' for target in statement.targets
        ):
            return frozenset(ast.literal_eval(statement.value))
    raise RuntimeError(f'{_HOROVOD_MODULE} has no __all__')


program_lib.PROGRAM.register(
    'upgrade_edits.horovod_names',
    "compat_mts.legacy.horovod's names, read once from its source (the library's, not a program's)",
    size=lambda: horovod_names.cache_info().currsize,
    kind='process',
)


HOROVOD_RUN = (
    'Horovod on MultiWorkerMirroredStrategy: start one process per worker with TF_CONFIG naming them all, in '
    'place of horovodrun; without TF_CONFIG the program is one worker (migration_guide/horovod.md)'
)


@dataclasses.dataclass(frozen=True)
class Note:
    """One line of the report: an edit made (`done`) or a change left for a person, at a line of the input."""

    line: int
    text: str
    done: bool


def _relative(path: str) -> str | None:
    """`train.X` for `tensorflow.compat.v1.train.X` or `tensorflow.train.X`; None outside TensorFlow."""
    for prefix in (catalogue.V1_ROOT, 'tensorflow.'):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return None


def _call_name(call: cst.Call) -> str | None:
    return helpers.get_full_name_for_node(call.func)


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


class _EveryNode:
    """Every node of a module, from its top-level statements' nodes by depth (`_Tree.levels`), module first: the
    passes that look for a kind of node iterate these, without the one list of them in `ast.walk`'s order that
    only the check needs (`_Resolver.nodes`)."""

    def __init__(self, module: ast.Module, levels: list[list[list[ast.AST]]]):
        self._module, self._levels = module, levels

    def __iter__(self):
        levels = (level for statement_levels in self._levels for level in statement_levels)
        return itertools.chain((self._module,), itertools.chain.from_iterable(levels))


class _Resolver:
    """What a dotted name of the script stands for, through its imports (`check_names.Names`)."""

    def __init__(self, tree: ast.Module, levels: list[list[list[ast.AST]]] | None = None):
        # `levels`: the nodes by depth of each top-level statement (`_Tree.levels`); else the tree is walked.
        self._tree, self._levels = tree, levels
        self._nodes = check_names.walk(tree) if levels is None else None
        self.every_node: Iterable[ast.AST] = self._nodes if levels is None else _EveryNode(tree, levels)
        self.names = check_names.Names(tree, self.every_node)
        horovod = {name for name, path in self.names.aliases.items() if path == 'horovod.tensorflow'}
        # The names of horovod.tensorflow the script uses (`hvd.init`: `init`).
        self.horovod_uses = (
            {
                node.attr
                for node in self.every_node
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in horovod
            }
            if horovod
            else set()
        )

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the tree, in `ast.walk`'s order (`check_names.walk`), listed when first asked for."""
        if self._nodes is None:
            self._nodes = check_names.joined_levels(self._tree, self._levels)
        return self._nodes

    def path(self, node: cst.CSTNode) -> str | None:
        return self.dotted_path(helpers.get_full_name_for_node(node))

    def syntax_path(self, node: ast.AST) -> str | None:
        """`path` of the `ast` node that stands where a libcst node stands (`_syntax_name`)."""
        return self.dotted_path(_syntax_name(node))

    def dotted_path(self, dotted: str | None) -> str | None:
        """What the dotted name (`tf.train.Saver`) stands for, through the script's imports."""
        if not dotted:
            return None
        head, _, rest = dotted.partition('.')
        bound = self.names.aliases.get(head)
        if bound is None:
            return None
        return f'{bound}.{rest}' if rest else bound

    def alias_of(self, *modules: str) -> str | None:
        for name, path in self.names.aliases.items():
            if path in modules:
                return name
        return None


Segment = tuple[int, int, str]
"""A part of a stage's output: the lines `start` to `stop` of its input (0-based, `stop` excluded), and their text
in the output (the same text where the stage kept them)."""


class _Tree:
    """A script's syntax tree, each top-level statement's nodes by depth (`check_names.walk_levels`), and its
    `_Resolver`, made when first asked for."""

    def __init__(self, tree: ast.Module, levels: list[list[list[ast.AST]]]):
        self.tree = tree
        self.levels = levels
        self._resolver: _Resolver | None = None

    @property
    def resolver(self) -> _Resolver:
        if self._resolver is None:
            self._resolver = _Resolver(self.tree, self.levels)
        return self._resolver

    @classmethod
    def parse(cls, text: str) -> _Tree:
        tree = ast.parse(text)
        return cls(tree, [check_names.walk_levels(statement) for statement in tree.body])


class _Edited:
    """A text that a stage made of the text of `base` (a `_Tree`, with its lines) as `segments` say: its tree is
    made from `base`'s when first asked for (`_derived_tree`)."""

    def __init__(self, base: _Tree, base_text: str, segments: list[Segment]):
        self.base, self.base_text, self.segments = base, base_text, segments


# The last text parsed (or made by a stage from the one before, `record_edit`), its syntax tree and resolver: the
# stages of one upgrade (`is_tf1_script`, `v1_modules`, the renames, `apply_edits`, `wrap_top_level_graphs`,
# the check of the result) each ask for the same text's, or for the text the stage before made, whose tree is
# made of the statements it kept and only the changed ones parsed.
_parsed_last: dict[str, _Tree | _Edited] = program_lib.PROGRAM.table(
    'upgrade_edits.parsed_last', {}, "the last script text's syntax tree and name resolver", kind='process'
)
# The last few texts found valid Python, so that a syntax check of one of them (`check_syntax`) parses nothing.
_valid_texts: dict[str, None] = program_lib.PROGRAM.table(
    'upgrade_edits.valid_texts', {}, 'the last script texts found to be valid Python', kind='process'
)
_VALID_TEXTS_KEPT = 4


def _tree(text: str) -> _Tree:
    found = _parsed_last.get(text)
    if found.__class__ is _Tree:
        return found
    tree = _derived_tree(found, text) if found is not None else None
    if tree is None:
        tree = _Tree.parse(text)
    _parsed_last.clear()
    _parsed_last[text] = tree
    if len(_valid_texts) >= _VALID_TEXTS_KEPT:
        del _valid_texts[next(iter(_valid_texts))]
    _valid_texts[text] = None
    return tree


def parsed(text: str) -> tuple[ast.Module, _Resolver]:
    """`ast.parse(text)` and its `_Resolver`, made once for the same text (the last one asked for is kept); for a
    text a stage made from the last one (`record_edit`), made from that one's tree.

    The tree is shared: its callers read it and never change it.

    Raises:
      SyntaxError: `text` is not valid Python.
    """
    tree = _tree(text)
    return tree.tree, tree.resolver


def statement_levels(text: str) -> dict[int, list[list[ast.AST]]]:
    """The nodes by depth (`check_names.walk_levels`) of each top-level statement of `parsed(text)`'s tree, by the
    statement's id (`StatementEdits`' `levels`)."""
    tree = _tree(text)
    return {id(statement): levels for statement, levels in zip(tree.tree.body, tree.levels)}


def parsed_tree(text: str) -> ast.Module:
    """`parsed(text)`'s tree, without its resolver."""
    return _tree(text).tree


def parsed_last(text: str) -> tuple[ast.Module, _Resolver] | None:
    """`parsed(text)` when `text` is the last text parsed or made from it (`record_edit`), else None (the whole
    text is not parsed); None too when it is not valid Python."""
    if text not in _parsed_last:
        return None
    try:
        return parsed(text)
    except SyntaxError:
        return None


def check_syntax(text: str) -> None:
    """Raises SyntaxError when `text` is not valid Python; one of the last texts parsed is not parsed again."""
    if text not in _valid_texts:
        parsed(text)


def record_edit(text: str, base_text: str, segments: list[Segment]) -> None:
    """Records that a stage made `text` of `base_text`, the last text parsed, as `segments` say (their texts
    joined are `text`), so that the tree of `text` is made from that of `base_text` (`parsed`).

    The tree of `base_text` is given up: the statements kept move to the new tree (their lines renumbered).
    Nothing is recorded when `base_text` is not the last text parsed.
    """
    base = _parsed_last.get(base_text)
    if text == base_text or base.__class__ is not _Tree:
        return
    _parsed_last.clear()
    _parsed_last[text] = _Edited(base, base_text, segments)


# The `ast` node classes without line numbers (contexts, operators, `arguments`, ...).
_UNPOSITIONED = frozenset(
    kind
    for kind in vars(ast).values()
    if isinstance(kind, type) and issubclass(kind, ast.AST) and 'end_lineno' not in kind._attributes
)


def _renumbered(levels: list[list[ast.AST]], lines: int) -> None:
    """Moves every node of a statement (by depth, `levels`) `lines` lines down."""
    unpositioned = _UNPOSITIONED
    for level in levels:
        for node in level:
            if node.__class__ not in unpositioned:
                node.lineno += lines
                node.end_lineno += lines


def _code(lines: list[str]) -> bool:
    """Whether the lines hold more than blank space and comments."""
    return any(line.strip() and not line.lstrip().startswith('#') for line in lines)


def _derived_tree(edited: _Edited, text: str) -> _Tree | None:
    """The `_Tree` of `text`, made of `edited.base`'s: the top-level statements whose lines a segment kept, moved
    to their new lines, and the text between them parsed (at its lines). Each such statement stands at the start of
    a line and is whole, so its nodes are those a parse of `text` gives. None where this cannot be made (a
    carriage return, which `ast` counts as a line end, or text between kept statements that does not parse on
    its own): `text` is then parsed whole."""
    if '\r' in text or '\r' in edited.base_text:
        return None
    base_lines = io.StringIO(edited.base_text, newline='').readlines()
    statements, base_levels = edited.base.tree.body, edited.base.levels
    kept = []  # (index of a statement of the base, lines it moves)
    index, new_start = 0, 0
    for number, (start, stop, segment) in enumerate(edited.segments):
        if segment == ''.join(base_lines[start:stop]):
            moved = new_start - start
            while index < len(statements) and first_line(statements[index]) - 1 < start:
                index += 1
            while index < len(statements) and statements[index].end_lineno <= stop:
                kept.append((index, moved))
                index += 1
        new_start += segment.count('\n')
        if segment and not segment.endswith('\n') and number < len(edited.segments) - 1:
            return None
    lines = io.StringIO(text, newline='').readlines()
    parts: list[tuple[list[ast.stmt], list[list[list[ast.AST]]]] | int] = []  # parsed statements, or a kept one
    cursor = 0
    for index, moved in [*kept, (None, 0)]:
        first = len(lines) if index is None else first_line(statements[index]) - 1 + moved
        if _code(lines[cursor:first]):
            try:
                tree = ast.parse(''.join(lines[cursor:first]))
            except (SyntaxError, ValueError):
                return None
            levels = [check_names.walk_levels(statement) for statement in tree.body]
            if cursor:
                for statement_levels in levels:
                    _renumbered(statement_levels, cursor)
            parts.append((tree.body, levels))
        if index is not None:
            parts.append(index)
            cursor = statements[index].end_lineno + moved
    body, levels = [], []
    moves = dict(kept)
    for part in parts:
        if part.__class__ is int:
            if moves[part]:
                _renumbered(base_levels[part], moves[part])
            body.append(statements[part])
            levels.append(base_levels[part])
        else:
            body.extend(part[0])
            levels.extend(part[1])
    return _Tree(ast.Module(body=body, type_ignores=[]), levels)


def forget_parsed() -> None:
    """Drops the last text's tree and resolver (`parsed`): a long file's take a gigabyte, which an upgrade done
    needs no more; and the texts found valid."""
    _parsed_last.clear()
    _valid_texts.clear()


def _syntax_name(node: ast.AST) -> str | None:
    """`helpers.get_full_name_for_node` of the libcst node that stands where the `ast` node does."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f'{_syntax_name(node.value)}.{node.attr}'
    if isinstance(node, ast.Call):
        return _syntax_name(node.func)
    if isinstance(node, ast.Subscript):
        return _syntax_name(node.value)
    return None


class _Positions:
    """Where a module's nodes start, from libcst's byte spans.

    libcst's line-and-column positions cost a third of an upgrade's time, for the few nodes the report names;
    its byte spans cost a third less, and a node's line is then a search in the offsets of the lines.
    `lines_before`: the lines of the script before the module's text (a statement parsed on its own).
    """

    def __init__(self, module: cst.Module, text: str, lines_before: int = 0):
        self._source = text.encode(module.encoding)
        self._encoding = module.encoding
        self._lines_before = lines_before
        self._line_starts = [0] + [match.end() for match in re.finditer(b'\n', self._source)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset) + self._lines_before

    def _line_start(self, offset: int) -> int:
        return self._line_starts[bisect.bisect_right(self._line_starts, offset) - 1]

    def byte_column(self, offset: int) -> int:
        """The column as `ast` counts it: in bytes of the line's UTF-8."""
        return offset - self._line_start(offset)

    def column(self, offset: int) -> int:
        """The column in characters."""
        return len(self._source[self._line_start(offset) : offset].decode(self._encoding))


@dataclasses.dataclass(frozen=True)
class _NameEdit:
    """What the stage-1 edits make of one dotted name: its new text (None: kept), the note (text, done), and
    whether it uses compat_mts, is a v1 layer, builds a graph."""

    new: str | None = None
    note: tuple[str, bool] | None = None
    uses_mts: bool = False
    legacy: bool = False
    graph: bool = False


class _Recorded(NamedTuple):
    """What `_StageOneEdits` recorded over some statements: their notes, and what the edits found there."""

    notes: list[Note]
    uses_mts: bool
    uses_legacy_layers: bool
    graph_program: bool
    kept_v1_shapes: bool


class _StageOneEdits(cst.CSTTransformer):
    """The name edits, the eager-switch removal, the Estimator and ps-cluster edits, in one walk."""

    METADATA_DEPENDENCIES = (ByteSpanPositionProvider,)

    def __init__(
        self,
        resolver: _Resolver,
        mts: str,
        keep_v1_shapes: bool,
        ps_program: bool,
        serving_placeholders: frozenset[tuple[int, int]] = frozenset(),
        v1_script: bool = False,
    ):
        super().__init__()
        self._v1_script = v1_script
        self._positions: _Positions | None = None
        self._serving_placeholders = serving_placeholders
        self.resolver = self._resolver = resolver
        self.mts = mts
        self.keep_v1_shapes = keep_v1_shapes
        self.ps_program = ps_program
        self.notes: list[Note] = []
        self.uses_mts = False
        self.uses_legacy_layers = False
        self.graph_program = False
        self.kept_v1_shapes = False

    def edit(self, module: cst.Module, text: str, lines_before: int = 0) -> cst.Module:
        """`module` (of `text`, the script's lines after the first `lines_before`) after the edits; the notes and
        what the edits found (`uses_mts`, ...) added to this object's."""
        self._positions = _Positions(module, text, lines_before)
        return MetadataWrapper(module, unsafe_skip_copy=True).visit(self)  # The module is ours: no copy.

    def recorded_since(self, notes_before: int) -> _Recorded:
        """What the edits recorded since `notes_before` notes were: the later notes, and what they found."""
        return _Recorded(
            self.notes[notes_before:], self.uses_mts, self.uses_legacy_layers, self.graph_program, self.kept_v1_shapes
        )

    def add_recorded(self, recorded: _Recorded) -> None:
        """Adds what the edits of other statements recorded (in another process: `recorded_since`)."""
        self.notes.extend(recorded.notes)
        self.uses_mts = self.uses_mts or recorded.uses_mts
        self.uses_legacy_layers = self.uses_legacy_layers or recorded.uses_legacy_layers
        self.graph_program = self.graph_program or recorded.graph_program
        self.kept_v1_shapes = self.kept_v1_shapes or recorded.kept_v1_shapes

    def needs_edits(self, nodes: Iterable[ast.AST]) -> bool:
        """Whether an edit or a note may come of the `ast` nodes of a statement (every node of it, from
        `ast.walk`). When none can, what the edits would have found in them is recorded as `edit` records it,
        so the statement's text can be kept without its libcst pass."""
        graph = legacy = False
        attribute, name, call, assign = ast.Attribute, ast.Name, ast.Call, ast.Assign
        imports = (ast.Import, ast.ImportFrom)
        for node in nodes:
            kind = node.__class__  # The classes compared, not `isinstance`: a statement's nodes are many.
            if kind is attribute:
                dotted = _syntax_name(node)
                if node.attr == 'export_savedmodel' or (
                    node.attr in _ITERATOR_METHODS and self._resolver.dotted_path(dotted) is None
                ):
                    return True
            elif kind is name:
                if self._may_edit(self._resolver.dotted_path(node.id)):
                    return True
                continue
            elif kind in imports:
                if self._import_edited(node):
                    return True
                for module in [node.module or ''] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]:
                    # libcst's nodes of a dotted module name: `a.b.c` is the attribute `a.b.c` of `a.b`.
                    parts = module.split('.')
                    for end in range(len(parts), 1, -1):
                        legacy_here, graph_here = self._name_flags(self._resolver.dotted_path('.'.join(parts[:end])))
                        legacy, graph = legacy or legacy_here, graph or graph_here
                continue
            elif kind is call and (node.lineno, node.col_offset) in self._serving_placeholders:
                return True
            elif self.ps_program and kind is assign and _assigns_server(node):
                return True
            else:
                continue
            path = self._resolver.dotted_path(dotted)
            if self._may_edit(path):
                return True
            legacy_here, graph_here = self._name_flags(path)
            legacy, graph = legacy or legacy_here, graph or graph_here
        self.uses_legacy_layers = self.uses_legacy_layers or legacy
        self.graph_program = self.graph_program or graph
        return False

    def _may_edit(self, path: str | None) -> bool:
        """Whether a name of this path may be edited or noted (by `leave_Attribute`, `_edit_call` or
        `leave_SimpleStatementLine`)."""
        if not path:
            return False
        if path in _SLIM_TRAIN:
            return True
        relative = _relative(path)
        if relative is None:
            return False
        module, _, name = relative.rpartition('.')
        return (
            (module == 'train' and name in SESSION_AND_HOOK_NAMES)
            or (relative.startswith('estimator.') and _estimator_rule(relative) is not None)
            or (module == 'estimator' and name in catalogue.PREMADE_PROVIDED)
            or module == 'contrib.tpu'
            or relative in ('device', *_EAGER_SWITCHES)
        )

    @staticmethod
    def _import_edited(node: ast.Import | ast.ImportFrom) -> bool:
        if isinstance(node, ast.Import):
            return any(alias.name == 'horovod.tensorflow' for alias in node.names)
        return not node.level and node.module in ('tensorflow.compat.v1.train', 'tensorflow.train')

    def _name_flags(self, path: str | None) -> tuple[bool, bool]:
        """(a v1 layer, a graph-building name) for a name of this path, as `leave_Attribute` finds them."""
        relative = _relative(path) if path else None
        if relative is None:
            return False, False
        legacy = relative.startswith(('layers.', 'nn.rnn_cell.')) and (
            path.startswith(catalogue.V1_ROOT) or self._resolver.names.bare_tensorflow_is_v1
        )
        return legacy, bool(_V1_GRAPH_NAMES.search(relative)) or relative in _EAGER_SWITCHES

    def _offset(self, node: cst.CSTNode) -> int:
        return self.get_metadata(ByteSpanPositionProvider, node).start

    def _line(self, node: cst.CSTNode) -> int:
        return self._positions.line(self._offset(node))

    def _done(self, node: cst.CSTNode, text: str) -> None:
        self.notes.append(Note(self._line(node), text, True))

    def _left(self, node: cst.CSTNode, text: str) -> None:
        self.notes.append(Note(self._line(node), text, False))

    # Names: sessions and hooks, Estimators, v1 layers.
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        edit = self._name_edit(self._resolver.path(original), lambda: helpers.get_full_name_for_node(original))
        self._record(edit)
        if edit.note is not None:
            self.notes.append(Note(self._line(original), *edit.note))
        return updated if edit.new is None else cst.parse_expression(edit.new)

    def _name_edit(self, path: str | None, spelled: Callable[[], str]) -> _NameEdit:
        """What the edits make of a dotted name that stands for `path`, spelled `spelled()` in the script."""
        if path in _SLIM_TRAIN:
            new = f'{self.mts}.slim_learning.train'
            return _NameEdit(new, (f'{spelled()} -> {new}', True), uses_mts=True)
        relative = _relative(path) if path else None
        if relative is None:
            return _NameEdit()
        legacy, graph = self._name_flags(path)
        module, _, name = relative.rpartition('.')
        new = None
        if module == 'train' and name in SESSION_AND_HOOK_NAMES:
            new = f'{self.mts}.{name}'
        elif module == 'contrib.tpu' and name in catalogue.TPU_NAMES:
            new = f'{self.mts}.estimator.tpu.{name}'
        elif relative.startswith('estimator.') and (rule := _estimator_rule(relative)) is not None:
            name = relative[len('estimator.') :]
            if name in catalogue.ESTIMATOR_HOOK_ALIASES:
                new = f'{self.mts}.{name}'
                note = f"{spelled()} -> {new} (tf.estimator's name of the v1 hook class)"
                return _NameEdit(new, (note, True), True, legacy, graph)
            if rule.blocks:
                return _NameEdit(None, (f'{spelled()}: {rule.replacement}. {rule.note}', False), False, legacy, graph)
            new = f'{self.mts}.{relative}'
        if new is None:
            return _NameEdit(legacy=legacy, graph=graph)
        return _NameEdit(new, (f'{spelled()} -> {new}', True), True, legacy, graph)

    def _record(self, edit: _NameEdit) -> None:
        self.uses_mts = self.uses_mts or edit.uses_mts
        self.uses_legacy_layers = self.uses_legacy_layers or edit.legacy
        self.graph_program = self.graph_program or edit.graph

    def plain_edit(self, source: str, lines_before: int) -> str | None:
        """`edit`'s text of `source` (statements, the script's after its first `lines_before` lines) when its
        only edits are dotted names replaced or noted, made on the text (`splice`), the notes and what the edits
        found recorded as `edit` records them; None (nothing recorded) when another edit may apply there or a
        name cannot be replaced in place."""
        if self.ps_program and ('Server' in source or 'master' in source):
            return None  # A server to move into the block that joins on 'ps' (`_ps_servers`), `master=` to drop.
        if self._serving_placeholders:
            last = lines_before + source.count('\n') + 1
            if any(lines_before < line <= last for line, _ in self._serving_placeholders):
                return None  # A placeholder that becomes a TensorSpec (`_tensor_spec`).
        nodes = upgrade_splice.statement_nodes(source)
        if nodes is None:
            return None
        edits, found, canned = [], [], []
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                return None  # libcst's module names are attributes, and imports have edits of their own.
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                path = self._resolver.syntax_path(node.value.func)
                if isinstance(node.value.func, ast.Attribute) and _relative(path or '') in _EAGER_SWITCHES:
                    return None
            elif isinstance(node, ast.Call):
                path = self._resolver.syntax_path(node.func)
                method = node.func.attr if isinstance(node.func, ast.Attribute) else None
                if method == 'export_savedmodel' or method in _ITERATOR_METHODS:
                    return None
                if path == 'tensorflow.device':
                    return None
                if path and self._v1_canned(path) and self._loss_reduction_value(node) is not None:
                    canned.append(node)
            elif isinstance(node, ast.Attribute):
                spelled = _syntax_name(node)
                edit = self._name_edit(self._resolver.dotted_path(spelled), lambda: spelled)
                found.append(edit)
                if edit.note is not None:
                    edits.append((node, spelled, edit))
        inside = {id(child) for node, _, _ in edits for child in ast.walk(node) if child is not node}
        if any(id(node) in inside for node, _, _ in edits):
            return None  # A name edited inside another: libcst's order of the notes, and the outer one's text.
        lines = io.StringIO(source, newline='').readlines()  # `ast`'s lines
        renamed = {id(node): edit.new for node, _, edit in edits if edit.new is not None}
        shifts: dict[int, int] = {}  # line index -> columns its indentation moves (`leave_Call`)
        for node in nodes:
            if isinstance(node, ast.Call) and node.lineno != node.end_lineno:
                if any(id(child) in renamed for child in ast.walk(node.func)):
                    aligned = _aligned_arguments(node, lines, renamed.get(id(node.func)))
                    if aligned is None:
                        return None  # Not a layout whose arguments' lines this aligns as `leave_Call` does.
                    shifts.update(aligned)
        replacements = [(node, spelled, edit.new or spelled) for node, spelled, edit in edits]
        added = []  # (where the note goes in libcst's order, the note) of each `loss_reduction=` added
        for call in canned:
            last = _appended_to(call, lines)
            if last is None:
                return None
            spelled = _syntax_name(call.func)
            value = self._loss_reduction_value(call)
            argument = _source_segment(lines, last)
            replacements.append((last, argument, f'{argument}, loss_reduction={value}'))
            note = Note(lines_before + call.lineno, _loss_reduction_note(spelled, value), True)
            added.append(((call.end_lineno, call.end_col_offset - 1), note))  # After the notes inside the call.
        text = upgrade_splice.spliced(source, replacements, nodes)
        if text is None:
            return None
        if shifts:
            edited = io.StringIO(text, newline='').readlines()
            for index, shift in shifts.items():
                indentation = len(edited[index]) - len(edited[index].lstrip(' \t'))
                edited[index] = ' ' * max(0, indentation + shift) + edited[index][indentation:]
            text = ''.join(edited)
        for edit in found:
            self._record(edit)
        ordered = [
            ((node.lineno, node.col_offset), Note(lines_before + node.lineno, *edit.note)) for node, _, edit in edits
        ]
        self.notes.extend(note for _, note in sorted(ordered + added, key=lambda item: item[0]))
        return text

    def _loss_reduction_value(self, call: ast.Call) -> str | None:
        """The `loss_reduction=` value `_keep_v1_loss_reduction` adds to a canned Estimator's `call` (of `ast`);
        None where it adds none (the argument given, `*args` or `**kwargs`, no name of TensorFlow)."""
        if any(isinstance(arg, ast.Starred) for arg in call.args) or any(
            keyword.arg in (None, 'loss_reduction') for keyword in call.keywords
        ):
            return None
        tf_name = self._resolver.alias_of('tensorflow', 'tensorflow.compat.v1')
        return None if tf_name is None else f'{tf_name}.keras.losses.Reduction.SUM'

    # Horovod: its graph API on the strategy's collectives, by one import (compat_mts.legacy.horovod).
    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import | cst.ImportFrom:
        if len(original.names) != 1 or original.names[0].asname is None:
            return updated
        alias = original.names[0]
        if helpers.get_full_name_for_node(alias.name) != 'horovod.tensorflow':
            return updated
        name = alias.asname.name.value
        self._done(original, f'import horovod.tensorflow as {name} -> from compat_mts.legacy import horovod as {name}')
        missing = sorted(self._resolver.horovod_uses - horovod_names())
        if missing:
            self._left(
                original,
                f'{", ".join(f"{name}.{attribute}" for attribute in missing)}: not in compat_mts.legacy.horovod; '
                'migration_guide/horovod.md has their strategy counterparts, where they have one',
            )
        self.notes.append(Note(0, HOROVOD_RUN, True))
        return cst.ImportFrom(
            module=cst.parse_expression('compat_mts.legacy'),
            names=[cst.ImportAlias(name=cst.Name('horovod'), asname=alias.asname)],
        )

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        module = helpers.get_full_name_for_node(original.module) if original.module else None
        if module not in ('tensorflow.compat.v1.train', 'tensorflow.train') or isinstance(
            original.names, cst.ImportStar
        ):
            return updated
        names = [alias.name.value for alias in original.names if isinstance(alias.name, cst.Name)]
        moved = [name for name in names if name in SESSION_AND_HOOK_NAMES]
        if not moved:
            return updated
        if len(moved) < len(names):
            kept = ', '.join(name for name in names if name not in moved)
            self._left(original, f'split the import: {", ".join(moved)} from compat_mts, {kept} from {module}')
            return updated
        self._done(original, f'from {module} import ... -> from compat_mts import ...')
        return updated.with_changes(module=cst.Name('compat_mts'))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        result = self._edit_call(original, updated)
        if not isinstance(result, cst.Call) or isinstance(result.whitespace_before_args, cst.ParenthesizedWhitespace):
            return result
        new_func = cst.Module([]).code_for_node(result.func)
        if new_func == cst.Module([]).code_for_node(original.func):
            return result  # A call whose name did not change keeps its lines as they are.
        # Arguments after the opening parenthesis, on its line: the next lines align with it.
        wrapped = [
            index
            for index, arg in enumerate(original.args[:-1])
            if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace)
        ]
        if not wrapped:
            return result
        current = self._positions.column(self._offset(original.args[wrapped[0] + 1]))
        column = self._positions.column(self._offset(original))
        shift = column + len(new_func) + 1 - current
        if shift:
            result = result.with_changes(args=[arg.visit(_Shift(shift)) for arg in result.args])
        return result

    def _edit_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == 'export_savedmodel':
            # export_saved_model always strips default attributes: it has no strip_default_attrs argument.
            args = [arg for arg in updated.args if not (arg.keyword and arg.keyword.value == 'strip_default_attrs')]
            if len(args) < len(updated.args) and args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            dropped = ' (strip_default_attrs= dropped: it always strips them)' if len(args) < len(updated.args) else ''
            self._done(original, f'export_savedmodel -> export_saved_model{dropped}')
            return updated.with_changes(func=func.with_changes(attr=cst.Name('export_saved_model')), args=args)
        if isinstance(func, cst.Attribute) and func.attr.value in _ITERATOR_METHODS and not updated.args:
            return self._iterator_function(original, updated)
        path = self._resolver.path(original.func)
        if path and self._v1_canned(path):
            updated = self._keep_v1_loss_reduction(original, updated)
        if self._serving_placeholders:
            offset = self._offset(original)
            if (self._positions.line(offset), self._positions.byte_column(offset)) in self._serving_placeholders:
                return self._tensor_spec(original, updated)
        if path == 'tensorflow.device' and updated.args and _string_value(updated.args[0].value) is None:
            # TF2's tf.device takes device strings only; a device function needs v1's.
            tf_name = helpers.get_full_name_for_node(original.func).rsplit('.', 1)[0]
            self._done(original, f'{tf_name}.device(<device function>) -> {tf_name}.compat.v1.device(...)')
            return updated.with_changes(func=cst.parse_expression(f'{tf_name}.compat.v1.device'))
        relative = _relative(path) if path else None
        if self.ps_program and relative and relative.rpartition('.')[2] in _SESSIONS:
            return self._drop_master(original, updated)
        return updated

    def _v1_canned(self, path: str) -> bool:
        """Whether `path` is a canned Estimator whose v1 default of `loss_reduction` was SUM: any under
        `tf.compat.v1.estimator`, and `tf.estimator`'s in a TensorFlow 1.x script."""
        relative = _relative(path)
        if not relative or relative.rpartition('.')[0] != 'estimator':
            return False
        if relative.rpartition('.')[2] not in catalogue.PREMADE_PROVIDED:
            return False
        return path.startswith(catalogue.V1_ROOT) or self._v1_script

    def _keep_v1_loss_reduction(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        # What tf_upgrade_v2 (TensorFlow <= 2.15) added: TF2's canned Estimators average the loss over the batch
        # (SUM_OVER_BATCH_SIZE) where v1's summed it, so a v1 program keeps its loss and its learning rate's
        # meaning only with the old default spelled out.
        if any(arg.star or (arg.keyword and arg.keyword.value == 'loss_reduction') for arg in updated.args):
            return updated
        tf_name = self._resolver.alias_of('tensorflow', 'tensorflow.compat.v1')
        if tf_name is None:
            return updated
        value = f'{tf_name}.keras.losses.Reduction.SUM'
        args = list(updated.args)
        if args:
            last = args[-1]
            whitespace = cst.SimpleWhitespace(' ')
            if isinstance(last.comma, cst.Comma):
                whitespace = last.comma.whitespace_after
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=whitespace))
        equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(''), whitespace_after=cst.SimpleWhitespace(''))
        trailing = updated.args[-1].comma if updated.args else cst.MaybeSentinel.DEFAULT
        args.append(
            cst.Arg(cst.parse_expression(value), keyword=cst.Name('loss_reduction'), equal=equal, comma=trailing)
        )
        self._done(original, _loss_reduction_note(helpers.get_full_name_for_node(original.func), value))
        return updated.with_changes(args=args)

    def _iterator_function(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        # `dataset.make_one_shot_iterator()`: TF2's Dataset has no such method; the v1 function takes the dataset.
        if self._resolver.path(original.func) is not None:
            return updated  # A module's function (`tf.compat.v1.data.make_one_shot_iterator`), not a method.
        tf_name = self._resolver.alias_of('tensorflow', 'tensorflow.compat.v1')
        if tf_name is None:
            return updated
        data = (
            f'{tf_name}.compat.v1.data' if self._resolver.names.aliases[tf_name] == 'tensorflow' else f'{tf_name}.data'
        )
        func = updated.func
        method = func.attr.value
        self._done(original, f".{method}() -> {data}.{method}(dataset): TensorFlow 2's Dataset has no such method")
        return updated.with_changes(func=cst.parse_expression(f'{data}.{method}'), args=[cst.Arg(func.value)])

    def _tensor_spec(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        # `placeholder(dtype, shape=None, name=None)` -> `TensorSpec(shape, dtype, name)`: eager code has no
        # placeholders, and the serving input receiver takes anything with a shape and a dtype.
        spelled = helpers.get_full_name_for_node(original.func)
        head = spelled.rsplit('.', 1)[0].removesuffix('.compat.v1')
        named = {}
        for index, arg in enumerate(updated.args):
            key = arg.keyword.value if arg.keyword else ('dtype', 'shape', 'name')[index]
            named[key] = arg.value
        equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(''), whitespace_after=cst.SimpleWhitespace(''))
        args = [cst.Arg(named.get('shape', cst.Name('None'))), cst.Arg(named['dtype'])]
        if 'name' in named:
            args.append(cst.Arg(named['name'], keyword=cst.Name('name'), equal=equal))
        self._done(original, f'{spelled}(...) -> {head}.TensorSpec(...): the serving input, described, not fed')
        return cst.Call(func=cst.parse_expression(f'{head}.TensorSpec'), args=args)

    def _drop_master(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = [arg for arg in updated.args if not (arg.keyword and arg.keyword.value == 'master')]
        if len(args) == len(updated.args):
            return updated
        if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT and updated.args[-1].keyword.value == 'master':
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        self._done(original, 'master= dropped: on the chief of a parameter-server strategy the strategy runs the steps')
        return updated.with_changes(args=args)

    # disable_eager_execution() / disable_v2_behavior(): eager execution stays on.
    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Expr):
            return updated
        call = updated.body[0].value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return updated
        path = self._resolver.path(original.body[0].value.func)
        relative = _relative(path) if path else None
        if relative not in _EAGER_SWITCHES:
            return updated
        self.graph_program = True
        spelled = helpers.get_full_name_for_node(call.func)
        if relative == 'disable_v2_behavior' and self.keep_v1_shapes:
            self._done(original, f'{spelled}() -> disable_v2_tensorshape(): the graph code reads Dimension.value')
            self.kept_v1_shapes = True
            func = call.func.with_changes(attr=cst.Name('disable_v2_tensorshape'))
            return updated.with_changes(body=[updated.body[0].with_changes(value=call.with_changes(func=func))])
        self._done(original, f'{spelled}() removed: compat_mts runs the graph eagerly')
        return cst.RemovalSentinel.REMOVE

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = list(updated.body)
        body = self._ps_servers(body)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        return updated.with_changes(body=self._ps_servers(list(updated.body)))

    # ps clusters: `server = Server(cluster, ...)` + `if job == 'ps': server.join()`.
    def _ps_servers(self, body: list) -> list:
        if not self.ps_program:
            return body
        for index, statement in enumerate(body):
            server = _server_assignment(statement)
            if server is None:
                continue
            name, call = server
            for later in range(index + 1, len(body)):
                job = _joins_on_ps(body[later], name)
                if job is None:
                    continue
                branch = body[later]
                serve = branch.body.with_changes(body=[statement, *branch.body.body])
                test = cst.parse_expression(f"{job} in ('ps', 'worker')")
                cluster = cst.Module([]).code_for_node(call.args[0].value) if call.args else 'cluster'
                strategy = cst.parse_statement(f'{self.mts}.parameter_server_strategy({cluster})\n')
                self.uses_mts = True
                self.notes.append(
                    Note(0, 'the ps and worker tasks serve and join(); the chief calls parameter_server_strategy', True)
                )
                self.notes.append(
                    Note(
                        0,
                        f"the cluster ({cluster}) needs a 'chief' job: the task that runs the session loop. Add it "
                        'where the cluster is described, and start that task (migration_guide/distributed.md, '
                        '"Parameter-server clusters")',
                        False,
                    )
                )
                return [
                    *body[:index],
                    *body[index + 1 : later],
                    branch.with_changes(test=test, body=serve),
                    strategy,
                    *body[later + 1 :],
                ]
        return body


def _loss_reduction_note(spelled: str, value: str) -> str:
    """The note of `loss_reduction=value` added to the call of the canned Estimator `spelled`."""
    return (
        f"{spelled}(..., loss_reduction={value}) added: v1's default (TensorFlow 2 averages the loss over the "
        'batch), as tf_upgrade_v2 adds it; without it the loss is batch_size times smaller'
    )


def _source_segment(lines: list[str], node: ast.AST) -> str:
    """The text of a node on one line of `lines` (`ast`'s columns count UTF-8 bytes)."""
    return lines[node.lineno - 1].encode('utf-8')[node.col_offset : node.end_col_offset].decode('utf-8')


def _column(lines: list[str], line: int, byte_column: int) -> int:
    """The column in characters of `ast`'s `byte_column` on `line` (1-based)."""
    return len(lines[line - 1].encode('utf-8')[:byte_column].decode('utf-8'))


def _arguments(call: ast.Call) -> list[ast.AST]:
    """The call's arguments in the order of the text (`ast` keeps keywords apart)."""
    return sorted([*call.args, *call.keywords], key=lambda node: (node.lineno, node.col_offset))


def _appended_to(call: ast.Call, lines: list[str]) -> ast.AST | None:
    """The last argument of a one-line `call`, after which `_keep_v1_loss_reduction` adds its argument with `, `,
    when the call's `)` follows it at once (no trailing comma, space or parentheses of its own); else None."""
    arguments = _arguments(call)
    if call.lineno != call.end_lineno or not arguments or isinstance(arguments[-1], ast.GeneratorExp):
        return None
    last = arguments[-1]
    line = lines[call.lineno - 1].encode('utf-8')
    return last if line[last.end_col_offset : call.end_col_offset] == b')' else None


def _aligned_arguments(call: ast.Call, lines: list[str], new_func: str | None) -> dict[int, int] | None:
    """What `_StageOneEdits.leave_Call` does to the lines of a call over several lines whose name becomes
    `new_func`: {line index: columns its indentation moves} (empty: nothing), for the layout it is found for
    here: the call's name itself replaced (`new_func`), the call not in parentheses of its own, and either `(` the
    end of its line (nothing moves) or its first argument after `(` on its line, each argument on one line, each
    comma right after its argument and followed by a space or the end of the line, the next argument then first
    on the next line, and `)` right after the last one. None for any other layout (libcst's edit decides)."""
    if new_func is None:
        return None
    func, encoded = call.func, [line.encode('utf-8') for line in lines[call.lineno - 1 : call.end_lineno]]

    def text(line: int, start: int, stop: int | None = None) -> bytes:
        return encoded[line - call.lineno][start:stop]

    if func.lineno != func.end_lineno or text(func.lineno, 0, call.col_offset).rstrip().endswith(b'('):
        return None
    arguments = _arguments(call)
    if not arguments:
        return {} if text(func.end_lineno, func.end_col_offset, func.end_col_offset + 1) == b'(' else None
    first = arguments[0]
    if first.lineno > func.end_lineno and text(func.end_lineno, func.end_col_offset).strip() == b'(':
        return {}  # The arguments start on a line of their own: their lines stay as they are.
    if first.lineno != func.lineno or text(func.end_lineno, func.end_col_offset, first.col_offset) != b'(':
        return None
    if any(argument.lineno != argument.end_lineno for argument in arguments):
        return None
    wrapped = []  # the arguments first on a line of their own
    for before, after in zip(arguments, arguments[1:]):
        if after.lineno == before.end_lineno:
            if text(before.end_lineno, before.end_col_offset, after.col_offset).strip() != b',':
                return None
        elif (
            after.lineno == before.end_lineno + 1
            and text(before.end_lineno, before.end_col_offset).rstrip() == b','
            and not text(after.lineno, 0, after.col_offset).strip()
        ):
            wrapped.append(after)
        else:
            return None
    last = arguments[-1]
    if last.end_lineno != call.end_lineno or text(last.end_lineno, last.end_col_offset, call.end_col_offset) != b')':
        return None
    if not wrapped:
        return {}
    current = _column(lines, wrapped[0].lineno, wrapped[0].col_offset)
    shift = _column(lines, call.lineno, call.col_offset) + len(new_func) + 1 - current
    return {argument.lineno - 1: shift for argument in wrapped} if shift else {}


def _estimator_rule(relative: str) -> catalogue.Rule | None:
    """The catalogue's rule for `tf.<relative>` (`estimator.X`) when `_StageOneEdits._estimator` edits or notes it:
    a hook's alias, a blocking construct, or a name compat_mts.estimator has; None for the rest (a part of a
    longer name, `tf.estimator` of `tf.estimator.Estimator`, and the names that stay as they are)."""
    found = catalogue.lookup('tensorflow.' + relative, v1_style=True)
    if found is None:
        return None
    construct, rule = found
    if construct != 'tf.' + relative or relative == 'estimator.export':
        return None
    name = relative[len('estimator.') :]
    if name in catalogue.ESTIMATOR_HOOK_ALIASES or rule.blocks or rule.replacement.startswith('compat_mts.estimator.'):
        return rule
    return None


class _Shift(cst.CSTTransformer):
    """Moves every continuation line of a node right (or left) by `columns`."""

    def __init__(self, columns: int):
        super().__init__()
        self._columns = columns

    def leave_ParenthesizedWhitespace(
        self, original: cst.ParenthesizedWhitespace, updated: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        width = max(0, len(updated.last_line.value) + self._columns)
        return updated.with_changes(last_line=cst.SimpleWhitespace(' ' * width))


def _server_assignment(statement: cst.CSTNode) -> tuple[str, cst.Call] | None:
    """(`server`, the call) for `server = tf.train.Server(...)` / `tf.distribute.Server(...)`."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, call = assign.targets[0].target, assign.value
    if not isinstance(target, cst.Name) or not isinstance(call, cst.Call):
        return None
    name = _call_name(call) or ''
    return (target.value, call) if name.endswith('.Server') else None


def _assigns_server(statement: ast.stmt) -> bool:
    """Whether `statement` may be one `_server_assignment` finds: `name = <...>.Server(...)`."""
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == 'Server'
    )


def _joins_on_ps(statement: cst.CSTNode, server: str) -> str | None:
    """The job expression's code for `if <job> == 'ps': <server>.join()` (no elif/else); None otherwise."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    test = statement.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and _string_value(test.comparisons[0].comparator) == 'ps'
    ):
        return None
    code = cst.Module([]).code_for_node(statement.body)
    if f'{server}.join()' not in code:
        return None
    return cst.Module([]).code_for_node(test.left)


class _ModuleFacts(NamedTuple):
    """What `apply_edits` asks of a script's nodes before its edits, found in one pass over them (`module_facts`)."""

    ps_program: bool  # it describes a cluster with a 'ps' job, or places variables with a replica_device_setter
    serves_raw_inputs: bool  # it names `build_raw_serving_input_receiver_fn`
    sets_legacy_keras: bool  # `sets_legacy_keras`


def module_facts(nodes: Iterable[ast.AST]) -> _ModuleFacts:
    """The `_ModuleFacts` of a script (every node of it)."""
    ps_program = serves_raw_inputs = legacy_keras = False
    dictionary, attribute, assign, call = ast.Dict, ast.Attribute, ast.Assign, ast.Call
    sets = check_checker._sets_legacy_keras  # noqa: SLF001
    for node in nodes:
        kind = node.__class__
        if kind is attribute:
            if node.attr == 'replica_device_setter':
                ps_program = True
            elif node.attr == 'build_raw_serving_input_receiver_fn':
                serves_raw_inputs = True
        elif kind is dictionary:
            if not ps_program and any(key.__class__ is ast.Constant and key.value == 'ps' for key in node.keys):
                ps_program = True
        elif legacy_keras:
            continue
        elif kind is call:
            func = node.func
            if func.__class__ is attribute and func.attr in ('setdefault', 'putenv') and sets(node):
                legacy_keras = True
        elif kind is assign and any(target.__class__ is ast.Subscript for target in node.targets) and sets(node):
            legacy_keras = True
    return _ModuleFacts(ps_program, serves_raw_inputs, legacy_keras)


def sets_legacy_keras(text: str, nodes: Iterable[ast.AST] | None = None) -> bool:
    """Whether the script sets TF_USE_LEGACY_KERAS=1 in `os.environ` (as `check` recognizes it); `nodes`: every
    node of its syntax tree, when the caller has them."""
    nodes = ast.walk(ast.parse(text)) if nodes is None else nodes
    return any(check_checker._sets_legacy_keras(node) for node in nodes)  # noqa: SLF001


def _serving_placeholders(tree: ast.Module, resolver: _Resolver, serves_raw_inputs: bool) -> frozenset[tuple[int, int]]:
    """(line, column) of each `placeholder(...)` call whose value goes to `build_raw_serving_input_receiver_fn`
    (directly, or through a name assigned in the same function); `serves_raw_inputs`: the script names that
    function (`_ModuleFacts`)."""
    if not serves_raw_inputs:
        return frozenset()
    found = set()
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    scopes = [tree] + [node for node in resolver.names.statements if node.__class__ in functions]
    for scope in scopes:
        fed = set()
        placeholders = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == 'build_raw_serving_input_receiver_fn':
                    for argument in ast.walk(node):
                        if isinstance(argument, ast.Name):
                            fed.add(argument.id)
                        if argument is not node and _is_placeholder(argument, resolver):
                            found.add((argument.lineno, argument.col_offset))
            if isinstance(node, ast.Assign) and _is_placeholder(node.value, resolver):
                placeholders.extend((target.id, node.value) for target in node.targets if isinstance(target, ast.Name))
        found.update((call.lineno, call.col_offset) for name, call in placeholders if name in fed)
    return frozenset(found)


def _is_placeholder(node: ast.AST, resolver: _Resolver) -> bool:
    if not isinstance(node, ast.Call):
        return False
    path = resolver.names.resolve(node.func) or ''
    return path in ('tensorflow.compat.v1.placeholder', 'tensorflow.placeholder')


def _reads_dimension_values(text: str, tree: ast.Module, resolver: _Resolver) -> bool:
    """Whether the script `text` (its syntax tree and resolver) reads `x.shape[i].value` (check's blocking shape
    finding)."""
    if '.value' not in text:
        return False
    return any(
        finding.replacement.startswith('tf.compat.v1.dimension_value(')
        for finding in check_checker.check_tree(tree, resolver.nodes, resolver.names)
    )


def _add_after_imports(module: cst.Module, code: str) -> cst.Module:
    """`code` as a statement after the last top-level TensorFlow import (else after the last import)."""
    body = list(module.body)
    imports = [
        index
        for index, statement in enumerate(body)
        if isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    ]
    tensorflow = [index for index in imports if 'tensorflow' in module.code_for_node(body[index])]
    position = (tensorflow or imports or [-1])[-1]
    body.insert(position + 1, cst.parse_statement(code + '\n'))
    return module.with_changes(body=body)


def _add_before_tensorflow(module: cst.Module, code: str) -> cst.Module:
    """`code` as a statement before the first top-level TensorFlow import (else after the last import): compat_mts
    imported first keeps TensorFlow's start-up lines off stderr (`compat_mts._quiet_start`)."""
    body = list(module.body)
    for index, statement in enumerate(body):
        if (
            isinstance(statement, cst.SimpleStatementLine)
            and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
            and 'tensorflow' in module.code_for_node(statement)
        ):
            line = cst.parse_statement(code + '\n')
            body[index:index] = [line.with_changes(leading_lines=statement.leading_lines)]
            body[index + 1] = statement.with_changes(leading_lines=[])
            return module.with_changes(body=body)
    return _add_after_imports(module, code)


def _add_legacy_keras(module: cst.Module) -> cst.Module:
    """`os.environ['TF_USE_LEGACY_KERAS'] = '1'` before the first import (after `__future__` ones)."""
    body = list(module.body)
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(
            statement.body[0], (cst.Import, cst.ImportFrom)
        ):
            continue
        first = statement.body[0]
        if isinstance(first, cst.ImportFrom) and helpers.get_full_name_for_node(first.module) == '__future__':
            continue
        imports_os = isinstance(first, cst.Import) and [a.name.value for a in first.names] == ['os']
        line = cst.parse_statement(_LEGACY_KERAS_LINE + '\n')
        if imports_os:
            body.insert(index + 1, line)
        else:
            body[index:index] = [cst.parse_statement('import os\n'), line]
        return module.with_changes(body=body)
    return module


def apply_edits(
    text: str, v1_script: bool = False, *, statement_by_statement: bool = True, processes: int = 1
) -> tuple[str, list[Note]]:
    """The script `text` after the stage-1 edits, and the report's notes (line numbers of `text`).

    `v1_script`: `text` was written for TensorFlow 1.x (and may since have had `tf_upgrade_v2`'s renames), so its
    `tf.estimator` names are v1's, with v1's defaults.

    `statement_by_statement`: the edits are made statement by statement (`StatementEdits`): libcst parses only
    the statements that hold an edit, so the time is linear in the script's length; in a parameter-server
    program, a statement whose body assigns a `tf.train.Server` is edited whole (the edits move that assignment
    into the block that joins on 'ps'). Else, and always for a parameter-server program that assigns its server
    at the top level, a file with a coding declaration or carriage returns, libcst parses the whole script as one
    module; the text and the notes are the same. `processes`: how many forked processes share the statements of
    a script of `upgrade_forked.MIN_LINES` lines or more (each statement's edits are its own).

    Raises:
      SyntaxError: `text` is not valid Python.
    """
    tree, resolver = parsed(text)
    notes: list[Note] = []
    if not resolver.names.uses_tensorflow:
        return text, notes
    mts = resolver.alias_of('compat_mts') or 'mts'
    facts = module_facts(resolver.every_node)
    edits = _StageOneEdits(
        resolver,
        mts,
        keep_v1_shapes=_reads_dimension_values(text, tree, resolver),
        ps_program=facts.ps_program,
        serving_placeholders=_serving_placeholders(tree, resolver, facts.serves_raw_inputs),
        v1_script=v1_script or resolver.names.bare_tensorflow_is_v1,
    )
    servers_at_top = edits.ps_program and any(_assigns_server(statement) for statement in tree.body)
    if not statement_by_statement or servers_at_top or '\r' in text or _CODING.match(text):
        edited = edits.edit(cst.parse_module(text), text)
        notes.extend(edits.notes)
        for addition, note in _additions(edits, resolver, text, facts):
            edited = addition.add(edited)
            notes.append(note)
        result = edited.code
    else:
        statements = StatementEdits(
            text,
            edits.needs_edits,
            lambda source, lines_before: edits.edit(cst.parse_module(source), source, lines_before).code,
            removable=functools.partial(_removable, edits.resolver, edits.ps_program),
            plain=edits.plain_edit,
            levels=statement_levels(text),
        )
        groups = statements.top_level_groups(tree.body)
        if text.count('\n') < upgrade_forked.MIN_LINES:
            processes = 1

        def units_of(part: tuple[int, int]) -> tuple[list[_Unit], _Recorded]:
            before = len(edits.notes)
            part_units = statements.units(groups, *part)
            recorded = edits.recorded_since(before)
            del edits.notes[before:]  # Added back in order by `add_recorded`, in this process or not.
            return part_units, recorded

        units = []
        for part_units, recorded in upgrade_forked.forked_map(units_of, _parts(groups, processes), processes):
            units.extend(part_units)
            edits.add_recorded(recorded)
        notes.extend(edits.notes)
        segments = _with_additions(units, _additions(edits, resolver, text, facts), notes)
        result = ''.join(segment for _, _, segment in segments)
        record_edit(result, text, segments)
    if edits.graph_program:
        result, wrapped = wrap_top_level_graphs(result)
        notes.extend(
            Note(0, f'the graph built at the top level of {where} goes under tf.Graph().as_default()', True)
            for where in wrapped
        )
    return result, notes


def _parts(groups: list[tuple[list[ast.stmt], bool]], processes: int) -> list[tuple[int, int]]:
    """`groups` cut into `(start, stop)` ranges of about equal lines: four per process, so that a process that
    finishes early takes another; one range for one process."""
    if processes <= 1 or not groups:
        return [(0, len(groups))]
    count = 4 * processes
    ends = [max(statement.end_lineno for statement in group) for group, _ in groups]
    size = ends[-1] / count
    cuts = [0]
    for index, end in enumerate(ends[:-1]):
        if end >= size * len(cuts):
            cuts.append(index + 1)
    cuts.append(len(groups))
    return list(zip(cuts, cuts[1:]))


_CODING = re.compile(r'(.*\n)?[ \t\f]*#.*?coding[:=]')  # A coding declaration, on one of the first two lines.


@dataclasses.dataclass
class _Addition:
    """A statement added at the top level: `add` makes it on the module; `where` it goes (after the last import,
    before the first TensorFlow import, before the first import)."""

    add: Callable[[cst.Module], cst.Module]
    where: str  # 'after imports', 'before tensorflow' or 'first import'


def _additions(
    edits: _StageOneEdits, resolver: _Resolver, text: str, facts: _ModuleFacts
) -> list[tuple[_Addition, Note]]:
    """The statements the edits add at the top level, in order, each with its note (`facts`: the script's)."""
    additions = []
    tf_name = resolver.alias_of('tensorflow', 'tensorflow.compat.v1')
    if edits.keep_v1_shapes and not edits.kept_v1_shapes and tf_name and 'disable_v2_tensorshape' not in text:
        v1 = tf_name if resolver.names.aliases[tf_name] == 'tensorflow.compat.v1' else f'{tf_name}.compat.v1'
        additions.append(
            (
                _Addition(
                    functools.partial(_add_after_imports, code=f'{v1}.disable_v2_tensorshape()'), 'after imports'
                ),
                Note(0, f'{v1}.disable_v2_tensorshape() added: the graph code reads Dimension.value', True),
            )
        )
    if edits.uses_mts and resolver.alias_of('compat_mts') is None:
        additions.append(
            (
                _Addition(
                    functools.partial(_add_before_tensorflow, code=f'import compat_mts as {edits.mts}'),
                    'before tensorflow',
                ),
                Note(0, f'import compat_mts as {edits.mts} added', True),
            )
        )
    if edits.uses_legacy_layers and not facts.sets_legacy_keras:
        additions.append(
            (
                _Addition(_add_legacy_keras, 'first import'),
                Note(0, "TF_USE_LEGACY_KERAS=1 set before TensorFlow is imported (tf.layers are tf-keras's)", True),
            )
        )
    return additions


def _with_additions(units: list[_Unit], additions: list[tuple[_Addition, Note]], notes: list[Note]) -> list[Segment]:
    """The text of `units` with the `additions` made, as segments (`record_edit`), and their notes added to
    `notes`.

    The additions go among the top-level imports: they are made on a module parsed from the units up to the one
    that holds where each goes (the last import, the first TensorFlow import, the first import), so a long script
    is not parsed whole; the rest of the text follows as it is.
    """
    if not additions:
        return [(unit.start, unit.stop, unit.text) for unit in units]
    imports = [index for index, unit in enumerate(units) if unit.imports]
    ends = []
    for addition, _ in additions:
        if addition.where == 'first import':
            found = [index for index in imports if not units[index].future_import]
        elif addition.where == 'before tensorflow':
            # An import whose own lines name tensorflow: the first one with it (comments above included) is no later.
            found = [index for index in imports if not units[index].merged and 'tensorflow' in units[index].text]
        else:
            found = []
        ends.append(found[0] if found else (imports[-1] if imports else len(units) - 1))
    end = max(ends) + 1
    module = cst.parse_module(''.join(unit.text for unit in units[:end]))
    for addition, note in additions:
        module = addition.add(module)
        notes.append(note)
    return [(units[0].start, units[end - 1].stop, module.code)] + [
        (unit.start, unit.stop, unit.text) for unit in units[end:]
    ]


@dataclasses.dataclass
class _Unit:
    """A part of the edited text: a top-level statement (or two: a removed one with the one before it), or the
    lines between statements. `imports`: its first statement is an import (`future_import`: of `__future__`)."""

    text: str
    start: int  # its lines in the script before the edits (0-based, `stop` excluded)
    stop: int
    imports: bool = False
    future_import: bool = False
    merged: bool = False


_WRAPPER = 'if True:\n'  # Before a statement of an indented block, so that it parses on its own.


class StatementEdits:
    """Edits made on the statements that hold one, each statement parsed on its own, so that the time is linear
    in the script's length however costly the edit's parser is.

    A statement in which `needs(nodes)` (its `ast` nodes) finds nothing is kept as it is. One that holds an edit
    goes to `edit(source, lines_before)` on its own (an indented one under `if True:`), which gives the edited
    source (`lines_before`: the script's lines before `source`'s first). A function, class, `with`, `for`,
    `while` or `if` (without `else`) whose body starts on a line of its own is not edited whole: its header is
    (with `pass` for a body), if it holds an edit, and its body's statements are taken one by one. With
    `header_after_body`, a header whose decorators or return annotation hold an edit is edited with its body
    (`ast`'s order: an editor that visits the body before them reports them after it). A statement for which
    `removable(statements)` is true may vanish with the lines libcst gives it: at the top level it is edited with
    the statement before it (whose lines after it, comments above the removed one, libcst may give to either),
    in a block with the whole block's statement. With `runs` (for an editor that removes nothing and whose edits
    stay within a statement), adjacent statements of a block that are each edited whole go to one `edit` call,
    with the lines between them: each call costs more than a line does. `plain(source, lines_before)`, when
    given, is asked first for each `edit`'s text, and for each statement of a run on its own (a run is then
    made of the statements it gives None for): a cheaper editor that gives the same text where it can.
    `levels`: the nodes by depth (`check_names.walk_levels`) of top-level statements, by id, which `needs` is then
    asked of at once rather than part by part (`needs` finds whether any node holds an edit; what it records when
    it finds none is recorded all the same, and a statement in which it finds one is edited, which records it).
    """

    def __init__(
        self,
        text: str,
        needs: Callable[[Iterable[ast.AST]], bool],
        edit: Callable[[str, int], str],
        removable: Callable[[list[ast.stmt]], bool] = lambda statements: False,
        header_after_body: bool = False,
        runs: bool = False,
        plain: Callable[[str, int], str | None] | None = None,
        levels: dict[int, list[list[ast.AST]]] | None = None,
    ):
        self._lines = io.StringIO(text, newline='').readlines()
        self._levels = levels or {}
        self._plain = plain
        self._needs, self._edit, self._removable = needs, edit, removable
        self._header_after_body = header_after_body
        self._runs = runs
        self._asked: dict[int, bool] = {}  # id of a statement -> whether `needs` found an edit in it

    def top_level(self, body: list[ast.stmt]) -> list[_Unit]:
        """The script's text as units, their statements edited; `body` the script's top-level statements."""
        if self._runs:
            return [_Unit(self.lines_edited(body, 0, len(self._lines)), 0, len(self._lines))]
        groups = self.top_level_groups(body)
        return self.units(groups, 0, len(groups))

    def top_level_groups(self, body: list[ast.stmt]) -> list[tuple[list[ast.stmt], bool]]:
        """The top-level statements as `top_level` edits them: groups of statements that share lines, each with
        whether it was joined with a removable group after it (see the class docstring). Not with `runs`."""
        groups: list[tuple[list[ast.stmt], bool]] = []
        for group in _groups(body):
            if self._removable(group) and groups:
                groups[-1][0].extend(group)
                groups[-1] = (groups[-1][0], True)
            else:
                groups.append((list(group), False))
        return groups

    def units(self, groups: list[tuple[list[ast.stmt], bool]], start: int, stop: int) -> list[_Unit]:
        """The units of `groups[start:stop]` (of `top_level_groups`) and of the lines before each; with the
        script's last lines after the last group. Each group's edit is its own, so the units of parts of the
        groups, joined, are those of the whole."""
        units: list[_Unit] = []
        cursor = max(statement.end_lineno for statement in groups[start - 1][0]) if start else 0
        for group, joined in groups[start:stop]:
            first, last = first_line(group[0]) - 1, max(statement.end_lineno for statement in group)
            if first > cursor:
                units.append(_Unit(''.join(self._lines[cursor:first]), cursor, first))
            text = self._parse(first, last, 0) if joined else self._statements(group, 0)
            head = group[0]
            units.append(
                _Unit(
                    text,
                    first,
                    last,
                    imports=isinstance(head, (ast.Import, ast.ImportFrom)),
                    future_import=isinstance(head, ast.ImportFrom) and head.module == '__future__' and not head.level,
                    merged=joined,
                )
            )
            cursor = last
        if stop == len(groups) and cursor < len(self._lines):
            units.append(_Unit(''.join(self._lines[cursor:]), cursor, len(self._lines)))
        return units

    def lines_edited(self, body: list[ast.stmt], start: int, stop: int) -> str:
        """The text of lines `start` to `stop` (0-based, `stop` excluded), the top-level statements of `body`, which
        are all the ones in them, edited (with `runs`: the statements of a piece of the script)."""
        return ''.join(text for _, _, text in self.lines_segments(body, start, stop))

    def lines_segments(self, body: list[ast.stmt], start: int, stop: int) -> list[Segment]:
        """`lines_edited`'s text as the segments it is made of (`record_edit`): the statements edited, a run
        of them, and the lines between them."""
        return self._block(body, start, stop, 0)

    def _block(self, body: list[ast.stmt], start: int, stop: int, depth: int) -> list[Segment]:
        """The lines `start` to `stop` (0-based, `stop` excluded), the statements of `body` in them edited, as
        segments."""
        parts: list[Segment] = []
        cursor, run = start, None  # run: (first, last) lines of adjacent statements edited whole
        for group in [*_groups(body), None]:  # None: the end of the block, where a run ends too.
            if group is not None:
                first, last = first_line(group[0]) - 1, max(statement.end_lineno for statement in group)
                needed = self._needed(group)
                plain = None
                if self._runs and needed and self._whole(group):
                    plain = self._plain_text(first, last, depth)
                    if plain is None:
                        run = (run[0] if run else first, last)
                        continue
            if run:
                parts.append((cursor, run[0], ''.join(self._lines[cursor : run[0]])))
                parts.append((run[0], run[1], self._parse(run[0], run[1], depth)))
                cursor, run = run[1], None
            if group is not None:
                parts.append((cursor, first, ''.join(self._lines[cursor:first])))
                parts.append((first, last, plain if plain is not None else self._statements(group, depth, needed)))
                cursor = last
        parts.append((cursor, stop, ''.join(self._lines[cursor:stop])))
        return parts

    def _needed(self, group: list[ast.stmt]) -> bool:
        """`needs` of every node of the statements of `group`, asked once per statement: a compound one's is its
        own nodes' and its body's statements' (the ones a block of it asks again)."""
        return any(self._statement_needs(statement) for statement in group)

    def _statement_needs(self, statement: ast.stmt) -> bool:
        found = self._asked.get(id(statement))
        if found is None and id(statement) in self._levels:
            found = self._asked[id(statement)] = self._needs(itertools.chain.from_iterable(self._levels[id(statement)]))
        if found is None:
            own, inner = _own_and_inner(statement)
            found = self._asked[id(statement)] = self._needs(own) or any(self._statement_needs(s) for s in inner)
        return found

    def _whole(self, group: list[ast.stmt]) -> bool:
        """Whether a group that holds an edit is edited whole (not its header and body apart)."""
        statement = group[0]
        if len(group) > 1 or not self._descends(statement):
            return True
        after_body = ('decorator_list', 'returns') if self._header_after_body else ()
        return bool(after_body) and self._needs(self._header(statement, lambda field: field in after_body))

    def _statements(self, group: list[ast.stmt], depth: int, needed: bool | None = None) -> str:
        """The text of statements that share their lines, edited; `needed`: whether they hold an edit, when the
        caller has asked `needs`."""
        first, last = first_line(group[0]) - 1, max(statement.end_lineno for statement in group)
        if needed is None:
            needed = self._needed(group)
        if not needed:
            return ''.join(self._lines[first:last])
        if self._whole(group):
            return self._parse(first, last, depth)
        statement = group[0]
        body_first = first_line(statement.body[0]) - 1
        if self._needs(self._header(statement, lambda field: field != 'body')):
            body_line = self._lines[body_first]
            head = self._parse(first, body_first, depth, dummy=body_line[: len(body_line) - len(body_line.lstrip())])
        else:
            head = ''.join(self._lines[first:body_first])
        return head + ''.join(text for _, _, text in self._block(statement.body, body_first, last, depth + 1))

    @staticmethod
    def _header(statement: ast.stmt, fields: Callable[[str], bool]) -> list[ast.AST]:
        """The nodes of the statement's fields that `fields` selects (all but `body`: its header)."""
        return [
            node
            for field, value in ast.iter_fields(statement)
            if fields(field)
            for child in (value if isinstance(value, list) else [value])
            if isinstance(child, ast.AST)
            for node in ast.walk(child)
        ]

    def _descends(self, statement: ast.stmt) -> bool:
        """Whether the statement's header and its body's statements can be edited apart."""
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.If)):
            if statement.orelse:
                return False
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith)):
            return False
        if any(self._removable([child]) for child in statement.body):
            return False
        first = statement.body[0]
        line = self._lines[first_line(first) - 1]
        if getattr(first, 'decorator_list', None):
            return line.lstrip().startswith('@')
        return not line.encode('utf-8')[: first.col_offset].strip()  # ast's columns count UTF-8 bytes.

    def _parse(self, first: int, last: int, depth: int, dummy: str | None = None) -> str:
        """Lines `first` to `last` (0-based, `last` excluded) edited (by `plain` if it can); `dummy`: the
        indentation of a `pass` that stands for the body of the header they hold."""
        plain = self._plain_text(first, last, depth, dummy)
        return plain if plain is not None else self._edited(self._edit, first, last, depth, dummy)

    def _plain_text(self, first: int, last: int, depth: int, dummy: str | None = None) -> str | None:
        """`_parse`'s text made by `plain`; None when there is no `plain` or it cannot make it."""
        return None if self._plain is None else self._edited(self._plain, first, last, depth, dummy)

    def _edited(
        self, edit: Callable[[str, int], str | None], first: int, last: int, depth: int, dummy: str | None
    ) -> str | None:
        text = ''.join(self._lines[first:last])
        wrapper = _WRAPPER if depth else ''
        tail = f'{dummy}pass\n' if dummy is not None else ''
        code = edit(wrapper + text + tail, first - (1 if depth else 0))
        if code is None:
            return None
        assert code.startswith(wrapper) and code.endswith(tail), 'the stand-ins around a statement are kept'
        return code[len(wrapper) : len(code) - len(tail)]


def _removable(resolver: _Resolver, ps_program: bool, group: list[ast.stmt]) -> bool:
    """Whether the edits may remove a statement of `group` (an eager switch) or, in a parameter-server program,
    move it (a `tf.train.Server` assignment, which goes into the block that joins on 'ps')."""
    if ps_program and any(_assigns_server(statement) for statement in group):
        return True
    return any(
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and _relative(resolver.syntax_path(statement.value.func) or '') in _EAGER_SWITCHES
        for statement in group
    )


def _own_and_inner(statement: ast.stmt) -> tuple[list[ast.AST], list[ast.stmt]]:
    """The nodes of `statement` outside the statements it holds (those of its header, of an `except` clause's
    type...), and those statements: with theirs, every node `ast.walk(statement)` gives."""
    own: list[ast.AST] = [statement]
    inner: list[ast.stmt] = []
    stack: list[ast.AST] = [statement]
    statement_classes, node_type = _STATEMENT_CLASSES, ast.AST
    while stack:
        node = stack.pop()
        for field in check_names.child_fields(node.__class__):
            value = getattr(node, field, None)
            for child in value if value.__class__ is list else (value,):
                if child.__class__ in statement_classes:
                    inner.append(child)
                elif isinstance(child, node_type):
                    own.append(child)
                    stack.append(child)
    return own, inner


_STATEMENT_CLASSES = frozenset(
    kind for kind in vars(ast).values() if isinstance(kind, type) and issubclass(kind, ast.stmt)
)


def first_line(statement: ast.stmt) -> int:
    """The statement's first line: its first decorator's, if it has any."""
    decorators = getattr(statement, 'decorator_list', None)
    if not decorators:
        return statement.lineno
    return min(statement.lineno, *(node.lineno for node in decorators))


def _groups(body: list[ast.stmt]) -> list[list[ast.stmt]]:
    """The statements of a block, those that share a line (`a = 1; b = 2`) together."""
    groups: list[list[ast.stmt]] = []
    end = 0
    for statement in body:
        if groups and first_line(statement) <= end:
            groups[-1].append(statement)
        else:
            groups.append([statement])
        end = max(end, statement.end_lineno)
    return groups


# ---------------------------------------------------------------------------------------------------------
# The graph built at the top level: its code goes under `with tf.Graph().as_default():`, as text, so that
# continuation lines move with the statements they belong to.


def _string_interiors(text: str) -> set[int]:
    """Line numbers (1-based) inside a multi-line string after its first line: never re-indented."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            lines.update(range(token.start[0] + 1, token.end[0] + 1))
    return lines


class _GraphScan:
    """Where a function (or the module) makes a session over graph code it built outside any graph block."""

    def __init__(self, tree: ast.Module, names: check_names.Names, nodes: Iterable[ast.AST]):
        self.names = names
        self.graph_blocks = [
            (node.lineno, node.end_lineno)
            for node in names.statements
            if node.__class__ is ast.With and any(_is_as_default(item.context_expr) for item in node.items)
        ]
        # The lines of the graph blocks as disjoint spans, by their first line (`in_graph_block`).
        self._block_starts: list[int] = []
        self._block_ends: list[int] = []
        for start, end in sorted(self.graph_blocks):
            if self._block_ends and start <= self._block_ends[-1] + 1:
                self._block_ends[-1] = max(self._block_ends[-1], end)
            else:
                self._block_starts.append(start)
                self._block_ends.append(end)
        self._tree = tree
        # One pass over the nodes, for the calls that may make a session (`is_session`: a name of a session class,
        # or a name bound to one) and a use of `wrap_graph`.
        self.uses_wrap_graph = False
        session_lines = []
        call, attribute, name = ast.Call, ast.Attribute, ast.Name
        for node in nodes:
            kind = node.__class__
            if kind is call:
                func = node.func
                if (func.__class__ is name or (func.__class__ is attribute and func.attr in _SESSIONS)) and (
                    self.is_session(node) and not self.in_graph_block(node.lineno)
                ):
                    session_lines.append(node.lineno)
            elif kind is attribute and node.attr == 'wrap_graph':
                self.uses_wrap_graph = True
        # The first line of each session made outside a graph block, in order: a statement without one in its
        # lines makes none, and is not walked for one.
        self.session_lines = sorted(session_lines)
        self._functions = {
            node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self._builds_graph: dict[str, bool] = {}

    def may_make_session(self, statement: ast.stmt) -> bool:
        """Whether a session made outside a graph block starts on one of the statement's lines."""
        index = bisect.bisect_left(self.session_lines, first_line(statement))
        return index < len(self.session_lines) and self.session_lines[index] <= statement.end_lineno

    def is_tf_function(self, name: str) -> bool:
        """Whether `name` is a function of the module (the last top-level `def` of that name) that builds graph
        ops, itself or through the module's other functions: a function is walked only when asked about, or when a
        function asked about calls it."""
        found = self._builds_graph.get(name)
        if found is not None:
            return found
        if name not in self._functions:
            return False
        # The functions `name` reaches through calls, walked until one builds graph ops itself.
        reached, stack = {name}, [name]
        while stack:
            function = stack.pop()
            known = self._builds_graph.get(function)
            if known:
                break
            if known is not None:
                continue  # Nor does any function it reaches.
            direct, callees = self._own_uses(function)
            if direct:
                break
            for callee in callees:
                if callee not in reached:
                    reached.add(callee)
                    stack.append(callee)
        else:
            for function in reached:  # None of them reaches a function that builds graph ops.
                self._builds_graph[function] = False
            return False
        self._builds_graph[name] = True
        return True

    def _own_uses(self, name: str) -> tuple[bool, set[str]]:
        """Whether the module's function `name` names a graph op itself, and the module's functions it calls."""
        calls = set()
        call, attribute, bare = ast.Call, ast.Attribute, ast.Name
        for node in check_names.walk(self._functions[name]):
            kind = node.__class__
            if kind is call:
                if node.func.__class__ is bare and node.func.id in self._functions:
                    calls.add(node.func.id)
            elif kind is attribute and self._is_graph_name(node):
                return True, calls
        return False, calls

    def _is_graph_name(self, node: ast.AST) -> bool:
        path = self.names.resolve(node)
        relative = _relative(path) if path else None
        return bool(relative) and not relative.startswith(_NOT_GRAPH)

    def is_session(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        path = self.names.resolve(node.func) or ''
        return path.startswith('compat_mts.') and path.rpartition('.')[2] in _SESSIONS

    def in_graph_block(self, line: int) -> bool:
        index = bisect.bisect_right(self._block_starts, line) - 1
        return index >= 0 and line <= self._block_ends[index]


def _is_as_default(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == 'as_default'
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Attribute)
        and node.func.value.func.attr == 'Graph'
    )


def _own_nodes(statement: ast.stmt):
    """The nodes of `statement` outside the functions and classes it defines; of a dotted name (`tf.train.X`),
    only the whole name."""
    stack = [statement]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Attribute):
            inner = node
            while isinstance(inner.value, ast.Attribute):
                inner = inner.value
            if isinstance(inner.value, ast.Name):
                continue
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def wrap_top_level_graphs(text: str) -> tuple[str, list[str]]:
    """`text` with each graph built outside a graph block (and its session) under `with tf.Graph().as_default():`.

    Returns:
      The new text and where blocks were added (`main()`, `the module`).
    """
    tree, resolver = parsed(text)
    scan = _GraphScan(tree, resolver.names, resolver.every_node)
    tf_name = next(
        (name for name, path in scan.names.aliases.items() if path in ('tensorflow', 'tensorflow.compat.v1')), None
    )
    if scan.uses_wrap_graph or not tf_name:
        return text, []
    # A function without a session line in its span makes none: its body is not scanned.
    bodies = [('the module', tree.body)] + [
        (f'{node.name}()', node.body)
        for node in resolver.names.statements
        if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and scan.may_make_session(node)
    ]
    regions = []
    for where, body in bodies:
        sessions = [
            statement
            for statement in body
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and scan.may_make_session(statement)
            and any(scan.is_session(node) and not scan.in_graph_block(node.lineno) for node in _own_nodes(statement))
        ]
        if not sessions:
            continue
        first = next(
            (
                statement
                for statement in body
                if not isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef))
                and not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
                and _graph_statement(statement, scan)
            ),
            None,
        )
        if first is None or first.lineno > sessions[0].lineno:
            continue
        last = body[-1] if where != 'the module' else sessions[-1]
        regions.append((where, first.lineno, last.end_lineno, first.col_offset))
    # A region inside another (a function's in the module's) goes with the outer one; regions that do not overlap
    # (functions' regions, without the module's) are all kept without comparing each pair.
    spans = sorted((region[1], region[2]) for region in regions)
    if any(start <= end for (_, end), (start, _) in zip(spans, spans[1:])):
        regions = [
            region
            for region in regions
            if not any(other[1] <= region[1] and region[2] <= other[2] and other != region for other in regions)
        ]
    if not regions:
        return text, []
    lines = text.splitlines(keepends=True)
    # A string over several lines is a node over several lines: without one, no line is a string's interior.
    strings = (ast.Constant, ast.JoinedStr)
    spanning = any(node.__class__ in strings and node.end_lineno > node.lineno for node in resolver.every_node)
    interiors = _string_interiors(text) if spanning else set()
    segments: list[Segment] = []
    cursor = 0
    for where, start, end, column in sorted(regions, key=lambda region: region[1]):
        block = [' ' * column + f'with {tf_name}.Graph().as_default():\n']
        for number in range(start, end + 1):
            line = lines[number - 1]
            block.append('    ' + line if number not in interiors and line.strip() else line)
        segments.append((cursor, start - 1, ''.join(lines[cursor : start - 1])))
        segments.append((start - 1, end, ''.join(block)))
        cursor = end
    segments.append((cursor, len(lines), ''.join(lines[cursor:])))
    wrapped = ''.join(segment for _, _, segment in segments)
    if '\r' not in text and len(lines) == text.count('\n') + (not text.endswith('\n')):
        record_edit(wrapped, text, segments)  # `splitlines`' lines are then `ast`'s.
    return wrapped, [region[0] for region in regions]


def _graph_statement(statement: ast.stmt, scan: _GraphScan) -> bool:
    if isinstance(statement, ast.If) and any(
        isinstance(node, ast.Attribute) and node.attr == 'join' for node in ast.walk(statement)
    ):
        return False  # The ps and worker tasks' serving branch.
    for node in _own_nodes(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and scan.is_tf_function(node.func.id):
            return True
        if isinstance(node, (ast.Attribute, ast.Name)):
            path = scan.names.resolve(node)
            relative = _relative(path) if path else None
            if relative and not relative.startswith(_NOT_GRAPH):
                return True
    return False


# TensorFlow 1.x modules that `tf_upgrade_v2` leaves under their 1.x names, which TensorFlow 2 gave to other code:
# `tf.summary.scalar` becomes TF2's summary (no default writer: nothing recorded, nothing for `merge_all()`),
# `tf.layers.dense` is gone (a manual edit, its report says), and `tf.flags` is gone (`tf.compat.v1.flags` is
# absl's flags, as `tf.flags` was).
_KEPT_BY_TF_UPGRADE_V2 = ('summary', 'layers', 'nn.rnn_cell', 'flags')


class _V1Modules(cst.CSTTransformer):
    """`tf.summary.<X>`, `tf.layers.<X>`, `tf.nn.rnn_cell.<X>`, `tf.flags` of a TensorFlow 1.x script ->
    `tf.compat.v1.*`."""

    METADATA_DEPENDENCIES = (ByteSpanPositionProvider,)

    def __init__(self, positions: _Positions, resolver: _Resolver):
        super().__init__()
        self._positions = positions
        self._resolver = resolver
        self.notes: list[Note] = []

    def _line(self, node: cst.CSTNode) -> int:
        return self._positions.line(self.get_metadata(ByteSpanPositionProvider, node).start)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        spelled = helpers.get_full_name_for_node(original)
        replacement = _v1_module_name(self._resolver.path(original), spelled, original.attr.value)
        if replacement is None:
            return updated
        self.notes.append(Note(self._line(original), f'{spelled} -> {replacement}', True))
        return cst.parse_expression(replacement)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        # `layers = tf.layers` (Horovod's MNIST example): the module itself, under a name of the script's.
        path = self._resolver.path(original.value) if isinstance(original.value, cst.Attribute) else None
        module = next((m for m in _KEPT_BY_TF_UPGRADE_V2 if path == f'tensorflow.{m}'), None)
        spelled = helpers.get_full_name_for_node(original.value) if module else None
        if not spelled or not spelled.endswith(f'.{module}'):
            return updated
        replacement = f'{spelled[: -len(module)]}compat.v1.{module}'
        self.notes.append(Note(self._line(original.value), f'{spelled} -> {replacement}', True))
        return updated.with_changes(value=cst.parse_expression(replacement))


def _v1_module_name(path: str | None, spelled: str | None, attribute: str) -> str | None:
    """The `tf.compat.v1` name of a module's name (`tf.summary.scalar`, its `attribute` `scalar`) that stands for
    `path`, spelled `spelled`; None for the other names."""
    module = next((m for m in _KEPT_BY_TF_UPGRADE_V2 if (path or '') == f'tensorflow.{m}.{attribute}'), None)
    if module is None or not spelled.endswith(f'.{module}.{attribute}'):
        return None  # Through a name of the module (`layers.dense` after `layers = tf.layers`): renamed there.
    return f'{spelled[: -len(f".{module}.{attribute}")]}.compat.v1.{module}.{attribute}'


def _plain_v1_modules(source: str, lines_before: int, resolver: _Resolver) -> tuple[str, list[Note]] | None:
    """`_V1Modules`' text and notes of `source` (statements, the script's after its first `lines_before` lines)
    made on the text (`splice`); None where a module itself is assigned (`layers = tf.layers`), or a name
    cannot be replaced in place."""
    nodes = upgrade_splice.statement_nodes(source)
    if nodes is None:
        return None
    edits = []
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            if resolver.syntax_path(node.value) in {f'tensorflow.{module}' for module in _KEPT_BY_TF_UPGRADE_V2}:
                return None
        elif isinstance(node, ast.Attribute):
            spelled = _syntax_name(node)
            replacement = _v1_module_name(resolver.dotted_path(spelled), spelled, node.attr)
            if replacement is not None:
                edits.append((node, spelled, replacement))
    inside = {id(child) for node, _, _ in edits for child in ast.walk(node) if child is not node}
    text = None if any(id(node) in inside for node, _, _ in edits) else upgrade_splice.spliced(source, edits, nodes)
    if text is None:
        return None
    notes = [
        Note(lines_before + node.lineno, f'{spelled} -> {new}', True)
        for node, spelled, new in sorted(edits, key=lambda item: (item[0].lineno, item[0].col_offset))
    ]
    return text, notes


def v1_modules(text: str) -> tuple[str, list[Note]]:
    """A TensorFlow 1.x script's `tf.summary.*`, `tf.layers.*`, `tf.nn.rnn_cell.*` and `tf.flags` as `tf.compat.v1.*`.

    Runs before `tf_upgrade_v2`, which leaves those names as they are (see `_KEPT_BY_TF_UPGRADE_V2`).

    Returns:
      The new text and the notes of the edits.
    """
    if not any(f'.{module}' in text for module in _KEPT_BY_TF_UPGRADE_V2):
        return text, []  # Nothing to rename: no tree to build.
    # The names are resolved through the whole script's imports; the edits, each within one statement, are
    # made only on the statements that name a module's name (the rest of the text is kept as it is).
    tree, resolver = parsed(text)
    notes: list[Note] = []
    prefixes = tuple(f'tensorflow.{module}' for module in _KEPT_BY_TF_UPGRADE_V2)

    def needs(nodes: Iterable[ast.AST]) -> bool:
        attribute = ast.Attribute
        for node in nodes:
            if node.__class__ is attribute and (resolver.syntax_path(node) or '').startswith(prefixes):
                return True
        return False

    def plain(source: str, lines_before: int) -> str | None:
        found = _plain_v1_modules(source, lines_before, resolver)
        if found is None:
            return None
        notes.extend(found[1])
        return found[0]

    def edit(source: str, lines_before: int) -> str:
        module = cst.parse_module(source)
        edits = _V1Modules(_Positions(module, source, lines_before), resolver)
        edited = MetadataWrapper(module, unsafe_skip_copy=True).visit(edits).code
        notes.extend(edits.notes)
        return edited

    statements = StatementEdits(text, needs, edit, runs=True, plain=plain, levels=statement_levels(text))
    segments = statements.lines_segments(tree.body, 0, len(io.StringIO(text, newline='').readlines()))
    edited = ''.join(segment for _, _, segment in segments)
    record_edit(edited, text, segments)
    return edited, notes


def top_level_cuts(body: list[ast.stmt], lines_per_piece: int, line_count: int) -> list[tuple[int, int]]:
    """The first and last lines (0-based, the last excluded) of pieces of a script of `line_count` lines, whose
    top-level statements are `body`: pieces of at least `lines_per_piece` lines (but the last), each cut before a
    top-level statement that starts on a line of its own."""
    cuts, end = [0], 0
    for statement in body:
        first = first_line(statement)
        if first > end and first - 1 - cuts[-1] >= lines_per_piece:
            cuts.append(first - 1)  # A statement that starts on a line of its own: the piece before it ends.
        end = max(end, statement.end_lineno)
    cuts.append(line_count)
    return [(start, stop) for start, stop in zip(cuts, cuts[1:]) if stop > start]
