"""A `model_fn`'s scaffold as the `compat_mts.Scaffold` the eager session takes."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from compat_mts.session.scaffold import Scaffold


def as_compat_scaffold(scaffold: Any) -> Scaffold:
    """`scaffold` (None, a `tf.compat.v1.train.Scaffold` or a `compat_mts.Scaffold`) as a `compat_mts.Scaffold`.

    A v1 scaffold's graph ops and tensors (`init_op`, `local_init_op`, `ready_op`, `summary_op`) belong to
    the `model_fn`'s graph, which `compat_mts.wrap_graph` runs, so they are kept as they are; its `init_fn`
    is called as `init_fn(scaffold, session)` with the compat_mts scaffold and the eager raw session. Its
    `saver` (a `tf.compat.v1.train.Saver` of that graph) is kept too: the checkpoints save and restore its
    `var_list` under its names, and keep its `max_to_keep`, as v1's Estimator did with it.

    Raises:
      TypeError: `scaffold` is something else (v1's message).
    """
    if scaffold is None:
        return Scaffold()
    if isinstance(scaffold, Scaffold):
        return scaffold
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError('scaffold must be tf.train.Scaffold. Given: {}'.format(scaffold))
    return Scaffold(
        init_op=scaffold.init_op,
        init_feed_dict=scaffold.init_feed_dict,
        init_fn=tf_internals.v1_scaffold_init_fn(scaffold),
        ready_op=scaffold.ready_op,
        ready_for_local_init_op=scaffold.ready_for_local_init_op,
        local_init_op=scaffold.local_init_op,
        summary_op=scaffold.summary_op,
        local_init_feed_dict=scaffold.local_init_feed_dict,
        saver=scaffold.saver,
    )
