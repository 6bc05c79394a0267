"""A program that imports compat_mts ends without Python's collections walking what is still alive at exit.

Each case is a fresh process (the exit handler is the process's): its own exit handler, registered before
`import compat_mts` and so run after compat_mts's, reports whether the collector's objects were frozen; an object
in a reference cycle made garbage just before the end, with the automatic collections off, reports its finalizer.
"""

from __future__ import annotations

import pytest

from compat_mts import _quick_exit
from tests.support import run_python

pytestmark = pytest.mark.slow

PROGRAM = """
import atexit
import gc

atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0, flush=True))

import compat_mts


class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        print('finalized', flush=True)


gc.disable()
Cycle()
print('last line', flush=True)
"""


def _exit_lines(env: dict) -> list[str]:
    result = run_python(PROGRAM, env=env, fresh=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_the_exit_finalizes_the_garbage_then_freezes_what_is_alive():
    assert _exit_lines({}) == ['last line', 'finalized', 'frozen: True']


def test_the_opt_out_leaves_pythons_exit_as_it_is():
    lines = _exit_lines({_quick_exit.OPT_OUT_VARIABLE: '1'})
    assert lines[:2] == ['last line', 'frozen: False']
    assert 'finalized' in lines[2:]  # Python's own collection at the teardown finalizes it, after the handlers.
