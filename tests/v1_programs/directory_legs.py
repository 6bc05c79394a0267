"""Training legs on one checkpoint directory, in real v1 graph mode or on compat_mts: the same graph code.

Each leg is a new graph and a new `MonitoredTrainingSession` on DIRECTORY that trains until LAST_STEP, saving
every SAVE_STEPS steps (0: v1's default, every 600 seconds). The graph is `build()`, a linear regression by
gradient descent; `--model other` builds a different program (a variable `other` instead of `w`), as a
directory of an unrelated model holds; `--max-to-keep N` builds a `tf.compat.v1.train.Saver(max_to_keep=N)`
in the graph code and gives it to the `Scaffold`, as v1 programs that keep more or fewer checkpoints did.

Usage: `PYTHONPATH=. python tests/v1_programs/directory_legs.py {v1,compat} DIRECTORY LAST_STEP:SAVE_STEPS ...`
(from any working directory; DIRECTORY may be relative to it). Prints one JSON line per leg:
`{"start": <step restored>, "final": <step>, "w": [...]}`, or `{"error": "<class>", "message": ...}` for a leg
that failed, after which no further leg runs.
"""

import json
import sys

import numpy as np
import tensorflow as tf

FEATURES = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
TARGETS = np.array([[1.0], [2.0], [3.0], [4.0]], dtype=np.float32)


def build(model: str = 'regression', max_to_keep: int | None = None):
    """The graph: returns (global step, the weights, the train op, the Saver or None)."""
    global_step = tf.compat.v1.train.get_or_create_global_step()
    if model == 'other':
        weights = tf.compat.v1.get_variable('other', initializer=np.ones([2, 2], np.float32))
        loss = tf.reduce_sum(weights)
    else:
        weights = tf.compat.v1.get_variable('w', initializer=np.zeros([3, 1], np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(FEATURES, weights) - TARGETS))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    saver = tf.compat.v1.train.Saver(max_to_keep=max_to_keep) if max_to_keep is not None else None
    return global_step, weights, train_op, saver


def leg_v1(directory: str, last_step: int, save_steps: int, model: str, max_to_keep: int | None = None) -> dict:
    with tf.Graph().as_default():
        global_step, weights, train_op, saver = build(model, max_to_keep)
        saving = {'save_checkpoint_steps': save_steps} if save_steps else {}
        if saver is not None:
            saving['scaffold'] = tf.compat.v1.train.Scaffold(saver=saver)
        final = tf.compat.v1.train.FinalOpsHook({'step': global_step, 'w': weights})
        with tf.compat.v1.train.MonitoredTrainingSession(
                checkpoint_dir=directory, hooks=[tf.compat.v1.train.StopAtStepHook(last_step=last_step), final],
                **saving) as session:
            start = int(session.run(global_step))
            while not session.should_stop():
                session.run(train_op)
        return _result(start, final.final_ops_values)


def leg_compat(directory: str, last_step: int, save_steps: int, model: str, max_to_keep: int | None = None) -> dict:
    import compat_mts as mts
    mts.reset_global_step()
    graph = mts.wrap_graph(lambda: build(model, max_to_keep))
    global_step, weights, train_op, saver = graph.outputs
    saving = {'save_checkpoint_steps': save_steps} if save_steps else {}
    if saver is not None:
        saving['scaffold'] = mts.Scaffold(saver=saver)
    final = mts.FinalOpsHook({'step': global_step, 'w': weights})
    with mts.MonitoredTrainingSession(checkpoint_dir=directory, hooks=[mts.StopAtStepHook(last_step=last_step), final],
                                      **saving) as session:
        start = int(session.run(global_step))
        while not session.should_stop():
            session.run(train_op)
    return _result(start, final.final_ops_values)


def _result(start: int, final_values: dict) -> dict:
    return {'start': start, 'final': int(final_values['step']), 'w': np.ravel(final_values['w']).tolist()}


def main(mode: str, arguments: list[str]) -> None:
    options = {'--model': 'regression', '--max-to-keep': None}
    for option in options:
        if option in arguments:
            position = arguments.index(option)
            options[option] = arguments[position + 1]
            del arguments[position:position + 2]
    model = options['--model']
    max_to_keep = int(options['--max-to-keep']) if options['--max-to-keep'] is not None else None
    directory, legs = arguments[0], arguments[1:]
    leg = leg_v1 if mode == 'v1' else leg_compat
    for spec in legs:
        last_step, save_steps = (int(part) for part in spec.split(':'))
        try:
            result = leg(directory, last_step, save_steps, model, max_to_keep)
        except Exception as error:  # Reported to the test, which asserts on it.
            print(json.dumps({'error': type(error).__name__, 'message': str(error)[:2000]}), flush=True)
            return
        print(json.dumps(result), flush=True)


if __name__ == '__main__':
    if sys.argv[1] == 'v1':
        tf.compat.v1.disable_eager_execution()
    main(sys.argv[1], sys.argv[2:])
