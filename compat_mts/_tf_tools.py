"""TensorFlow's `tf_upgrade_v2` renames in this process, loaded without starting TensorFlow.

`tensorflow/tools/compatibility/` (`tf_upgrade_v2`, `ast_edits` and their tables) is pure Python, the standard
library and `pasta`; but importing it as `tensorflow.tools.compatibility` first runs `tensorflow/__init__.py`,
the whole runtime: 3-4 s of CPU that `compat-mts upgrade` never uses, longer than its renames of 30 files. So,
when TensorFlow is not imported yet, those modules are loaded from TensorFlow's own files under stand-in parent
packages that exist only while they load: afterwards `sys.modules` has no `tensorflow` entry this module put
there, and a later `import tensorflow` is the ordinary one. When TensorFlow is already imported, the ordinary
import is used.

These modules are TensorFlow's, not its API: this module and `_tf_internals` are the only ones that reach into
TensorFlow's package (`tests/test_tf_internals.py` checks the imports). When they are not where they were, or
`COMPAT_MTS_NO_PRIVATE_TF=1`, `renamer()` is None and the caller runs the public command,
`python -m tensorflow.tools.compatibility.tf_upgrade_v2_main`, instead.

Standard library only at import: `compat-mts upgrade` imports this module before it knows whether any file
needs renames.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import io
import os
import re
import sys
import types
from typing import Callable, NamedTuple

from compat_mts.core import program as program_lib

PRIVATE_TF = os.environ.get('COMPAT_MTS_NO_PRIVATE_TF', '').lower() not in ('1', 'true', 'yes')
_PACKAGE = 'tensorflow.tools.compatibility'


def _import_tools() -> tuple[types.ModuleType, types.ModuleType]:
    """(`tf_upgrade_v2`, `ast_edits`), imported as TensorFlow's own modules, without running its `__init__`."""
    if 'tensorflow' in sys.modules:
        return _tf_upgrade_v2_modules()
    spec = importlib.util.find_spec('tensorflow')  # A top-level package: found, not imported.
    if spec is None or not spec.submodule_search_locations:
        raise ImportError('no tensorflow package')
    package = next(iter(spec.submodule_search_locations))
    tools = os.path.join(package, 'tools')
    if not os.path.isfile(os.path.join(tools, 'compatibility', 'tf_upgrade_v2.py')):
        raise ImportError(f'no tf_upgrade_v2.py in {tools}')
    before = set(sys.modules)
    try:
        for name, path in (('tensorflow', package), ('tensorflow.tools', tools), (_PACKAGE, f'{tools}/compatibility')):
            stand_in = types.ModuleType(name)
            stand_in.__path__ = [path]
            sys.modules[name] = stand_in
        return _tf_upgrade_v2_modules()
    finally:
        for name in set(sys.modules) - before:
            if name == 'tensorflow' or name.startswith('tensorflow.'):
                del sys.modules[name]


def _tf_upgrade_v2_modules() -> tuple[types.ModuleType, types.ModuleType]:
    return (
        importlib.import_module('tensorflow.tools.compatibility.tf_upgrade_v2'),
        importlib.import_module('tensorflow.tools.compatibility.ast_edits'),
    )


class Renamed(NamedTuple):
    """A script after `tf_upgrade_v2`'s renames, and what `tf_upgrade_v2` said of it."""

    text: str
    """The text, as `tf_upgrade_v2 --infile` writes it."""
    messages: tuple[tuple[int, str], ...]
    """Its errors and warnings (what it could not convert, or asks to check), as (line of the text, reason)."""


def messages(errors: list[str], filename: str) -> tuple[tuple[int, str], ...]:
    """(line, reason) of each of `tf_upgrade_v2`'s `errors` on `filename`: lines `'FILENAME:LINE:COLUMN: WARNING:
    reason'` (or `ERROR:`), as its `update_string_pasta` returns them and its report file lists them."""
    pattern = re.compile(re.escape(filename) + r':(\d+):\d+: (.*)', re.DOTALL)
    found = (pattern.fullmatch(error.strip()) for error in errors)
    return tuple((int(match[1]), ' '.join(match[2].split())) for match in found if match)


