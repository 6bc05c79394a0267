"""The evaluation loop's pieces: the eval step counter, the hook that stops after N batches, the eval events.

v1's `tf.compat.v1.train` evaluation helpers (`evaluation._evaluate_once`) built these in the graph; here the
counter and its update are built in the evaluation graph (`compat_mts.wrap_graph` runs it) and the loop is a
compat_mts `MonitoredSession`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from google.protobuf import message
from tensorflow.compat.v1 import logging

from compat_mts.core import program as program_lib
from compat_mts import summary as summary_lib
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook

_graphs_written: set[str] = program_lib.PROGRAM.table(
    'estimator.graphs_written', set(), 'the evaluation directories whose events have the graph'
)


def eval_step_ops(update_op) -> tuple[list, tf.Tensor]:
    """`(eval_ops, eval_step_value)`: the ops one evaluation batch runs, and the batches done after them.

    The counter is v1's local variable `eval_step`, in the `EVAL_STEP` collection.
    """
    eval_step = tf.compat.v1.get_variable(
        'eval_step',
        shape=[],
        dtype=tf.int64,
        initializer=tf.compat.v1.zeros_initializer(),
        trainable=False,
        collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES, tf.compat.v1.GraphKeys.EVAL_STEP],
    )
    update_eval_step = tf.compat.v1.assign_add(eval_step, 1, use_locking=True)
    eval_ops = [update_op, update_eval_step]
    with tf.control_dependencies(eval_ops):
        eval_step_value = tf.identity(eval_step.read_value())
    return eval_ops, eval_step_value


class StopAfterNEvalsHook(SessionRunHook):
    """Stops the evaluation after `num_evals` batches, logging v1's `Evaluation [n/N]` lines."""

    def __init__(self, num_evals: int | None, log_progress: bool = True):
        self._num_evals = num_evals
        self._evals_completed = None
        self._log_progress = log_progress
        self._log_frequency = 1 if (num_evals is None or num_evals < 20) else math.floor(num_evals / 10.0)

    def set_evals_completed_tensor(self, updated_eval_step) -> None:
        self._evals_completed = updated_eval_step

    def before_run(self, run_context):
        return SessionRunArgs({'evals_completed': self._evals_completed})

    def after_run(self, run_context, run_values):
        evals_completed = run_values.results['evals_completed']
        if self._log_progress:
            if self._num_evals is None:
                logging.info('Evaluation [%d]', evals_completed)
            elif evals_completed % self._log_frequency == 0 or self._num_evals == evals_completed:
                logging.info('Evaluation [%d/%d]', evals_completed, self._num_evals)
        if self._num_evals is not None and evals_completed >= self._num_evals:
            run_context.request_stop()


def _dict_to_str(dictionary: dict) -> str:
    return ', '.join(
        '%s = %s' % (key, value) for key, value in sorted(dictionary.items()) if not isinstance(value, bytes)
    )


def _writer(output_dir: str, graph_def: Callable) -> tf.summary.SummaryWriter:
    """The directory's writer; the first one of the process writes the evaluation graph, `graph_def()`, as v1's
    cache did."""
    writer = summary_lib.summary_writer_for(output_dir)
    summary_lib.keep_writer_open(output_dir)  # One events file per directory and process, as v1's cache.
    if output_dir not in _graphs_written:
        _graphs_written.add(output_dir)
        summary_lib.write_graph(writer, graph_def())
    return writer


def write_dict_to_summary(output_dir: str, dictionary: dict, current_global_step: int, graph_def: Callable) -> None:
    """Writes the evaluation results as one v1 `Summary` at `current_global_step` (v1's encodings and lines).

    `graph_def()` is the evaluation graph, called only when it is written (the directory's first events file).
    """
    logging.info('Saving dict for global step %d: %s', current_global_step, _dict_to_str(dictionary))
    summary = tf.compat.v1.Summary()
    for key, value in dictionary.items():
        if value is None or key == 'global_step':
            continue
        if isinstance(value, (np.float32, float)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, (np.int64, np.int32, int)):
            summary.value.add(tag=key, simple_value=int(value))
        elif isinstance(value, bytes):
            try:
                parsed = tf.compat.v1.Summary.FromString(value)
            except message.DecodeError:
                logging.warning('Skipping summary for %s, cannot parse string to Summary.', key)
                continue
            for index, parsed_value in enumerate(parsed.value):
                parsed_value.tag = '%s/%d' % (key, index)
            summary.value.extend(parsed.value)
        elif isinstance(value, np.ndarray):
            summary_value = summary.value.add(tag=key, node_name=key)
            summary_value.tensor.CopyFrom(tf.make_tensor_proto(value))
            logging.info(
                'Summary for np.ndarray is not visible in Tensorboard by default. Consider using a '
                'Tensorboard plugin for visualization (see https://github.com/tensorflow/'
                'tensorboard-plugin-example/blob/master/README.md for more information).'
            )
        else:
            logging.warning(
                'Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int or '
                'np.ndarray or a serialized string of Summary.',
                key,
            )
    writer = _writer(output_dir, graph_def)
    summary_lib.write_serialized(writer, summary.SerializeToString(), int(current_global_step))
    writer.flush()


def write_checkpoint_path_to_summary(
    output_dir: str, checkpoint_path: str, current_global_step: int, graph_def: Callable
) -> None:
    """Writes the evaluated checkpoint's path as a string tensor summary `checkpoint_path` (v1's)."""
    logging.info("Saving '%s' summary for global step %d: %s", 'checkpoint_path', current_global_step, checkpoint_path)
    summary = tf.compat.v1.Summary()
    summary.value.add(tag='checkpoint_path', tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string))
    writer = _writer(output_dir, graph_def)
    summary_lib.write_serialized(writer, summary.SerializeToString(), int(current_global_step))
    writer.flush()


def results_as_v1(values: Any) -> Any:
    """The fetched results with 0-d arrays as NumPy scalars, which is what v1's `Session.run` returned."""
    if isinstance(values, dict):
        return {key: results_as_v1(value) for key, value in values.items()}
    if isinstance(values, np.ndarray) and values.ndim == 0:
        return values[()]
    return values


class AssignVariablesHook(SessionRunHook):
    """Gives the variables of an evaluation graph values from memory once its session is created.

    `InMemoryEvaluatorHook` evaluates the training's current values without a checkpoint: v1 assigned the
    variables of both graphs that have one name, in its scaffold's `init_fn`; here, in the first hook.

    Raises:
      ValueError: the evaluation's scaffold has its own `saver` or `init_fn` (v1's messages).
    """

    def __init__(self, wrapped, scaffold, values: dict):
        if scaffold is not None and scaffold.saver is not None:
            raise ValueError('InMemoryEvaluator does not support custom saver')
        if scaffold is not None and scaffold.init_fn is not None:
            raise ValueError('InMemoryEvaluator does not support custom init_fn')
        self._variables = {name: wrapped.variable(name) for name in values if wrapped.has_variable(name)}
        self._values = values

    def after_create_session(self, session, coord):
        for name, variable in self._variables.items():
            variable.assign(self._values[name])
