"""Writing the PREDICT graph of a `model_fn`, with a checkpoint's values, as a TF2 SavedModel.

v1 saved the graph itself (a MetaGraphDef and a name-based variables checkpoint) with `SavedModelBuilder`,
which needs a `tf.compat.v1.Session`. Eagerly the graph is a `compat_mts.wrap_graph`: each signature is the
wrapped function pruned to the receiver tensors and the outputs, called by a `tf.function` whose input
signature names the receiver tensors; a `tf.Module` holding the graph's variables is saved with those
signatures by `tf.saved_model.save`.
"""

from __future__ import annotations

import os
import time

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.compat.v1 import logging
from tensorflow.core.protobuf import saved_model_pb2

from compat_mts import checkpoints

_MAX_DIRECTORY_CREATION_ATTEMPTS = 10


def _timestamped_dir(export_dir_base) -> bytes:
    """`export_dir_base/<seconds since the epoch>`, a directory that does not exist yet (v1's naming)."""
    for attempt in range(1, _MAX_DIRECTORY_CREATION_ATTEMPTS + 1):
        directory = os.path.join(os.fsencode(export_dir_base), str(int(time.time())).encode())
        if not tf.io.gfile.exists(directory):
            return directory
        time.sleep(1)
        logging.warning(
            'Directory {} already exists; retrying (attempt {}/{})'.format(
                directory, attempt, _MAX_DIRECTORY_CREATION_ATTEMPTS
            )
        )
    raise RuntimeError(
        'Failed to obtain a unique export directory name after {} attempts.'.format(_MAX_DIRECTORY_CREATION_ATTEMPTS)
    )


def _restore(wrapped, checkpoint_path: str) -> None:
    try:
        status = wrapped.checkpoint.restore(checkpoint_path)
        missing = status.unmatched
    except tf.errors.NotFoundError as error:
        missing = str(error)
    if missing:
        raise ValueError(
            'Could not load all requested variables from checkpoint. Please make sure your model_fn does not expect '
            'variables that were not saved in the checkpoint.\n\nEncountered error with mode `{}` while restoring '
            'checkpoint from: `{}`. Full Traceback:\n\n{}'.format('infer', checkpoint_path, missing)
        )


def _signature(wrapped, receiver_tensors: dict, outputs: dict):
    imported = wrapped.function.graph
    names = sorted(receiver_tensors)
    pruned = wrapped.function.prune(
        feeds=[imported.get_tensor_by_name(receiver_tensors[name].name) for name in names],
        fetches={key: imported.get_tensor_by_name(tensor.name) for key, tensor in outputs.items()},
    )
    specs = [tf.TensorSpec(receiver_tensors[name].shape, receiver_tensors[name].dtype, name=name) for name in names]

    @tf.function(input_signature=specs)
    def serve(*inputs):
        return pruned(*inputs)

    return pruned, serve


def _tracked_variables(wrapped, functions: list) -> list:
    """The variables the signatures capture; raises for captured resources that are not variables."""
    by_handle = {id(variable.handle): variable for variable in wrapped.variables}
    untracked = []
    for function in functions:
        untracked += [tensor for tensor in function.captured_inputs if id(tensor) not in by_handle]
    if untracked:
        raise NotImplementedError(
            'The PREDICT graph holds resources other than variables (lookup tables, iterators: {}), which a TF2 '
            'SavedModel of a wrapped v1 graph cannot track. Export a Keras or tf.Module model instead (stage 2 '
            'of migration_guide/estimator.md).'.format(untracked)
        )
    return list(wrapped.variables)


def export(
    wrapped,
    receiver,
    export_outputs: dict,
    checkpoint_path: str,
    export_dir_base,
    assets_extra=None,
    as_text: bool = False,
) -> bytes:
    """Writes the SavedModel into a new `export_dir_base/<timestamp>` and returns that directory (bytes)."""
    _restore(wrapped, checkpoint_path)
    signatures, pruned_functions = {}, []
    for key, output in export_outputs.items():
        pruned, serve = _signature(wrapped, receiver.receiver_tensors, output.outputs)
        signatures[key] = serve
        pruned_functions.append(pruned)
    module = tf.Module()
    module.variables_of_graph = _tracked_variables(wrapped, pruned_functions)
    export_dir = _timestamped_dir(export_dir_base)
    temp_dir = os.path.join(os.path.dirname(export_dir), b'temp-' + os.path.basename(export_dir))
    with checkpoints.root_logger_left_alone():  # TensorFlow's writer logs through absl: lines would print twice.
        tf.saved_model.save(module, os.fsdecode(temp_dir), signatures=signatures)
    if as_text:
        _rewrite_as_text(os.fsdecode(temp_dir))
    for destination, source in (assets_extra or {}).items():
        target = os.path.join(os.fsdecode(temp_dir), 'assets.extra', destination)
        tf.io.gfile.makedirs(os.path.dirname(target))
        tf.io.gfile.copy(source, target)
    tf.io.gfile.rename(os.fsdecode(temp_dir), os.fsdecode(export_dir))
    logging.info('SavedModel written to: %s', os.fsdecode(export_dir))
    return export_dir


def _rewrite_as_text(directory: str) -> None:
    """Replaces `saved_model.pb` with `saved_model.pbtxt` (what v1's `as_text=True` wrote; loaders read both)."""
    binary = os.path.join(directory, 'saved_model.pb')
    saved_model = saved_model_pb2.SavedModel.FromString(tf.io.gfile.GFile(binary, 'rb').read())
    with tf.io.gfile.GFile(os.path.join(directory, 'saved_model.pbtxt'), 'w') as text:
        text.write(text_format.MessageToString(saved_model))
    tf.io.gfile.remove(binary)
