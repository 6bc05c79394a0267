"""Real file systems for the fault tests: a read-only view of a directory, and a small tmpfs that fills up.

Mounting needs root (or CAP_SYS_ADMIN): where the machine cannot mount, the tests that need one are skipped,
saying why. Each mount is undone when its `with` block ends.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest


def _mount(*arguments: str) -> None:
    result = subprocess.run(['mount', *arguments], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f'this machine cannot mount file systems (mount {" ".join(arguments)}: {result.stderr.strip()})')


def _unmount(target: str) -> None:
    subprocess.run(['umount', target], check=True)


@contextlib.contextmanager
def read_only_view(source: str, target: str):
    """`source`, seen read-only at `target` (a bind mount): writing there fails even as root."""
    os.makedirs(target, exist_ok=True)
    _mount('--bind', '-o', 'ro', source, target)
    try:
        yield target
    finally:
        _unmount(target)


@contextlib.contextmanager
def small_file_system(target: str, size_kib: int):
    """A tmpfs of `size_kib` KiB at `target`: writing more than that fails with ENOSPC."""
    os.makedirs(target, exist_ok=True)
    _mount('-t', 'tmpfs', '-o', f'size={size_kib}k', 'tmpfs', target)
    try:
        yield target
    finally:
        _unmount(target)
