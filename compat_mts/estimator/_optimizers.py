"""The premade Estimators' optimizers, as v1 graph ops with TF 2.15's checkpoint names and update rules.

TF 2.15's premade Estimators trained with the Keras 2 ("legacy") optimizers, built in the Estimator's graph under
the name scope `training`: their hyperparameters are variables (`training/Adagrad/learning_rate`, ...), their slots
`training/<Optimizer>/<variable>/<slot>`, and their update steps the `ResourceApply*` kernels. Keras 3 optimizers
build neither v1 graphs nor those names, so the same variables and kernels are written out here; a `model_dir` of
TF 2.15 then resumes here with its optimizer state, and the other way round.
"""

from __future__ import annotations

import tensorflow as tf

# Keras 2's defaults (`tf.keras.optimizers.legacy.*`): the hyperparameter variables each optimizer creates, in
# order, and the values a string name gets when the Estimator passes no learning rate.
_HYPERPARAMETERS = {
    'Adagrad': {'learning_rate': 0.001, 'decay': 0.0},
    'Adam': {'learning_rate': 0.001, 'decay': 0.0, 'beta_1': 0.9, 'beta_2': 0.999},
    'Ftrl': {
        'learning_rate': 0.001,
        'decay': 0.0,
        'learning_rate_power': -0.5,
        'l1_regularization_strength': 0.0,
        'l2_regularization_strength': 0.0,
        'beta': 0.0,
    },
    'RMSProp': {'learning_rate': 0.001, 'decay': 0.0, 'rho': 0.9, 'momentum': 0.0},
    'SGD': {'learning_rate': 0.01, 'decay': 0.0, 'momentum': 0.0},
}
OPTIMIZER_NAMES = tuple(sorted(_HYPERPARAMETERS))
_EPSILON = 1e-7
_INITIAL_ACCUMULATOR_VALUE = 0.1


def check_optimizer(argument: str, optimizer) -> None:
    """Refuses what the premade Estimators cannot train with, naming `argument`.

    Raises:
      ValueError: an unknown optimizer name, or an object that is neither a name nor a callable.
    """
    if isinstance(optimizer, str):
        if optimizer not in _HYPERPARAMETERS:
            raise ValueError(
                f'`{argument}` ({optimizer!r}) is not a supported optimizer name. Supported names are: '
                f'{OPTIMIZER_NAMES}.'
            )
        return
    if isinstance(optimizer, (tf.compat.v1.train.Optimizer, GraphOptimizer)) or callable(optimizer):
        return
    raise ValueError(
        f'`{argument}` must be one of the names {OPTIMIZER_NAMES}, a `tf.compat.v1.train.Optimizer` or a callable '
        f'returning one; got {optimizer!r}.'
    )


