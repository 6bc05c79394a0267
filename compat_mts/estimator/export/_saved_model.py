"""Writing the PREDICT graph of a `model_fn`, with a checkpoint's values, as a TF2 SavedModel with v1's signatures.

v1 saved the graph itself (a MetaGraphDef and a name-based variables checkpoint) with `SavedModelBuilder`,
which needs a `tf.compat.v1.Session`. Eagerly the graph is a `compat_mts.wrap_graph`: each signature is the
wrapped function pruned to the signature's inputs and outputs, called by a `tf.function` whose input signature
names the inputs; a `tf.Module` holding the graph's variables is saved with those signatures by
`tf.saved_model.save`.

The signatures are TF 2.15's (`_signature_defs`): each export output's `as_signature_def` on the receiver tensors
and on each group of `receiver_tensors_alternatives`, those it refuses or that TF Serving could not serve left
out and reported in the log, as v1's export did. `tf.saved_model.save` writes every signature as a predict one;
the `SignatureDef`s of `saved_model.pb` are then replaced by v1's (method name, keys, dtypes, shapes), pointed at
the tensors of the saved graph (`_write_signature_defs`). The method name is what TF Serving's Classify and
Regress APIs read; `tf.saved_model.load` reads the signatures' functions, which take and return the same keys.
The SavedModel also holds TF2's `__saved_model_init_op` entry (its initializer, which TF Serving runs; not a
serving signature).

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

from compat_mts import _tf_internals as tf_internals
from compat_mts.checkpoint_dir import checkpoints

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


def _restore(checkpoint, checkpoint_path: str) -> None:
    try:
        status = checkpoint.restore(checkpoint_path)
        missing = status.unmatched
    except checkpoints.CheckpointMismatchError:  # A NotFoundError too, which names what does not fit already.
        raise
    except tf.errors.NotFoundError as error:
        missing = str(error)
    if missing:
        raise ValueError(
            'Could not load all requested variables from checkpoint. Please make sure your model_fn does not expect '
            'variables that were not saved in the checkpoint.\n\nEncountered error with mode `{}` while restoring '
            'checkpoint from: `{}`. Full Traceback:\n\n{}'.format('infer', checkpoint_path, missing)
        )


_FRIENDLY_METHOD_NAMES = {
    tf.compat.v1.saved_model.CLASSIFY_METHOD_NAME: 'Classify',
    tf.compat.v1.saved_model.REGRESS_METHOD_NAME: 'Regress',
    tf.compat.v1.saved_model.PREDICT_METHOD_NAME: 'Predict',
    'tensorflow/supervised/training': 'Train',
    'tensorflow/supervised/eval': 'Eval',
}


def _ensure_servable(input_tensors, signature_def, graph: tf.Graph) -> None:
    """Raises ValueError (v1's message) when an output needs a placeholder that is not among `input_tensors`."""
    fed = {tensor.name for tensor in input_tensors}
    outputs = [graph.get_tensor_by_name(info.name) for info in signature_def.outputs.values()]
    pending, seen = [tensor.op for tensor in outputs if tensor.name not in fed], set()
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type == 'Placeholder':
            raise ValueError(
                "The signature's input tensors {} are insufficient to compute its output keys {} (respectively, "
                'tensors {}) because of the dependency on `{}` which is not given as a signature input.'.format(
                    sorted(fed), list(signature_def.outputs), [tensor.name for tensor in outputs], op.name
                )
            )
        pending.extend(tensor.op for tensor in op.inputs if tensor.name not in fed)


def _signature_defs(receiver, export_outputs: dict) -> dict:
    """The serving `SignatureDef`s TF 2.15's export wrote for `receiver` and `export_outputs`, by signature name.

    One per export output on the receiver tensors (named by the output's key), and one per export output on each
    group of `receiver_tensors_alternatives` (`'<group>:<key>'`); those whose `as_signature_def` refuses the
    inputs, that need an input not given, or that TF Serving could not serve are left out. The log says which
    signatures each method got and why the others were left out, in v1's words.
    """
    graph = next(iter(receiver.receiver_tensors.values())).graph
    alternatives = getattr(receiver, 'receiver_tensors_alternatives', None) or {}  # A supervised receiver has none.
    groups = [(None, receiver.receiver_tensors), *alternatives.items()]
    included, excluded = {}, {}
    for group, receiver_tensors in groups:
        for key, export_output in export_outputs.items():
            name = '{}'.format(key or 'None') if group is None else '{}:{}'.format(group or 'None', key or 'None')
            try:
                signature_def = export_output.as_signature_def(receiver_tensors)
                _ensure_servable(receiver_tensors.values(), signature_def, graph)
            except ValueError as error:
                excluded[name] = str(error)
            else:
                included[name] = signature_def
    _log_signature_report(included, excluded)
    return {name: value for name, value in included.items() if tf.compat.v1.saved_model.is_valid_signature(value)}


def _log_signature_report(included: dict, excluded: dict) -> None:
    names_by_method = {method: [] for method in _FRIENDLY_METHOD_NAMES}
    for name, signature_def in included.items():
        names_by_method.setdefault(signature_def.method_name, []).append(name)
    for method, names in names_by_method.items():
        logging.info(
            'Signatures INCLUDED in export for {}: {}'.format(
                _FRIENDLY_METHOD_NAMES.get(method, method), names or 'None'
            )
        )
    if excluded:
        logging.info('Signatures EXCLUDED from export because they cannot be be served via TensorFlow Serving APIs:')
        for name, message in excluded.items():
            logging.info("'{}' : {}".format(name, message))
    if not included:
        logging.warning('Export includes no signatures!')
    elif tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in included:
        logging.warning('Export includes no default signature!')


def _signature(wrapped, signature_def):
    """The pruned function computing `signature_def`'s outputs from its inputs, and the `tf.function` serving it.

    The `tf.function` takes the inputs as keyword arguments named by the signature's input keys (`inputs`,
    `examples`, ...), as the `SignatureDef` names them.
    """
    imported = wrapped.function.graph
    names = sorted(signature_def.inputs)
    inputs = [imported.get_tensor_by_name(signature_def.inputs[name].name) for name in names]
    pruned = wrapped.function.prune(
        feeds=inputs,
        fetches={key: imported.get_tensor_by_name(info.name) for key, info in signature_def.outputs.items()},
    )
    specs = [tf.TensorSpec(tensor.shape, tensor.dtype, name=name) for name, tensor in zip(names, inputs)]

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
    checkpoint=None,
) -> bytes:
    """Writes the SavedModel into a new `export_dir_base/<timestamp>` and returns that directory (bytes).

    The variables are restored from `checkpoint_path` through `checkpoint` (the scaffold's `Saver`'s), else through
    the checkpoint of every global variable of `wrapped`.
    """
    _restore(checkpoint or wrapped.checkpoint, checkpoint_path)
    signature_defs = _signature_defs(receiver, export_outputs)
    signatures, pruned_functions = {}, []
    for name, signature_def in signature_defs.items():
        pruned, serve = _signature(wrapped, signature_def)
        signatures[name] = serve
        pruned_functions.append(pruned)
    module = tf.Module()
    module.variables_of_graph, module.tables_of_graph = _tracked_resources(wrapped, pruned_functions)
    export_dir = _timestamped_dir(export_dir_base)
    temp_dir = os.path.join(os.path.dirname(export_dir), b'temp-' + os.path.basename(export_dir))
    with checkpoints.root_logger_left_alone():  # TensorFlow's writer logs through absl: lines would print twice.
        tf.saved_model.save(module, os.fsdecode(temp_dir), signatures=signatures)
    _write_signature_defs(os.fsdecode(temp_dir), signature_defs, as_text)
    for destination, source in (assets_extra or {}).items():
        target = os.path.join(os.fsdecode(temp_dir), 'assets.extra', destination)
        tf.io.gfile.makedirs(os.path.dirname(target))
        tf.io.gfile.copy(source, target)
    tf.io.gfile.rename(os.fsdecode(temp_dir), os.fsdecode(export_dir))
    logging.info('SavedModel written to: %s', os.fsdecode(export_dir))
    return export_dir


