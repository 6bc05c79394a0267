"""The modules' paths before the concept folders (`compat_mts._moved`): each is the module at its new path, under
both names, and warns once that it moved; nothing in the package or the tests imports an old path."""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys
import warnings

import pytest

from compat_mts import _moved

REPO = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize('old', sorted(_moved.MOVED))
def test_an_old_path_is_the_module_at_its_new_path_and_warns_once(old, monkeypatch):
    new = _moved.MOVED[old]
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f'^{old} moved to {new}; import it from there'):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == module.__spec__.name == new
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert importlib.import_module(old) is module


def test_compat_mts_distribute_is_public_and_does_not_warn(monkeypatch):
    monkeypatch.delitem(sys.modules, 'compat_mts.distribute', raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        module = importlib.import_module('compat_mts.distribute')
        from compat_mts.distribute import ClusterError
    import compat_mts

    assert module is importlib.import_module('compat_mts.deploy.distribute') is compat_mts.distribute
    assert ClusterError is module.ClusterError


def test_patching_through_an_old_path_patches_the_module(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        old = importlib.import_module('compat_mts.progress')
    from compat_mts.core import progress

    monkeypatch.setattr(old, 'patched_for_the_test', 5, raising=False)
    assert progress.patched_for_the_test == 5


def test_nothing_imports_an_old_path():
    paths = [*sorted((REPO / 'compat_mts').rglob('*.py')), *sorted((REPO / 'tests').glob('*.py'))]
    found = []
    for path in paths:
        if path.name == 'test_moved.py':
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f'{node.module}.{alias.name}' for alias in node.names]
            else:
                continue
            found += [f'{path.relative_to(REPO)}:{node.lineno}: {name}' for name in names if name in _moved.MOVED]
    assert not found
