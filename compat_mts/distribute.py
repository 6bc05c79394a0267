"""`master`, `config` and `is_chief`: v1's per-session cluster arguments, mapped onto TF2's process-wide ones.

- `master=''` runs in-process. `grpc://host:port` connects the eager context to that TensorFlow server
  (`tf.config.experimental_connect_to_host`), which is what a v1 session target meant.
- `config` (a `tf.compat.v1.ConfigProto`): the fields with a TF2 equivalent are applied through
  `tf.config`; the rest are named in one warning. Threading and device settings can only change before
  the TensorFlow runtime starts; when it has already started, the warning says so.
"""

from __future__ import annotations

import re

import tensorflow as tf
from absl import logging

_TARGET = re.compile(r'^grpc://[^\s:/]+:\d+$')


def check_master(master) -> None:
    """Raises a TypeError/ValueError when `master` is not '' or a `grpc://host:port` target."""
    if not isinstance(master, str):
        raise TypeError(f"`master` must be a string ('' or 'grpc://host:port'), got {type(master).__name__}.")
    if master and not _TARGET.match(master):
        raise ValueError(
            f"`master` must be '' (in-process) or a TensorFlow server target 'grpc://host:port', got {master!r}.")


def check_config(config) -> None:
    if config is not None and not isinstance(config, tf.compat.v1.ConfigProto):
        raise TypeError(f'`config` must be None or a tf.compat.v1.ConfigProto, got {type(config).__name__}.')


def connect(master: str) -> None:
    """Connects the eager context to the server `master` names; '' does nothing."""
    if master:
        tf.config.experimental_connect_to_host(master[len('grpc://'):], job_name='worker')


def apply_config(config) -> None:
    """Applies the fields of `config` that TF2 can honour; warns once about the others."""
    if config is None:
        return
    ignored = []
    too_late = []

    def attempt(field, apply):
        try:
            apply()
        except RuntimeError:
            too_late.append(field)

    if config.intra_op_parallelism_threads:
        attempt('intra_op_parallelism_threads', lambda: tf.config.threading.set_intra_op_parallelism_threads(
            config.intra_op_parallelism_threads))
    if config.inter_op_parallelism_threads:
        attempt('inter_op_parallelism_threads', lambda: tf.config.threading.set_inter_op_parallelism_threads(
            config.inter_op_parallelism_threads))
    if config.allow_soft_placement:
        tf.config.set_soft_device_placement(True)
    if config.log_device_placement:
        tf.debugging.set_log_device_placement(True)
    if config.gpu_options.allow_growth:
        for gpu in tf.config.list_physical_devices('GPU'):
            attempt('gpu_options.allow_growth', lambda gpu=gpu: tf.config.experimental.set_memory_growth(gpu, True))
    if config.device_count.get('GPU') == 0:
        attempt('device_count', lambda: tf.config.set_visible_devices([], 'GPU'))
    for field, _ in config.ListFields():
        if field.name not in _APPLIED:
            ignored.append(field.name)
    if ignored:
        logging.warning('compat_mts cannot honour these ConfigProto fields eagerly and ignores them: %s.',
                        ', '.join(sorted(ignored)))
    if too_late:
        logging.warning('These ConfigProto fields came after the TensorFlow runtime started and could not '
                        'be applied; set them before the first TensorFlow operation: %s.',
                        ', '.join(sorted(too_late)))


_APPLIED = frozenset({'intra_op_parallelism_threads', 'inter_op_parallelism_threads', 'allow_soft_placement',
                      'log_device_placement', 'gpu_options', 'device_count'})
