"""A fork server of Python programs: TensorFlow is imported once, here, not once per program.

Importing TensorFlow takes seconds of CPU, most of a short program's run. This process imports the MODULES it
is given, in order (no op is run, so TensorFlow's runtime is not started), then runs each program it is asked
to in a forked child: a real process of its own, with its own runtime, working directory, `sys.argv`,
`__main__` module and standard streams, which exits with the program's exit status (1 and a traceback on
stderr for an exception, the `SystemExit` code otherwise, after its non-daemon threads and exit handlers, as
`python script.py ARGS` would). The guide's blocks run in one that imported `compat_mts tensorflow` (compat_mts
first, as the blocks import it, so TensorFlow starts quietly); the v1 sides of comparisons in one that imported
only `tensorflow` (`tests/support.run_forked`), so that nothing of compat_mts is loaded in a v1 program.

What such a child cannot show is a difference made before TensorFlow is imported: a program that sets
environment variables TensorFlow or Keras read when imported (`TF_USE_LEGACY_KERAS`...), or whose test is about
what importing prints or loads, must run in a fresh interpreter instead.

Protocol, one JSON object a line: the server prints `{"ready": true}` once imported; for each request
`{"argv": [script, arg...], "cwd": directory, "stdout": path, "stderr": path}` read on stdin it prints
`{"started": pid}`, then `{"ended": pid, "status": exit_status}` when the child ends (a child killed by signal N
ends with status -N). It exits when stdin closes.

Usage: script_fork_server.py MODULE...
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import sys
import threading
import traceback


def _run_child(request: dict) -> int:
    """Runs the program of `request` in this (forked) process and returns its exit status."""
    for descriptor, path in ((1, request['stdout']), (2, request['stderr'])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, descriptor)
        os.close(target)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.chdir(request['cwd'])
    script = os.path.abspath(request['argv'][0])
    sys.argv = [script, *request['argv'][1:]]
    sys.path[0] = os.path.dirname(script)  # As `python script.py` puts the script's directory first.
    status = 0
    try:
        runpy.run_path(script, run_name='__main__')
    except SystemExit as exit_:
        if exit_.code is None:
            status = 0
        elif isinstance(exit_.code, int):
            status = exit_.code
        else:
            print(exit_.code, file=sys.stderr)
            status = 1
    except BaseException:  # Reported on stderr and in the exit status, as the interpreter does.
        traceback.print_exc()
        status = 1
    for thread in threading.enumerate():  # The interpreter waits for non-daemon threads before it exits.
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # What the interpreter runs at exit; `os._exit` below skips it.
    return status


def main(modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = _run_child(request)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(status & 0xFF)
        print(json.dumps({'started': pid}), flush=True)
        _, wait_status = os.waitpid(pid, 0)
        print(json.dumps({'ended': pid, 'status': os.waitstatus_to_exitcode(wait_status)}), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
