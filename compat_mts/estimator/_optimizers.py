"""The premade Estimators' optimizers, as v1 graph ops with TF 2.15's checkpoint names and update rules.

TF 2.15's premade Estimators trained with the Keras 2 ("legacy") optimizers, built in the Estimator's graph under
the name scope `training`: their hyperparameters are variables (`training/Adagrad/learning_rate`, ...), their slots
`training/<Optimizer>/<variable>/<slot>`, and their update steps the `ResourceApply*` kernels. Keras 3 optimizers
build neither v1 graphs nor those names, so the same variables and kernels are written out here; a `model_dir` of
TF 2.15 then resumes here with its optimizer state, and the other way round. A Keras 2 optimizer object itself
(tf-keras's `optimizers.legacy`, any subclass) builds v1 graphs, and runs its own `get_updates`, as in TF 2.15.
"""

from __future__ import annotations

import sys

import tensorflow as tf

from compat_mts import _tf_internals as tf_internals

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


# Keras's optimizer classes (Keras 3's `keras.optimizers`, tf-keras's new-style `tf_keras.optimizers`) that are
# built here, by the name of the Keras 2 optimizer with their update rule.
_KERAS_CLASSES = {'Adagrad': 'Adagrad', 'Adam': 'Adam', 'Ftrl': 'Ftrl', 'RMSprop': 'RMSProp', 'SGD': 'SGD'}
_KERAS_MODULES = ('keras', 'tf_keras')
# What this module does not build; a Keras optimizer that sets one is refused.
_UNSUPPORTED = {
    'amsgrad': False,
    'centered': False,
    'l2_shrinkage_regularization_strength': 0.0,
}
_RMSPROP_UNSUPPORTED = {'momentum': 0.0}


def is_keras2_optimizer(optimizer) -> bool:
    """Whether `optimizer` is a Keras 2 `OptimizerV2` (tf-keras's `optimizers.legacy`), of any subclass.

    TF 2.15's premade Estimators called its `get_updates` in their graph; it builds v1 graphs, so it runs here
    as it ran there: its own update rule, hyperparameters and variable names.
    """
    legacy = [
        getattr(getattr(keras, 'optimizers', None), 'legacy', None) for keras in (sys.modules.get('tf_keras'), tf.keras)
    ]
    return _instance_of_any(optimizer, [getattr(module, 'Optimizer', None) for module in legacy])


def is_keras_optimizer(optimizer) -> bool:
    """Whether `optimizer` is a Keras optimizer (Keras 3's, tf-keras's, or a Keras 2 `OptimizerV2`): what TF
    2.15's heads took as `optimizer`."""
    bases = [getattr(getattr(sys.modules.get(name), 'optimizers', None), 'Optimizer', None) for name in _KERAS_MODULES]
    return is_keras2_optimizer(optimizer) or _instance_of_any(optimizer, bases)


def _instance_of_any(value, candidates: list) -> bool:
    """Whether `value` is an instance of one of `candidates` that are classes (None for a module not imported)."""
    classes = tuple(candidate for candidate in candidates if isinstance(candidate, type))
    return bool(classes) and isinstance(value, classes)


def _keras_kind(optimizer) -> str | None:
    """The Keras 2 name of the update rule of a Keras 3 (or new-style tf-keras) optimizer, or None.

    A subclass counts as its Keras base class only when it keeps that class's update step (it configures, say,
    a learning rate); one with its own update step is not built here.
    """
    for module_name in _KERAS_MODULES:
        optimizers = getattr(sys.modules.get(module_name), 'optimizers', None)
        for class_name, name in _KERAS_CLASSES.items():
            keras_class = getattr(optimizers, class_name, None)
            if not isinstance(keras_class, type) or not isinstance(optimizer, keras_class):
                continue
            if getattr(type(optimizer), 'update_step', None) is not getattr(keras_class, 'update_step', None):
                return None
            return name
    return None


def _hyperparameter(optimizer, attribute: str, default):
    value = getattr(optimizer, attribute, default)
    if value is None or isinstance(value, bool):
        return value
    with tf_internals.eager_mode():  # Keras keeps its hyperparameters in eager variables.
        return float(value)