@functools.cache
def renamer() -> Callable[[str], Renamed | None] | None:
    """A function that gives a script's `Renamed` after `tf_upgrade_v2`'s renames (None when it cannot parse it);
    None when TensorFlow's tools cannot be loaded (see the module docstring). Loaded once per process: the rename
    tables take a quarter of a second to build."""
    if not PRIVATE_TF:
        return None
    try:
        tf_upgrade_v2, ast_edits = _import_tools()
        # tf_upgrade_v2_main's default mode: no import renames, `import tensorflow.compat.v1 as tf` upgraded.
        upgrader = ast_edits.ASTCodeUpgrader(
            tf_upgrade_v2.TFAPIChangeSpec(import_rename=False, upgrade_compat_v1_import=True)
        )
    except (ImportError, AttributeError, TypeError):
        return None

    def rename(text: str) -> Renamed | None:
        with contextlib.redirect_stdout(io.StringIO()):  # It prints a line per rename; its report is not ours.
            processed, renamed, _, errors = upgrader.update_string_pasta(text, '<script>')
        return Renamed(renamed, messages(errors, '<script>')) if processed else None

    return rename


class RenameTriggers(NamedTuple):
    """What in a statement makes `tf_upgrade_v2` change it or say something of it (its change spec's keys)."""

    names: frozenset[str]
    """Dotted names (`tf.train.AdamOptimizer`) that it renames, reorders, transforms or warns about."""
    methods: frozenset[str]
    """Names of functions or methods it changes or warns about on any object (its `*.minimize` keys)."""
    every_call: bool
    """Whether it looks at every call (a `*` key)."""
    imports: frozenset[tuple[str, str | None]]
    """(module, alias) of the imports after which it changes nothing but deprecated modules in the file."""
    tables: types.SimpleNamespace | None = None
    """Its change spec's tables (`symbol_renames`, ...), `get_arg_value`, the levels of a log that is a message
    (`loud`) and whether it renames or adds imports (`renames_imports`), for `plain_renames`; None when a name it
    looks for turns the renames off in a file."""


_TABLES = (  # The change spec's tables of names.
    'symbol_renames',
    'function_warnings',
    'change_to_function',
    'module_deprecations',
    'function_reorders',
    'function_keyword_renames',
    'function_transformers',
    'function_arg_warnings',
)


@functools.cache
def rename_triggers() -> RenameTriggers | None:
    """The `RenameTriggers` of `renamer()`'s renames; None when TensorFlow's tools cannot be loaded."""
    if not PRIVATE_TF:
        return None
    try:
        tf_upgrade_v2, ast_edits = _import_tools()
        spec = tf_upgrade_v2.TFAPIChangeSpec(import_rename=False, upgrade_compat_v1_import=True)
        analysis = tf_upgrade_v2.TFAPIImportAnalysisSpec()
        detected = analysis.imports_to_detect
        named = None
        if not analysis.symbols_to_detect:  # Names that turn the renames off in a file: not looked for here.
            named = types.SimpleNamespace(
                **{name: getattr(spec, name, {}) for name in _TABLES},
                get_arg_value=ast_edits.get_arg_value,
                renames_imports=bool(getattr(spec, 'import_renames', {}) or getattr(spec, 'inserts_after_imports', {})),
                loud=frozenset({ast_edits.WARNING, ast_edits.ERROR}),
            )
    except (ImportError, AttributeError, TypeError):
        return None
    tables = [getattr(spec, name, {}) for name in _TABLES]
    keys = {key for table in tables for key in table}
    return RenameTriggers(
        names=frozenset(key for key in keys if not key.startswith('*')),
        methods=frozenset(key[2:] for key in keys if key.startswith('*.')),
        every_call='*' in keys,
        imports=frozenset(detected),
        tables=named,
    )


