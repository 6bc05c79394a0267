"""`MonitoredTrainingSession`: v1's factory for a training `MonitoredSession`, with v1's defaults and hooks."""

from __future__ import annotations

import os
from typing import Any

from compat_mts.checkpoint_dir import checkpoints
from compat_mts.checkpoint_dir import directory as directory_lib
from compat_mts.checkpoint_dir.directory import CheckpointDirectory
from compat_mts.deploy import deployment as deployment_lib
from compat_mts.deploy import distribute
from compat_mts.core import validation
from compat_mts.hooks.checkpoint import CheckpointSaverHook
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.hooks.summary import SummarySaverHook
from compat_mts.session.monitored_session import MonitoredSession
from compat_mts.session.session_creators import ChiefSessionCreator, WorkerSessionCreator
from compat_mts.session.scaffold import Scaffold, check_scaffold


class _UseDefault:
    """The `USE_DEFAULT` sentinel: "resolve this argument the way v1 did"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return 'USE_DEFAULT'


USE_DEFAULT = _UseDefault()
"""The default of `MonitoredTrainingSession`'s `save_*` arguments: resolve the argument the way v1 did.

Left as `USE_DEFAULT` together, `save_checkpoint_secs` and `save_checkpoint_steps` become 600 and None, and
`save_summaries_steps` and `save_summaries_secs` 100 and None; migration_guide/arguments.md has the table.
"""


def _check_steps(value: Any, argument: str) -> None:
    if value is not USE_DEFAULT:
        validation.check_integer(
            value, argument, accepted='None, USE_DEFAULT or an integer number of steps (0 or less turns it off)'
        )


def _check_secs(value: Any, argument: str, infinity: str) -> None:
    if value is not USE_DEFAULT:
        validation.check_seconds(
            value,
            argument,
            infinity=infinity,
            accepted=f'None, USE_DEFAULT or a number of seconds (0 or less turns it off; inf {infinity})',
        )


def _resolve_pair(steps, secs, default_steps, default_secs):
    """v1's USE_DEFAULT resolution of a (steps, secs) pair."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def _enabled(steps, secs) -> bool:
    return bool((steps and steps > 0) or (secs and secs > 0))


def _check_pair(steps, secs, steps_argument: str, secs_argument: str) -> None:
    """v1's error for both of a pair given to one hook's timer, followed by the arguments the user gave."""
    if steps is not None and secs is not None:
        raise ValueError(
            f'Can not provide both every_secs and every_steps. MonitoredTrainingSession got {secs_argument}={secs!r} '
            f'and {steps_argument}={steps!r}: give one of them, and None for the other.'
        )


