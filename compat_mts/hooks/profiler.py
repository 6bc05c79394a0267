"""`ProfilerHook`: traces a run every N steps or seconds into `timeline-<step>.json` and TensorBoard."""

from __future__ import annotations

import glob
import json
import os

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import global_step as global_step_lib
from compat_mts import summary as summary_lib
from compat_mts.core import validation
from compat_mts.core.fetch import STALE_GLOBAL_STEP
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.session_run_hook import (
    STALE_GLOBAL_STEP_REQUEST,
    SessionRunArgs,
    SessionRunHook,
    StepsPerRunMixin,
)


class ProfilerHook(StepsPerRunMixin, SessionRunHook):
    """Captures CPU/GPU profiling information every N steps or seconds (v1's arguments and trigger steps).

    v1 asked the session for a `FULL_TRACE` and turned the run's `step_stats` into a Chrome trace.
    Eager execution has no `step_stats`, so on a triggered run this hook runs the TensorFlow profiler
    (`tf.profiler.experimental.start`/`stop`) from its `before_run` to its `after_run`, and writes:

    - `<output_dir>/timeline-<global step>.json`, a Chrome trace (`{"traceEvents": [...]}`) of that
      capture, which chrome://tracing and Perfetto open, with v1's log line
      "Saving timeline for N into '<path>'.";
    - the capture itself in TensorBoard's profile-plugin layout,
      `<output_dir>/plugins/profile/<run>/<host>.xplane.pb` (TensorBoard's Profile tab, with
      `tensorboard-plugin-profile` installed);
    - the traced step function's graph as run metadata `step_<N>` in `<output_dir>`'s events file, in
      place of v1's `add_run_metadata(run_metadata, "step_N")`.

    As in v1 the first run of a session is never traced (it only starts the timer), the timeline is
    named after the global step read after the traced run, and the writer for `output_dir` is made by
    the constructor. Under `compat_mts.repeat_steps` a traced run holds K steps. The trace has no
    producer-consumer edges or tensor snapshots, so `show_dataflow` and `show_memory` are accepted for
    v1 programs and change nothing. If another profiler is running, the run is not traced (a warning
    says so).

    Args:
      save_steps: Trace a run every `save_steps` global steps, or None.
      save_secs: Trace a run at most once every `save_secs` seconds, or None. Exactly one of the two is
        given.
      output_dir: Where the timelines, the captures and the events go; `''` (the default) is the working
        directory, as in v1.
      show_dataflow: Accepted for v1 programs (default True); the eager trace has no dataflow edges.
      show_memory: Accepted for v1 programs (default False); the eager trace has no memory snapshots.

    Example:

    ```python
    hook = compat_mts.ProfilerHook(save_steps=1000, output_dir=directory)
    ```

    Raises:
      ValueError: not exactly one of `save_steps` and `save_secs` (v1's messages), or `save_secs` is
        NaN (`inf` never traces: the first run never is).
      TypeError: an argument of the wrong type.
    """

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str = '',
        show_dataflow: bool = True,
        show_memory: bool = False,
    ):
        output_dir = validation.path(output_dir, 'output_dir', empty='the working directory, as in v1')
        validation.check_integer(save_steps, 'save_steps')
        validation.check_seconds(save_secs, 'save_secs', infinity='never traces (the first run never is)')
        validation.check_bool(show_dataflow, 'show_dataflow')
        validation.check_bool(show_memory, 'show_memory')
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._output_dir = os.path.expanduser(output_dir)
        self._output_file = os.path.join(self._output_dir, 'timeline-{}.json')
        # v1 made the writer here. The session that runs the hook first releases it; a later one takes it again.
        self._file_writer = summary_lib.summary_writer_for(self._output_dir)
        self._writer_taken = True
        self._tracing = False

    def begin(self):
        if not self._writer_taken:
            self._file_writer = summary_lib.summary_writer_for(self._output_dir)
        self._writer_taken = False
        self._next_step = None
        self._global_step = global_step_lib.require_global_step('ProfilerHook')
        self._stop_unfinished_trace()

    def before_run(self, run_context):
        self._stop_unfinished_trace()
        self._request_trace = (
            self._next_step is not None and self._timer.should_trigger_for_step(self._next_step) and self._start_trace()
        )
        if not self._request_trace:
            return STALE_GLOBAL_STEP_REQUEST
        return SessionRunArgs(
            STALE_GLOBAL_STEP, options=tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        )

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale_global_step)
        global_step = stale_global_step + self._steps_per_run
        if self._request_trace:
            global_step = int(run_context.session.run(self._global_step))
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, self._output_file.format(global_step), self._stop_trace())
            with self._file_writer.as_default(), tf.summary.record_if(True):
                tf.summary.trace_export(name='step_%d' % global_step, step=global_step)
        self._next_step = global_step + self._steps_per_run

    def end(self, session):
        self._stop_unfinished_trace()

    def _start_trace(self) -> bool:
        tf.summary.trace_on(graph=True, profiler=False)
        try:
            tf.profiler.experimental.start(os.path.abspath(self._output_dir))
        except tf.errors.AlreadyExistsError:
            tf.summary.trace_off()
            logging.warning('ProfilerHook: another profiler is running, so the next run is not traced.')
            return False
        self._tracing = True
        return True

    def _stop_trace(self) -> tf_internals.xplane_pb2.XSpace:
        """Stops the capture; returns what it recorded (also left in the profile-plugin layout)."""
        self._tracing = False
        tf.profiler.experimental.stop()
        pattern = os.path.join(glob.escape(os.path.abspath(self._output_dir)), 'plugins', 'profile', '*', '*.xplane.pb')
        newest = max(glob.glob(pattern), key=os.path.getmtime)
        with tf.io.gfile.GFile(newest, 'rb') as capture:
            return tf_internals.read_xspace(capture.read())

    def _stop_unfinished_trace(self) -> None:
        """Ends a capture whose run never finished (the step raised), so the profiler is free again."""
        if self._tracing:
            self._tracing = False
            tf.profiler.experimental.stop(save=False)
            tf.summary.trace_off()

    def _save(self, step: int, save_path: str, space: tf_internals.xplane_pb2.XSpace) -> None:
        logging.info("Saving timeline for %d into '%s'.", step, save_path)
        with tf.io.gfile.GFile(save_path, 'w') as timeline:
            timeline.write(json.dumps(chrome_trace(space)))


