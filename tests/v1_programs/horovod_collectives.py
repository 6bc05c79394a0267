"""Horovod's collectives in a v1 graph at stage 1 (`compat_mts.legacy.horovod`), run by each worker of a cluster
(`TF_CONFIG`) or alone: prints one JSON line of what each call gave on this worker.

Each worker's values depend on its rank, so the results show what was reduced or broadcast: `value` is
`[1 + rank, 10 * (rank + 1)]`; `w` starts at `[rank, rank]` and `v` at `100 + rank`.

Usage: horovod_collectives.py
"""

import json

import tensorflow as tf

import compat_mts as mts
from compat_mts.legacy import horovod as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()

with tf.Graph().as_default():
    value = tf.constant([1.0 + rank, 10.0 * (rank + 1)])
    w = tf.compat.v1.get_variable('w', initializer=tf.constant([float(rank), float(rank)]))
    v = tf.compat.v1.get_variable('v', initializer=tf.constant(100.0 + rank))
    reductions = {
        'average': hvd.allreduce(value),
        'average_true': hvd.allreduce(value, average=True),
        'average_false': hvd.allreduce(value, average=False),
        'sum': hvd.allreduce(value, op=hvd.Sum),
        'min': hvd.allreduce(value, op=hvd.Min),
        'max': hvd.allreduce(value, op=hvd.Max),
        'product': hvd.allreduce(value, op=hvd.Product),
        'scaled_sum': hvd.allreduce(value, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25),
        'from_last': hvd.broadcast(value, size - 1),
    }
    w_from_last = hvd.broadcast_variables([w], root_rank=size - 1)
    all_from_first = hvd.broadcast_global_variables(0)
    increment_v = v.assign_add(1.0)
    with mts.MonitoredTrainingSession() as session:
        results = {name: values.tolist() for name, values in session.run(reductions).items()}
        session.run(w_from_last)
        results['w_after_broadcast_variables'] = session.run(w).tolist()
        session.run(increment_v)
        session.run(all_from_first)
        results['w_v_after_broadcast_global_variables'] = [session.run(w).tolist(), float(session.run(v))]

print(json.dumps({'rank': rank, 'size': size, **results}))
