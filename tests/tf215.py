"""TensorFlow 2.15, the last release with `tf.estimator`, in a virtualenv of its own: the Estimator reference.

The tests that compare compat_mts's Estimators with TensorFlow's own run TF 2.15 in a child process of a separate
virtualenv (TF 2.15 and TF 2.21 cannot share one). The virtualenv is made once per machine, on first use, in
`$COMPAT_MTS_TF215_VENV` or `~/.cache/compat-mts/venv-tf215-py3.X`, and reused after that; a lock file keeps two
test processes from building it at once. TF 2.15 has wheels for Python 3.9-3.11 only: where no such interpreter
is on the machine, or the package registry does not serve TF 2.15, the tests that need it are skipped, with that
reason.
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Callable

import pytest

from tests import support

PACKAGES = ('tensorflow==2.15.*', 'tensorflow-estimator==2.15.*')
_INTERPRETERS = ('python3.11', 'python3.10')
_verified: dict[str, str] = {}  # venv directory -> its Python, once this process saw TF 2.15 import in it.


def _base_interpreter() -> str | None:
    if sys.version_info[:2] in ((3, 10), (3, 11)):
        return getattr(sys, '_base_executable', None) or sys.executable
    for name in _INTERPRETERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _venv_dir(interpreter: str) -> str:
    if os.environ.get('COMPAT_MTS_TF215_VENV'):
        return os.environ['COMPAT_MTS_TF215_VENV']
    version = subprocess.run(
        [interpreter, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return os.path.join(os.path.expanduser('~'), '.cache', 'compat-mts', f'venv-tf215-py{version}')


def _works(python: str) -> bool:
    probe = 'import tensorflow as tf, tensorflow_estimator; assert tf.__version__.startswith("2.15")'
    result = subprocess.run([python, '-c', probe], capture_output=True, env=_child_env(), check=False)
    return result.returncode == 0


def _child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV')}
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    return env


def python() -> str:
    """The path of a Python with TensorFlow 2.15 and tensorflow-estimator; made on first use, else a skip.

    Raises:
      pytest.skip.Exception: no Python 3.10/3.11 on the machine, or TF 2.15 could not be installed from the
        package registry (the pip output is in the reason).
    """
    interpreter = _base_interpreter()
    if interpreter is None:
        pytest.skip('TensorFlow 2.15 (the Estimator reference) needs Python 3.10 or 3.11, and neither is installed')
    venv = _venv_dir(interpreter)
    venv_python = os.path.join(venv, 'bin', 'python')
    if _verified.get(venv) == venv_python and os.path.exists(venv_python):
        return venv_python  # Probed once per test process: the probe imports TensorFlow 2.15, seconds of CPU.
    os.makedirs(os.path.dirname(venv) or '.', exist_ok=True)
    with open(venv + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(venv_python) and _works(venv_python):
            _verified[venv] = venv_python
            return venv_python
        shutil.rmtree(venv, ignore_errors=True)
        steps = (
            [interpreter, '-m', 'venv', venv],
            [venv_python, '-m', 'pip', 'install', '--quiet', *PACKAGES],
        )
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, env=_child_env(), check=False)
            if result.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                pytest.skip(
                    f'TensorFlow 2.15 (the Estimator reference) could not be installed: {" ".join(step)} '
                    f'exited {result.returncode}: {result.stderr.strip()[-600:]}'
                )
    _verified[venv] = venv_python
    return venv_python


def run(code_or_path: str, *args: str, timeout: float = 600, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs a script file or a code string under TF 2.15 (see `python()`); the result is not checked.

    The child sees the repository root on PYTHONPATH (for `tests.support`), but it must not import compat_mts: that
    package needs TF >= 2.16.
    """
    env = _child_env()
    env['PYTHONPATH'] = support.REPO_ROOT
    command = [python(), code_or_path, *args] if os.path.isfile(code_or_path) else [python(), '-c', code_or_path, *args]
    return subprocess.run(
        command, env=env, cwd=cwd or support.REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def results_beside(script: str, own_results: Callable[[], Any], *args: str, timeout: float = 900) -> tuple[Any, Any]:
    """`(own_results(), the script's results)`: the script runs under TF 2.15 while this process runs its own side.

    The two run side by side (the machines have two cores). The script prints its results as one JSON line
    after `RESULTS:`; `own_results()` is made JSON (and back) too, so both sides compare as the same types.

    Raises:
      AssertionError: the script failed (its stderr's end is the message).
    """
    python()  # Made (or skipped) here, not in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        child = pool.submit(run, script, *args, timeout=timeout)
        ours = own_results()
        child = child.result()
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(json.dumps(ours)), json.loads(child.stdout.split('RESULTS:', 1)[1])
