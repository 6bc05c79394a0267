"""`RunConfig`: where an Estimator writes and how often, with v1's arguments, defaults and messages."""

from __future__ import annotations

import copy
import json
import numbers
import os
from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import validation
from compat_mts.estimator import _distributed

_USE_DEFAULT = object()
_SAVE_CKPT_ERR = '`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.'
_REPLACEABLE = [
    'model_dir',
    'tf_random_seed',
    'save_summary_steps',
    'save_checkpoints_steps',
    'save_checkpoints_secs',
    'session_config',
    'keep_checkpoint_max',
    'keep_checkpoint_every_n_hours',
    'log_step_count_steps',
    'train_distribute',
    'device_fn',
    'protocol',
    'eval_distribute',
    'experimental_distribute',
    'experimental_max_worker_delay_secs',
    'session_creation_timeout_secs',
    'checkpoint_save_graph_def',
]
_NOT_SUPPORTED = ('experimental_distribute', 'device_fn')


class TaskType:
    MASTER = 'master'
    PS = 'ps'
    WORKER = 'worker'
    CHIEF = 'chief'
    EVALUATOR = 'evaluator'


def get_default_session_config() -> tf.compat.v1.ConfigProto:
    """v1's default session config of an Estimator: soft placement, one meta-optimizer iteration."""
    rewrite = tf.compat.v1.GraphOptions().rewrite_options
    rewrite.meta_optimizer_iterations = type(rewrite).ONE
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True, graph_options=tf.compat.v1.GraphOptions(rewrite_options=rewrite)
    )


