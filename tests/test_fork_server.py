"""`support.popen` and `support.run`: a program forked from a server that imported TensorFlow is a process of its
own, used as `subprocess.Popen` and `subprocess.run` are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import support

pytestmark = pytest.mark.slow  # The programs run in processes.

_V1_PROGRAM = """
import json, os, sys, tempfile
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
with tf.compat.v1.Session() as session:
    total = session.run(tf.reduce_sum(tf.constant([1, 2])))
print(json.dumps({
    'argv': sys.argv[1:], 'cwd': os.getcwd(), 'total': int(total), 'eager': tf.executing_eagerly(),
    'compat_mts_loaded': any(name.split('.')[0] == 'compat_mts' for name in sys.modules),
    'main': __name__, 'path0': sys.path[0], 'variable': os.environ.get('FORKED_VARIABLE'),
    'tempdir': tempfile.gettempdir(), 'server': os.getppid(),
}))
print('on stderr', file=sys.stderr)
sys.exit(5)
"""


def test_a_forked_v1_program_gets_its_arguments_directory_environment_graph_mode_and_exit_status(tmp_path):
    script = tmp_path / 'program.py'
    script.write_text(_V1_PROGRAM)
    temporary = tmp_path / 'tmp'
    temporary.mkdir()
    servers = set()
    for value in ('first', 'second'):  # The second runs in the server the first left: it serves many programs.
        env = dict(support._child_env(), FORKED_VARIABLE=value, TMPDIR=str(temporary))
        result = support.run(
            [sys.executable, str(script), 'a', 'b c'], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert result.returncode == 5, result.stderr[-3000:]
        printed = json.loads(result.stdout)
        servers.add(printed.pop('server'))
        assert printed == {
            'argv': ['a', 'b c'],
            'cwd': str(tmp_path),
            'total': 3,
            'eager': False,
            'compat_mts_loaded': False,
            'main': '__main__',
            'path0': str(tmp_path),
            'variable': value,
            'tempdir': str(temporary),
        }
        assert 'on stderr' in result.stderr
    assert len(servers) == 1 and os.getpid() not in servers


def test_code_and_modules_run_as_python_c_and_python_m_run_them(tmp_path):
    code = 'import sys; print(sys.argv, sys.path[0] == "", __name__)'
    result = support.run([sys.executable, '-c', code, 'x'], cwd=tmp_path, capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "['-c', 'x'] True __main__\n"), result.stderr
    (tmp_path / 'module_here.py').write_text('import sys\nprint(sys.argv[1:], __name__)\n')
    result = support.run([sys.executable, '-m', 'module_here', 'y'], cwd=tmp_path, capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "['y'] __main__\n"), result.stderr


def test_a_forked_program_that_raises_exits_1_with_its_traceback():
    result = support.run_python('raise ValueError("wrong")\n', timeout=120)
    assert result.returncode == 1 and 'ValueError: wrong' in result.stderr


def test_a_forked_program_past_its_timeout_is_killed_and_the_server_serves_the_next():
    with pytest.raises(subprocess.TimeoutExpired):
        support.run_python('import time\nprint("started", flush=True)\ntime.sleep(600)\n', timeout=2)
    assert support.run_python('print("next")\n', timeout=120).stdout == 'next\n'


def test_programs_run_side_by_side_stream_their_output_and_end_by_signal_or_exit(tmp_path):
    waiting = 'import sys, time\nprint("up", flush=True)\nsys.stdin.readline()\nprint("bye")\nsys.exit(7)\n'
    first = support.popen(
        [sys.executable, '-c', waiting], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    second = support.popen(
        [sys.executable, '-c', 'import time; print("up", flush=True); time.sleep(600)'],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout.readline() == b'up\n' and second.stdout.readline() == 'up\n'  # Both running at once.
    assert first.pid != second.pid and first.poll() is None and second.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        second.wait(timeout=0.2)
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=60) == -signal.SIGTERM
    stdout, _ = first.communicate(b'go\n', timeout=60)
    assert (first.returncode, stdout) == (7, b'bye\n')
    with open(tmp_path / 'out', 'w') as out:
        ended = support.popen([sys.executable, '-c', 'print("to a file")'], stdout=out, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while ended.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert ended.returncode == 0 and (tmp_path / 'out').read_text() == 'to a file\n'


def test_an_import_time_variable_gets_a_server_of_its_own_and_other_command_lines_a_fresh_interpreter():
    probe = 'import os, tensorflow as tf; print(os.environ.get("TF_USE_LEGACY_KERAS"), tf.keras.__name__.split(".")[0])'
    default = support.run_python(probe)
    legacy = support.run_python(probe, env={'TF_USE_LEGACY_KERAS': '1'})
    assert default.stdout.split() == ['None', 'keras'], default.stderr[-3000:]
    assert legacy.stdout.split() == ['1', 'tf_keras'], legacy.stderr[-3000:]  # tf-keras: read when TF was imported.
    assert {server.import_time for server in support._servers if server.alive()} >= {
        support._import_time(support._child_env()),
        support._import_time(dict(support._child_env(), TF_USE_LEGACY_KERAS='1')),
    }
    unbuffered = support.popen([sys.executable, '-u', '-c', 'print(1)'], stdout=subprocess.PIPE)
    assert isinstance(unbuffered, subprocess.Popen)
    assert unbuffered.communicate(timeout=60)[0] == b'1\n'


def test_a_program_forked_from_a_server_started_before_os_environ_changed_sees_the_change(monkeypatch):
    support.run_python('pass')  # A server for these import-time variables now exists.
    monkeypatch.setenv('FORKED_LATER', 'yes')
    result = support.run_python('import os; print(os.environ["FORKED_LATER"], os.getenv("FORKED_LATER"))')
    assert result.stdout == 'yes yes\n', result.stderr[-3000:]
    assert os.environ['FORKED_LATER'] == 'yes'
