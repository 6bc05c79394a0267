"""What the adapters read from and change on a Keras model, for Keras 3 and tf-keras alike.

The two Keras flavours differ in small ways that matter here: Keras 3 wraps each `tf.Variable` in a
`keras.Variable` and bakes `steps_per_execution` into the traced train function, while tf-keras uses plain
`tf.Variable`s and keeps `steps_per_execution` in a variable that the train function reads on every call.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from compat_mts.core import global_step as global_step_lib


def tf_variable(variable: Any) -> tf.Variable:
    """The `tf.Variable` behind a Keras variable (Keras 3 wraps one; tf-keras variables are one)."""
    return variable if isinstance(variable, tf.Variable) else variable.value


def variables_by_name(model: Any) -> dict[str, tf.Variable]:
    """The model's variables by their unique names: Keras 3 paths (`sequential/dense/kernel`), tf-keras
    names without `:0` (`dense/kernel`)."""
    named = {}
    for variable in model.variables:
        named[global_step_lib.variable_name(variable)] = tf_variable(variable)
    return named


def build_optimizer(model: Any) -> None:
    """Creates the optimizer's slot variables, so that a restore fills them instead of deferring.

    A checkpoint restored into an optimizer that has not created its slots yet restores the slots of
    neither Keras flavour (they are created later, at the first step, with fresh values).
    """
    optimizer = model.optimizer
    build = getattr(optimizer, 'build', None)
    if getattr(optimizer, 'built', False) or build is None or not model.trainable_variables:
        return
    build(model.trainable_variables)  # tf-keras optimizers have no `built`; their `build` runs once.


def steps_per_execution(model: Any) -> int:
    """The model's `steps_per_execution` (an int in Keras 3, a variable in tf-keras)."""
    value = getattr(model, 'steps_per_execution', None)
    if value is None:
        return 1
    return int(value.numpy()) if isinstance(value, tf.Variable) else int(value)


class ExecutionLength:
    """Shortens one execution of `model.fit` to fewer steps than `steps_per_execution`, then restores it.

    So that an execution that would run past a `StopAtStepHook`'s `last_step` stops exactly there, as
    v1's multi-step loops did. tf-keras reads its `steps_per_execution` variable on every call, so an
    assignment is enough. Keras 3 bakes the number into the traced function, so the model gets a new
    train function for that one execution (one extra trace, once per `fit`), and gets its own back
    afterwards.
    """

    def __init__(self, model: Any):
        self._model = model
        self._saved: tuple[int, Any] | None = None

    def shorten(self, steps: int) -> None:
        """Makes the next execution run `steps` steps."""
        model = self._model
        value = model.steps_per_execution
        if isinstance(value, tf.Variable):
            self._saved = (int(value.numpy()), None)
            value.assign(steps)
        else:
            self._saved = (value, model.train_function)
            model.steps_per_execution = steps
            model.make_train_function(force=True)

    def restore(self) -> None:
        """Gives the model back its own `steps_per_execution` (and train function); no-op if not shortened."""
        if self._saved is None:
            return
        steps, train_function = self._saved
        self._saved = None
        value = self._model.steps_per_execution
        if isinstance(value, tf.Variable):
            value.assign(steps)
        else:
            self._model.steps_per_execution = steps
            self._model.train_function = train_function
