"""A v1 graph's `SAVEABLE_OBJECTS` (a hash table's keys and values) as entries of the graph's checkpoint.

v1's `Saver` saved, beside the variables, each object of the graph's `SAVEABLE_OBJECTS` collection: a
`tf.lookup.experimental.DenseHashTable` (TF 2.15's SDCA example states) as the tensors of its specs
(`<name>-keys`, `<name>-values`). Here each spec is one checkpoint entry under the spec's name: written from the
table's export op, restored through the saveable's own restore op, run in the wrapped graph. The restore ops
are built (on placeholders) before the graph is wrapped, since a wrapped graph is finalized.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

COLLECTION = tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS


class SaveableState:
    """One saveable of a v1 graph: its spec tensors, and its restore op fed by one placeholder per spec."""

    def __init__(self, saveable: Any):
        self.names = [spec.name for spec in saveable.specs]
        self.tensors = [spec.tensor for spec in saveable.specs]
        self.placeholders = [tf.compat.v1.placeholder(tensor.dtype) for tensor in self.tensors]
        self.restore_op = saveable.restore(self.placeholders, None)
        self._pending: dict[int, Any] = {}

    def restore_one(self, index: int, value: Any, run: Callable) -> None:
        """Keeps `value` of spec `index`; when every spec has its value, runs the restore op with them."""
        self._pending[index] = value
        if len(self._pending) == len(self.names):
            values, self._pending = self._pending, {}
            run([self.restore_op], {self.placeholders[i]: values[i].numpy() for i in values})


def prepare(graph: tf.Graph) -> list[SaveableState]:
    """The states of `graph`'s saveables, their restore ops built in it (before it is wrapped)."""
    saveables = graph.get_collection(COLLECTION)
    if not saveables:
        return []
    with graph.as_default(), graph.name_scope('restore_saveables'):
        return [SaveableState(saveable) for saveable in saveables]


class SavedTensor:
    """One spec of a saveable as a checkpoint entry: read from the wrapped graph, assigned through the restore op.

    Its shape is unknown to the checkpoint (a table's size changes as it grows), as a variable of unknown shape.
    """

    def __init__(self, state: SaveableState, index: int, run: Callable):
        self._state = state
        self._index = index
        self._run = run
        self.name = state.names[index]
        self.dtype = state.tensors[index].dtype
        self.shape = tf.TensorShape(None)

    def value(self) -> tf.Tensor:
        return tf.convert_to_tensor(self._run([self._state.tensors[self._index]], {})[0])

    def assign(self, value) -> None:
        self._state.restore_one(self._index, value, self._run)


tf.register_tensor_conversion_function(
    SavedTensor, lambda value, dtype=None, name=None, as_ref=False: tf.convert_to_tensor(value.value(), dtype, name)
)


def entries(states: list[SaveableState], run: Callable) -> list[tuple[str, SavedTensor]]:
    """(checkpoint name, entry) of each spec of `states`; `run(fetches, feeds)` runs the wrapped graph."""
    return [
        (state.names[index], SavedTensor(state, index, run)) for state in states for index in range(len(state.names))
    ]
