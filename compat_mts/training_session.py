"""`MonitoredTrainingSession`: v1's factory for a training `MonitoredSession`, with v1's defaults and hooks."""

from __future__ import annotations

import numbers
import os
from typing import Any

from compat_mts import checkpoints
from compat_mts import distribute
from compat_mts import summary as summary_lib
from compat_mts.hooks.checkpoint import CheckpointSaverHook
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.hooks.summary import SummarySaverHook
from compat_mts.monitored_session import (ChiefSessionCreator, MonitoredSession, WorkerSessionCreator,
                                          _check_hooks, _check_non_negative, _scaffold_type_message)
from compat_mts.scaffold import Scaffold


class _UseDefault:
    """The `USE_DEFAULT` sentinel: "resolve this argument the way v1 did"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return 'USE_DEFAULT'


USE_DEFAULT = _UseDefault()


def _check_period(value: Any, argument: str, integer: bool) -> None:
    if value is USE_DEFAULT or value is None:
        return
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        accepted = 'an integer number of steps' if integer else 'a number of seconds'
        raise TypeError(f'`{argument}` must be None, USE_DEFAULT or {accepted} (0 or less turns it off), '
                        f'got {value!r} ({type(value).__name__}).')


def _check_directory(value: Any, argument: str) -> None:
    if value is None:
        return
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise TypeError(f'`{argument}` must be None or a non-empty directory path, got {value!r}.')


def _resolve_pair(steps, secs, default_steps, default_secs):
    """v1's USE_DEFAULT resolution of a (steps, secs) pair."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def _enabled(steps, secs) -> bool:
    return bool((steps and steps > 0) or (secs and secs > 0))


def MonitoredTrainingSession(  # pylint: disable=invalid-name
        master: str = '', is_chief: bool = True, checkpoint_dir: str | None = None,
        scaffold: Scaffold | None = None, hooks=None, chief_only_hooks=None,
        save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
        config=None, stop_grace_period_secs: float = 120, log_step_count_steps: int | None = 100,
        max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT, summary_dir: str | None = None,
        save_graph_def: bool = True) -> MonitoredSession:
    """Creates a `MonitoredSession` for training, eagerly, with v1's arguments, defaults and hooks.

    Every argument is validated before anything is created or written. Then, as in v1:

    - summaries default to every 100 steps and checkpoints to every 600 seconds when both of a pair are
      left as `USE_DEFAULT`; a pair given as `0`/`None` is off; both of a pair > 0 raises
      `ValueError('Can not provide both every_secs and every_steps.')`;
    - the chief's hooks are `chief_only_hooks + [StepCounterHook, SummarySaverHook, CheckpointSaverHook]
      (each if enabled) + hooks`, with `summary_dir` defaulting to `checkpoint_dir`; the session restores
      the latest checkpoint of `checkpoint_dir`, else runs `scaffold.init_fn`;
    - a non-chief runs `hooks` only and writes nothing; with a `checkpoint_dir` it waits up to
      `max_wait_secs` for the chief's first checkpoint and restores it.

    Created in the scope of a multi-worker `MultiWorkerMirroredStrategy` (`TF_CONFIG`), the session is
    one worker's: `is_chief` comes from the cluster, every worker restores the same checkpoint and takes
    part in every save (a non-chief into a temporary directory it removes; its checkpoint hooks are the
    chief's), and all workers stop after the same run; see `compat_mts.distribute`. SIGTERM ends the
    training of a session that saves checkpoints after the current run, with a final checkpoint and exit
    code 42 (`compat_mts.preemption`).

    `master` and `config` are mapped as `compat_mts.distribute` says. The user's step increments the
    global step (`global_step.assign_add(1)`), as v1's `minimize(global_step=...)` did.

    Example:

    ```python
    with compat_mts.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks) as session:
        while not session.should_stop():
            session.run(train_step)
    ```

    Raises:
      TypeError, ValueError: an argument of the wrong type or value, named in the message.
      PermissionError: `checkpoint_dir` cannot be created or written.
    """
    distribute.check_master(master)
    if not isinstance(is_chief, bool):
        raise TypeError(f'`is_chief` must be a bool, got {is_chief!r}.')
    _check_directory(checkpoint_dir, 'checkpoint_dir')
    _check_directory(summary_dir, 'summary_dir')
    if scaffold is not None and not isinstance(scaffold, Scaffold):
        raise TypeError(_scaffold_type_message(scaffold))
    hooks = _check_hooks(hooks, 'hooks')
    chief_only_hooks = _check_hooks(chief_only_hooks, 'chief_only_hooks')
    _check_period(save_checkpoint_secs, 'save_checkpoint_secs', integer=False)
    _check_period(save_checkpoint_steps, 'save_checkpoint_steps', integer=True)
    _check_period(save_summaries_secs, 'save_summaries_secs', integer=False)
    _check_period(save_summaries_steps, 'save_summaries_steps', integer=True)
    distribute.check_config(config)
    _check_non_negative(stop_grace_period_secs, 'stop_grace_period_secs')
    _check_period(log_step_count_steps, 'log_step_count_steps', integer=True)
    _check_non_negative(max_wait_secs, 'max_wait_secs')
    if not isinstance(save_graph_def, bool):
        raise TypeError(f'`save_graph_def` must be a bool, got {save_graph_def!r}.')

    save_summaries_steps, save_summaries_secs = _resolve_pair(
        save_summaries_steps, save_summaries_secs, default_steps=100, default_secs=None)
    save_checkpoint_steps, save_checkpoint_secs = _resolve_pair(
        save_checkpoint_steps, save_checkpoint_secs, default_steps=None, default_secs=600)
    checkpoint_dir = checkpoints.expand_directory(checkpoint_dir) if checkpoint_dir is not None else None
    summary_dir = checkpoints.expand_directory(summary_dir) if summary_dir is not None else None
    scaffold = scaffold or Scaffold()

    cluster = distribute.current_cluster()
    if cluster is not None:
        is_chief = distribute.resolve_is_chief(is_chief, cluster)
    if not is_chief:
        worker_hooks = hooks
        if cluster is not None:  # Saving takes every worker; a non-chief's copies go to temporary directories.
            worker_hooks = [hook for hook in chief_only_hooks if isinstance(hook, CheckpointSaverHook)]
            if checkpoint_dir and _enabled(save_checkpoint_steps, save_checkpoint_secs):
                worker_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                                        save_secs=save_checkpoint_secs, scaffold=scaffold,
                                                        save_graph_def=save_graph_def))
            worker_hooks.extend(hooks)
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs, checkpoint_dir=checkpoint_dir)
        return MonitoredSession(session_creator=creator, hooks=worker_hooks,
                                stop_grace_period_secs=stop_grace_period_secs)

    summary_dir = summary_dir or checkpoint_dir
    for directory, argument in ((checkpoint_dir, 'checkpoint_dir'), (summary_dir, 'summary_dir')):
        if directory:
            summary_lib.ensure_writable_directory(directory, argument)
    all_hooks = list(chief_only_hooks)
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if _enabled(save_summaries_steps, save_summaries_secs):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and _enabled(save_checkpoint_steps, save_checkpoint_secs):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold,
                                             save_graph_def=save_graph_def))
    all_hooks.extend(hooks)
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
