"""`RunConfig`: where an Estimator writes and how often, with v1's arguments, defaults and messages."""

from __future__ import annotations

import copy
import math
import numbers
from typing import Any

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts.core import validation
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

    The cluster comes from `TF_CONFIG`, as a job manager (Kubeflow TFJob, AI Platform, SageMaker, TonY) writes
    it for each task: `cluster_spec`, `task_type`, `task_id`, `is_chief`, `master` (`grpc://` and this task's
    address, or `TF_CONFIG["session_master"]`), `num_ps_replicas`, `num_worker_replicas` (the chief and the
    workers), `global_id_in_cluster` and `evaluation_master` are TF 2.15's, for a `chief` or a legacy `master`
    job, and for an evaluator listed in the cluster or not (its `cluster_spec` is empty: it is not part of the
    training cluster). `tf.estimator.train_and_evaluate` runs each task's part (migration_guide/
    distributed_estimator.md). With a multi-worker `train_distribute` on a cluster without `master`, each
    chief and worker task has its own properties (the chief is `chief` 0, or `worker` 0 without a `chief`), as
    TF 2.15's distribute coordinator gave them to the `model_fn`'s config (its `RunConfig` showed a local
    worker's), and `master` is ''.

    Eagerly, here:

    - `session_config` is applied as `compat_mts.MonitoredTrainingSession` applies a `config`; in a cluster
      the property holds TF 2.15's default (its device filters), which is not applied: TensorFlow 2's
      strategies place the work;
    - `train_distribute` and `eval_distribute` take a `tf.distribute.MirroredStrategy` over the devices of
      this process, a `tf.distribute.OneDeviceStrategy`, or a `MultiWorkerMirroredStrategy` (either spelling)
      on a `TF_CONFIG` cluster: the `model_fn` is called once per replica as in v1 (each replica reads a batch
      of the `input_fn` of its own); other strategies raise `ValueError`;
    - `experimental_distribute` and `device_fn` raise `NotImplementedError`.

    Example:

    ```python
    config = compat_mts.estimator.RunConfig(model_dir=directory, save_checkpoints_steps=100)
    ```

    Raises:
      ValueError: v1's messages for invalid values (both checkpoint periods, negative steps, ...); a
        `train_distribute` or `eval_distribute` that is not one of the strategies above.
      ValueError: a `TF_CONFIG` that is not JSON or names no task of its cluster, a cluster without one
        `chief` (or `master`), both `chief` and `master`, an evaluator beside a `master` (TF 2.15's messages,
        naming `TF_CONFIG`).
      NotImplementedError: `experimental_distribute` or `device_fn`.
    """

    # Set on an instance only when not these, so that `vars(config)` (what "Using config: ..." prints) holds TF
    # 2.15's keys.
    _session_config_is_default = False  # TF 2.15's default session_config of a cluster's task: not applied.
    _distribute_coordinator_mode = None

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
        tf_config = validation.read_tf_config()
        if tf_config:
            logging.info('TF_CONFIG environment variable: %s', tf_config)
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
        cluster = tf.train.ClusterSpec(tf_config.get('cluster') or {})
        if train_distribute is not None or eval_distribute is not None:
            logging.info('Initializing RunConfig with distribution strategies.')
        if (
            train_distribute is not None
            and not _distributed.is_parameter_server(train_distribute)
            and cluster
            and TaskType.MASTER not in cluster.jobs
        ):
            # TF 2.15's distribute coordinator: this config was a local worker's but for the cluster, and each
            # task's own properties came with the copy its model_fn got; here the config has them itself.
            _init_distributed_setting(self, {})
            self._cluster_spec = cluster
            self._distribute_coordinator_mode = 'independent_worker'
            for name, value in (_multi_worker_task(tf_config, train_distribute) or {}).items():
                setattr(self, '_' + name, value)
            if (tf_config.get('task') or {}).get('type') == TaskType.EVALUATOR:
                self._task_type, self._task_id = TaskType.EVALUATOR, int(tf_config['task'].get('index', 0))
                self._cluster_spec, self._is_chief = tf.train.ClusterSpec({}), False
                self._num_worker_replicas, self._global_id_in_cluster = 0, None
            logging.info('RunConfig initialized for Distribute Coordinator with INDEPENDENT_WORKER mode')
        else:
            _init_distributed_setting(self, tf_config)
            if self._session_config is None and self._cluster_spec:
                self._session_config = _distributed_session_config(self._task_type, self._task_id)
                self._session_config_is_default = True

    def _set(self, **properties) -> 'RunConfig':
        for key, value in properties.items():
            if key not in _REPLACEABLE:
                raise ValueError('Replacing {} is not supported. Allowed properties are {}.'.format(key, _REPLACEABLE))
            if key == 'model_dir' and value not in (None, ''):  # v1's "should be non-empty" for ''.
                value = validation.path(value, 'model_dir')
            setattr(self, '_' + key, value)
        if 'session_config' in properties:  # The Estimator applies only a session_config given to it.
            self.__dict__.pop('_session_config_is_default', None)
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


_CLUSTER_PROPERTIES = (
    '_service',
    '_cluster_spec',
    '_task_type',
    '_task_id',
    '_global_id_in_cluster',
    '_master',
    '_evaluation_master',
    '_is_chief',
    '_num_ps_replicas',
    '_num_worker_replicas',
)


def _init_distributed_setting(config: RunConfig, tf_config: dict) -> None:
    """TF 2.15's cluster properties of `config` from `tf_config` (`RunConfig` says what each task gets)."""
    for name in _CLUSTER_PROPERTIES:  # First set in TF 2.15's order, which `vars(config)` shows.
        setattr(config, name, None)
    config._service = tf_config.get('service')
    if config._service is not None and not isinstance(config._service, dict):
        raise TypeError('If "service" is set in TF_CONFIG, it must be a dict. Given %s' % type(config._service))
    cluster = tf.train.ClusterSpec(tf_config.get('cluster') or {})
    task = tf_config.get('task') or {}
    config._cluster_spec = cluster
    config._master = tf_config.get('session_master', '')
    config._evaluation_master = tf_config.get('eval_session_master', '')
    if not cluster:
        config._task_type = task.get('type', TaskType.WORKER)
        config._task_id = int(task.get('index', 0))
        if config._task_type != TaskType.WORKER:
            raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
        if config._task_id != 0:
            raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
        config._is_chief, config._num_ps_replicas, config._num_worker_replicas = True, 0, 1
        config._global_id_in_cluster = 0
        return
    chief = TaskType.MASTER if TaskType.MASTER in cluster.jobs else TaskType.CHIEF
    if chief == TaskType.MASTER and TaskType.CHIEF in cluster.jobs:
        raise ValueError('If `master` node exists in `cluster`, job `chief` is not supported.')
    if chief not in cluster.jobs:
        raise ValueError(
            'If "cluster" is set in TF_CONFIG, it must have one "chief" node. TF_CONFIG\'s cluster has the jobs '
            f'{sorted(cluster.jobs)}: add the chief (or the legacy "master") task, the one that writes the '
            'checkpoints.'
        )
    if len(cluster.job_tasks(chief)) > 1:
        raise ValueError('The "cluster" in TF_CONFIG must have only one "%s" node.' % chief)
    config._task_type, config._task_id = task['type'], int(task.get('index', 0))
    if config._task_type == TaskType.EVALUATOR:
        if chief == TaskType.MASTER:
            raise ValueError('If `master` node exists in `cluster`, task_type `evaluator` is not supported.')
        # The evaluator is not part of the training cluster.
        config._cluster_spec = tf.train.ClusterSpec({})
        config._master = ''
        config._num_ps_replicas = config._num_worker_replicas = 0
        config._global_id_in_cluster = None
        config._is_chief = False
        return
    jobs = cluster.as_dict()
    if 'session_master' not in tf_config:
        only_task = len(cluster.jobs) == 1 and len(cluster.job_tasks(cluster.jobs[0])) == 1
        config._master = '' if only_task else 'grpc://' + cluster.job_tasks(config._task_type)[config._task_id]
    config._evaluation_master = ''
    config._num_ps_replicas = len(jobs.get(TaskType.PS, []))
    config._num_worker_replicas = len(jobs.get(TaskType.WORKER, [])) + len(jobs.get(chief, []))
    order = [chief] + [job for job in sorted(cluster.jobs) if job not in (chief, TaskType.PS)]
    order += [TaskType.PS] if TaskType.PS in cluster.jobs else []
    first_ids = {}
    for job in order:
        first_ids[job] = sum(len(cluster.job_tasks(earlier)) for earlier in order[: order.index(job)])
    config._global_id_in_cluster = first_ids[config._task_type] + config._task_id
    config._is_chief = config._task_type == chief


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


def _distributed_session_config(task_type: str, task_id: int) -> tf.compat.v1.ConfigProto | None:
    """TF 2.15's default `session_config` of a task of a cluster: its device filters (the property only)."""
    filters = {
        TaskType.MASTER: ['/job:ps', '/job:master'],
        TaskType.CHIEF: ['/job:ps', '/job:chief'],
        TaskType.WORKER: ['/job:ps', '/job:worker/task:%d' % task_id],
        TaskType.PS: ['/job:ps', '/job:worker', '/job:chief', '/job:master'],
    }.get(task_type)
    if filters is None:
        return None
    config = get_default_session_config()
    config.device_filters.extend(filters)
    return config


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
        if name in _NUMBERS and math.isnan(value):  # v1's message says nothing of it ("should be >= 0").
            raise ValueError(f'`{name}` must be None or {_NUMBERS[name]}, got nan: NaN is not a number.')
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
