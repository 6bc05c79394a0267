"""Summary writing: one writer per directory, and recording the step's `tf.summary` calls on cue.

v1 merged every summary op of the graph into one op that `SummarySaverHook` ran on its trigger steps.
Eagerly, the user's step calls `tf.summary.*` itself; compat_mts makes those calls land where v1's did:

- one `tf.summary` writer per directory for the whole process (v1's `FileWriterCache`), so a step
  function traced once keeps writing to it in later sessions. Its events file is open while a session
  uses the writer: the last session to close closes the file, and the next session that takes the writer
  opens a new one on the same writer resource (which traced functions hold), so a process that runs many
  sessions on many directories keeps no file open for those it is done with;
- while a session runs, that writer is the default one, its default step is a compat_mts variable
  holding the post-step global step of the recording run (v1 stamped summaries with it), and recording
  is gated by `tf.summary.record_if` on a boolean variable (`core.fetch.RecordingSwitch`). Reading a variable
  does not retrace a `tf.function`, and the variables are assigned only on the runs where recording switches on
  or off; on the runs it is off, the session calls its step traced without the summaries (`core.fetch`).

Writing `simple_value` scalars (v1's `global_step/sec`) goes through `write_raw_pb` with a v1
`Summary` proto, which TensorBoard reads exactly as it read v1's events.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir.directory import ensure_writable_directory
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import program as program_lib

# Process-wide, as v1's FileWriterCache: a traced step keeps the writer it saw, whichever session runs it.
_writers: dict[str, tf.summary.SummaryWriter] = program_lib.PROGRAM.table(
    'summary.writers', {}, 'one tf.summary writer per directory', kind='process'
)
_users: dict[str, int] = program_lib.PROGRAM.table(
    'summary.users', {}, 'how many open sessions hold each writer', kind='process'
)
_writers_lock = threading.Lock()
# Directories whose events file stays open for the process (`keep_writer_open`).
_kept_open: set[str] = program_lib.PROGRAM.table(
    'summary.kept_open', set(), 'the directories whose events file stays open for the process', kind='process'
)
_files_with_graph: 'weakref.WeakSet[tf.summary.SummaryWriter]' = program_lib.PROGRAM.table(
    'summary.files_with_graph', weakref.WeakSet(), 'the writers whose current events file has a graph', kind='process'
)
_MAX_QUEUE, _FLUSH_MILLIS, _FILENAME_SUFFIX = 10, 120000, '.v2'  # `tf.summary.create_file_writer`'s defaults.


def summary_writer_for(directory: str) -> tf.summary.SummaryWriter:
    """Takes the process-wide writer for `directory`, creating the directory and writer once.

    Called by hooks in `begin()`; the session whose `SessionSummaries` collects the hooks' `begin()` releases
    the writer when it closes. A writer whose events file was closed gets a new one.

    Raises:
      PermissionError: the directory cannot be created or written; the message names it.
    """
    key, writer = _take_writer(directory)
    collector = _collector()
    with _writers_lock:
        (collector.writers if collector is not None else _unclaimed_writers).append(key)
    return writer


def keep_writer_open(directory: str) -> None:
    """Keeps the open events file of `directory` open for the rest of the process, as v1's `FileWriterCache` did.

    The sessions that write to `directory` later write on in the same file instead of opening one each:
    `compat_mts.estimator` keeps its `model_dir` and evaluation directories so, as v1's Estimator had one
    events file per directory per process, however many `train()` and `evaluate()` calls. A directory
    whose writer nobody has open is left as it is (no events file is made for it).
    """
    key = os.path.abspath(os.path.expanduser(os.fspath(directory)))
    with _writers_lock:
        if key in _kept_open or not _users.get(key):
            return
        _kept_open.add(key)
        _users[key] += 1


def _take_writer(directory: str) -> tuple[str, tf.summary.SummaryWriter]:
    key = os.path.abspath(os.path.expanduser(os.fspath(directory)))
    try:
        return _take_writer_of(key)
    except tf.errors.OpError as error:  # The events file cannot be made: a full disk, a read-only file system.
        problem = events_directory_problem(key) or 'cannot take an events file'
        found = fetches_lib.events_file_error(error)
        detail = f'{found[0]}: {found[1]}' if found else error.message.strip()
        raise type(error)(
            None,
            None,
            f'Summary directory {key} {problem}: its events file could not be created ({detail}). Free some '
            'space, or give the summaries another directory (summary_dir=...).',
        ) from error


def _take_writer_of(key: str) -> tuple[str, tf.summary.SummaryWriter]:
    with _writers_lock, global_step_lib.outside_graph_mode():
        writer = _writers.get(key)
        if writer is None:
            ensure_writable_directory(key, 'summary directory')
            writer = tf.summary.create_file_writer(
                key, max_queue=_MAX_QUEUE, flush_millis=_FLUSH_MILLIS, filename_suffix=_FILENAME_SUFFIX
            )
            _writers[key] = writer
        elif not _users.get(key) and tf_internals.summary_writer_resource(writer) is not None:
            ensure_writable_directory(key, 'summary directory')
            _files_with_graph.discard(writer)
            tf.raw_ops.CreateSummaryFileWriter(  # A new events file, on the resource traced steps hold.
                writer=tf_internals.summary_writer_resource(writer),
                logdir=key,
                max_queue=_MAX_QUEUE,
                flush_millis=_FLUSH_MILLIS,
                filename_suffix=_FILENAME_SUFFIX,
            )
        _users[key] = _users.get(key, 0) + 1
        return key, writer


def release_writers(directories: list[str]) -> None:
    """Releases writers taken by `summary_writer_for`; closes the events file of those no session uses any more.

    Never raises for an events file that could not be written (a full disk, a read-only or removed directory):
    it warns, naming the directory, so that a session's close goes on (its lock released, its last checkpoint
    kept as it is).
    """
    warned = set()  # A writer a session took twice (two hooks) is warned about once.
    with _writers_lock, global_step_lib.outside_graph_mode():
        for key in directories:
            _users[key] -= 1
            writer = _writers[key]
            try:
                writer.flush()  # Readable once the session is done with it, also when the file stays open.
                if not _users[key]:
                    resource = tf_internals.summary_writer_resource(writer)
                    if resource is not None:  # Else the file stays open until the process ends.
                        tf.raw_ops.CloseSummaryWriter(writer=resource)
            except tf.errors.OpError as error:
                problem = f'could not be written ({error.message.strip()})'
            else:
                problem = events_directory_problem(key)
            if problem and key not in warned:
                warned.add(key)
                _warn_events_lost(key, problem, None)


def events_directory_problem(directory: str) -> str | None:
    """Why events written into `directory` now would be lost, in words that follow its name, or None.

    TensorFlow's summary writer does not raise when it cannot write its events file: on a full disk, a
    read-only file system or a removed directory the summaries are dropped. This looks at the directory's
    file system instead (one `statvfs`): no space left for an unprivileged write, read-only, gone.
    """
    if '://' in directory:
        return None
    try:
        status = os.statvfs(directory)
    except FileNotFoundError:
        return 'no longer exists'
    except OSError as error:
        return f'cannot be reached ({error.strerror})'
    if status.f_flag & os.ST_RDONLY:
        return 'is on a read-only file system'
    if status.f_bavail == 0:
        return 'has no space left on its device'
    return None


def _warn_events_lost(directory: str, problem: str, step: int | None) -> None:
    if step is None:  # At a session's close: what the writer could not write is lost.
        logging.warning(
            'Summary directory %s %s: its events file may lack the last summaries, which TensorFlow dropped '
            'without an error. Checkpoints are not affected.',
            directory,
            problem,
        )
        return
    logging.warning(
        'Summary directory %s %s: summaries are not recorded from step %d on, until it can take events again '
        '(looked at every %d steps). Training and checkpoints go on. %s',
        directory,
        problem,
        step,
        _CHECK_EVERY_STEPS,
        _ADVICE.get(problem, _ADVICE[None]),
    )


_ADVICE = {
    'no longer exists': 'The next session makes it again, with a new events file.',
    'is on a read-only file system': 'Give the summaries a writable directory (summary_dir=...).',
    None: 'Free some space, or give the summaries another directory (summary_dir=...).',
}


def flush_all() -> None:
    """Flushes every writer compat_mts has open, so that what was written is readable (`flush`'s warnings)."""
    with _writers_lock:
        writers = [(key, writer) for key, writer in _writers.items() if _users.get(key)]
    for key, writer in writers:
        flush(writer, key)


def flush(writer: tf.summary.SummaryWriter, directory: str | None = None) -> bool:
    """Flushes `writer`; when its events file cannot take the events (a full disk), says so and never raises.

    A hook's `end()` and a session's close flush: an error there would skip what comes after them, the final
    checkpoint of `CheckpointSaverHook.end()` among it. What the failed flush held is dropped by TensorFlow (the
    next flush succeeds). A writer of `summary_writer_for` is warned about once, naming its directory, when the
    session releases it (`release_writers`); another writer (a hook's own `summary_writer`) here, naming
    `directory` or its events file. Returns whether the flush succeeded.
    """
    try:
        with global_step_lib.outside_graph_mode():
            writer.flush()
    except tf.errors.OpError as error:
        found = fetches_lib.events_file_error(error)
        detail = f'{found[0]}: {found[1]}' if found else error.message.strip()
        if any(known is writer for known in _writers.values()):
            logging.debug('Flushing the summaries of %s failed: %s', directory, detail)
            return False
        if directory is None:
            directory = os.path.dirname(found[0]) if found else '(a summary writer)'
        logging.warning(
            'Summary directory %s %s: its events file lacks the last summaries, which could not be written (%s). '
            'Checkpoints are not affected.',
            directory,
            events_directory_problem(directory) or 'cannot take events',
            detail,
        )
        return False
    return True


def write_simple_value(writer: tf.summary.SummaryWriter, tag: str, value: float, step: int) -> None:
    """Writes `tag` as a v1 `simple_value` scalar at `step`, whatever recording state is in force."""
    summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=value)])
    write_serialized(writer, summary.SerializeToString(), step)