class RunConfig:
    """The configuration of an `Estimator` run: v1's arguments, defaults, properties and `replace()`.

    As in v1: checkpoints every 600 seconds unless `save_checkpoints_steps` or `save_checkpoints_secs` is
    given (giving both raises v1's ValueError; `None` for both turns checkpoints off), summaries every 100
    steps, `global_step/sec` and the loss logged every 100 steps, the last 5 checkpoints kept. `model_dir`
    may come from `TF_CONFIG['model_dir']`.

    compat_mts.estimator runs eagerly:

    - `session_config` is applied as `compat_mts.MonitoredTrainingSession` applies a `config`;
    - `train_distribute` and `eval_distribute` take a `tf.distribute.MirroredStrategy` over the devices of
      this process, a `tf.distribute.OneDeviceStrategy` or a `tf.distribute.MultiWorkerMirroredStrategy`
      (or its v1 spelling): the `model_fn` is called once per replica as in v1 (each replica reads a batch of
      the `input_fn` of its own); other strategies raise `ValueError`;
    - a `TF_CONFIG` cluster is taken on a `chief` or `worker` task when `train_distribute` is a
      `MultiWorkerMirroredStrategy`: `cluster_spec`, `task_type`, `task_id`, `num_worker_replicas` and
      `global_id_in_cluster` are the task's, `is_chief` is true for `chief` 0 (or `worker` 0 without a `chief`
      job), `master` is ''. Any other cluster, `experimental_distribute` and `device_fn` raise
      `NotImplementedError` (see migration_guide/distributed.md);
    - without a cluster the properties are those of a single local worker: `is_chief=True`, `master=''`,
      `task_type='worker'`, `task_id=0`, no parameter servers, one worker.

    Example:

    ```python
    config = compat_mts.estimator.RunConfig(model_dir=directory, save_checkpoints_steps=100)
    ```

    Raises:
      ValueError: v1's messages for invalid values (both checkpoint periods, negative steps, ...); a
        `train_distribute` or `eval_distribute` that is not one of the strategies above.
      NotImplementedError: a cluster without a multi-worker `train_distribute`, `experimental_distribute` or
        `device_fn` (see above).
    """

    def __init__(
        self,
        model_dir=None,
        tf_random_seed=None,
        save_summary_steps=100,
        save_checkpoints_steps=_USE_DEFAULT,
        save_checkpoints_secs=_USE_DEFAULT,
        session_config=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=10000,
        log_step_count_steps=100,
        train_distribute=None,
        device_fn=None,
        protocol=None,
        eval_distribute=None,
        experimental_distribute=None,
        experimental_max_worker_delay_secs=None,
        session_creation_timeout_secs=7200,
        checkpoint_save_graph_def=True,
    ):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        tf_config = json.loads(os.environ.get('TF_CONFIG') or '{}')
        if tf_config:
            logging.info('TF_CONFIG environment variable: %s', tf_config)
        cluster_properties = _multi_worker_task(tf_config, train_distribute)
        if cluster_properties is None:
            _check_local(tf_config)
        self._set(
            model_dir=_model_dir(tf_config, model_dir),
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            train_distribute=train_distribute,
            device_fn=device_fn,
            protocol=protocol,
            eval_distribute=eval_distribute,
            experimental_distribute=experimental_distribute,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def,
        )
        self._task_type = TaskType.WORKER
        self._task_id = 0
        self._master = tf_config.get('session_master', '')
        self._evaluation_master = tf_config.get('eval_session_master', '')
        self._cluster_spec = tf.train.ClusterSpec({})
        self._service = tf_config.get('service')
        self._is_chief = True
        self._num_ps_replicas = 0
        self._num_worker_replicas = 1
        self._global_id_in_cluster = 0
        for name, value in (cluster_properties or {}).items():
            setattr(self, '_' + name, value)

    def _set(self, **properties) -> 'RunConfig':
        for key, value in properties.items():
            if key not in _REPLACEABLE:
                raise ValueError('Replacing {} is not supported. Allowed properties are {}.'.format(key, _REPLACEABLE))
            if key == 'model_dir' and value not in (None, ''):  # v1's "should be non-empty" for ''.
                value = validation.path(value, 'model_dir')
            setattr(self, '_' + key, value)
        if 'save_checkpoints_steps' in properties and 'save_checkpoints_secs' in properties:
            if self._save_checkpoints_steps is not None and self._save_checkpoints_secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif 'save_checkpoints_steps' in properties and self._save_checkpoints_steps is not None:
            self._save_checkpoints_secs = None
        elif 'save_checkpoints_secs' in properties and self._save_checkpoints_secs is not None:
            self._save_checkpoints_steps = None
        _validate(self)
        return self

    def __deepcopy__(self, memo) -> 'RunConfig':
        # The strategies are shared, not copied: a copy of a MirroredStrategy would number its collectives
        # from the start again, and clash in this process with the original's (v1 ran each graph in a
        # session of its own, where a copy did no harm).
        copied = copy.copy(self)
        for name, value in vars(self).items():
            if name not in ('_train_distribute', '_eval_distribute'):
                setattr(copied, name, copy.deepcopy(value, memo))
        return copied

    def replace(self, **kwargs) -> 'RunConfig':
        """A copy with the given properties replaced (v1's list of replaceable properties and messages).

        Setting one of `save_checkpoints_steps` and `save_checkpoints_secs` clears the other, as in v1.
        """
        return copy.deepcopy(self)._set(**kwargs)

    def __repr__(self) -> str:
        return f'RunConfig({vars(self)})'

    @property
    def cluster_spec(self):
        return self._cluster_spec

    @property
    def device_fn(self):
        return self._device_fn

    @property
    def evaluation_master(self):
        return self._evaluation_master

    @property
    def is_chief(self):
        return self._is_chief

    @property
    def master(self):
        return self._master

    @property
    def num_ps_replicas(self):
        return self._num_ps_replicas

    @property
    def num_worker_replicas(self):
        return self._num_worker_replicas

    @property
    def task_id(self):
        return self._task_id

    @property
    def task_type(self):
        return self._task_type

    @property
    def global_id_in_cluster(self):
        return self._global_id_in_cluster

    @property
    def experimental_max_worker_delay_secs(self):
        return self._experimental_max_worker_delay_secs

    @property
    def tf_random_seed(self):
        return self._tf_random_seed

    @property
    def save_summary_steps(self):
        return self._save_summary_steps

    @property
    def save_checkpoints_secs(self):
        return self._save_checkpoints_secs

    @property
    def session_config(self):
        return self._session_config

    @property
    def save_checkpoints_steps(self):
        return self._save_checkpoints_steps

    @property
    def checkpoint_save_graph_def(self):
        return self._checkpoint_save_graph_def

    @property
    def keep_checkpoint_max(self):
        return self._keep_checkpoint_max

    @property
    def session_creation_timeout_secs(self):
        return self._session_creation_timeout_secs

    @property
    def keep_checkpoint_every_n_hours(self):
        return self._keep_checkpoint_every_n_hours

    @property
    def log_step_count_steps(self):
        return self._log_step_count_steps

    @property
    def model_dir(self):
        return self._model_dir

    @property
    def service(self):
        return self._service

    @property
    def train_distribute(self):
        return self._train_distribute

    @property
    def eval_distribute(self):
        return self._eval_distribute

    @property
    def protocol(self):
        return self._protocol


