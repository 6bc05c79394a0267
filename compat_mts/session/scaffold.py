"""`Scaffold`: what a session checkpoints, and how it initializes when there is nothing to restore.

v1's Scaffold gathered graph ops (init, ready, local init, summary) and a name-based `Saver`. Eagerly,
variables are initialized when they are created, so the scaffold is about the checkpoint:

- `saver` is a `tf.train.Checkpoint` (the form TensorFlow's own checkpoint migration guide uses for
  `Scaffold`) or a `tf.train.CheckpointManager`; the registered global step is always added to it under
  the name `global_step`. Without a saver the checkpoint holds the global step alone, and the log says so
  once, when such a checkpoint is first saved or looked for (`log_if_step_only`); a session that saves and
  restores nothing says nothing, as v1 (whose default `Saver` never logs) did.
- `init_fn(scaffold, session)` runs when nothing was restored, as in v1; `init_op` and `local_init_op`,
  if given, are callables (or `wrap_graph` ops) run in v1's order; `ready_op` and
  `ready_for_local_init_op`, if given, are callables returning the names of what is not ready yet.
- `summary_op` is None (record the step's own `tf.summary` calls) or a callable / `wrap_graph` summary
  tensor that `SummarySaverHook` fetches on its trigger steps.
- `allow_partial_restore` (eager-only, keyword-only): a session restores a checkpoint only if it holds
  every variable of the program, as v1's `Saver` did; with True, it restores what matches and logs the
  rest (`compat_mts.checkpoint_dir.checkpoints`).
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.core import fetch as fetches_lib
from compat_mts.core import global_step as global_step_lib
from compat_mts.core import program as program_lib
from compat_mts.core import validation

_CHECKPOINT_TYPES = (tf.train.Checkpoint, tf.train.CheckpointManager)
DEFAULT_MAX_TO_KEEP = 5
_logged_step_only = False


def _forget_logged_step_only() -> None:
    global _logged_step_only
    _logged_step_only = False


program_lib.PROGRAM.register(
    'scaffold.logged_step_only',
    'whether "checkpoints hold the global step only" was logged',
    size=lambda: int(_logged_step_only),
    clear=_forget_logged_step_only,
)


_V1_SAVER_MESSAGE = (
    '`{argument}` is a tf.compat.v1.train.Saver{reason}. A Saver built in the graph code a session runs (a '
    "wrap_graph build_fn, or the program's `with tf.Graph().as_default():` block) is honoured; otherwise pass a "
    'tf.train.Checkpoint of the objects to save (for example tf.train.Checkpoint(model=model, '
    'optimizer=optimizer)) or a tf.train.CheckpointManager; compat_mts adds the global step to it.'
)


def check_saver(saver: Any, argument: str = 'saver') -> None:
    """Raises a TypeError naming the replacement when `saver` is not a TF2 checkpoint object or a graph's Saver."""
    if saver is None or isinstance(saver, _CHECKPOINT_TYPES):
        return
    if isinstance(saver, tf.compat.v1.train.Saver):
        if saver.saver_def is None:  # Built eagerly: it needs a tf.compat.v1.Session to save.
            raise TypeError(_V1_SAVER_MESSAGE.format(argument=argument, reason=' built eagerly'))
        return
    hint = ''
    if validation.keras_class_of(saver, 'Model') is not None or isinstance(saver, tf.Module):
        hint = f' To checkpoint the model, give a checkpoint of it: {argument}=tf.train.Checkpoint(model=model).'
    raise TypeError(
        f'`{argument}` must be a tf.train.Checkpoint or a tf.train.CheckpointManager, got {type(saver).__name__}.'
        + hint
    )


def check_scaffold(scaffold: Any) -> None:
    """`scaffold` must be None or a `compat_mts.Scaffold` (a v1 Scaffold is named with its replacement)."""
    if scaffold is None or isinstance(scaffold, Scaffold):
        return
    if isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(
            '`scaffold` is a tf.compat.v1.train.Scaffold, which holds graph ops. Use compat_mts.Scaffold '
            'with the same arguments (its saver a tf.train.Checkpoint).'
        )
    if isinstance(scaffold, type) and issubclass(scaffold, Scaffold):
        raise TypeError(validation.class_message('scaffold', scaffold, verb='is'))
    if isinstance(scaffold, tf.train.Checkpoint):
        raise TypeError(
            '`scaffold` must be a compat_mts.Scaffold, got a tf.train.Checkpoint. A Scaffold takes it as its saver: '
            'scaffold=compat_mts.Scaffold(saver=checkpoint).'
        )
    if validation.keras_class_of(scaffold, 'Model') is not None or isinstance(scaffold, tf.Module):
        raise TypeError(
            f'`scaffold` must be a compat_mts.Scaffold, got {type(scaffold).__name__}, the model. To checkpoint '
            'the model, give the Scaffold a checkpoint of it: '
            'scaffold=compat_mts.Scaffold(saver=tf.train.Checkpoint(model=model)).'
        )
    raise TypeError(f'`scaffold` must be a compat_mts.Scaffold, got {type(scaffold).__name__}.')


