"""Runs one training script for `compat-mts upgrade --verify`, recording the loss of every training step.

`python upgrade_probe.py v1|upgraded OUT_JSON STEPS SCRIPT_DIR SCRIPT [ARG...]` runs SCRIPT as `__main__` (with
SCRIPT_DIR first on `sys.path`, as when the original is run) and writes OUT_JSON when it ends. In `v1` mode eager
execution is off before the script runs, as v1 graph mode had it; for a script written for TensorFlow 1.x,
`import tensorflow` is then TensorFlow's `tf.compat.v1` (COMPAT_MTS_PROBE_TF1=1), which is that API.

How the loss is found: every v1 optimizer computes its gradients in `Optimizer.compute_gradients(loss, ...)`
(`minimize` calls it, and so does the Estimator's `model_fn` through it), so the probe records the `loss` of that
call, per graph; a graph's scalar differentiated by a `tf.GradientTape` (a Keras optimizer's `minimize`, or
gradients given to `apply_gradients`) is recorded the same way. Every session, v1's and compat_mts's, is a
`MonitoredSession` or `SingularMonitoredSession` (`MonitoredTrainingSession` and the Estimator make one), so the
probe adds one hook to each: it fetches the recorded loss of the session's graph with each run, and asks the
session to stop after STEPS runs. A session of a graph with no optimizer (an evaluation) is not recorded.

Standard library and TensorFlow only: in `v1` mode it may run under an older TensorFlow (2.15 for an Estimator
script), where compat_mts cannot be imported.
"""

import atexit
import inspect
import json
import os
import random
import runpy
import sys


def main(argv):
    mode, out_path, steps, script_dir, script = argv[:5]
    steps = int(steps)
    import tensorflow as tf

    if mode == 'v1' and os.environ.get('COMPAT_MTS_PROBE_TF1') == '1':
        tf.compat.v1.disable_v2_behavior()  # TensorFlow 1.x's behaviour: graph mode, v1 shapes and variables.
    elif mode == 'v1':
        tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    record = {'mode': mode, 'losses': [], 'sessions': 0, 'error': None}
    losses_by_graph = {}

    original_compute_gradients = v1.train.Optimizer.compute_gradients

    new_losses = []  # Recorded since the last session began.

    def compute_gradients(self, loss, *args, **kwargs):
        if not callable(loss):
            losses_by_graph[loss.graph] = loss
            new_losses.append(loss)
        return original_compute_gradients(self, loss, *args, **kwargs)

    v1.train.Optimizer.compute_gradients = compute_gradients

    original_gradient = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):
        # A graph's loss differentiated by a tape (a Keras optimizer's `minimize`, or `apply_gradients` of the
        # tape's gradients); not inside a tf.function, whose tensors no session can fetch.
        graph = getattr(target, 'graph', None)
        if isinstance(target, tf.Tensor) and graph is not None and not graph.building_function:
            if target.shape.rank == 0:
                losses_by_graph[graph] = target
                new_losses.append(target)
        return original_gradient(self, target, sources, *args, **kwargs)

    tf.GradientTape.gradient = gradient

    class LossProbe(v1.train.SessionRunHook):
        def begin(self):
            # The session's graph is the default one in v1; compat_mts's Estimator may begin its hooks
            # outside the graph it built, so the loss recorded since the last session began is that graph's.
            self._loss = losses_by_graph.get(v1.get_default_graph())
            if self._loss is None and new_losses:
                self._loss = new_losses[-1]
            new_losses.clear()
            self._runs = 0
            if self._loss is not None:
                record['sessions'] += 1

        def before_run(self, run_context):
            return v1.train.SessionRunArgs({'loss': self._loss} if self._loss is not None else {})

        def after_run(self, run_context, run_values):
            if self._loss is None:
                return
            self._runs += 1
            record['losses'].append(float(run_values.results['loss']))
            if len(record['losses']) >= steps:
                run_context.request_stop()

    def with_probe(cls):
        original_init = cls.__init__
        signature = inspect.signature(original_init)

        def __init__(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            bound.arguments['hooks'] = [*(bound.arguments.get('hooks') or []), LossProbe()]
            original_init(*bound.args, **bound.kwargs)

        cls.__init__ = __init__

    if mode == 'v1':
        sessions = (v1.train.MonitoredSession, v1.train.SingularMonitoredSession)
    else:
        import compat_mts

        sessions = (compat_mts.MonitoredSession, compat_mts.SingularMonitoredSession)
    for cls in sessions:
        with_probe(cls)

    def write():
        with open(out_path, 'w', encoding='utf-8') as file:
            json.dump(record, file)

    atexit.register(write)
    random.seed(0)
    try:
        import numpy as np

        np.random.seed(0)
    except ImportError:
        pass
    if mode == 'v1' and os.environ.get('COMPAT_MTS_PROBE_TF1') == '1':
        sys.modules['tensorflow'] = v1  # What `import tensorflow` was in TensorFlow 1.x.
    sys.argv = [script, *argv[5:]]
    sys.path.insert(0, script_dir)
    try:
        runpy.run_path(script, run_name='__main__')
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            record['error'] = f'SystemExit({exit_.code!r})'
            raise
    except BaseException as error:
        record['error'] = f'{type(error).__name__}: {error}'
        raise


if __name__ == '__main__':
    main(sys.argv[1:])
