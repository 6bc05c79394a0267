"""Runs steps of the premade-Estimator programs, under TF 2.15's `tf.estimator` or `compat_mts.estimator`.

`tests/test_estimator_premade.py` runs one list of steps in a TF 2.15 child process (`python premade_runner.py
'<json list>'`, the results printed as one JSON line after `RESULTS:`) and others in its own process with
`compat_mts.estimator`, on the same programs (`premade_iris`, `census_wide_deep`). A step is a dict: `program`,
`op` (`train` with `steps`, `evaluate`, `predict`, `copy` to `to`), `model_dir`. The programs get a `RunConfig`
that writes the loss summary every step, so the losses can be compared step by step from the events files.
"""

import importlib
import json
import os
import shutil
import sys

from tests.estimator_programs.results import plain

CONFIG = {'save_summary_steps': 1, 'tf_random_seed': 42, 'log_step_count_steps': 1000}


def run_steps(estimator, steps):
    """Runs `steps` (see the module docstring) with the module `estimator`; returns their results, in order."""
    results = []
    for step in steps:
        if step['op'] == 'copy':
            shutil.copytree(step['model_dir'], step['to'])
            results.append(None)
            continue
        program = importlib.import_module('tests.estimator_programs.' + step['program'])
        model = program.make_estimator(estimator, step['model_dir'], config=estimator.RunConfig(**CONFIG))
        if step['op'] == 'train':
            program.train(model, step['steps'])
            results.append(None)
        elif step['op'] == 'evaluate':
            results.append(plain(program.evaluate(model)))
        elif step['op'] == 'predict':
            results.append(plain(program.predict(model)))
        else:
            raise ValueError(f'unknown op {step["op"]!r}')
    return results


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import tensorflow as tf

    print('RESULTS:' + json.dumps(run_steps(tf.estimator, json.loads(sys.argv[1]))))