def write_serialized(writer: tf.summary.SummaryWriter, serialized, step: int) -> None:
    """Writes serialized `Summary` protos (a v1 summary op's output) at `step`.

    The op `tf.summary.experimental.write_raw_pb` runs, on the writer's resource directly when it can be
    reached: that function's default-writer and recording checks (always true here) cost more than the write
    on every `global_step/sec` trigger.

    A write that fails because the events file cannot be written (a full disk) is warned about, naming the
    file: the run it belongs to is over, and training goes on.
    """
    resource = tf_internals.summary_writer_resource(writer)
    try:
        if resource is None:
            with writer.as_default(), tf.summary.record_if(True):
                tf.summary.experimental.write_raw_pb(serialized, step=step)
            return
        with tf.device('cpu:0'):  # The protos as a tensor: bytes would take the op's slow path (a third of the cost).
            tf.raw_ops.WriteRawProtoSummary(writer=resource, step=step, tensor=tf.constant(serialized, tf.string))
    except tf.errors.OpError as error:
        found = fetches_lib.events_file_error(error)
        if found is None:
            raise
        logging.warning(
            'The summaries of step %d could not be written into %s (%s: %s); training goes on without them.',
            step,
            os.path.dirname(found[0]),
            found[0],
            found[1],
        )


def write_graph(writer: tf.summary.SummaryWriter, graph_def) -> None:
    """Writes `graph_def` to the TensorBoard graph dashboard, unless `writer`'s events file holds a graph already.

    The step counter, summary and checkpoint hooks of one session share one writer, and each writes the step
    graph. TensorBoard keeps one graph per run and warns ("Found more than one graph event per run") at a
    second, so the first write to an events file is the one that counts. v1 itself wrote two into each file
    (its writer cache wrote the default graph when it opened a writer, `CheckpointSaverHook` wrote it again),
    which nothing read; the graph it showed was the same.
    """
    with _writers_lock:
        if writer in _files_with_graph:
            return
        _files_with_graph.add(writer)
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.graph(graph_def)