class GraphOptimizer:
    """One of TF 2.15's Keras 2 optimizers, in the model_fn's v1 graph (see the module docstring).

    Args:
      name: one of `OPTIMIZER_NAMES`.
      learning_rate: None for Keras 2's default.
      iterations: the step variable this optimizer increments (the global step, as in TF 2.15's premade
        Estimators), or None for a variable of its own (`training/<name>/iter`).
    """

    def __init__(self, name: str, learning_rate: float | None = None, iterations=None):
        self.name = name
        self._values = dict(_HYPERPARAMETERS[name])
        if learning_rate:
            self._values['learning_rate'] = learning_rate
        self._iterations = iterations

    def _variable(self, name: str, initial_value, dtype=tf.float32):
        graph = tf.compat.v1.get_default_graph()
        with graph.name_scope(None), graph.name_scope('training/' + self.name + '/'):
            return tf.compat.v1.Variable(
                initial_value,
                name=name,
                dtype=dtype,
                trainable=False,
                use_resource=True,
            )

    def _slot(self, variable, slot_name: str, initial: float):
        shape = variable.shape
        return self._variable(
            variable.op.name + '/' + slot_name,
            lambda: tf.constant(initial, dtype=variable.dtype.base_dtype, shape=shape),
            dtype=variable.dtype.base_dtype,
        )

    def apply(self, loss, variables: list):
        """The op that applies one step to `variables` for `loss` and counts it (Keras 2's `get_updates`)."""
        gradients = tf.compat.v1.gradients(loss, variables)
        pairs = [(gradient, variable) for gradient, variable in zip(gradients, variables) if gradient is not None]
        if self._iterations is None:
            self._iterations = self._variable('iter', 0, dtype=tf.int64)
        hyper = {name: self._variable(name, value) for name, value in self._values.items()}
        with tf.compat.v1.name_scope('training/' + self.name):
            step_count = tf.cast(self._iterations, tf.float32)
            learning_rate = tf.identity(hyper['learning_rate'])
            if self._values['decay'] > 0:
                learning_rate = learning_rate / (1.0 + hyper['decay'] * step_count)
            updates = [
                self._apply_one(gradient, variable, learning_rate, hyper, step_count) for gradient, variable in pairs
            ]
            with tf.control_dependencies(updates):
                return self._iterations.assign_add(1).op

    def _apply_one(self, gradient, variable, learning_rate, hyper, step_count):
        epsilon = tf.constant(_EPSILON, variable.dtype.base_dtype)
        sparse = isinstance(gradient, tf.IndexedSlices)
        if self.name == 'Adagrad':
            accumulator = self._slot(variable, 'accumulator', _INITIAL_ACCUMULATOR_VALUE)
            if sparse:
                return tf.raw_ops.ResourceSparseApplyAdagradV2(
                    var=variable.handle,
                    accum=accumulator.handle,
                    lr=learning_rate,
                    epsilon=epsilon,
                    grad=gradient.values,
                    indices=gradient.indices,
                )
            return tf.raw_ops.ResourceApplyAdagradV2(
                var=variable.handle, accum=accumulator.handle, lr=learning_rate, epsilon=epsilon, grad=gradient
            )
        if self.name == 'Ftrl':
            accumulator = self._slot(variable, 'accumulator', _INITIAL_ACCUMULATOR_VALUE)
            linear = self._slot(variable, 'linear', 0.0)
            l2 = hyper['l2_regularization_strength'] + hyper['beta'] / (2.0 * learning_rate)
            arguments = dict(
                var=variable.handle,
                accum=accumulator.handle,
                linear=linear.handle,
                lr=learning_rate,
                l1=tf.identity(hyper['l1_regularization_strength']),
                l2=l2,
                lr_power=tf.identity(hyper['learning_rate_power']),
            )
            if sparse:
                return tf.raw_ops.ResourceSparseApplyFtrl(grad=gradient.values, indices=gradient.indices, **arguments)
            return tf.raw_ops.ResourceApplyFtrl(grad=gradient, **arguments)
        gradient = tf.convert_to_tensor(gradient)
        if self.name == 'Adam':
            first = self._slot(variable, 'm', 0.0)
            second = self._slot(variable, 'v', 0.0)
            local_step = step_count + 1.0
            return tf.raw_ops.ResourceApplyAdam(
                var=variable.handle,
                m=first.handle,
                v=second.handle,
                beta1_power=tf.pow(hyper['beta_1'], local_step),
                beta2_power=tf.pow(hyper['beta_2'], local_step),
                lr=learning_rate,
                beta1=tf.identity(hyper['beta_1']),
                beta2=tf.identity(hyper['beta_2']),
                epsilon=epsilon,
                grad=gradient,
            )
        if self.name == 'RMSProp':  # Keras 2 without momentum: epsilon outside the square root.
            rms = self._slot(variable, 'rms', 0.0)
            rho = tf.identity(hyper['rho'])
            rms_t = rms.assign(rho * rms + (1.0 - rho) * tf.square(gradient))
            return variable.assign_sub(learning_rate * gradient / (tf.sqrt(rms_t) + epsilon)).op
        return tf.raw_ops.ResourceApplyGradientDescent(var=variable.handle, alpha=learning_rate, delta=gradient)


def apply_gradients(optimizer, learning_rate: float | None, loss, variables: list, iterations=None):
    """The train op for `loss` over `variables` with the Estimator's `optimizer` argument.

    A name becomes a `GraphOptimizer` (TF 2.15's names and kernels); a `tf.compat.v1.train.Optimizer` (or a
    callable returning one) runs its own `minimize`, with v1's slot names, not Keras 2's.
    """
    if callable(optimizer) and not isinstance(optimizer, (tf.compat.v1.train.Optimizer, GraphOptimizer)):
        optimizer = optimizer()
    if isinstance(optimizer, str):
        optimizer = GraphOptimizer(optimizer, learning_rate, iterations)
    if isinstance(optimizer, GraphOptimizer):
        return optimizer.apply(loss, variables)
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError(f'The given object is not an Optimizer instance. Given: {optimizer}')
    return optimizer.minimize(loss, global_step=iterations, var_list=variables)
