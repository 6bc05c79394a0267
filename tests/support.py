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
import subprocess
import sys
import threading

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_DIR = os.path.join(REPO_ROOT, 'tests')

_CHECKPOINT_INDEX = re.compile(r'^model\.ckpt-(\d+)\.index$')
_CHECKPOINT_PATH = re.compile(r'model\.ckpt-(\d+)$')


def run_python(code_or_path, *args, env=None, timeout=300, cwd=None):
    """Runs `sys.executable` on a script file or a code string in a subprocess and returns the CompletedProcess.

    The child gets `TF_CPP_MIN_LOG_LEVEL=2` (no C++ info noise) and the repository root first on PYTHONPATH, so
    it imports this checkout's `compat_mts`. stdout and stderr are captured as text; the return code is not
    checked (callers assert on it, and show stderr when it is not what they expected).

    Args:
      code_or_path: path of an existing `.py` file, or Python source to run with `-c`.
      *args: command-line arguments for the script.
      env: extra environment variables, applied over the current environment.
      timeout: seconds before `subprocess.TimeoutExpired` is raised.
      cwd: working directory of the child (default: the repository root).
    """
    child_env = _child_env()
    child_env.update(env or {})
    if os.path.isfile(code_or_path):
        command = [sys.executable, code_or_path, *args]
    else:
        command = [sys.executable, '-c', code_or_path, *args]
    return subprocess.run(
        command, env=child_env, cwd=cwd or REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def run_pythons(*calls, **common):
    """`run_python` for each of `calls` (tuples of its positional arguments), two at a time; results in order.

    For the v1 and compat_mts sides of one comparison: independent processes, and the machines have two cores.
    `common` holds keyword arguments of `run_python` shared by all calls.
    """
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda call: run_python(*call, **common), calls))


class ForkServer:
    """A `tests/script_fork_server.py` process that imported `modules`, running one program at a time.

    Each program runs in a process forked from the server, so it starts with those modules imported instead of
    importing TensorFlow itself (seconds of CPU). See that script for what such a child is and is not.
    """

    def __init__(self, modules, env):
        self._process = subprocess.Popen(
            [sys.executable, os.path.join(TESTS_DIR, 'script_fork_server.py'), *modules],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._expect('ready')

    def _expect(self, key):
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f'The fork server exited (status {self._process.wait()}) before reporting {key!r}.')
        message = json.loads(line)
        if key not in message:
            raise RuntimeError(f'The fork server reported {message!r} instead of {key!r}.')
        return message

    def run(self, argv, cwd, timeout):
        """Runs `python argv[0] argv[1:]` in `cwd`, in a forked child.

        Returns:
          Its CompletedProcess, with its exit status (-N when killed by signal N) and its output as text.

        Raises:
          subprocess.TimeoutExpired: the child ran for `timeout` seconds; it was killed.
        """
        import signal
        import tempfile
        import threading

        argv = [str(part) for part in argv]
        timed_out = threading.Event()

        def kill(pid):
            timed_out.set()
            os.kill(pid, signal.SIGKILL)

        with tempfile.TemporaryDirectory(prefix='forked-') as outputs:
            stdout, stderr = os.path.join(outputs, 'stdout'), os.path.join(outputs, 'stderr')
            request = {'argv': argv, 'cwd': str(cwd), 'stdout': stdout, 'stderr': stderr}
            self._process.stdin.write(json.dumps(request) + '\n')
            self._process.stdin.flush()
            timer = threading.Timer(timeout, kill, (self._expect('started')['started'],))
            timer.start()
            try:
                status = self._expect('ended')['status']
            finally:
                timer.cancel()
            with open(stdout, encoding='utf-8', errors='replace') as out:
                output = out.read()
            with open(stderr, encoding='utf-8', errors='replace') as err:
                errors = err.read()
        if timed_out.is_set():
            raise subprocess.TimeoutExpired(argv, timeout, output, errors)
        return subprocess.CompletedProcess(argv, status, output, errors)

    def close(self):
        self._process.stdin.close()
        self._process.wait(timeout=60)
        self._process.stdout.close()


_V1_SERVERS_LOCK = threading.Lock()
_idle_v1_servers = []  # `run_forked`'s servers not running a program now (one per concurrent caller at most).


def _child_env():
    """A child's environment: TensorFlow's C++ chatter off, this checkout first on the path."""
    child_env = dict(os.environ)
    child_env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    child_env['PYTHONPATH'] = os.pathsep.join(
        [REPO_ROOT] + [p for p in child_env.get('PYTHONPATH', '').split(os.pathsep) if p]
    )
    return child_env


@atexit.register
def _close_v1_servers():
    with _V1_SERVERS_LOCK:
        servers, _idle_v1_servers[:] = list(_idle_v1_servers), []
    for server in servers:
        server.close()


def run_forked(code_or_path, *args, timeout=300, cwd=None):
    """`run_python` for a v1 graph-mode program, forked from a server that imported TensorFlow (only) once.

    The program is a process of its own with its own TensorFlow runtime (it may disable eager execution) and
    nothing of compat_mts loaded, as with `run_python`, but it does not pay TensorFlow's import: for the v1
    sides of comparisons, many short programs. Not for a program whose test is about what importing prints or
    loads, nor one that needs another environment (`run_python(env=...)`): those need a fresh interpreter.
    The servers are started on first use and serve the rest of the test session.

    Args:
      code_or_path: path of an existing `.py` file, or Python source (run from a file of its own).
      *args: command-line arguments for the program.
      timeout: seconds before the program is killed and `subprocess.TimeoutExpired` raised.
      cwd: working directory of the program (default: the repository root).

    Returns:
      The CompletedProcess; the return code is not checked.
    """
    import tempfile

    with _V1_SERVERS_LOCK:
        server = _idle_v1_servers.pop() if _idle_v1_servers else None
    if server is None:
        server = ForkServer(['tensorflow'], _child_env())
    with tempfile.TemporaryDirectory(prefix='forked-program-') as scratch:
        script = code_or_path
        if not os.path.isfile(code_or_path):
            script = os.path.join(scratch, 'program.py')
            with open(script, 'w', encoding='utf-8') as program:
                program.write(code_or_path)
        try:
            return server.run([script, *args], cwd or REPO_ROOT, timeout)
        except subprocess.TimeoutExpired:
            raise  # The server reaped the killed child: it serves the next program.
        except BaseException:
            server = None  # A server in doubt is left to exit with this process.
            raise
        finally:
            if server is not None:
                with _V1_SERVERS_LOCK:
                    _idle_v1_servers.append(server)


def run_v1_and_compat(v1_call, compat_call, **common):
    """The v1 side of a comparison by `run_forked` and the compat_mts side by `run_python`, at the same time.

    `v1_call` and `compat_call` are tuples of positional arguments; `common` holds keyword arguments shared by
    both (`timeout`, `cwd`). Returns the two CompletedProcesses, v1's first.
    """
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        v1 = pool.submit(run_forked, *v1_call, **common)
        compat = pool.submit(run_python, *compat_call, **common)
        return v1.result(), compat.result()


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
    """Returns the sorted paths of the `events.out.tfevents.*` files directly in `directory`.

    Only the directory itself, not its subdirectories: that is where v1's `FileWriterCache` writes and where a
    TensorBoard pointed at `summary_dir` finds the run.
    """
    return sorted(glob.glob(os.path.join(glob.escape(directory), 'events.out.tfevents.*')))


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
    import tempfile
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
