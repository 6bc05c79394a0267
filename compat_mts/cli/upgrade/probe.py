"""Runs one training script for `compat-mts upgrade --verify`, recording the loss of every training step.

`python probe.py v1|upgraded OUT_JSON STEPS SCRIPT_DIR SCRIPT [ARG...]` runs SCRIPT as `__main__` (with
SCRIPT_DIR first on `sys.path`, as when the original is run) and writes OUT_JSON when it ends. In `v1` mode eager
execution is off before the script runs, as v1 graph mode had it; for a script written for TensorFlow 1.x,
`import tensorflow` is then TensorFlow's `tf.compat.v1` (COMPAT_MTS_PROBE_TF1=1), which is that API.

How the loss is found: every way a v1 program differentiates its loss goes through one of three calls, and the
probe records the scalar each one is given, per graph, with the name of the call:
`Optimizer.compute_gradients(loss, ...)` (a v1 optimizer's `minimize`, and the custom Estimators' `model_fn`s
that call it; `TPUEstimator`'s `CrossShardOptimizer` too), `tf.gradients(ys, xs)` (the premade Estimators, whose
Keras 2 optimizers' `get_updates` call it; BERT's optimizer, which then calls `apply_gradients`) and
`tf.GradientTape.gradient` (a Keras 2 or 3 optimizer's `minimize`, or a tape's gradients given to
`apply_gradients`). Every session, v1's and compat_mts's, is a `MonitoredSession` or `SingularMonitoredSession`
(`MonitoredTrainingSession` and the Estimator make one), so the probe adds one hook to each: it fetches the
recorded loss of the session's graph with each run, and asks the session to stop after STEPS runs. A session of
a graph with no loss differentiated (an evaluation) is not recorded. OUT_JSON says which call the losses came
from (`paths`) and how many sessions were recorded: a program that trains another way (a bare `tf.Session`, a
loss differentiated in a `tf.function`) records nothing, which `--verify` reports as such.

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
    record = {'mode': mode, 'losses': [], 'sessions': 0, 'paths': [], 'error': None}
    losses_by_graph = {}
    new_losses = []  # (loss, path) recorded since the last session began.

    def note(loss, path):
        """Records `loss`, a scalar of a graph (not of a tf.function, whose tensors no session can fetch)."""
        graph = getattr(loss, 'graph', None)
        if not isinstance(loss, tf.Tensor) or graph is None or getattr(graph, 'building_function', False):
            return
        if loss.shape.rank != 0:
            return
        if graph in losses_by_graph and losses_by_graph[graph][0] is loss:
            return  # Recorded by the call that made this one (`compute_gradients` calls `tf.gradients`).
        losses_by_graph[graph] = (loss, path)
        new_losses.append((loss, path))

    original_compute_gradients = v1.train.Optimizer.compute_gradients

    def compute_gradients(self, loss, *args, **kwargs):
        if not callable(loss):
            note(loss, 'Optimizer.compute_gradients')
        return original_compute_gradients(self, loss, *args, **kwargs)

    v1.train.Optimizer.compute_gradients = compute_gradients

    original_gradient = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):
        note(target, 'GradientTape.gradient')
        return original_gradient(self, target, sources, *args, **kwargs)

    tf.GradientTape.gradient = gradient

    def with_record(original_gradients):
        def gradients(ys, xs, *args, **kwargs):
            note(ys[0] if isinstance(ys, (list, tuple)) and len(ys) == 1 else ys, 'tf.gradients')
            return original_gradients(ys, xs, *args, **kwargs)

        return gradients

    # `tf.gradients` and `tf.compat.v1.gradients` are attributes of several of TensorFlow's module objects
    # (`tf.compat.v2.compat.v1` is the one Keras 2 calls, TensorFlow's own ops call theirs): each is replaced.
    originals = {id(function): with_record(function) for function in {tf.gradients, v1.gradients}}
    for module in list(sys.modules.values()):
        name = getattr(module, '__name__', None)
        if isinstance(name, str) and name.startswith('tensorflow'):
            if id(getattr(module, 'gradients', None)) in originals:
                module.gradients = originals[id(module.gradients)]

    class LossProbe(v1.train.SessionRunHook):
        def begin(self):
            # The session's graph is the default one in v1; compat_mts's Estimator may begin its hooks
            # outside the graph it built, so the loss recorded since the last session began is that graph's.
            found = losses_by_graph.get(v1.get_default_graph())
            if found is None and new_losses:
                found = new_losses[-1]
            new_losses.clear()
            self._loss = None if found is None else found[0]
            self._runs = 0
            if found is not None:
                record['sessions'] += 1
                if found[1] not in record['paths']:
                    record['paths'].append(found[1])

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