def _multi_worker_task(tf_config: dict, train_distribute: Any) -> dict | None:
    """The cluster properties of a trainer task of a `TF_CONFIG` cluster trained by a `MultiWorkerMirroredStrategy`.

    None unless `train_distribute` is one and `TF_CONFIG`'s task is a `chief` or `worker` task of its cluster.
    As TF 2.15's distribute coordinator set them: the chief is `chief` 0, or `worker` 0 without a `chief` job;
    the workers are the chief and worker tasks; the global ids count the chief, then the other jobs by name, the
    ps tasks last. `master` stays '': the strategy decides where the steps run.
    """
    jobs = tf_config.get('cluster') or {}
    task = tf_config.get('task') or {}
    task_type, task_id = task.get('type'), int(task.get('index', 0))
    if not _distributed.is_multi_worker(train_distribute) or task_type not in (TaskType.CHIEF, TaskType.WORKER):
        return None
    if not 0 <= task_id < len(jobs.get(task_type, [])):
        return None
    order = [TaskType.CHIEF] * (TaskType.CHIEF in jobs)
    order += sorted(job for job in jobs if job not in (TaskType.CHIEF, TaskType.PS)) + [TaskType.PS] * (
        TaskType.PS in jobs
    )
    offsets = dict(zip(order, [sum(len(jobs[job]) for job in order[:position]) for position in range(len(order))]))
    return {
        'cluster_spec': tf.train.ClusterSpec(jobs),
        'task_type': task_type,
        'task_id': task_id,
        'is_chief': task_type == TaskType.CHIEF or (task_id == 0 and TaskType.CHIEF not in jobs),
        'num_ps_replicas': len(jobs.get(TaskType.PS, [])),
        'num_worker_replicas': len(jobs.get(TaskType.CHIEF, [])) + len(jobs.get(TaskType.WORKER, [])),
        'global_id_in_cluster': offsets[task_type] + task_id,
    }


def _check_local(tf_config: dict) -> None:
    if tf_config.get('cluster'):
        raise NotImplementedError(
            'TF_CONFIG describes a cluster, and compat_mts.estimator runs in a single process. A distributed '
            'Estimator program becomes a compat_mts.MonitoredTrainingSession loop under a tf.distribute strategy '
            '(migration_guide/distributed.md); unset TF_CONFIG to run this one locally.'
        )
    task = tf_config.get('task', {})
    if task.get('type', TaskType.WORKER) != TaskType.WORKER:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
    if int(task.get('index', 0)) != 0:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')