program_lib.PROGRAM.register(
    '_tf_tools.renamer',
    "tf_upgrade_v2's rename tables, built once (TensorFlow's tools, not a program's)",
    size=lambda: renamer.cache_info().currsize,
    kind='process',
)
program_lib.PROGRAM.register(
    '_tf_tools.rename_triggers',
    "what tf_upgrade_v2's rename tables hold, read once (TensorFlow's tools, not a program's)",
    size=lambda: rename_triggers.cache_info().currsize,
    kind='process',
)


def plain_renames(tree: ast.AST, triggers: RenameTriggers) -> list[tuple[ast.Attribute, str, str]] | None:
    """The renames `renamer()` makes in `tree` (statements) when it does nothing else there and says nothing (no
    message): `(node, its dotted name, the new name)` each; None when it may do more (reorder or rename
    arguments, transform a call, warn; an import it looks for, `triggers.imports`, changes what it does in the
    whole file; any import when its tables rename modules, which they do not in `renamer()`'s mode), or cannot be
    read here.

    The nodes are looked at as its visitor looks at them (`ast_edits._PastaEditVisitor`): each call's name and
    arguments against the call tables, each dotted name against the name tables, outermost first and none
    inside one it renames. An informational log (its level `INFO`) is no message and changes nothing.
    """
    tables = triggers.tables
    if tables is None:
        return None
    loud = tables.loud

    def applicable(table: dict, full: str | None, name: str | None) -> dict:
        found = dict(table.get('*', {}))
        found.update(table.get(f'*.{name}', {}) if name else {})
        found.update(table.get(full, {}))
        return found

    renames = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)) and tables.renames_imports:
            return None
        if isinstance(node, ast.Import):
            if any((alias.name, alias.asname) in triggers.imports for alias in node.names):
                return None
        elif isinstance(node, ast.ImportFrom):
            if node.module and any(
                (f'{node.module}.{alias.name}', alias.asname) in triggers.imports for alias in node.names
            ):
                return None
        elif isinstance(node, ast.Call):
            full = dotted_name(node.func)
            name = full.rpartition('.')[2] if full else getattr(node.func, 'id', getattr(node.func, 'attr', None))
            if isinstance(node.func, ast.Attribute) and tables.function_warnings.get(f'*.{name}', ('',))[0] in loud:
                return None
            for (keyword, position), (level, _) in applicable(tables.function_arg_warnings, full, name).items():
                if level in loud and tables.get_arg_value(node, keyword, position)[0]:
                    return None
            if full in tables.function_reorders:
                order = tables.function_reorders[full]
                positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
                if len(positional) < len(node.args) or len(positional) > len(order) or any(order[: len(positional)]):
                    return None
            renamed_keywords = applicable(tables.function_keyword_renames, full, name)
            if renamed_keywords and any(
                keyword.arg is None or keyword.arg in renamed_keywords for keyword in node.keywords
            ):
                return None
            if any(key in tables.function_transformers for key in (full, f'*.{name}', '*')):
                return None
        elif isinstance(node, ast.Attribute):
            full = dotted_name(node)
            if full is not None:
                if tables.function_warnings.get(full, ('',))[0] in loud:
                    return None
                if full in tables.symbol_renames:
                    renames.append((node, full, tables.symbol_renames[full]))
                    continue
                if full in tables.change_to_function or tables.module_deprecations.get(full, ('',))[0] in loud:
                    return None
        stack.extend(ast.iter_child_nodes(node))
    return renames


def dotted_name(node: ast.AST) -> str | None:
    """`tf.foo.bar` for a chain of attributes on a name, as `tf_upgrade_v2` names a node
    (`_PastaEditVisitor._get_full_name`); else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return '.'.join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None