def write_step_graph(writer: tf.summary.SummaryWriter, session: Any) -> bool:
    """Writes the graph of `session`'s traced step (v1 wrote the default graph); False if there is none yet.

    `session` is what hooks get as the session (`run_context.session`); one without a fetch state (inside
    `model.fit`) has no step graph.
    """
    graph_def = fetches_lib.step_graph_def(getattr(session, 'fetch_state', None))
    if graph_def is None:
        return False
    write_graph(writer, graph_def)
    return True


class Recorder:
    """Makes `writer` record the program's `tf.summary` calls, on the runs chosen by `record_next_run`.

    One recorder per writer, process-wide (`recorder_for`), because a traced `tf.function` keeps the
    writer, the step variable and the recording condition it saw when it was traced.
    """

    def __init__(self, writer: tf.summary.SummaryWriter):
        self.writer = writer
        # Plain variables, outside any tf.distribute strategy: they are switches this process sets from the
        # host. A MultiWorkerMirroredStrategy creates its variables with a broadcast every worker must join,
        # and only the chief records summaries.
        with global_step_lib.outside_graph_mode(), tf.init_scope():
            self._recording = tf_internals.RESOURCE_VARIABLE(False, trainable=False, name='compat_mts_record_summaries')
            self._step = tf_internals.RESOURCE_VARIABLE(
                0, dtype=tf.int64, trainable=False, name='compat_mts_summary_step'
            )
        self._switch = fetches_lib.RecordingSwitch(self._recording)
        self._contexts: list = []
        # The writer's directory, looked at every `_CHECK_EVERY_STEPS` global steps of recording runs (see
        # `events_directory_problem`), and the problem last warned about.
        self._directory = next((key for key, known in _writers.items() if known is writer), None)
        self._next_check_step = 0
        self._problem: str | None = None
        # The step each hook recording into this writer asked the next run's summaries for (`record_next_run`),
        # by the hook's id: v1's hooks each wrote their own summaries at their own steps into one writer, so the
        # run records when any of them asks, and a hook's "not this run" withdraws its own request only.
        self._requests: dict[int, int] = {}

    def activate(self) -> None:
        """Installs the writer, its step and the recording condition as the defaults of this thread."""
        if self._contexts:
            return
        self._next_check_step, self._problem = 0, None  # Each session looks at the directory at its first recording.
        contexts = [self.writer.as_default(step=self._step), tf.summary.record_if(self._switch)]
        for context in contexts:
            context.__enter__()
        self._contexts = contexts
        _active_recorders.__dict__.setdefault('stack', []).append(self)

    def deactivate(self) -> None:
        """Restores the summary defaults that were in force before `activate`, and flushes."""
        self._requests.clear()
        self._switch_to(None)
        # Flushed first, warning on a full disk: the writer's `as_default()` flushes again when left, and would
        # raise there with the writer still the default.
        flush(self.writer, self._directory)
        while self._contexts:
            self._contexts.pop().__exit__(None, None, None)
        stack = _active_recorders.__dict__.get('stack', [])
        if self in stack:
            stack.remove(self)

    @property
    def active(self) -> bool:
        return bool(self._contexts)

    @contextlib.contextmanager
    def writing(self):
        """Makes this writer, its step and its recording condition the defaults for a hook's own summary op.

        Two hooks of a session on two directories each activate a writer, and only the last activated is the
        default: the other one's summary op is run inside this, so that it writes into its own hook's writer.
        The last activated one needs nothing (a writer's `as_default()` flushes it when left).
        """
        stack = _active_recorders.__dict__.get('stack')
        if stack and stack[-1] is self:
            yield
            return
        with self.writer.as_default(step=self._step), tf.summary.record_if(self._switch):
            yield

    def record_next_run(self, requester: Any, step: int | None) -> None:
        """Records the next run's summaries at `step` for `requester` (a hook), or withdraws its request (None).

        The next run records when any requester asks, at the step the first one asked for (the hooks of one
        session predict the same post-run step): each hook decides for its own trigger runs, as each v1
        `SummarySaverHook` fetched and wrote its own summaries, so a second hook on the same writer that does
        not trigger leaves the first one's recording on. A requester is needed on its trigger runs and the run
        after them only, where its request changes.

        Nothing is recorded either while the writer's directory cannot take events (a full disk, a read-only file
        system, a removed directory: `events_directory_problem`, looked at every `_CHECK_EVERY_STEPS` steps): a
        summary op that fails to write its events file fails the step, which v1's writer thread did not do. A
        warning names the directory; recording resumes when it can take events again.
        """
        requests = self._requests
        if step is not None:
            requests[id(requester)] = step
        elif requests:
            requests.pop(id(requester), None)
        self._switch_to(next(iter(requests.values())) if requests else None)

    def _switch_to(self, step: int | None) -> None:
        """Sets the recording switch (and the summary step) for the next run: on at `step`, or off for None."""
        if step is not None:
            if step >= self._next_check_step and self._directory is not None:
                self._check_directory(step)
            if self._problem is not None:
                step = None
            else:
                _assign(self._step, step)
        switch = self._switch
        if (step is not None) != switch.on:
            _assign(self._recording, step is not None)
            switch.on = step is not None

    def _check_directory(self, step: int) -> None:
        """Warns once, naming the directory, when the events of the runs it records from `step` would be lost."""
        self._next_check_step = step + _CHECK_EVERY_STEPS
        problem = events_directory_problem(self._directory)
        if problem and problem != self._problem:
            _warn_events_lost(self._directory, problem, step)
        elif self._problem and not problem:
            logging.info(
                'Summary directory %s takes events again: summaries are recorded from step %d.', self._directory, step
            )
        self._problem = problem


