"""A program that imports compat_mts starts quietly: no TensorFlow C++ start-up block, no cuInit error.

Each case runs a real program in a fresh process (TensorFlow starts once per process), with TensorFlow's own
C++ log level left at its default, and compares its stderr with the same program run with the opt-out set.
"""

from __future__ import annotations

import pytest

from compat_mts import _quiet_start
from tests.support import run_python

pytestmark = pytest.mark.slow

# TensorFlow's C++ log level as a user has it: unset (run_python sets 2 for the other tests).
LOUD = {'TF_CPP_MIN_LOG_LEVEL': '0'}
OPTED_OUT = {**LOUD, _quiet_start.OPT_OUT_VARIABLE: '1'}
START_UP_MARKERS = ('absl::InitializeLog', 'port.cc:', 'cudart_stub.cc:', 'cpu_feature_guard.cc:', 'cuInit')

PROGRAM = """
import sys
{imports}
print('the program writes to stderr too', file=sys.stderr)
print(float(tf.reduce_sum(tf.constant([1.0, 2.0]))), mts.StopAtStepHook.__name__)
"""


def _start_up_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(marker in line for marker in START_UP_MARKERS)]


def _run(imports: str, env: dict) -> tuple[str, str]:
    result = run_python(PROGRAM.format(imports=imports), env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == '3.0 StopAtStepHook\n'
    assert 'the program writes to stderr too' in result.stderr
    return result.stdout, result.stderr


def test_compat_mts_imported_first_hides_the_start_up_block_and_the_cuinit_error():
    _, quiet = _run('import compat_mts as mts\nimport tensorflow as tf', LOUD)
    _, loud = _run('import compat_mts as mts\nimport tensorflow as tf', OPTED_OUT)
    assert _start_up_lines(loud), loud  # what TensorFlow prints on this machine without the filter
    assert _start_up_lines(quiet) == [], quiet
    assert quiet.strip() == 'the program writes to stderr too'


def test_tensorflow_imported_first_still_loses_the_cuinit_error():
    _, quiet = _run('import tensorflow as tf\nimport compat_mts as mts', LOUD)
    _, loud = _run('import tensorflow as tf\nimport compat_mts as mts', OPTED_OUT)
    # The import block was printed before compat_mts was imported; the first device lookup comes after.
    assert [line for line in _start_up_lines(quiet) if 'cuInit' in line] == []
    if any('cuInit' in line for line in loud.splitlines()):
        assert len(_start_up_lines(quiet)) < len(_start_up_lines(loud))


def test_the_filter_drops_the_known_start_up_lines_only():
    caught = (
        b'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n'
        b'I0000 00:00:1796355931.681472   31060 port.cc:153] oneDNN custom operations are on.\n'
        b'I0000 00:00:1796355931.681777   31060 cudart_stub.cc:31] Could not find cuda drivers on your machine, '
        b'GPU will not be used.\n'
        b'I0000 00:00:1796355931.908995   31060 cpu_feature_guard.cc:227] This TensorFlow binary is optimized.\n'
        b'To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the '
        b'appropriate compiler flags.\n'
        b'E0000 00:00:1796354700.299717   13705 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: '
        b'Failed call to cuInit: UNKNOWN ERROR (303)\n'
        b'/site-packages/foo.py:3: DeprecationWarning: a warning of the program\n'
        b'E0000 00:00:1796354700.299717   13705 graph.cc:52] an error the program must see\n'
    )
    assert _quiet_start.filter_start_up_lines(caught) == (
        b'/site-packages/foo.py:3: DeprecationWarning: a warning of the program\n'
        b'E0000 00:00:1796354700.299717   13705 graph.cc:52] an error the program must see\n'
    )
