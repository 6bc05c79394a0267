"""Stage 1 of a migration: v1 graph code and v1 checkpoints, run and read eagerly.

- `compat_mts.legacy.graph`: `wrap_graph(build_fn)` builds v1 graph code once and runs it eagerly in the
  sessions; a session created inside the program's own `with tf.Graph().as_default():` adopts that graph;
- `compat_mts.legacy.checkpoints`: v1 name-based checkpoints (`NameBasedCheckpoint`, the default checkpoint of a
  wrapped graph) and `restore_from_v1` into TF2 objects;
- `compat_mts.legacy.convert`: `convert_checkpoint` of whole directories (what `compat-mts convert` runs);
- `compat_mts.legacy.horovod`: Horovod's graph API (`hvd.init()`, `hvd.DistributedOptimizer`, ...) on a
  `MultiWorkerMirroredStrategy`'s collectives, used as Horovod's module (`from compat_mts.legacy import horovod as
  hvd`); its names are not re-exported here.

The session core reaches a wrapped graph only through the `compat_mts.core.fetch.GraphRunner` interface; this
package is what implements it. The names below are the public ones (`compat_mts.legacy.wrap_graph`,
`compat_mts.legacy.restore_from_v1`, ...).
"""

from compat_mts.legacy.checkpoints import (
    CheckpointMismatchError,
    CheckpointNames,
    NameBasedCheckpoint,
    NameBasedRestoreStatus,
    RestoreReport,
    restore_from_v1,
)
from compat_mts.legacy import horovod
from compat_mts.legacy.convert import convert_checkpoint
from compat_mts.legacy.graph import (
    WrappedGraph,
    adopt_graph,
    forget_graph,
    graph_being_built,
    wrap_graph,
    wrapped_graph_of_global_step,
)

__all__ = [
    'wrap_graph',
    'adopt_graph',
    'graph_being_built',
    'WrappedGraph',
    'NameBasedCheckpoint',
    'NameBasedRestoreStatus',
    'RestoreReport',
    'CheckpointMismatchError',
    'CheckpointNames',
    'restore_from_v1',
    'convert_checkpoint',
    'wrapped_graph_of_global_step',
    'forget_graph',
    'horovod',
]
