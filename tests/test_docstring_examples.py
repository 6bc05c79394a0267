"""The `>>>` examples of the package's docstrings run and show what they say, each in a fresh program.

Every module of `compat_mts/` whose source holds one is searched (`doctest.DocTestFinder`), so a new example
runs here without being listed; each docstring's examples are one test, under the suite's `fresh_program`.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def _module_names() -> list[str]:
    names = []
    for path in sorted((REPO / 'compat_mts').rglob('*.py')):
        if '>>> ' in path.read_text(encoding='utf-8'):
            parts = path.relative_to(REPO).with_suffix('').parts
            names.append('.'.join(parts[:-1] if parts[-1] == '__init__' else parts))
    return names


def _examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [test for name in _module_names() for test in finder.find(importlib.import_module(name)) if test.examples]


EXAMPLES = _examples()


def test_the_concepts_explained_by_numbers_have_examples():
    names = {test.name.rsplit('.', 1)[-1] for test in EXAMPLES}
    assert {'SecondOrStepTimer', 'repeat_steps', 'StopAtStepHook', 'CheckpointSaverHook'} <= names, names


@pytest.mark.parametrize('example', EXAMPLES, ids=lambda test: test.name)
def test_the_example_shows_what_it_says(example):
    output = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(example, out=output.write)
    assert result.failed == 0, output.getvalue()