def MonitoredTrainingSession(
    master: str = '',
    is_chief: bool = True,
    checkpoint_dir: str | os.PathLike | CheckpointDirectory | None = None,
    scaffold: Scaffold | None = None,
    hooks=None,
    chief_only_hooks=None,
    save_checkpoint_secs=USE_DEFAULT,
    save_summaries_steps=USE_DEFAULT,
    save_summaries_secs=USE_DEFAULT,
    config=None,
    stop_grace_period_secs: float = 120,
    log_step_count_steps: int | None = 100,
    max_wait_secs: float | None = 7200,
    save_checkpoint_steps=USE_DEFAULT,
    summary_dir: str | None = None,
    save_graph_def: bool = True,
) -> MonitoredSession:
    """Creates a `MonitoredSession` for training, eagerly, with v1's arguments, defaults and hooks.

    Every argument is validated before anything is created or written. Then, as in v1:

    - summaries default to every 100 steps and checkpoints to every 600 seconds when both of a pair are
      left as `USE_DEFAULT`; a pair given as `0`/`None` is off; both of a pair given (not None), one > 0, raises
      v1's `ValueError('Can not provide both every_secs and every_steps.')`, followed by the two arguments;
    - the chief's hooks are `chief_only_hooks + [StepCounterHook, SummarySaverHook, CheckpointSaverHook]
      (each if enabled) + hooks`, with `summary_dir` defaulting to `checkpoint_dir`; the session restores
      the latest checkpoint of `checkpoint_dir`, else runs `scaffold.init_fn`;
    - a non-chief runs `hooks` only and writes nothing; with a `checkpoint_dir` it waits up to
      `max_wait_secs` for the chief's first checkpoint and restores it (None or `inf`: forever, as
      v1's `wait_for_session` waited).

    Accepted as v1 accepted them: `checkpoint_dir=''` and `summary_dir=''` are None. NaN is rejected
    wherever a number of seconds is taken; `inf` only where it means something: `max_wait_secs` (wait
    forever), `stop_grace_period_secs` (wait until the threads end), `save_checkpoint_secs` (checkpoints
    at creation and at the end only) and `save_summaries_secs` (the first run's summaries only).

    Created in the scope of a multi-worker `MultiWorkerMirroredStrategy` (`TF_CONFIG`), the session is
    one worker's: `is_chief` comes from the cluster, every worker restores the same checkpoint and takes
    part in every save (a non-chief into a temporary directory it removes; its checkpoint hooks are the
    chief's), and all workers stop after the same run; see `compat_mts.deploy.distribute`. SIGTERM ends the
    training of a session that saves checkpoints after the current run, with a final checkpoint and exit
    code 42 (`compat_mts.deploy.preemption`).

    `master` and `config` are mapped as `compat_mts.deploy.distribute` says. The user's step increments the
    global step (`global_step.assign_add(1)`), as v1's `minimize(global_step=...)` did.

    Example:

    ```python
    with compat_mts.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks) as session:
        while not session.should_stop():
            session.run(train_step)
    ```

    Args:
      master: `''` runs in this process; `grpc://host:port` runs on that TensorFlow server.
      is_chief: whether this task restores, saves and summarizes (the chief) or waits for the chief's
        checkpoint; in a multi-worker strategy's scope it comes from the cluster.
      checkpoint_dir: where checkpoints are restored from and saved to, and summaries written by default. It
        is validated here once, and the `CheckpointDirectory` made of it is what the session creator and the
        default `CheckpointSaverHook` get (one given is used as it is).
      scaffold: a `Scaffold`: what is checkpointed, and how to initialize when nothing is restored.
      hooks: `SessionRunHook`s of every task, called after the chief's default ones.
      chief_only_hooks: `SessionRunHook`s of the chief only, called first.
      save_checkpoint_secs: seconds between checkpoints (default 600 when `save_checkpoint_steps` is left
        as `USE_DEFAULT` too); 0 or None: none on a timer.
      save_summaries_steps: steps between summaries (default 100 when `save_summaries_secs` is left as
        `USE_DEFAULT` too); 0 or None: none on steps.
      save_summaries_secs: seconds between summaries; 0 or None: none on a timer.
      config: a `tf.compat.v1.ConfigProto`; its fields with a TF2 equivalent are applied, the others named in
        one warning.
      stop_grace_period_secs: how long `close()` waits for the coordinator's threads to end.
      log_step_count_steps: steps between the `global_step/sec` lines and summaries; 0 or None: none.
      max_wait_secs: how long a non-chief waits for the chief's first checkpoint (None or `inf`: forever).
      save_checkpoint_steps: steps between checkpoints; 0 or None: none on steps.
      summary_dir: where summaries are written; `checkpoint_dir` when None.
      save_graph_def: whether the chief writes the traced step's graph (`graph.pbtxt` and the events file).

    Returns:
      A `MonitoredSession` (recovering from preemption errors) with the hooks above.

    Raises:
      TypeError, ValueError: an argument of the wrong type or value, named in the message; a `TF_CONFIG` that
        is not JSON or names no task of its cluster (`validation.read_tf_config`).
      PermissionError: `checkpoint_dir` (or `summary_dir`) cannot be created or written, and a default hook
        writes there (checkpoints, summaries or the step rate are on).
    """
    validation.read_tf_config()  # A task index past its job's end would otherwise train alone, silently.
    distribute.check_master(master)
    validation.check_bool(is_chief, 'is_chief')
    directory = CheckpointDirectory.optional(checkpoint_dir)
    summary_dir = validation.optional_directory(summary_dir, 'summary_dir')
    check_scaffold(scaffold)
    hooks = validation.check_hooks(hooks, 'hooks')
    chief_only_hooks = validation.check_hooks(chief_only_hooks, 'chief_only_hooks')
    _check_secs(save_checkpoint_secs, 'save_checkpoint_secs', infinity='checkpoints only at creation and at the end')
    _check_steps(save_checkpoint_steps, 'save_checkpoint_steps')
    _check_secs(save_summaries_secs, 'save_summaries_secs', infinity="saves the first run's summaries only")
    _check_steps(save_summaries_steps, 'save_summaries_steps')
    distribute.check_config(config)
    validation.check_stop_grace_period_secs(stop_grace_period_secs)
    _check_steps(log_step_count_steps, 'log_step_count_steps')
    validation.check_max_wait_secs(max_wait_secs)
    validation.check_bool(save_graph_def, 'save_graph_def')

    save_summaries_steps, save_summaries_secs = _resolve_pair(
        save_summaries_steps, save_summaries_secs, default_steps=100, default_secs=None
    )
    save_checkpoint_steps, save_checkpoint_secs = _resolve_pair(
        save_checkpoint_steps, save_checkpoint_secs, default_steps=None, default_secs=600
    )
    summary_dir = checkpoints.expand_directory(summary_dir) if summary_dir else None
    scaffold = scaffold or Scaffold()

    deployment = deployment_lib.choose()  # The session's: it is made with this one in effect.
    cluster = deployment.cluster
    if cluster is not None:
        is_chief = distribute.resolve_is_chief(is_chief, cluster)
    saves_checkpoints = bool(directory and _enabled(save_checkpoint_steps, save_checkpoint_secs))
    checkpoint_hook = None
    if saves_checkpoints and (is_chief or cluster is not None):  # The one default CheckpointSaverHook.
        _check_pair(save_checkpoint_steps, save_checkpoint_secs, 'save_checkpoint_steps', 'save_checkpoint_secs')
        checkpoint_hook = CheckpointSaverHook(
            directory,
            save_steps=save_checkpoint_steps,
            save_secs=save_checkpoint_secs,
            scaffold=scaffold,
            save_graph_def=save_graph_def,
        )
    if not is_chief:
        worker_hooks = hooks
        if cluster is not None:  # Saving takes every worker; a non-chief's copies go to temporary directories.
            worker_hooks = [hook for hook in chief_only_hooks if isinstance(hook, CheckpointSaverHook)]
            if checkpoint_hook is not None:
                worker_hooks.append(checkpoint_hook)
            worker_hooks.extend(hooks)
        creator = WorkerSessionCreator(
            scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs, checkpoint_dir=directory
        )
        with deployment.in_effect():
            return MonitoredSession(
                session_creator=creator, hooks=worker_hooks, stop_grace_period_secs=stop_grace_period_secs
            )

    # The argument the summaries' directory came from, for the messages: the checkpoint directory's where it is
    # the default (`checkpoint_dir`, an Estimator's `model_dir`).
    summary_argument = 'summary_dir' if summary_dir or not directory else directory.argument
    summary_dir = summary_dir or (directory.path if directory else None)
    counts_steps = bool(summary_dir and log_step_count_steps and log_step_count_steps > 0)
    saves_summaries = bool(summary_dir and _enabled(save_summaries_steps, save_summaries_secs))
    if saves_summaries:
        _check_pair(save_summaries_steps, save_summaries_secs, 'save_summaries_steps', 'save_summaries_secs')
    # Only a directory that a default hook writes must be writable: a chief that only restores (saving,
    # summaries and step counting off) reads a read-only checkpoint_dir, as v1's added no writing hook then.
    if saves_checkpoints:
        directory.make_writable()
    elif directory:
        directory_lib.check_utf8_path(directory.path, directory.argument)
    checked = saves_checkpoints and summary_dir == directory.path  # With room for the checkpoints' names too.
    if summary_dir and not checked:
        if counts_steps or saves_summaries:  # Only events files are written there by these hooks.
            directory_lib.ensure_writable_directory(summary_dir, summary_argument)
        else:
            directory_lib.check_utf8_path(summary_dir, summary_argument)
    all_hooks = list(chief_only_hooks)
    if summary_dir:
        if counts_steps:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if saves_summaries:
            all_hooks.append(
                SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=save_summaries_steps,
                    save_secs=save_summaries_secs,
                    output_dir=summary_dir,
                )
            )
    if checkpoint_hook is not None:
        all_hooks.append(checkpoint_hook)
    all_hooks.extend(hooks)
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=directory, master=master, config=config)
    with deployment.in_effect():
        return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