def log_if_step_only(scaffold: 'Scaffold') -> None:
    """Says once per process that `scaffold`'s checkpoint holds the global step alone, if it does.

    Called where a checkpoint is saved or restored: v1's default `Saver` held every global variable, so a
    program that gave no saver would be surprised to find its model missing from the files. A session that
    checkpoints nothing (no `checkpoint_dir`) has nothing to be told.
    """
    global _logged_step_only
    if scaffold.finalize()._step_only and not _logged_step_only:
        _logged_step_only = True
        logging.info(
            'Scaffold has no saver: checkpoints hold the global step only. Pass '
            'Scaffold(saver=tf.train.Checkpoint(model=..., optimizer=...)) to save the model.'
        )


class Scaffold:
    """Structure to create or gather what a session needs to checkpoint, initialize and summarize.

    The arguments are v1's (`tf.compat.v1.train.Scaffold`); see the module docstring for what each means
    eagerly. Explicit arguments win over those copied from `copy_from_scaffold`.

    Example:

    ```python
    scaffold = compat_mts.Scaffold(saver=tf.train.Checkpoint(model=model, optimizer=optimizer))
    ```

    Args:
      init_op: a callable (or `wrap_graph` op) run when nothing was restored, before `init_fn`.
      init_feed_dict: the feeds of `init_op`.
      init_fn: `init_fn(scaffold, session)`, run when nothing was restored.
      ready_op: a callable returning the names of what is not ready yet (empty when ready).
      ready_for_local_init_op: as `ready_op`, checked before `local_init_op`.
      local_init_op: a callable (or `wrap_graph` op) run at every session creation.
      summary_op: None (the step's own `tf.summary` calls are recorded), or a callable or `wrap_graph`
        summary tensor that `SummarySaverHook` fetches on its trigger steps.
      saver: a `tf.train.Checkpoint` or `tf.train.CheckpointManager`, to which the global step is added; None:
        the program's graph variables under their v1 names, else the global step alone. A
        `tf.compat.v1.train.Saver` only when built in the graph code the session runs.
      copy_from_scaffold: a `Scaffold` whose arguments fill those not given here.
      local_init_feed_dict: the feeds of `local_init_op`.
      allow_partial_restore: restore what of a checkpoint matches the program and log the rest, instead of
        refusing a checkpoint that lacks variables of the program (keyword only; default False).

    Raises:
      TypeError: a `tf.compat.v1.train.Saver` (or anything but a Checkpoint or CheckpointManager) as
        `saver`, a non-callable init function, or a `copy_from_scaffold` that is not a Scaffold.
    """

    def __init__(
        self,
        init_op=None,
        init_feed_dict=None,
        init_fn=None,
        ready_op=None,
        ready_for_local_init_op=None,
        local_init_op=None,
        summary_op=None,
        saver=None,
        copy_from_scaffold=None,
        local_init_feed_dict=None,
        *,
        allow_partial_restore: bool | None = None,
    ):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError('copy_from_scaffold is not a Scaffold instance.')
            source = copy_from_scaffold
            init_op = init_op or source.init_op
            init_feed_dict = init_feed_dict or source.init_feed_dict
            init_fn = init_fn or source._user_init_fn
            ready_op = ready_op or source.ready_op
            ready_for_local_init_op = ready_for_local_init_op or source.ready_for_local_init_op
            local_init_op = local_init_op or source.local_init_op
            local_init_feed_dict = local_init_feed_dict or source.local_init_feed_dict
            summary_op = summary_op or source.summary_op
            saver = saver or source.saver
            if allow_partial_restore is None:
                allow_partial_restore = source.allow_partial_restore
        for value, argument in (
            (init_op, 'init_op'),
            (init_fn, 'init_fn'),
            (ready_op, 'ready_op'),
            (ready_for_local_init_op, 'ready_for_local_init_op'),
            (local_init_op, 'local_init_op'),
            (summary_op, 'summary_op'),
        ):
            validation.check_optional_callable(value, argument)
        validation.check_optional_dict(init_feed_dict, 'init_feed_dict')
        validation.check_optional_dict(local_init_feed_dict, 'local_init_feed_dict')
        check_saver(saver)
        if allow_partial_restore is not None:  # None: not given (copied from `copy_from_scaffold`, else False).
            validation.check_bool(allow_partial_restore, 'allow_partial_restore')
        self._allow_partial_restore = bool(allow_partial_restore)
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda session: init_fn(self, session)) if init_fn else None
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver
        self._checkpoint: tf.train.Checkpoint | None = None
        self._step_only = False  # Set by finalize() when the checkpoint holds the global step alone.
        self._left_out_by_saver: list[str] = []  # Set by finalize(): global variables a v1 `Saver` does not save.

    def finalize(self) -> 'Scaffold':
        """Resolves the checkpoint (adding the global step to it); idempotent, returns `self`."""
        if self._checkpoint is not None:
            return self
        step = global_step_lib.get_global_step()
        wrapped_graph = fetches_lib.graph_runner_of_global_step()  # A legacy graph, through the GraphRunner seam.
        if self._summary_op is None and wrapped_graph is not None:
            self._summary_op = wrapped_graph.summary_op
        if isinstance(self._saver, tf.train.CheckpointManager):
            checkpoint = self._saver.checkpoint
        elif isinstance(self._saver, tf.train.Checkpoint):
            checkpoint = self._saver
        elif isinstance(self._saver, tf.compat.v1.train.Saver):  # Built in the graph code: v1's names and files.
            if wrapped_graph is None:
                raise TypeError(
                    _V1_SAVER_MESSAGE.format(argument='saver', reason=' but no graph of the program is being run')
                )
            checkpoint = wrapped_graph.checkpoint_of_saver(self._saver)
            self._left_out_by_saver = wrapped_graph.left_out_by_saver(self._saver)
        elif wrapped_graph is not None:  # Every graph variable under its v1 name, as v1's default Saver.
            checkpoint = wrapped_graph.checkpoint
        else:
            checkpoint = tf.train.Checkpoint()
            self._step_only = True
        if step is not None:
            existing = getattr(checkpoint, global_step_lib.GLOBAL_STEP_NAME, None)
            if existing is None:
                setattr(checkpoint, global_step_lib.GLOBAL_STEP_NAME, step)
            elif existing is not step:
                raise ValueError(
                    'The checkpoint given as `saver` already holds a different `global_step` object. '
                    'Register it with compat_mts.set_global_step(...) or drop it from the checkpoint; '
                    'compat_mts saves the registered global step under that name.'
                )
        self._checkpoint = checkpoint
        if wrapped_graph is None and not tf.executing_eagerly() and not tf.inside_function():
            self._fill_v1_graph_ops()
        return self

    def check_restored_every_variable(self) -> None:
        """v1's error for a checkpoint restored through a v1 `Saver` (`saver=`) whose `var_list` leaves global
        variables of the program's graph out: v1 left them uninitialized, and its session was not ready.

        Raises:
          RuntimeError: v1's message, naming the variables the `Saver` does not restore.
        """
        missing = self.finalize()._left_out_by_saver
        if missing:
            raise RuntimeError(
                f'Init operations did not make model ready for local_init.  Init op: {self.init_op}, init fn: '
                f'{self.init_fn}, error: Variables not initialized: {", ".join(missing)}. The Saver given as '
                "saver restores its var_list only: give it every global variable of the program's graph, the "
                'global step too.'
            )

    def _fill_v1_graph_ops(self) -> None:
        """In a v1 graph of the program's own (a head's `EstimatorSpec` run by a `tf.compat.v1.Session`), the ops
        v1's `finalize` made for what was not given: initializers, readiness reports, the merged summaries and a
        `Saver`."""
        v1 = tf.compat.v1
        if self._init_op is None:
            self._init_op = v1.global_variables_initializer()
        if self._ready_op is None:
            self._ready_op = v1.report_uninitialized_variables()
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = v1.report_uninitialized_variables(v1.global_variables())
        if self._local_init_op is None:
            self._local_init_op = tf.group(v1.local_variables_initializer(), v1.tables_initializer())
        if self._summary_op is None:
            self._summary_op = v1.summary.merge_all()
        if self._saver is None:
            self._saver = v1.train.Saver(sharded=True, allow_empty=True)

    @property
    def checkpoint(self) -> tf.train.Checkpoint | None:
        """The `tf.train.Checkpoint` that sessions restore and `CheckpointSaverHook` saves; None before `finalize()`."""
        return self._checkpoint

    @property
    def allow_partial_restore(self) -> bool:
        """Whether a session may restore a checkpoint that lacks some of the program's variables."""
        return self._allow_partial_restore

    @property
    def init_fn(self) -> Callable | None:
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @property
    def max_to_keep(self) -> int | None:
        """How many checkpoints `CheckpointSaverHook` keeps: a v1 `Saver`'s `max_to_keep`, else 5 (v1's default)."""
        if isinstance(self._saver, tf.compat.v1.train.Saver):
            return tf_internals.saver_max_to_keep(self._saver) or None  # 0 or None: keep all.
        return DEFAULT_MAX_TO_KEEP

    @property
    def keep_checkpoint_every_n_hours(self) -> float | None:
        """A v1 `Saver`'s `keep_checkpoint_every_n_hours` (checkpoints kept beyond `max_to_keep`), else None."""
        if isinstance(self._saver, tf.compat.v1.train.Saver):
            hours = tf_internals.saver_keep_checkpoint_every_n_hours(self._saver)
            return hours if hours < 10000.0 else None  # v1's default, 10000 hours, keeps none extra.
        return None

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @property
    def local_init_feed_dict(self):
        return self._local_init_feed_dict

    @staticmethod
    def default_local_init_op():
        """v1 returned the local-variables initializer; eagerly there is nothing to initialize."""
        return None