def _from_keras(argument: str, optimizer) -> GraphOptimizer | None:
    """A Keras 3 optimizer object as the `GraphOptimizer` of TF 2.15 with its hyperparameters, or None."""
    name = _keras_kind(optimizer)
    if name is None:
        return None
    unsupported = dict(_UNSUPPORTED, **(_RMSPROP_UNSUPPORTED if name == 'RMSProp' else {}))
    for attribute, default in unsupported.items():
        value = _hyperparameter(optimizer, attribute, default)
        if value not in (default, None):
            raise ValueError(
                f'`{argument}`: {type(optimizer).__name__} with {attribute}={value!r} is not supported by the '
                f'premade Estimators here; leave {attribute} at {default!r}, or pass a Keras 2 optimizer '
                '(`tf_keras.optimizers.legacy`) or a `tf.compat.v1.train.Optimizer`.'
            )
    try:
        learning_rate = _hyperparameter(optimizer, 'learning_rate', None)
    except (TypeError, ValueError):
        raise ValueError(
            f'`{argument}`: a learning rate schedule in a Keras optimizer is not supported by the premade '
            'Estimators here; pass a float learning rate, a Keras 2 optimizer (`tf_keras.optimizers.legacy`), '
            'or a `tf.compat.v1.train.Optimizer`.'
        ) from None
    hyperparameters = {
        key: _hyperparameter(optimizer, key, _HYPERPARAMETERS[name][key])
        for key in _HYPERPARAMETERS[name]
        if key not in ('learning_rate', 'decay')
    }
    if name == 'SGD':
        hyperparameters['nesterov'] = bool(getattr(optimizer, 'nesterov', False))
    return GraphOptimizer(
        name,
        learning_rate,
        epsilon=_hyperparameter(optimizer, 'epsilon', _EPSILON) or _EPSILON,
        initial_accumulator_value=_hyperparameter(optimizer, 'initial_accumulator_value', _INITIAL_ACCUMULATOR_VALUE),
        **hyperparameters,
    )


def check_optimizer(argument: str, optimizer) -> None:
    """Refuses what the premade Estimators cannot train with, naming `argument`.

    Raises:
      ValueError: an unknown optimizer name; a Keras 3 optimizer with a setting not built here (amsgrad,
        RMSprop's momentum or centered, a learning rate schedule) or its own update step; an object that is no
        optimizer nor a callable.
    """
    if isinstance(optimizer, str):
        if optimizer not in _HYPERPARAMETERS:
            raise ValueError(
                f'`{argument}` ({optimizer!r}) is not a supported optimizer name. Supported names are: '
                f'{OPTIMIZER_NAMES}.'
            )
        return
    if (
        isinstance(optimizer, tf.compat.v1.train.Optimizer)
        or is_keras2_optimizer(optimizer)
        or _from_keras(argument, optimizer)
        or callable(optimizer)
    ):
        return
    raise ValueError(
        f'`{argument}` must be one of the names {OPTIMIZER_NAMES}, a Keras 2 optimizer (`tf_keras.optimizers.legacy`, '
        'any subclass), a Keras 3 optimizer of one of those kinds, a `tf.compat.v1.train.Optimizer`, or a callable '
        f'returning one; got {optimizer!r}.'
    )


def _unused_scope(graph: tf.Graph, scope: str) -> str:
    """`scope`, or `scope_1`, ... when a first optimizer of that kind is in `graph` (wide & deep with two SGDs),
    as Keras 2 named its second optimizer's variables in TF 2.15 (`training/SGD_1/learning_rate`)."""
    taken = {op.name.split('/')[1] for op in graph.get_operations() if op.name.startswith('training/')}
    candidate, count = scope, 0
    while candidate in taken:
        count += 1
        candidate = f'{scope}_{count}'
    return candidate


