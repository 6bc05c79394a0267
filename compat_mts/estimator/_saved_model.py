"""Writing the PREDICT graph of a `model_fn`, with a checkpoint's values, as a TF2 SavedModel.

v1 saved the graph itself (a MetaGraphDef and a name-based variables checkpoint) with `SavedModelBuilder`,
which needs a `tf.compat.v1.Session`. Eagerly the graph is a `compat_mts.wrap_graph`: each signature is the
wrapped function pruned to the receiver tensors and the outputs, called by a `tf.function` whose input
signature names the receiver tensors; a `tf.Module` holding the graph's variables is saved with those
signatures by `tf.saved_model.save`.

The graph's lookup tables (those of vocabulary and hash-bucket feature columns, made by `index_table_from_*`) are
saved with their keys and values (`_ExportedTable`): the SavedModel makes each table again when it is loaded and
fills it with them, where v1's ran the graph's table initializers. The tables hold the same keys and values.
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


class _ExportedTable(tf.saved_model.experimental.TrackableResource):
    """A hash table of the PREDICT graph, saved with its keys and values (see the module's docstring).

    Its handle is the one the signatures capture, so that saving maps their capture to the table it makes again.
    """

    def __init__(self, handle: tf.Tensor, key_dtype: tf.DType, value_dtype: tf.DType):
        super().__init__()
        self._key_dtype, self._value_dtype = key_dtype, value_dtype
        self._keys, self._values = tf.raw_ops.LookupTableExportV2(
            table_handle=handle, Tkeys=key_dtype, Tvalues=value_dtype
        )
        self._resource_handle = handle

    def _create_resource(self) -> tf.Tensor:
        return tf.raw_ops.HashTableV2(key_dtype=self._key_dtype, value_dtype=self._value_dtype)

    def _initialize(self) -> tf.Operation:
        return tf.raw_ops.InitializeTableV2(table_handle=self.resource_handle, keys=self._keys, values=self._values)


def _tracked_resources(wrapped, functions: list) -> tuple[list, list]:
    """The variables and the hash tables (as `_ExportedTable`s) the signatures capture.

    Raises:
      NotImplementedError: a captured resource is neither (an iterator, a mutable table...).
    """
    by_handle = {id(variable.handle): variable for variable in wrapped.variables}
    made_by = {id(external): internal.op for external, internal in wrapped.function.graph.captures}
    tables, untracked = {}, []
    for function in functions:
        for tensor in function.captured_inputs:
            if id(tensor) in by_handle or id(tensor) in tables:
                continue
            op = made_by.get(id(tensor))
            if op is not None and op.type == 'HashTableV2':
                tables[id(tensor)] = _ExportedTable(tensor, op.get_attr('key_dtype'), op.get_attr('value_dtype'))
            else:
                untracked.append(f'{op.name} ({op.type})' if op is not None else repr(tensor))
    if untracked:
        raise NotImplementedError(
            'The PREDICT graph holds resources other than variables and hash tables ({}), which a TF2 SavedModel '
            'of a wrapped v1 graph cannot track. Export a Keras or tf.Module model instead (stage 2 of '
            'migration_guide/estimator.md).'.format(', '.join(untracked))
        )
    return list(wrapped.variables), list(tables.values())


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
    module.variables_of_graph, module.tables_of_graph = _tracked_resources(wrapped, pruned_functions)
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
