"""`InMemoryEvaluatorHook`: v1's evaluation during training of the current values, without a checkpoint."""

from __future__ import annotations

import tensorflow as tf

from compat_mts.estimator import estimator as estimator_lib
from compat_mts.hooks.timer import SecondOrStepTimer
from compat_mts.session.session_run_hook import SessionRunHook

__all__ = ['InMemoryEvaluatorHook']


class InMemoryEvaluatorHook(SessionRunHook):
    """Evaluates the model being trained every `every_n_iter` training steps, on its values in memory (v1's).

    As v1's hook: one evaluation when the training session is created, one after every `every_n_iter` runs of
    this training call (counted from its start, not by the global step), and one at the end; each is
    `estimator.evaluate(input_fn, steps, hooks, name=name)` of the training's current variables (those of the
    evaluation graph with the same names), written to `eval_dir(name)` at the training's global step,
    without a `checkpoint_path` summary since there is no checkpoint. So the early-stopping hooks can read it.

    What differs: v1 built the evaluation graph once, in `begin()`; here each evaluation builds it (the
    Estimator's graphs are built once per call), so the `hooks`' `begin()` runs at every evaluation.

    Example:

    ```python
    evaluator = compat_mts.estimator.experimental.InMemoryEvaluatorHook(estimator, eval_input_fn)
    estimator.train(train_input_fn, hooks=[evaluator])
    ```

    Args:
      estimator: the `compat_mts.estimator.Estimator` being trained.
      input_fn: the evaluation's `input_fn`, as for `evaluate`.
      steps: the evaluation's batches; None: until `input_fn`'s data ends.
      hooks: the evaluation's hooks, as for `evaluate`.
      name: the evaluation's name (`eval_<name>` directory), as for `evaluate`.
      every_n_iter: evaluate once every this many training steps.

    Raises:
      ValueError: `every_n_iter` is not positive, or the `RunConfig` is of a cluster (v1's messages); at an
        evaluation, an evaluation scaffold with a `saver` or an `init_fn`, or a training graph with saveable
        objects other than variables (v1's messages).
      TypeError: a hook of the wrong type (v1's message).
    """

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None, every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError('invalid every_n_iter=%s.' % every_n_iter)
        if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
            raise ValueError('InMemoryEvaluator supports only single machine (aka Local) setting.')
        self._estimator = estimator
        self._input_fn = input_fn
        self._steps = steps
        self._name = name
        self._hooks = estimator_lib._check_hooks_type(hooks)
        self._timer = SecondOrStepTimer(every_steps=every_n_iter)
        self._variables = {}
        self._iter_count = 0

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._variables = {variable.op.name: variable for variable in tf.compat.v1.global_variables()}
        if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS):
            raise ValueError('InMemoryEvaluator does not support saveables other than global variables.')

    def after_create_session(self, session, coord):
        """Evaluates the values the training starts from."""
        self._evaluate(session)

    def _evaluate(self, train_session) -> None:
        values = train_session.run(self._variables)
        self._estimator._evaluate(
            self._input_fn, self._steps, list(self._hooks), None, self._name, variable_values=values
        )
        self._timer.update_last_triggered_step(self._iter_count)

    def after_run(self, run_context, run_values):
        self._iter_count += 1
        if self._timer.should_trigger_for_step(self._iter_count):
            self._evaluate(run_context.session)

    def end(self, session):
        """Evaluates the final values."""
        self._evaluate(session)
