"""A trainer with `ConfigProto(log_device_placement=True)`, for the placement-logging tests.

Usage: placement_program.py WHEN, where WHEN says when TensorFlow's runtime starts:
- `too_late`: the program's variables first, then the session (the usual v1 shape);
- `program_sets_it_first`: the program calls `tf.debugging.set_log_device_placement(True)` right after import;
- `session_first`: the session is created before any TensorFlow operation, then the model;
- `v1`: the same graph under `tf.compat.v1.train.MonitoredTrainingSession` in graph mode.
Each of two programs (a `tf.function` step; a `wrap_graph` graph) runs 3 steps in its own session. Prints
`run <program> <n>` before each run; TensorFlow prints the placement lines on the same stdout.
"""

import sys

import tensorflow as tf

import compat_mts as mts

RUNS = 3


def eager_program():
    global_step = mts.get_or_create_global_step()
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

    @tf.function
    def step():
        global_step.assign_add(1)
        return {'loss': tf.reduce_sum(tf.matmul(w, w, name='eager_step_matmul'))}

    return step, None


def build_graph():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    x = tf.compat.v1.placeholder(tf.float32, [2, 2], name='x')
    loss = tf.reduce_sum(tf.matmul(x, x, name='graph_step_matmul'))
    return {'loss': loss, 'train_op': tf.compat.v1.assign_add(global_step, 1), 'x': x}


def graph_program():
    graph = mts.wrap_graph(build_graph)
    return [graph.outputs['train_op'], graph.outputs['loss']], {graph.outputs['x']: [[1.0, 2.0], [3.0, 4.0]]}


def run(session, name, step, feed_dict):
    with session:
        for number in range(RUNS):
            print(f'run {name} {number}', flush=True)
            session.run(step, feed_dict=feed_dict)


def main(when: str) -> None:
    config = tf.compat.v1.ConfigProto(log_device_placement=True)
    if when == 'v1':
        tf.compat.v1.disable_eager_execution()
        outputs = build_graph()
        session = tf.compat.v1.train.MonitoredTrainingSession(config=config)
        run(session, 'graph_program', [outputs['train_op'], outputs['loss']], {outputs['x']: [[1.0, 2.0], [3.0, 4.0]]})
        return
    if when == 'program_sets_it_first':
        tf.debugging.set_log_device_placement(True)
    for program in (eager_program, graph_program):
        mts.reset_global_step()
        if when == 'session_first':
            session = mts.MonitoredTrainingSession(config=config)
            step, feed_dict = program()
        else:
            step, feed_dict = program()
            session = mts.MonitoredTrainingSession(config=config)
        run(session, program.__name__, step, feed_dict)


if __name__ == '__main__':
    main(sys.argv[1])