def _write_signature_defs(directory: str, signature_defs: dict, as_text: bool) -> None:
    """Replaces the `SignatureDef`s `tf.saved_model.save` wrote with `signature_defs`, their tensors renamed to
    the saved graph's; writes `saved_model.pbtxt` in place of `saved_model.pb` when `as_text` (v1's
    `as_text=True`; loaders read both), and the fingerprint of what was written."""
    binary = os.path.join(directory, 'saved_model.pb')
    saved_model = saved_model_pb2.SavedModel.FromString(tf.io.gfile.GFile(binary, 'rb').read())
    (meta_graph,) = saved_model.meta_graphs
    for name, signature_def in signature_defs.items():
        written = meta_graph.signature_def[name]
        renamed = type(signature_def)()
        renamed.CopyFrom(signature_def)
        for key, info in renamed.inputs.items():
            info.name = written.inputs[key].name
        for key, info in renamed.outputs.items():
            info.name = written.outputs[key].name
        written.CopyFrom(renamed)
    if as_text:
        with tf.io.gfile.GFile(os.path.join(directory, 'saved_model.pbtxt'), 'w') as text:
            text.write(text_format.MessageToString(saved_model))
        tf.io.gfile.remove(binary)
    else:
        with tf.io.gfile.GFile(binary, 'wb') as file:
            file.write(saved_model.SerializeToString())
    tf_internals.rewrite_saved_model_fingerprint(directory)
