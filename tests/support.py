"""Shared helpers for the compat_mts tests: subprocesses, checkpoint and event-file inspection, log capture.

Everything here is a plain function (or one small hook class) so that both the pytest modules and the standalone
scenario scripts (`tests/v1_reference.py`, `tests/compat_reference.py`) can use it. TensorFlow is imported
lazily, inside the functions that need it, so that importing this module from a pytest process stays cheap.
"""

import atexit
import functools
import glob
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_DIR = os.path.join(REPO_ROOT, 'tests')

_CHECKPOINT_INDEX = re.compile(r'^model\.ckpt-(\d+)\.index$')
_CHECKPOINT_PATH = re.compile(r'model\.ckpt-(\d+)$')


def run_python(code_or_path, *args, env=None, timeout=300, cwd=None, fresh=False):
    """Runs Python on a script file or a code string in a child process and returns the CompletedProcess.

    The child gets `TF_CPP_MIN_LOG_LEVEL=2` (no C++ info noise) and the repository root first on PYTHONPATH, so
    it imports this checkout's `compat_mts`. It is forked from a server that imported TensorFlow (`run`), unless
    `fresh`: a test about what importing prints or loads needs a fresh interpreter. stdout and stderr are
    captured as text; the return code is not checked (callers assert on it, and show stderr when it is not what
    they expected).

    Args:
      code_or_path: path of an existing `.py` file, or Python source to run with `-c`.
      *args: command-line arguments for the script.
      env: extra environment variables, applied over the current environment.
      timeout: seconds before the child is killed and `subprocess.TimeoutExpired` raised.
      cwd: working directory of the child (default: the repository root).
      fresh: run `sys.executable` itself, not a fork of a server.
    """
    child_env = _child_env()
    child_env.update(env or {})
    if os.path.isfile(code_or_path):
        command = [sys.executable, code_or_path, *args]
    else:
        command = [sys.executable, '-c', code_or_path, *args]
    return (subprocess.run if fresh else run)(
        command, env=child_env, cwd=cwd or REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def run_pythons(*calls, **common):
    """`run_python` for each of `calls` (tuples of its positional arguments), two at a time; results in order.

    For the v1 and compat_mts sides of one comparison (v1's first, by convention): independent processes, and
    the machines have two cores. `common` holds keyword arguments of `run_python` shared by all calls.
    """
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda call: run_python(*call, **common), calls))


def _child_env():
    """A child's environment: TensorFlow's C++ chatter off, this checkout first on the path."""
    child_env = dict(os.environ)
    child_env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    child_env['PYTHONPATH'] = os.pathsep.join(
        [REPO_ROOT] + [p for p in child_env.get('PYTHONPATH', '').split(os.pathsep) if p]
    )
    return child_env


# Forked programs (`tests/script_fork_server.py`).

# Variables read when Python, TensorFlow, Keras, matplotlib or compat_mts are imported: a program forked from a
# server sees the values the server was started with, so each set of values has a server of its own.
_IMPORT_TIME_VARIABLE = re.compile(
    r'(TF_(?!CONFIG$)|KERAS_|PYTHON|CUDA_|XLA_|OMP_|MKL|LD_|GRPC_|MPLBACKEND$'
    r'|COMPAT_MTS_(SHOW_TF_STARTUP|NO_PRIVATE_TF)$)'
)
_SERVER_SCRIPT = os.path.join(TESTS_DIR, 'script_fork_server.py')


def _import_time(env):
    """`env`'s import-time variables; PYTHONPATH as the path it makes (an entry given twice counts once)."""
    variables = {name: value for name, value in env.items() if _IMPORT_TIME_VARIABLE.match(name)}
    if 'PYTHONPATH' in variables:
        variables['PYTHONPATH'] = os.pathsep.join(dict.fromkeys(variables['PYTHONPATH'].split(os.pathsep)))
    return tuple(sorted(variables.items()))