class GraphOptimizer:
    """One of TF 2.15's Keras 2 optimizers, in the model_fn's v1 graph (see the module docstring).

    Args:
      name: one of `OPTIMIZER_NAMES`.
      learning_rate: None for Keras 2's default (0.0 trains at 0.0).
      iterations: the step variable this optimizer increments (the global step, as in TF 2.15's premade
        Estimators), or None for a variable of its own (`training/<name>/iter`).
      epsilon: Keras 2's `epsilon` (Adagrad, Adam, RMSProp).
      initial_accumulator_value: Keras 2's (Adagrad, Ftrl).
      nesterov: SGD's Nesterov momentum (with `momentum` > 0).
      **hyperparameters: the other hyperparameters of `_HYPERPARAMETERS[name]` (`beta_1`, ...).
    """

    def __init__(
        self,
        name: str,
        learning_rate: float | None = None,
        iterations=None,
        epsilon: float = _EPSILON,
        initial_accumulator_value: float = _INITIAL_ACCUMULATOR_VALUE,
        nesterov: bool = False,
        **hyperparameters,
    ):
        self.name = name
        self._scope = 'RMSprop' if name == 'RMSProp' else name  # Keras 2's class name.
        self._values = dict(_HYPERPARAMETERS[name])
        if learning_rate is not None:
            self._values['learning_rate'] = learning_rate
        self._values.update(hyperparameters)
        self._epsilon = epsilon
        self._initial_accumulator_value = initial_accumulator_value
        self._iterations = iterations
        self._nesterov = nesterov

    def _variable(self, name: str, initial_value, dtype=tf.float32):
        graph = tf.compat.v1.get_default_graph()
        with graph.name_scope(None), graph.name_scope('training/' + self._scope + '/'):
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
        """The op that applies one step to `variables` for `loss` and counts it (Keras 2's `get_updates`).

        On one of several replicas (`RunConfig(train_distribute=...)`) the replicas' gradients are summed, and
        the sum applied to every replica's copy of the variables, as Keras 2's optimizers did under a strategy
        (the premade Estimators divide the loss by the replicas first: `scaled_for_replicas`).
        """
        self._scope = _unused_scope(tf.compat.v1.get_default_graph(), self._scope)
        gradients = tf.compat.v1.gradients(loss, variables)
        pairs = [(gradient, variable) for gradient, variable in zip(gradients, variables) if gradient is not None]
        if not tf.distribute.has_strategy() or tf.distribute.get_strategy().num_replicas_in_sync == 1:
            return self._apply_pairs(pairs, lambda variable, update, gradient: update(variable, gradient))
        context = tf.distribute.get_replica_context()
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [gradient for gradient, _ in pairs])
        pairs = list(zip(summed, [variable for _, variable in pairs]))

        def apply_on_each_replica(strategy, pairs):
            def update(variable, fn, gradient):
                return strategy.extended.update(variable, fn, args=(gradient,), group=False)

            return self._apply_pairs(pairs, update)

        return context.merge_call(apply_on_each_replica, args=(pairs,))

    def _apply_pairs(self, pairs: list, update):
        """The step's op: the optimizer's variables created, then `update(variable, fn, gradient)` for each pair."""
        if self._iterations is None:
            self._iterations = self._variable('iter', 0, dtype=tf.int64)
        hyper = {name: self._variable(name, value) for name, value in self._values.items()}
        with tf.compat.v1.name_scope('training/' + self._scope):
            step_count = tf.cast(self._iterations, tf.float32)
            learning_rate = tf.identity(hyper['learning_rate'])  # Keras 2's `decay` stays 0: no decay to apply.
            updates = []
            for gradient, variable in pairs:
                slots = self._slots(variable)

                def update_one(variable, gradient, slots=slots):
                    return self._apply_one(gradient, variable, slots, learning_rate, hyper, step_count)

                updates.append(update(variable, update_one, gradient))
            with tf.control_dependencies(tf.nest.flatten(updates)):
                return self._iterations.assign_add(1).op

    def _slots(self, variable) -> dict:
        """The optimizer's slot variables of `variable`, by slot name (Keras 2's names and initial values)."""
        if self.name in ('Adagrad', 'Ftrl'):
            slots = {'accumulator': self._slot(variable, 'accumulator', self._initial_accumulator_value)}
            if self.name == 'Ftrl':
                slots['linear'] = self._slot(variable, 'linear', 0.0)
            return slots
        if self.name == 'Adam':
            return {'m': self._slot(variable, 'm', 0.0), 'v': self._slot(variable, 'v', 0.0)}
        if self.name == 'RMSProp':
            return {'rms': self._slot(variable, 'rms', 0.0)}
        return {}

    def _apply_one(self, gradient, variable, slots, learning_rate, hyper, step_count):
        epsilon = tf.constant(self._epsilon, variable.dtype.base_dtype)
        sparse = isinstance(gradient, tf.IndexedSlices)
        if self.name == 'Adagrad':
            accumulator = slots['accumulator']
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
            l2 = hyper['l2_regularization_strength'] + hyper['beta'] / (2.0 * learning_rate)
            arguments = dict(
                var=variable.handle,
                accum=slots['accumulator'].handle,
                linear=slots['linear'].handle,
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
            local_step = step_count + 1.0
            return tf.raw_ops.ResourceApplyAdam(
                var=variable.handle,
                m=slots['m'].handle,
                v=slots['v'].handle,
                beta1_power=tf.pow(hyper['beta_1'], local_step),
                beta2_power=tf.pow(hyper['beta_2'], local_step),
                lr=learning_rate,
                beta1=tf.identity(hyper['beta_1']),
                beta2=tf.identity(hyper['beta_2']),
                epsilon=epsilon,
                grad=gradient,
            )
        if self.name == 'RMSProp':  # Keras 2 without momentum: epsilon outside the square root.
            rms = slots['rms']
            rho = tf.identity(hyper['rho'])
            rms_t = rms.assign(rho * rms + (1.0 - rho) * tf.square(gradient))
            return variable.assign_sub(learning_rate * gradient / (tf.sqrt(rms_t) + epsilon)).op
        if self._values['momentum'] > 0:  # Keras 2's SGD has the slot only with momentum.
            momentum = self._slot(variable, 'momentum', 0.0)
            return tf.raw_ops.ResourceApplyKerasMomentum(
                var=variable.handle,
                accum=momentum.handle,
                lr=learning_rate,
                grad=gradient,
                momentum=tf.identity(hyper['momentum']),
                use_nesterov=self._nesterov,
            )
        return tf.raw_ops.ResourceApplyGradientDescent(var=variable.handle, alpha=learning_rate, delta=gradient)


def scaled_for_replicas(loss, loss_reduction: str):
    """The loss a premade Estimator's optimizer minimizes: divided by the replicas for 'sum_over_batch_size'.

    TF 2.15's heads did so before Keras 2's optimizers summed the replicas' gradients, so that the step is the
    one of the mean loss over the global batch.
    """
    replicas = tf.distribute.get_strategy().num_replicas_in_sync if tf.distribute.has_strategy() else 1
    if loss_reduction == 'sum_over_batch_size' and replicas > 1:
        return loss * (1.0 / replicas)
    return loss


def apply_gradients(optimizer, learning_rate: float | None, loss, variables: list, iterations=None):
    """The train op for `loss` over `variables` with the Estimator's `optimizer` argument.

    A name or a Keras 3 optimizer (or a callable returning one) becomes a `GraphOptimizer` (TF 2.15's names and
    kernels); a Keras 2 optimizer counts `iterations` and runs its own `get_updates`, as in TF 2.15; a
    `tf.compat.v1.train.Optimizer` (or a callable returning one) runs its own `minimize`, with v1's slot names,
    not Keras 2's.
    """
    if isinstance(optimizer, str):
        return GraphOptimizer(optimizer, learning_rate, iterations).apply(loss, variables)
    if callable(optimizer) and not (
        isinstance(optimizer, tf.compat.v1.train.Optimizer) or is_keras2_optimizer(optimizer) or _keras_kind(optimizer)
    ):
        with tf_internals.eager_mode():  # A Keras 3 optimizer's variables stay out of the graph.
            optimizer = optimizer()
    if is_keras2_optimizer(optimizer):
        if iterations is not None:
            optimizer.iterations = iterations
        return optimizer.get_updates(loss, variables)[0]
    graph_optimizer = _from_keras('optimizer', optimizer)
    if graph_optimizer is not None:
        graph_optimizer._iterations = iterations
        return graph_optimizer.apply(loss, variables)
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError(f'The given object is not an Optimizer instance. Given: {optimizer}')
    return optimizer.minimize(loss, global_step=iterations, var_list=variables)
