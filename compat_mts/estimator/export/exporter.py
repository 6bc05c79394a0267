"""`Exporter`s: what `train_and_evaluate` exports after an evaluation (v1's `FinalExporter`, `LatestExporter`,
`BestExporter`)."""

from __future__ import annotations

import os

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import validation


class Exporter:
    """Exports the model after an evaluation; `train_and_evaluate` calls `export` with v1's arguments."""

    @property
    def name(self) -> str:
        """The directory name under `model_dir/export/` (unique among an `EvalSpec`'s exporters)."""
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        """Exports `estimator` at `checkpoint_path` into `export_path`; returns what it wrote, or None."""
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        if not name:
            raise ValueError('`name` must be defined.')
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self) -> str:
        return self._name

    def _export(self, estimator, export_path, checkpoint_path) -> bytes:
        return estimator.export_saved_model(
            export_path,
            self._serving_input_receiver_fn,
            assets_extra=self._assets_extra,
            as_text=self._as_text,
            checkpoint_path=checkpoint_path,
        )


class FinalExporter(_SavedModelExporter):
    """Exports a SavedModel once, after the evaluation of the last training step (v1's arguments)."""

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        logging.info('Performing the final export in the end of training.')
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Exports a SavedModel after every evaluation, keeping the `exports_to_keep` latest (v1's arguments)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False, exports_to_keep=5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._exports_to_keep = _checked_exports_to_keep(exports_to_keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        export_result = self._export(estimator, export_path, checkpoint_path)
        _garbage_collect_exports(export_path, self._exports_to_keep)
        return export_result


def _checked_exports_to_keep(exports_to_keep):
    # v1 took a float (nan included) and failed at the first export's clean-up ("cannot be interpreted as an
    # integer").
    validation.check_integer(exports_to_keep, 'exports_to_keep', accepted='None or a positive integer')
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError('`exports_to_keep`, if provided, must be a positive number. Got %s' % exports_to_keep)
    return exports_to_keep


def _garbage_collect_exports(export_dir_base: str, exports_to_keep) -> None:
    """Deletes all but the `exports_to_keep` newest exports (numbered directories) of `export_dir_base`."""
    if exports_to_keep is None or not tf.io.gfile.isdir(export_dir_base):
        return
    exports = sorted(int(name) for name in tf.io.gfile.listdir(export_dir_base) if name.strip('/').isdigit())
    for timestamp in exports[:-exports_to_keep]:
        path = os.path.join(export_dir_base, str(timestamp))
        logging.info('Garbage-collecting export %s.', path)
        tf.io.gfile.rmtree(path)


def _loss_smaller(best_eval_result, current_eval_result) -> bool:
    """Whether `current_eval_result` has a smaller `loss` than `best_eval_result` (v1's default `compare_fn`).

    Raises:
      ValueError: either result is empty or has no `loss` (v1's messages).
    """
    if not best_eval_result or 'loss' not in best_eval_result:
        raise ValueError('best_eval_result cannot be empty or no loss is found in it.')
    if not current_eval_result or 'loss' not in current_eval_result:
        raise ValueError('current_eval_result cannot be empty or no loss is found in it.')
    return best_eval_result['loss'] > current_eval_result['loss']


def _verify_compare_fn_args(compare_fn) -> None:
    arguments = set(tf_internals.fn_args(compare_fn))
    if 'best_eval_result' not in arguments:
        raise ValueError('compare_fn (%s) must include best_eval_result argument.' % compare_fn)
    if 'current_eval_result' not in arguments:
        raise ValueError('compare_fn (%s) must include current_eval_result argument.' % compare_fn)
    unexpected = list(arguments - {'best_eval_result', 'current_eval_result'})
    if unexpected:
        raise ValueError('compare_fn (%s) has following not expected args: %s' % (compare_fn, unexpected))


class BestExporter(_SavedModelExporter):
    """Exports a SavedModel after each evaluation better than every earlier one (v1's arguments and rules).

    The first export of the exporter always happens; after that, an evaluation is exported when
    `compare_fn(best_eval_result=..., current_eval_result=...)` says it is better than the best so far
    (by default: a smaller `loss`). The best so far is first read from the evaluations' events
    (`event_file_pattern` under `model_dir`), so a restarted `train_and_evaluate` keeps it. The
    `exports_to_keep` newest exports are kept.

    Example:

    ```python
    exporter = compat_mts.estimator.BestExporter(serving_input_receiver_fn=serving_input_fn, exports_to_keep=2)
    eval_spec = compat_mts.estimator.EvalSpec(eval_input_fn, exporters=exporter)
    ```

    Args:
      name: the directory under `model_dir/export/`.
      serving_input_receiver_fn: the SavedModel's receiver, as for `export_saved_model`.
      event_file_pattern: the evaluations' events files, relative to `model_dir`; None: start from no best.
      compare_fn: `compare_fn(best_eval_result, current_eval_result)`, True when the current one is better.
      assets_extra: extra files for the SavedModel, as for `export_saved_model`.
      as_text: write the SavedModel proto as text.
      exports_to_keep: how many exports to keep; None keeps all.

    Raises:
      ValueError: no `compare_fn`, one with other arguments, or `exports_to_keep` not positive (v1's messages).
    """

    def __init__(
        self,
        name='best_exporter',
        serving_input_receiver_fn=None,
        event_file_pattern='eval/*.tfevents.*',
        compare_fn=_loss_smaller,
        assets_extra=None,
        as_text=False,
        exports_to_keep=5,
    ):
        if compare_fn is None:
            raise ValueError('`compare_fn` must not be None.')
        _verify_compare_fn_args(compare_fn)
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._compare_fn = compare_fn
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False
        self._exports_to_keep = _checked_exports_to_keep(exports_to_keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            logging.info('Loading best metric from event files.')
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_eval_result_in(os.path.join(self._model_dir, self._event_file_pattern))
        if (
            self._best_eval_result is None
            or not self._has_exported
            or self._compare_fn(best_eval_result=self._best_eval_result, current_eval_result=eval_result)
        ):
            logging.info('Performing best model export.')
            self._best_eval_result = eval_result
            export_result = self._export(estimator, export_path, checkpoint_path)
            _garbage_collect_exports(export_path, self._exports_to_keep)
            self._has_exported = True
            return export_result
        return None

    def _best_eval_result_in(self, event_files: str):
        best_eval_result = None
        for event_file in tf.io.gfile.glob(event_files):
            for event in tf.compat.v1.train.summary_iterator(event_file):
                if not event.HasField('summary'):
                    continue
                result = {
                    value.tag: value.simple_value for value in event.summary.value if value.HasField('simple_value')
                }
                if result and (best_eval_result is None or self._compare_fn(best_eval_result, result)):
                    best_eval_result = result
        return best_eval_result