_CHECK_EVERY_STEPS = 100  # A `statvfs` costs a few microseconds: once per 100 steps of a run recording every step.


def _assign(variable: tf.Variable, value) -> None:
    """`variable.assign(value)` for the recorder's own plain variables, as the one op it runs (a quarter the cost)."""
    tf.raw_ops.AssignVariableOp(resource=variable.handle, value=tf.constant(value, variable.dtype))


# Process-wide, one per writer: a traced `tf.function` keeps the writer, step and condition it saw.
_recorders: dict[int, Recorder] = program_lib.PROGRAM.table(
    'summary.recorders', {}, 'one recorder (step and condition variables) per writer', kind='process'
)


def recorder_for(writer: tf.summary.SummaryWriter) -> Recorder:
    """Returns the process-wide recorder of `writer`."""
    recorder = _recorders.get(id(writer))
    if recorder is None or recorder.writer is not writer:
        recorder = Recorder(writer)
        _recorders[id(writer)] = recorder
    return recorder


def request_recording(recorder: Recorder) -> None:
    """Asks the session whose hooks are beginning to activate `recorder` for its lifetime (called from `begin`)."""
    collector = _collector()
    recorders = collector.recorders if collector is not None else _unclaimed_recorders
    if recorder not in recorders:  # A second hook of the session may record into the same writer.
        recorders.append(recorder)


