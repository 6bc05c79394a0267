"""A fork server of Python programs: TensorFlow is imported once, here, not once per program.

Importing TensorFlow takes seconds of CPU, most of a short program's run. This process imports the MODULES it
is given, in order (no op is run, so TensorFlow's runtime is not started), then runs each program it is asked
to in a forked child: a real process of its own, with its own runtime, environment, working directory,
`sys.argv`, `__main__` module and standard streams, which exits with the program's exit status (1 and a
traceback on stderr for an exception, the `SystemExit` code otherwise, after its non-daemon threads and exit
handlers, as `python script.py ARGS` would). Programs run at once, side by side (a cluster's workers), each
until it ends or is killed: `tests/support.py`'s `popen` and `run` use it as `subprocess.Popen` and
`subprocess.run` are used.

What such a child cannot show is a difference made before TensorFlow is imported: an environment variable read
when TensorFlow or Keras is imported (`TF_USE_LEGACY_KERAS`, `TF_ENABLE_ONEDNN_OPTS`...) has the value it had
when this server started (`tests/support.py` starts one server per set of such values), and a test about what
importing prints or loads needs a fresh interpreter. Everything TensorFlow printed while this server imported
it went to the server's own stderr, not to a program's.

Protocol: the server prints `{"ready": true}` on stdout once it has imported its modules and listens on
SOCKET (an AF_UNIX SOCK_SEQPACKET socket). A client connects once per program and sends one message: a JSON
request `{"argv": [...], "cwd": directory, "env": {...}}` with three file descriptors attached (SCM_RIGHTS),
the program's stdin, stdout and stderr. `argv` is what follows the interpreter on a command line: a script
and its arguments, `-c CODE ARG...` or `-m MODULE ARG...`. The server answers `{"pid": pid}` when the child is
forked, then `{"status": status}` when it ends (-N when killed by signal N), and closes the connection. It
exits when its stdin closes; programs still running go on.

Usage: script_fork_server.py SOCKET MODULE...
"""

from __future__ import annotations

import atexit
import builtins
import importlib
import json
import os
import runpy
import selectors
import socket
import sys
import tempfile
import threading
import traceback
import types

_MAX_REQUEST_BYTES = 1 << 20


def _run_program(argv: list[str]) -> None:
    """Runs `python ARGV` (the program and its arguments) in this process."""
    if argv[0] == '-c':
        sys.argv = ['-c', *argv[2:]]
        sys.path[0] = ''  # As `python -c` puts the working directory first.
        main = types.ModuleType('__main__')
        main.__dict__['__builtins__'] = builtins
        sys.modules['__main__'] = main
        exec(compile(argv[1], '<string>', 'exec'), main.__dict__)  # noqa: S102  (the program, as `python -c` runs it)
    elif argv[0] == '-m':
        sys.argv = ['-m', *argv[2:]]
        sys.path[0] = os.getcwd()  # As `python -m` puts the working directory first.
        runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
    else:
        script = os.path.abspath(argv[0])
        sys.argv = [argv[0], *argv[1:]]
        sys.path[0] = os.path.dirname(script)  # As `python script.py` puts the script's directory first.
        runpy.run_path(script, run_name='__main__')


def _run_child(request: dict, streams: list[int]) -> int:
    """Runs the program of `request` in this (forked) process and returns its exit status."""
    for descriptor, stream in enumerate(streams):
        os.dup2(stream, descriptor)
    for stream in set(streams):
        if stream > 2:
            os.close(stream)
    os.environ.clear()
    os.environ.update(request['env'])  # Also the C library's environment, which TensorFlow's C++ reads.
    tempfile.tempdir = None  # `TMPDIR` is read again.
    os.chdir(request['cwd'])
    status = 0
    try:
        _run_program(request['argv'])
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


def _fork(request: dict, streams: list[int], inherited: list, descriptors: list[int]) -> int:
    """Forks the child that runs `request`; returns its pid (in the server).

    The child closes what it inherited of the server: `inherited` (sockets, the selector) and `descriptors`.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        for resource in inherited:  # The server's sockets, selector and descriptors: not the program's.
            resource.close()
        for descriptor in descriptors:
            os.close(descriptor)
        status = _run_child(request, streams)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status & 0xFF)


def _send(connection: socket.socket, message: dict) -> None:
    try:
        connection.send(json.dumps(message).encode())
    except OSError:
        pass  # The client went away; the program runs on.


def main(socket_path: str, modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(socket_path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, 'connection')
    selector.register(sys.stdin, selectors.EVENT_READ, 'stdin')
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the client's connection)
    print(json.dumps({'ready': True}), flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == 'stdin':
                if not os.read(sys.stdin.fileno(), 4096):
                    return
            elif key.data == 'connection':
                connection, _ = listener.accept()
                payload, streams, _, _ = socket.recv_fds(connection, _MAX_REQUEST_BYTES, 3)
                if len(streams) != 3:
                    for stream in streams:
                        os.close(stream)
                    _send(connection, {'error': f'3 file descriptors expected, got {len(streams)}'})
                    connection.close()
                    continue
                inherited = [listener, selector, connection] + [client for _, client in children.values()]
                pid = _fork(json.loads(payload), streams, inherited, list(children))
                for stream in streams:
                    os.close(stream)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, connection)
                selector.register(pidfd, selectors.EVENT_READ, 'child')
                _send(connection, {'pid': pid})
            else:
                pidfd = key.fd
                pid, connection = children.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _, wait_status = os.waitpid(pid, 0)
                _send(connection, {'status': os.waitstatus_to_exitcode(wait_status)})
                connection.close()


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
