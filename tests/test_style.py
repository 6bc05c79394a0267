"""The code base passes the linter and the formatter configured in pyproject.toml (`[tool.ruff]`)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # ruff runs in a process of its own.

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECKED = ['compat_mts', 'tests', 'benchmarks']


def ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, '-m', 'ruff', *arguments, *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ruff_check_passes():
    result = ruff('check', '--output-format', 'concise')
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_ruff_format_leaves_every_file_as_it_is():
    result = ruff('format', '--check')
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_no_comment_speaks_to_a_linter_the_project_does_not_run():
    marker = 'pylint' + ':'  # Spelled in two parts, so that this file does not hold it.
    found = [
        f'{path.relative_to(ROOT)}:{number}'
        for directory in CHECKED
        for path in sorted((ROOT / directory).rglob('*.py'))
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1)
        if marker in line
    ]
    assert found == []