def _model_dir(tf_config: dict, model_dir: Any) -> str | None:
    if model_dir == '':
        raise ValueError('model_dir should be non-empty.')
    if model_dir is not None:
        model_dir = validation.path(model_dir, 'model_dir')
    from_tf_config = tf_config.get('model_dir')
    if from_tf_config == '':
        raise ValueError('model_dir in TF_CONFIG should be non-empty.')
    if from_tf_config:
        if model_dir and from_tf_config != model_dir:
            raise ValueError(
                '`model_dir` provided in RunConfig construct, if set, must have the same value as the model_dir in '
                'TF_CONFIG. model_dir: {}\nTF_CONFIG["model_dir"]: {}.\n'.format(model_dir, from_tf_config)
            )
        logging.info('Using model_dir in TF_CONFIG: %s', from_tf_config)
    return model_dir or from_tf_config


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# What the messages for a wrong type say is accepted (v1's own messages say it for a wrong value).
_NUMBERS = {
    'save_summary_steps': 'a number of steps >= 0',
    'save_checkpoints_steps': 'a number of steps >= 0',
    'save_checkpoints_secs': 'a number of seconds >= 0 (inf: checkpoints at creation and at the end only)',
    'keep_checkpoint_max': 'a number of checkpoints >= 0',
    'keep_checkpoint_every_n_hours': 'a number of hours > 0',
    'log_step_count_steps': 'a number of steps > 0',
    'session_creation_timeout_secs': 'a number of seconds > 0',
}
_STEPS = ('save_summary_steps', 'save_checkpoints_steps', 'log_step_count_steps')


def _validate(config: RunConfig) -> None:
    """v1's checks of the properties (each applies when the property is not None), then compat_mts's scope."""
    checks = [
        ('model_dir', lambda value: value, 'model_dir should be non-empty'),
        ('save_summary_steps', lambda value: _is_number(value) and value >= 0, 'save_summary_steps should be >= 0'),
        (
            'save_checkpoints_steps',
            lambda value: _is_number(value) and value >= 0,
            'save_checkpoints_steps should be >= 0',
        ),
        (
            'save_checkpoints_secs',
            lambda value: _is_number(value) and value >= 0,
            'save_checkpoints_secs should be >= 0',
        ),
        (
            'session_config',
            lambda value: isinstance(value, tf.compat.v1.ConfigProto),
            'session_config must be instance of ConfigProto',
        ),
        ('keep_checkpoint_max', lambda value: _is_number(value) and value >= 0, 'keep_checkpoint_max should be >= 0'),
        (
            'keep_checkpoint_every_n_hours',
            lambda value: _is_number(value) and value > 0,
            'keep_checkpoint_every_n_hours should be > 0',
        ),
        ('log_step_count_steps', lambda value: _is_number(value) and value > 0, 'log_step_count_steps should be > 0'),
        (
            'tf_random_seed',
            lambda value: isinstance(value, numbers.Integral) and not isinstance(value, bool),
            'tf_random_seed must be integer.',
        ),
        (
            'experimental_max_worker_delay_secs',
            lambda value: isinstance(value, int),
            'experimental_max_worker_delay_secs must be an integer if set.',
        ),
        (
            'session_creation_timeout_secs',
            lambda value: _is_number(value) and value > 0,
            'session_creation_timeout_secs should be > 0',
        ),
        ('protocol', lambda value: value in ('grpc', 'grpc+verbs'), 'protocol should be grpc or grpc+verbs'),
    ]
    for name, accepted, message in checks:
        value = getattr(config, '_' + name)
        if value is None:
            continue
        if name in _NUMBERS and not _is_number(value):  # v1 failed comparing it (`'>=' not supported`).
            raise TypeError(f'`{name}` must be None or {_NUMBERS[name]}, got {value!r} ({type(value).__name__}).')
        if not accepted(value):
            raise ValueError(message)
        if name in _STEPS:
            validation.check_step_range(value, name, _NUMBERS[name])
    seed = config._tf_random_seed
    if seed is not None and not -(2**63) <= seed < 2**63:  # v1 took it, and the graph's first random op failed.
        raise ValueError(f'`tf_random_seed` must be an integer that an int64 holds, got {seed}.')
    for name in ('train_distribute', 'eval_distribute'):
        _distributed.check_strategy(getattr(config, '_' + name), name)
    for name in _NOT_SUPPORTED:
        if getattr(config, '_' + name) is not None:
            raise NotImplementedError(
                f'RunConfig({name}=...) is not supported: compat_mts.estimator runs in one process, on the default '
                'device placement or under RunConfig(train_distribute=MirroredStrategy or OneDeviceStrategy). '
                'Distribute a program over several processes with compat_mts.MonitoredTrainingSession under a '
                'tf.distribute strategy scope (migration_guide/distributed.md).'
            )