class SessionSummaries:
    """What the hooks of one session take in `begin()`: writers the session releases, recorders it activates.

    A session (or `keras.HooksCallback`) runs its hooks' `begin()` inside `collecting()`, so that what they
    take is the session's own, also when several sessions are open at once. A writer taken outside any
    session's `begin()` (a `ProfilerHook` takes its writer in its constructor, where v1's made it) goes to
    the next session that collects, as does a recording requested outside one.
    """

    def __init__(self):
        self.writers: list[str] = []
        self.recorders: list[Recorder] = []

    @contextlib.contextmanager
    def collecting(self):
        """Collects, in this thread, what `summary_writer_for` and `request_recording` take until exit."""
        with _writers_lock:
            self.writers.extend(_unclaimed_writers)
            _unclaimed_writers.clear()
        for recorder in _unclaimed_recorders:
            if recorder not in self.recorders:
                self.recorders.append(recorder)
        _unclaimed_recorders.clear()
        stack = _collecting.__dict__.setdefault('stack', [])
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def activate(self) -> None:
        for recorder in self.recorders:
            recorder.activate()

    def deactivate(self) -> None:
        for recorder in reversed(self.recorders):  # Each restores the defaults the one before it installed.
            recorder.deactivate()

    def release(self) -> None:
        """Releases the writers (closing the events files no other session uses); idempotent."""
        writers, self.writers = self.writers, []
        release_writers(writers)


_active_recorders = threading.local()  # .stack: the recorders activated in this thread, the default writer's last.
_collecting = threading.local()  # .stack: the SessionSummaries collecting in this thread, innermost last.
# Taken, or asked for, outside any session's `begin()` (a `ProfilerHook` takes its writer in its constructor): the
# next collecting session's, which may be created after a `reset()`.
_unclaimed_writers: list[str] = program_lib.PROGRAM.table(
    'summary.unclaimed_writers', [], "writers taken outside any session's begin(), for the next", kind='process'
)
_unclaimed_recorders: list[Recorder] = program_lib.PROGRAM.table(
    'summary.unclaimed_recorders', [], "recordings asked for outside any session's begin()", kind='process'
)


def _collector() -> SessionSummaries | None:
    stack = getattr(_collecting, 'stack', None)
    return stack[-1] if stack else None