class ForkServer:
    """A `tests/script_fork_server.py` process that imported `modules` with the import-time variables of `env`.

    Each program runs in a process forked from the server, so it starts with those modules imported instead of
    importing TensorFlow itself (seconds of CPU); programs run side by side. See that script for what such a
    child is and is not. `fork_server` shares one per set of modules and import-time variables.
    """

    def __init__(self, modules, env):
        self.modules = tuple(modules)
        self.import_time = _import_time(env)
        self._directory = tempfile.mkdtemp(prefix='fork-server-')
        if len(self._directory) > 80:  # A socket's path has room for about 100 bytes.
            os.rmdir(self._directory)
            self._directory = tempfile.mkdtemp(prefix='fork-server-', dir='/tmp')
        self.path = os.path.join(self._directory, 'socket')
        # What TensorFlow prints while the server imports it is the server's, not a program's: kept aside.
        self._log = open(os.path.join(self._directory, 'stderr'), 'w+', encoding='utf-8')  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, _SERVER_SCRIPT, self.path, *self.modules],
            cwd=REPO_ROOT,
            env=dict(self.import_time, **{k: v for k, v in os.environ.items() if not _IMPORT_TIME_VARIABLE.match(k)}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        line = self._process.stdout.readline()
        if not line or 'ready' not in json.loads(line):
            self._log.seek(0)
            raise RuntimeError(
                f'The fork server of {self.modules} exited (status {self._process.wait()}) before it was ready: '
                f'{line}{self._log.read()[-3000:]}'
            )

    def serves(self, modules, env):
        return self.modules == tuple(modules) and self.import_time == _import_time(env)

    def alive(self):
        return self._process.poll() is None

    def popen(self, argv, *, cwd, env, stdin=None, stdout=None, stderr=None, text=False):
        """Starts `python ARGV` (`argv`: a script and its arguments, `-c CODE ...` or `-m MODULE ...`)."""
        return ForkedProcess(self, [sys.executable, *map(str, argv)], str(cwd), env, stdin, stdout, stderr, text)

    def close(self):
        self._process.stdin.close()
        self._process.wait(timeout=60)
        self._process.stdout.close()
        self._log.close()
        shutil.rmtree(self._directory, ignore_errors=True)


class ForkedProcess:
    """A program forked from a `ForkServer`, used as a `subprocess.Popen` is.

    `pid`, `args`, `returncode`, `stdin`/`stdout`/`stderr` (for `PIPE`), `poll`, `wait`, `communicate`,
    `send_signal`, `terminate`, `kill` and `with` behave as Popen's; the process is the server's child, so
    only the server can reap it, and this object learns its exit status from the server.
    """

    def __init__(self, server, args, cwd, env, stdin, stdout, stderr, text):
        sys.audit('tests.support.fork', args)  # A process started, as `subprocess.Popen` says (tests/conftest.py).
        self.args = args
        self.returncode = None
        self._lock = threading.Lock()
        self._readers = {}
        self._output = {}
        streams, theirs, ours = [], [], {}
        for name, spec, default in (('stdin', stdin, 0), ('stdout', stdout, 1), ('stderr', stderr, 2)):
            if spec is None:
                descriptor = default
            elif spec == subprocess.PIPE:
                read, write = os.pipe()
                descriptor, mine = (read, write) if name == 'stdin' else (write, read)
                theirs.append(descriptor)
                mode = ('w' if name == 'stdin' else 'r') + ('' if text else 'b')
                ours[name] = open(mine, mode)  # noqa: SIM115  (closed by communicate or `with`)
            elif spec == subprocess.DEVNULL:
                descriptor = os.open(os.devnull, os.O_RDWR)
                theirs.append(descriptor)
            elif spec == subprocess.STDOUT:
                descriptor = streams[1]
            else:
                descriptor = spec if isinstance(spec, int) else spec.fileno()
            streams.append(descriptor)
        self.stdin, self.stdout, self.stderr = ours.get('stdin'), ours.get('stdout'), ours.get('stderr')
        request = {'argv': args[1:], 'cwd': cwd, 'env': dict(env)}
        self._connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._connection.connect(server.path)
            socket.send_fds(self._connection, [json.dumps(request).encode()], streams)
            answer = json.loads(self._connection.recv(4096) or b'{}')
        finally:
            for descriptor in theirs:
                os.close(descriptor)
        if 'pid' not in answer:
            raise RuntimeError(f'The fork server did not start {args[1:]!r}: {answer or "it closed the connection"}')
        self.pid = answer['pid']

    def _ended(self, message):
        if not message:
            raise RuntimeError(f'The fork server went away before process {self.pid} ({self.args[1:]!r}) ended.')
        self.returncode = json.loads(message)['status']
        self._connection.close()

    def poll(self):
        if self.returncode is None and self._lock.acquire(blocking=False):
            try:
                if self.returncode is None:
                    self._connection.setblocking(False)
                    try:
                        message = self._connection.recv(4096)
                    except BlockingIOError:
                        return None
                    self._ended(message)
            finally:
                self._lock.release()
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        try:
            if self.returncode is None:
                self._connection.settimeout(None if deadline is None else max(0.0, deadline - time.monotonic()))
                try:
                    message = self._connection.recv(4096)
                except TimeoutError:
                    raise subprocess.TimeoutExpired(self.args, timeout) from None
                self._ended(message)
        finally:
            self._lock.release()
        return self.returncode

    def send_signal(self, signal_number):
        if self.returncode is None:
            try:
                os.kill(self.pid, signal_number)
            except ProcessLookupError:
                pass  # It ended; the server has the status.

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def communicate(self, input=None, timeout=None):  # noqa: A002  (Popen's name)
        """Popen's: writes `input`, reads stdout and stderr to their ends and waits; (stdout, stderr)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.stdin is not None and not self.stdin.closed:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        for name in ('stdout', 'stderr'):
            stream = getattr(self, name)
            if stream is not None and name not in self._readers:
                self._readers[name] = threading.Thread(
                    target=lambda name=name, stream=stream: self._output.__setitem__(name, stream.read()), daemon=True
                )
                self._readers[name].start()
        for reader in self._readers.values():
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for name in ('stdout', 'stderr'):
            stream = getattr(self, name)
            if stream is not None:
                stream.close()
        return self._output.get('stdout'), self._output.get('stderr')

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


@functools.cache
def _can_fork_servers():
    """Whether this machine has what the fork servers use: `pidfd_open` (Linux 5.3) and file-descriptor passing."""
    if not (hasattr(os, 'pidfd_open') and hasattr(socket, 'send_fds')):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # An older kernel, or a sandbox that refuses the call.
        return False
    return True


def _forkable(command):
    """Whether `command` is `python SCRIPT ...`, `python -c CODE ...` or `python -m MODULE ...` on this machine."""
    if not _can_fork_servers():
        return False  # Every program gets a fresh interpreter.
    if len(command) < 2 or command[0] != sys.executable:
        return False
    return command[1] in ('-c', '-m') and len(command) > 2 or not command[1].startswith('-')


_SERVERS_LOCK = threading.Lock()
_servers = []  # The ForkServers of this process, each for its modules and import-time variables.


def fork_server(modules=('tensorflow',), env=None):
    """The `ForkServer` of this process for `modules` and `env`'s import-time variables; started on first use."""
    env = _child_env() if env is None else env
    with _SERVERS_LOCK:
        for server in _servers:
            if server.serves(modules, env) and server.alive():
                return server
        server = ForkServer(modules, env)
        _servers.append(server)
        return server


@atexit.register
def _close_servers():
    with _SERVERS_LOCK:
        servers, _servers[:] = list(_servers), []
    for server in servers:
        server.close()


def popen(command, *, env=None, cwd=None, stdin=None, stdout=None, stderr=None, text=False, modules=('tensorflow',)):
    """`subprocess.Popen(command, ...)` for `[sys.executable, ...]`, forked from the server that imported `modules`.

    The program is a process of its own, with its own TensorFlow runtime, environment, directory and streams, as
    with Popen, but it does not pay TensorFlow's import. The default server imported only TensorFlow, so nothing
    of compat_mts is loaded in a v1 program. Not for a program whose test is about what importing prints or
    loads: that needs `subprocess.Popen`. Another command line, or a machine without `pidfd_open` and file
    descriptor passing, gets `subprocess.Popen` itself.
    """
    command = [str(part) for part in command]
    env = dict(os.environ if env is None else env)
    cwd = str(cwd or os.getcwd())
    if not _forkable(command):
        return subprocess.Popen(command, env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, text=text)
    return fork_server(modules, env).popen(
        command[1:], cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr, text=text
    )


def run(command, *, input=None, capture_output=False, timeout=None, check=False, **popen_kwargs):  # noqa: A002
    """`subprocess.run` on `popen`: the CompletedProcess of `command`, killed after `timeout` seconds."""
    if capture_output:
        popen_kwargs['stdout'] = popen_kwargs['stderr'] = subprocess.PIPE
    if input is not None:
        popen_kwargs['stdin'] = subprocess.PIPE
    with popen(command, **popen_kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    completed = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    if check:
        completed.check_returncode()
    return completed


def run_v1_and_compat(v1_call, compat_call, **common):
    """The v1 and compat_mts sides of a comparison by `run_python`, at the same time.

    `v1_call` and `compat_call` are tuples of positional arguments; `common` holds keyword arguments shared by
    both (`timeout`, `cwd`). Returns the two CompletedProcesses, v1's first.
    """
    return run_pythons(v1_call, compat_call, **common)


def last_json_line(stdout):
    """Parses the last non-empty line of `stdout` as JSON (scripts print their one result object last)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ValueError('The script printed nothing on stdout.')
    return json.loads(lines[-1])


def checkpoint_steps(directory):
    """Returns the sorted steps N of the `model.ckpt-N.index` files in `directory` (not recursive)."""
    if not os.path.isdir(directory):
        return []
    return sorted(int(match.group(1)) for match in map(_CHECKPOINT_INDEX.match, os.listdir(directory)) if match)


def state_file_steps(directory):
    """Returns the steps listed in `directory`'s `checkpoint` state file, in file order.

    The steps of `all_model_checkpoint_paths`, read with `tf.train.get_checkpoint_state` (absolute and relative
    paths alike). `[]` when there is no state file. The last entry is the `model_checkpoint_path` one.
    """
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    return [_step_of(path) for path in state.all_model_checkpoint_paths]


def latest_checkpoint_step(directory):
    """Returns the step of the `checkpoint` state file's `model_checkpoint_path`, or None without one."""
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(directory)
    return None if state is None else _step_of(state.model_checkpoint_path)


def _step_of(path):
    match = _CHECKPOINT_PATH.search(path)
    return int(match.group(1)) if match else path


def events_files(directory):
    """Returns the paths of the `events.out.tfevents.*` files directly in `directory`, in the order they were made.

    Only the directory itself, not its subdirectories: that is where v1's `FileWriterCache` writes and where a
    TensorBoard pointed at `summary_dir` finds the run. The numbers in the names (the second, the process, the
    writer's count) compare as numbers: a process's tenth writer of a second comes after its ninth.
    """

    def made(path):
        return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', os.path.basename(path))]

    return sorted(glob.glob(os.path.join(glob.escape(directory), 'events.out.tfevents.*')), key=made)


def _events(directory):
    """Yields the events of `directory`'s files as TensorBoard reads them: a truncated last record ends a file.

    (A writer that was never flushed or closed, as v1 leaves one when `end()` is skipped, can leave one.)
    """
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    for path in events_files(directory):
        yield from LegacyEventFileLoader(path).Load()


def read_events(directory):
    """Returns `{tag: [(step, value), ...]}` for every scalar summary value in `directory`'s events files.

    Both encodings count: v1's `simple_value` and TF2's `tensor` (what `tf.summary.scalar` writes). Events
    without summary values (file version, graph_def, meta_graph_def, session logs) are skipped; see
    `has_graph_event` and `value_kinds`. Values are Python floats, in file order within each tag.
    """
    scalars = {}
    for event in _events(directory):
        for value in event.summary.value:
            number = _scalar_of(value)
            if number is not None:
                scalars.setdefault(value.tag, []).append((int(event.step), number))
    return scalars


def read_records(directory):
    """Returns `[(tag, step, value), ...]` of every scalar summary value in `directory`'s events files, in file
    order across tags (the order the writer received them); values as in `read_events`."""
    return [
        (value.tag, int(event.step), _scalar_of(value))
        for event in _events(directory)
        for value in event.summary.value
        if _scalar_of(value) is not None
    ]


def value_kinds(directory):
    """Returns `{tag: sorted list of encodings}`, each `'simple_value'` or `'tensor'`, of `directory`'s scalars."""
    kinds = {}
    for event in _events(directory):
        for value in event.summary.value:
            kind = value.WhichOneof('value')
            if kind in ('simple_value', 'tensor'):
                kinds.setdefault(value.tag, set()).add(kind)
    return {tag: sorted(found) for tag, found in kinds.items()}


def _scalar_of(value):
    import tensorflow as tf

    kind = value.WhichOneof('value')
    if kind == 'simple_value':
        return float(value.simple_value)
    if kind == 'tensor':
        array = tf.make_ndarray(value.tensor)
        if array.size == 1 and array.dtype.kind in 'fiub':
            return float(array.reshape(()))
    return None


def has_graph_event(directory):
    """Whether any events file in `directory` holds a `graph_def` event (what TensorBoard's graph tab shows)."""
    return any(event.WhichOneof('what') == 'graph_def' for event in _events(directory))


def listed_files(directory):
    """Returns the sorted names of the files under `directory`, recursively, relative to it."""
    names = []
    for root, _, files in os.walk(directory):
        names.extend(os.path.relpath(os.path.join(root, name), directory) for name in files)
    return sorted(names)


def jsonable(value):
    """Turns a fetched value (NumPy scalars and arrays, bytes, nested dicts/lists/tuples) into JSON data."""
    import numpy as np

    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


class LogRecorder(logging.Handler):
    """A logging handler that keeps `record.getMessage()` of every record at INFO and above.

    `install()` puts it on the root logger and lowers the `tensorflow` logger (v1's `tf_logging` and compat_mts
    both log through it, and it propagates) to INFO, so its lines are captured whatever handlers it has of its
    own.
    """

    def __init__(self):
        super().__init__(level=logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def install(self):
        root = logging.getLogger()
        root.addHandler(self)
        if root.level > logging.INFO or root.level == logging.NOTSET:
            root.setLevel(logging.INFO)
        logging.getLogger('tensorflow').setLevel(logging.INFO)
        return self

    def take(self):
        """Returns the messages recorded since the last call and forgets them."""
        messages, self.messages = self.messages, []
        return messages


@functools.lru_cache(maxsize=None)
def recording_hook_class():
    """Returns `RecordingHook`, a `tf.compat.v1.train.SessionRunHook` subclass that logs each protocol call.

    Built on demand so that this module does not import TensorFlow. Both scenario scripts use the very same
    class: compat_mts must accept a user hook that subclasses the v1 class and returns the v1 `SessionRunArgs`.
    """
    import tensorflow as tf

    class RecordingHook(tf.compat.v1.train.SessionRunHook):
        """Appends `[name, method, details...]` to `calls` for each protocol call.

        Args:
          name: the hook's name in the record.
          calls: the shared list the records go to (several hooks share one, so the order across hooks shows).
          fetches: what `before_run` asks for (`SessionRunArgs(fetches)`), or None to ask for nothing.
          global_step: a fetch of the global step; when given, `after_create_session` and `end` record
            `session.run(global_step)` on the raw session they are handed.
          stop_at_run: in its N-th `before_run` (1-based) the hook calls `run_context.request_stop()`.
          raise_in_after_run: `(run, exception)`: raise `exception` from the N-th `after_run`.
        """

        def __init__(self, name, calls, fetches=None, global_step=None, stop_at_run=None, raise_in_after_run=None):
            self.name = name
            self.calls = calls
            self.fetches = fetches
            self.global_step = global_step
            self.stop_at_run = stop_at_run
            self.raise_in_after_run = raise_in_after_run
            self.runs = 0
            self.last_end_step = None

        def _step(self, session):
            if self.global_step is None or session is None:
                return []
            return [jsonable(session.run(self.global_step))]

        def begin(self):
            self.calls.append([self.name, 'begin'])

        def after_create_session(self, session, coord):
            self.calls.append([self.name, 'after_create_session', *self._step(session)])

        def before_run(self, run_context):
            self.runs += 1
            self.calls.append([self.name, 'before_run'])
            if self.runs == self.stop_at_run:
                run_context.request_stop()
            if self.fetches is None:
                return None
            return tf.compat.v1.train.SessionRunArgs(self.fetches)

        def after_run(self, run_context, run_values):
            self.calls.append([self.name, 'after_run', jsonable(run_values.results), run_context.stop_requested])
            if self.raise_in_after_run and self.runs == self.raise_in_after_run[0]:
                raise self.raise_in_after_run[1]

        def end(self, session):
            step = self._step(session)
            if step:
                self.last_end_step = step[0]
            self.calls.append([self.name, 'end', *step])

    return RecordingHook


def run_scenarios(scenarios, names, side):
    """Runs scenario functions and prints `{name: result}` as one JSON line on stdout.

    The driver shared by `v1_reference.py` and `compat_reference.py`. Each scenario runs in its own fresh
    directory (also the working directory, so stray files show up) inside `side.prepare()` (a fresh graph, a
    reset global step) and fills in a `result` dict; whatever it raises is recorded as
    `result["error"] = {"type", "message", "traceback"}`. Afterwards the driver adds what is on disk
    (`disk_state`) and the captured `log_lines`.

    Args:
      scenarios: `{name: fn(side, result, directory)}`.
      names: the scenario names to run (all when empty).
      side: the object passed to each scenario; `side.prepare()` returns a context manager.
    """
    import traceback

    recorder = LogRecorder().install()
    results = {}
    with tempfile.TemporaryDirectory(prefix='compat_mts_differential_') as root:
        for name in names or list(scenarios):
            directory = os.path.join(root, name)
            os.makedirs(directory)
            result = {'returned': [], 'hook_calls': [], 'error': None}
            recorder.take()
            previous_cwd = os.getcwd()
            os.chdir(directory)
            try:
                with side.prepare():
                    scenarios[name](side, result, directory)
            except Exception as error:  # Recorded for comparison; this is the point of the scenario.
                result['error'] = {
                    'type': type(error).__name__,
                    'message': str(error),
                    'traceback': traceback.format_exc(),
                }
            finally:
                os.chdir(previous_cwd)
            result['log_lines'] = recorder.take()
            result.update(disk_state(directory))
            results[name] = result
    sys.stdout.write(json.dumps(results) + '\n')
    sys.stdout.flush()


def disk_state(directory):
    """What a scenario left in `directory`: checkpoints, state file, events and the list of files."""
    return {
        'checkpoint_steps': checkpoint_steps(directory),
        'state_file_steps': state_file_steps(directory),
        'latest_checkpoint_step': latest_checkpoint_step(directory),
        'events': {tag: [list(pair) for pair in pairs] for tag, pairs in read_events(directory).items()},
        'value_kinds': value_kinds(directory),
        'has_graph_event': has_graph_event(directory),
        'files': listed_files(directory),
    }
