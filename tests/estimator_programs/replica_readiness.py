"""A v1 `Saver` of a Keras `model_fn` in an `EstimatorSpec`'s scaffold, restored on every replica of a strategy.

`python replica_readiness.py compat <root>` runs `compat_mts.estimator` under a `tf.distribute.MirroredStrategy`
on two logical CPUs (made before TensorFlow starts), where Keras 3 lists each replica's copy of a variable in the
graph's collections beside the strategy's variable; `python replica_readiness.py tf215 <root>` runs TF 2.15's
`tf.estimator` on one device (TF 2.15's own MirroredStrategy Estimator does not finish a step on two logical
CPUs). Every batch is the same one, so the replicas' averaged gradients and losses are one device's.

`all`: a `Saver` of `tf.compat.v1.global_variables()` saves every variable; `train` twice (the second restores
through it) and `evaluate`: the losses and the checkpoint's names. `ready_op`: the same with the default `Saver`
and v1's `report_uninitialized_variables()` as the scaffold's readiness checks. `part`: a `Saver` leaving out the `logits`
layer restores a checkpoint of the whole model; v1 reported its variables not initialized, once each. Prints
`RESULTS:` and the JSON.
"""

import json
import os
import sys

_SIDE = sys.argv[1]

import tensorflow as tf  # noqa: E402

if _SIDE == 'compat':
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import compat_mts.estimator as estimator
else:
    estimator = tf.estimator


def input_fn():
    return tf.data.Dataset.from_tensors(({'x': [[1.0, 2.0], [0.5, -1.0]]}, [[1.0], [0.0]])).repeat()


def model_fn(features, labels, mode, params):
    hidden = tf.keras.layers.Dense(3, kernel_initializer=tf.keras.initializers.Constant(0.3), name='hidden')
    logits = tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(-0.2), name='logits')
    loss = tf.reduce_mean(tf.square(logits(hidden(features['x'])) - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    scaffold = None
    if params['saver'] == 'ready_op':  # v1's own readiness report, of the collections' variables.
        ready_op = tf.compat.v1.report_uninitialized_variables()
        scaffold = tf.compat.v1.train.Scaffold(ready_op=ready_op, ready_for_local_init_op=ready_op)
    elif params['saver'] != 'default':
        var_list = tf.compat.v1.global_variables()
        if params['saver'] == 'part':
            var_list = [variable for variable in var_list if not variable.name.startswith('logits/')]
        scaffold = tf.compat.v1.train.Scaffold(saver=tf.compat.v1.train.Saver(var_list=var_list))
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)


def _estimator(model_dir, saver, strategy):
    config = estimator.RunConfig(
        model_dir=model_dir, train_distribute=strategy, eval_distribute=strategy, log_step_count_steps=None
    )
    return estimator.Estimator(model_fn, params={'saver': saver}, config=config)


def _not_ready(call):
    """v1's parts of the not-ready error `call()` raises: its class, its first words, the variables it names."""
    try:
        call()
    except RuntimeError as error:
        message = str(error)
        return [type(error).__name__, message.split('  Init op:')[0], message.split('error: ', 1)[-1].split('. ')[0]]
    return None


def main(root):
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']) if _SIDE == 'compat' else None
    restored = {}
    for saver in ('all', 'ready_op'):
        whole = _estimator(os.path.join(root, saver), saver, strategy)
        whole.train(input_fn, steps=2)
        whole.train(input_fn, steps=1)
        evaluated = whole.evaluate(input_fn, steps=1)
        restored[saver] = {
            'evaluate': {key: round(float(value), 5) for key, value in evaluated.items()},
            'variables': [name for name, _ in tf.train.list_variables(whole.model_dir)],
        }
    part_dir = os.path.join(root, 'part')
    _estimator(part_dir, 'default', strategy).train(input_fn, steps=1)
    part = _estimator(part_dir, 'part', strategy)
    return {
        **restored,
        'part': {
            'train': _not_ready(lambda: part.train(input_fn, steps=1)),
            'evaluate': _not_ready(lambda: part.evaluate(input_fn, steps=1)),
        },
    }


if __name__ == '__main__':
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    print('RESULTS:' + json.dumps(main(sys.argv[2])))
