"""`Exporter`s: what `train_and_evaluate` exports after an evaluation (v1's `FinalExporter`, `LatestExporter`)."""

from __future__ import annotations

import os

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import validation


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
        # v1 took a float (nan included) and failed at the first export's clean-up ("cannot be interpreted as an
        # integer").
        validation.check_integer(exports_to_keep, 'exports_to_keep', accepted='None or a positive integer')
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError('`exports_to_keep`, if provided, must be a positive number. Got %s' % exports_to_keep)
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        export_result = self._export(estimator, export_path, checkpoint_path)
        self._garbage_collect_exports(export_path)
        return export_result

    def _garbage_collect_exports(self, export_dir_base) -> None:
        if self._exports_to_keep is None or not tf.io.gfile.isdir(export_dir_base):
            return
        exports = sorted(int(name) for name in tf.io.gfile.listdir(export_dir_base) if name.strip('/').isdigit())
        for timestamp in exports[: -self._exports_to_keep]:
            path = os.path.join(export_dir_base, str(timestamp))
            logging.info('Garbage-collecting export %s.', path)
            tf.io.gfile.rmtree(path)
