"""Runs v1 programs, or their compat_mts twins, and reports what they did and what they left on disk.

- `PYTHONPATH=. python tests/v1_programs/run_programs.py`: the v1 side, a server. Eager execution is turned
  off before anything else; then each line read on stdin is a JSON plan (a list of calls), run in order, each
  call in a fresh `tf.Graph` as a new run of the program would start, and answered with one JSON line.
- `run(call, 'compat')`, from the test process: runs the stage-1 twin of a call, eagerly.

A call is `{"program": "regression", "checkpoint_dir": "...", "last_step": 60}`; the module run is
`tests.v1_programs.<program>_v1` or `<program>_compat`. Its report holds what `main` returned, the steps of the
`model.ckpt-N.index` files in the directory, and every value of the latest checkpoint by name.
"""

import importlib
import json
import os
import sys

import tensorflow as tf

if __name__ == '__main__':
    tf.compat.v1.disable_eager_execution()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def inventory(checkpoint_dir):
    """The checkpoint steps on disk and the values of the latest checkpoint, by name."""
    steps = sorted(int(name[len('model.ckpt-'):-len('.index')]) for name in os.listdir(checkpoint_dir)
                   if name.startswith('model.ckpt-') and name.endswith('.index'))
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(checkpoint_dir))
    values = {name: reader.get_tensor(name).tolist() for name in reader.get_variable_to_shape_map()}
    return {'checkpoint_steps': steps, 'latest_values': values}


def run(call, mode):
    """Runs `call` on the `mode` ('v1' or 'compat') side; returns its report."""
    module = importlib.import_module(f'tests.v1_programs.{call["program"]}_{mode}')
    arguments = {key: value for key, value in call.items() if key != 'program'}
    if mode == 'v1':
        with tf.Graph().as_default():
            result = module.main(**arguments)
    else:
        result = module.main(**arguments)
    return {'result': result, **inventory(call['checkpoint_dir'])}


def serve_v1():
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps([run(call, 'v1') for call in json.loads(line)]), flush=True)


if __name__ == '__main__':
    serve_v1()
