"""`support.run_forked`: a v1 program forked from a server that imported TensorFlow is a v1 program of its own."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests import support

pytestmark = pytest.mark.slow  # The programs run in processes.

_V1_PROGRAM = """
import json, os, sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
with tf.compat.v1.Session() as session:
    total = session.run(tf.reduce_sum(tf.constant([1, 2])))
print(json.dumps({
    'argv': sys.argv[1:], 'cwd': os.getcwd(), 'total': int(total), 'eager': tf.executing_eagerly(),
    'compat_mts_loaded': any(name.split('.')[0] == 'compat_mts' for name in sys.modules),
}))
print('on stderr', file=sys.stderr)
sys.exit(5)
"""


def test_a_forked_v1_program_gets_its_arguments_directory_graph_mode_and_exit_status(tmp_path):
    for _ in range(2):  # The second runs in the server the first left: the server serves many programs.
        result = support.run_forked(_V1_PROGRAM, 'a', 'b c', cwd=str(tmp_path), timeout=120)
        assert result.returncode == 5, result.stderr[-3000:]
        assert json.loads(result.stdout) == {
            'argv': ['a', 'b c'],
            'cwd': str(tmp_path),
            'total': 3,
            'eager': False,
            'compat_mts_loaded': False,
        }
        assert 'on stderr' in result.stderr


def test_a_forked_program_that_raises_exits_1_with_its_traceback():
    result = support.run_forked('raise ValueError("wrong")\n', timeout=120)
    assert result.returncode == 1 and 'ValueError: wrong' in result.stderr


def test_a_forked_program_past_its_timeout_is_killed_and_the_server_serves_the_next():
    with pytest.raises(subprocess.TimeoutExpired):
        support.run_forked('import time\nprint("started", flush=True)\ntime.sleep(600)\n', timeout=2)
    assert support.run_forked('print("next")\n', timeout=120).stdout == 'next\n'
