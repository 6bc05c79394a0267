"""`add_metrics`: v1's Estimator with more evaluation metrics than its `model_fn` returns."""

from __future__ import annotations

from typing import Callable

from compat_mts import _tf_internals as tf_internals
from compat_mts.estimator.estimator import Estimator
from compat_mts.estimator.model_fn import ModeKeys

__all__ = ['add_metrics']

_VALID_METRIC_FN_ARGS = {'features', 'labels', 'predictions', 'config'}


def add_metrics(estimator: Estimator, metric_fn: Callable) -> Estimator:
    """A new Estimator whose evaluations have `metric_fn`'s metrics too, on `estimator`'s model_dir (v1's).

    `metric_fn` takes any of `predictions`, `features`, `labels` and `config` and returns a dict of metrics:
    `(value, update_op)` pairs of `tf.compat.v1.metrics` (Keras metric objects do not build v1 graphs). A
    name `estimator` already has is replaced, as in v1.

    Example:

    ```python
    def metric_fn(labels, predictions):
        return {'mse': tf.compat.v1.metrics.mean_squared_error(labels, predictions['predictions'])}

    estimator = compat_mts.estimator.add_metrics(estimator, metric_fn)
    ```

    Args:
      estimator: a `compat_mts.estimator.Estimator` (a premade one too).
      metric_fn: the function returning the metrics.

    Returns:
      An `Estimator` with `estimator`'s `model_fn`, `model_dir`, config and warm start.

    Raises:
      ValueError: `metric_fn` takes other arguments (v1's message).
    """
    unexpected = list(set(tf_internals.fn_args(metric_fn)) - _VALID_METRIC_FN_ARGS)
    if unexpected:
        raise ValueError('metric_fn (%s) has following not expected args: %s' % (metric_fn, unexpected))

    def new_model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        arguments = tf_internals.fn_args(metric_fn)
        given = {'features': features, 'labels': labels, 'predictions': spec.predictions, 'config': config}
        new_metrics = metric_fn(**{name: value for name, value in given.items() if name in arguments})
        all_metrics = dict(spec.eval_metric_ops or {})
        all_metrics.update(new_metrics)
        return spec._replace(eval_metric_ops=all_metrics)

    return Estimator(
        model_fn=new_model_fn,
        model_dir=estimator.model_dir,
        config=estimator.config,
        warm_start_from=estimator._warm_start_settings,
    )