def chrome_trace(space: tf_internals.xplane_pb2.XSpace) -> dict:
    """Converts a profiler capture (`XSpace`) to the Chrome trace event format.

    One process per plane (`/host:CPU`, devices), one thread per line, one complete (`"ph": "X"`) event
    per profiler event with its statistics as `args`; times in microseconds from the capture's start.
    """
    lines = [line for plane in space.planes for line in plane.lines]
    origin_ps = min((line.timestamp_ns * 1000 for line in lines), default=0)
    events = []
    for pid, plane in enumerate(space.planes, start=1):
        events.append({'ph': 'M', 'pid': pid, 'name': 'process_name', 'args': {'name': plane.name}})
        for tid, line in enumerate(plane.lines, start=1):
            events.append(
                {
                    'ph': 'M',
                    'pid': pid,
                    'tid': tid,
                    'name': 'thread_name',
                    'args': {'name': line.display_name or line.name},
                }
            )
            line_start_ps = line.timestamp_ns * 1000 - origin_ps
            for event in line.events:
                metadata = plane.event_metadata[event.metadata_id]
                args = {plane.stat_metadata[stat.metadata_id].name: _stat_value(plane, stat) for stat in event.stats}
                if metadata.display_name and metadata.display_name != metadata.name:
                    args['long_name'] = metadata.name
                events.append(
                    {
                        'ph': 'X',
                        'pid': pid,
                        'tid': tid,
                        'name': metadata.display_name or metadata.name,
                        'ts': (line_start_ps + event.offset_ps) / 1e6,
                        'dur': event.duration_ps / 1e6,
                        'args': args,
                    }
                )
    return {'displayTimeUnit': 'ns', 'traceEvents': events}


def _stat_value(plane: tf_internals.xplane_pb2.XPlane, stat: tf_internals.xplane_pb2.XStat):
    kind = stat.WhichOneof('value')
    if kind == 'ref_value':
        return plane.stat_metadata[stat.ref_value].name
    if kind == 'bytes_value':
        return stat.bytes_value.hex()
    return getattr(stat, kind) if kind else None
