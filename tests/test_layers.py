"""The layers of compat_mts (ARCHITECTURE.md, "Layers"): every module in one, importing none of a higher one.

The table is read from ARCHITECTURE.md itself, so the document and the code cannot drift apart. Imports are read
from the source (top-level and inside functions alike; `if TYPE_CHECKING:` blocks are left out, they run
nowhere), so the check costs no process and no TensorFlow import.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / 'compat_mts'
_ROW = re.compile(r'^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|')


def layer_table(text: str) -> dict[str, int]:
    """Module (or subpackage) name below compat_mts -> layer, from the "Layers" section's table."""
    section = text.split('\n## Layers', 1)[1].split('\n## ', 1)[0]
    table = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            for name in re.findall(r'`([\w.]+)`', match.group(2)):
                assert name not in table, f'{name} is in two layers of ARCHITECTURE.md'
                table[name] = int(match.group(1))
    return table


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def layer_of(module: str, table: dict[str, int]) -> int | None:
    """The layer of `module` (`hooks.stop`), from its own row or its package's (`hooks`)."""
    parts = module.split('.')
    for end in range(len(parts), 0, -1):
        if '.'.join(parts[:end]) in table:
            return table['.'.join(parts[:end])]
    return None


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test)


def imported_modules(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module below compat_mts) of every compat_mts module the module at `path` imports, at any depth."""
    package = module_name(path).split('.')[: None if path.name == '__init__.py' else -1]
    return imports_in(path.read_text(encoding='utf-8'), [part for part in package if part])


def imports_in(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, module below compat_mts) of every compat_mts module `source` imports; `package` resolves relative
    imports (['hooks'] for a module of compat_mts.hooks)."""
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:  # Relative: resolved against this module's package.
                    base = '.'.join(['compat_mts', *package[: len(package) - child.level + 1], child.module or ''])
                else:
                    base = child.module or ''
                found.append((child.lineno, base.rstrip('.')))
                found.extend((child.lineno, f'{base.rstrip(".")}.{alias.name}') for alias in child.names)
            visit(child)

    visit(ast.parse(source))
    modules = []
    for line, name in found:
        if not name.startswith('compat_mts.'):
            continue
        name = name[len('compat_mts.') :]
        # `from compat_mts.hooks.stop import StopAtStepHook` names a class: keep the longest module prefix.
        parts = name.split('.')
        while parts and not _is_module('.'.join(parts)):
            parts.pop()
        if parts:
            modules.append((line, '.'.join(parts)))
    return modules


def _is_module(name: str) -> bool:
    path = PACKAGE.joinpath(*name.split('.'))
    return path.with_suffix('.py').is_file() or (path / '__init__.py').is_file()


TABLE = layer_table((REPO / 'ARCHITECTURE.md').read_text(encoding='utf-8'))
MODULES = sorted(path for path in PACKAGE.rglob('*.py') if path.name != '__init__.py' or path.parent != PACKAGE)


def test_the_table_has_the_layers_of_the_architecture():
    assert set(TABLE.values()) == set(range(max(TABLE.values()) + 1))
    assert layer_of('_tf_internals', TABLE) == 0 and layer_of('cli.main', TABLE) == max(TABLE.values())
    assert len(MODULES) > 50


def test_every_module_is_in_a_layer():
    unplaced = [module_name(path) for path in MODULES if layer_of(module_name(path), TABLE) is None]
    assert not unplaced, f'Add these to the table of ARCHITECTURE.md, "Layers": {unplaced}'
    stale = [name for name in TABLE if not _is_module(name)]
    assert not stale, f'ARCHITECTURE.md, "Layers", names modules that do not exist: {stale}'


@pytest.mark.parametrize('path', MODULES, ids=module_name)
def test_no_module_imports_a_module_of_a_higher_layer(path):
    own = layer_of(module_name(path), TABLE)
    upward = [
        f'{module_name(path)}:{line} imports {name} (layer {layer_of(name, TABLE)} > {own})'
        for line, name in imported_modules(path)
        if (layer_of(name, TABLE) or 0) > own
    ]
    assert not upward


def test_the_check_finds_an_upward_import_however_it_is_written():
    assert 'legacy.checkpoints' not in [
        name for _, name in imported_modules(PACKAGE / 'checkpoint_dir' / 'checkpoints.py')
    ]
    source = (
        'from compat_mts import legacy\n'
        'from compat_mts.core import fetch\n'
        'from compat_mts.legacy.checkpoints import CheckpointNames\n'
        'import compat_mts.cli.main as main\n'
        'def f():\n'
        '    from compat_mts.session.monitored_session import MonitoredSession\n'
        '    from .estimator import Estimator\n'
        'if TYPE_CHECKING:\n'
        '    from compat_mts import keras\n'
    )
    names = sorted({name for _, name in imports_in(source, [])})
    assert names == [
        'cli.main',
        'core',
        'core.fetch',
        'estimator',
        'legacy',
        'legacy.checkpoints',
        'session.monitored_session',
    ]
    assert [name for name in names if layer_of(name, TABLE) > layer_of('checkpoint_dir.checkpoints', TABLE)] == [
        'cli.main',
        'estimator',
        'legacy',
        'legacy.checkpoints',
        'session.monitored_session',
    ]


def import_graph() -> dict[str, set[str]]:
    """Module -> the compat_mts modules it imports, at any depth. `from compat_mts.cli import upgrade` is an edge
    to `cli.upgrade` alone: the package is named only to reach its module."""
    graph = {}
    for path in MODULES:
        by_line: dict[int, set[str]] = {}
        for line, name in imported_modules(path):
            by_line.setdefault(line, set()).add(name)
        edges = set()
        for names in by_line.values():
            edges |= {name for name in names if not any(other.startswith(name + '.') for other in names)}
        graph[module_name(path)] = edges - {module_name(path)}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of `graph`, one per strongly connected group of modules (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_modules_import_each_other_in_a_circle():
    """An upward import is refused above; this refuses the circles within one layer too."""
    assert import_circles(import_graph()) == []


def test_the_circle_check_finds_a_circle_of_three():
    graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'}, 'd': set()}
    assert import_circles(graph) == [['a', 'b', 'c']]
