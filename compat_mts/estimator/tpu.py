"""`compat_mts.estimator.tpu`: v1's `tf.compat.v1.estimator.tpu` with `use_tpu=False`, on the CPU or GPU.

A `TPUEstimator` program with `use_tpu=False` (BERT's `run_classifier.py` and many research trainers run so
off the TPU) is an Estimator program with a TPU wrapper: `params['batch_size']` set by mode from
`train_batch_size`/`eval_batch_size`/`predict_batch_size`, a `TPUEstimatorSpec` whose `eval_metrics`,
`host_call` and `scaffold_fn` are called on the host, and an `ExamplesPerSecondHook` in place of the loss
logging. That is what v1 did on the CPU, and what this module does, on `compat_mts.estimator.Estimator`.
A TPU itself is not supported: `use_tpu=True` raises, naming `tf.distribute.TPUStrategy` and
migration_guide/tpu.md.
"""

from __future__ import annotations

import collections
import enum
import inspect
import math
import re
from typing import Any, Callable

import tensorflow as tf
from tensorflow.compat.v1 import logging

from compat_mts import _tf_internals as tf_internals
from compat_mts.estimator import _inputs
from compat_mts.estimator import estimator as estimator_lib
from compat_mts.estimator import run_config as run_config_lib
from compat_mts.estimator import tpu_experimental as experimental
from compat_mts.estimator.model_fn import EstimatorSpec, ModeKeys
from compat_mts.hooks.step_counter import StepCounterHook
from compat_mts.session.session_run_hook import SessionRunArgs, SessionRunHook
from compat_mts import summary as summary_lib

__all__ = [
    'ExamplesPerSecondHook',
    'ExportSavedModelApiVersion',
    'InputPipelineConfig',
    'RunConfig',
    'TPUConfig',
    'TPUEstimator',
    'TPUEstimatorSpec',
    'experimental',
]

_BATCH_SIZE_KEY = 'batch_size'
_CTX_KEY = 'context'
_USE_TPU_KEY = 'use_tpu'
_RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]
_ITERATIONS_PER_LOOP = re.compile(r'^(?P<value>[1-9]\d*)((?P<suffix>[s|m|h])$|$)')
_TPU_REFUSAL = (
    '{what} is not supported: compat_mts runs TPUEstimator programs with use_tpu=False, on the CPU or GPU. '
    'A TPU program moves to Keras (or a custom loop) under tf.distribute.TPUStrategy; migration_guide/tpu.md '
    'shows the way, stage by stage. To run this program here, pass use_tpu=False.'
)


class InputPipelineConfig:
    """How a TPU program's `input_fn` is split over hosts and cores (v1's values; off the TPU they do not matter)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


def _check_positive_integer(value: Any, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError('{} must be int, got {}'.format(name, type(value)))
    if value <= 0:
        raise ValueError('{} must be positive, got {}'.format(name, value))


def _parse_iterations_per_loop(iterations_per_loop) -> tuple[int, str]:
    """`(value, unit)` of `iterations_per_loop`: a count, or seconds for `<N><s|m|h>` (v1's rule and message)."""
    match = _ITERATIONS_PER_LOOP.match(str(iterations_per_loop))
    if match is None:
        raise ValueError(
            'Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer value or time-based '
            'value `<N><s|m|h>` where <N> is any positive integer and `s`, `m`, `h` are unit of time in seconds, '
            f'minutes, hours respectively. Examples of valid values: `3600s`, `60m`, `1h`; got {iterations_per_loop!r}.'
        )
    value = int(match.group('value')) * {'m': 60, 'h': 3600}.get(match.group('suffix'), 1)
    return value, 'seconds' if match.group('suffix') else 'count'


class TPUConfig(
    collections.namedtuple(
        'TPUConfig',
        [
            'iterations_per_loop',
            'num_shards',
            'num_cores_per_replica',
            'per_host_input_for_training',
            'tpu_job_name',
            'initial_infeed_sleep_secs',
            'input_partition_dims',
            'eval_training_input_configuration',
            'experimental_host_call_every_n_steps',
            'experimental_allow_per_host_v2_parallel_get_next',
            'experimental_feed_hook',
        ],
    )
):
    """The TPU settings of a `tpu.RunConfig`: v1's fields, defaults and checks.

    Off the TPU only `iterations_per_loop` has an effect, as in v1: a count divides how often
    `ExamplesPerSecondHook` logs (`ceil(log_step_count_steps / iterations_per_loop)` steps), a time (`'60s'`,
    `'10m'`, `'1h'`) makes it log every that many seconds. The others are kept and checked as v1 checked them.

    Example:

    ```python
    tpu_config = compat_mts.estimator.tpu.TPUConfig(iterations_per_loop=100, num_shards=8)
    ```

    Raises:
      ValueError: an `iterations_per_loop` that is neither a positive count nor `<N><s|m|h>`, a bad
        `num_cores_per_replica`, `input_partition_dims` or `eval_training_input_configuration` (v1's messages).
      TypeError: a `num_shards` or `initial_infeed_sleep_secs` that is not an integer.
    """

    def __new__(
        cls,
        iterations_per_loop=2,
        num_shards=None,
        num_cores_per_replica=None,
        per_host_input_for_training=True,
        tpu_job_name=None,
        initial_infeed_sleep_secs=None,
        input_partition_dims=None,
        eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
        experimental_host_call_every_n_steps=1,
        experimental_allow_per_host_v2_parallel_get_next=False,
        experimental_feed_hook=None,
    ):
        _parse_iterations_per_loop(iterations_per_loop)
        if num_shards is not None:
            _check_positive_integer(num_shards, 'TPUConfig num_shards')
        if input_partition_dims is not None:
            if len(input_partition_dims) not in (1, 2):
                raise ValueError('input_partition_dims must be a list/tuple with one or two elements.')
            if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
                raise ValueError('input_partition_dims is only supported in PER_HOST_V2 mode.')
            if num_cores_per_replica is None:
                raise ValueError('input_partition_dims requires setting num_cores_per_replica.')
        if num_cores_per_replica is not None and num_cores_per_replica not in (1, 2, 4, 8, 16, 32, 64, 128):
            raise ValueError(
                'num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got {}'.format(num_cores_per_replica)
            )
        if eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.SLICED):
            raise ValueError(
                'eval_training_input_configuration must be PER_HOST_V1 or SLICED; got {}'.format(
                    eval_training_input_configuration
                )
            )
        if per_host_input_for_training is False:
            per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
        elif per_host_input_for_training is True:
            per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
        if initial_infeed_sleep_secs:
            _check_positive_integer(initial_infeed_sleep_secs, 'TPUConfig initial_infeed_sleep_secs')
        return super().__new__(
            cls,
            iterations_per_loop,
            num_shards,
            num_cores_per_replica,
            per_host_input_for_training,
            tpu_job_name,
            initial_infeed_sleep_secs,
            input_partition_dims,
            eval_training_input_configuration,
            experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next,
            experimental_feed_hook,
        )


class RunConfig(run_config_lib.RunConfig):
    """`compat_mts.estimator.RunConfig` with v1's TPU arguments: `tpu_config`, `evaluation_master`, `master`, `cluster`.

    `master` and `evaluation_master` are the addresses the sessions connect to, as in v1 (`None` or `''`: in
    process; `evaluation_master` defaults to `master`). `cluster` is a `tf.distribute.cluster_resolver`
    resolver whose `master()` becomes `master`; a TPU's resolver is refused later, by `use_tpu=True`.

    Example:

    ```python
    config = compat_mts.estimator.tpu.RunConfig(
        cluster=None, master=None, model_dir=directory, save_checkpoints_steps=100,
        tpu_config=compat_mts.estimator.tpu.TPUConfig(iterations_per_loop=100, num_shards=8),
    )
    ```

    Args:
      tpu_config: a `TPUConfig`; `TPUConfig()` if None.
      evaluation_master: the address evaluation connects to; `master` if None.
      master: the address training connects to.
      cluster: a cluster resolver, instead of `master`.
      **kwargs: `compat_mts.estimator.RunConfig`'s arguments.

    Raises:
      ValueError: both `master` and `cluster` (v1's message), or a `RunConfig` argument's error.
      TypeError: a `tpu_config` that is not a `TPUConfig`.
    """

    def __init__(self, tpu_config=None, evaluation_master=None, master=None, cluster=None, **kwargs):
        super().__init__(**kwargs)
        if tpu_config is not None and not isinstance(tpu_config, TPUConfig):
            raise TypeError(
                f'tpu_config must be a compat_mts.estimator.tpu.TPUConfig, given: {tpu_config!r}. Build it with '
                'compat_mts.estimator.tpu.TPUConfig(iterations_per_loop=..., ...).'
            )
        self._tpu_config = tpu_config or TPUConfig()
        self._cluster = cluster
        if master is not None:
            if cluster is not None:
                raise ValueError('Both master and cluster are set.')
            self._master = master
        elif cluster:
            self._master = cluster.master()
        if evaluation_master is not None:
            self._evaluation_master = evaluation_master
        elif not self._evaluation_master:
            self._evaluation_master = self._master

    @property
    def tpu_config(self) -> TPUConfig:
        return self._tpu_config

    @property
    def cluster(self):
        return self._cluster

    def replace(self, **kwargs) -> 'RunConfig':
        """A copy with the given properties replaced; `tpu_config` too (v1's)."""
        if 'tpu_config' not in kwargs:
            return super().replace(**kwargs)
        tpu_config = kwargs.pop('tpu_config')
        replaced = super().replace(**kwargs)
        replaced._tpu_config = tpu_config
        return replaced


class _HostCallHook(SessionRunHook):
    """Runs a `host_call`'s outputs with every step, as v1's `use_tpu=False` did; inits and flushes its writers."""

    def __init__(self, outputs, writer_init_ops: list, flush_ops: list):
        self._outputs = outputs
        self._init_ops = writer_init_ops
        self._flush_ops = flush_ops

    def after_create_session(self, session, coord):
        if self._init_ops:
            session.run(self._init_ops)

    def before_run(self, run_context):
        return SessionRunArgs(self._outputs)

    def end(self, session):
        if self._flush_ops:
            session.run(self._flush_ops)


def _check_host_calls(host_calls: dict) -> None:
    """v1's checks of `eval_metrics` and `host_call`: `(fn, tensors)`, `tensors` a list fitting `fn`, or a dict."""
    for name, host_call in host_calls.items():
        if not isinstance(host_call, (tuple, list)):
            raise ValueError('{} should be tuple or list'.format(name))
        if len(host_call) != 2:
            raise ValueError('{} should have two elements.'.format(name))
        function, tensors = host_call
        if not callable(function):
            raise TypeError('{}[0] should be callable.'.format(name))
        if not isinstance(tensors, (tuple, list, dict)):
            raise ValueError('{}[1] should be tuple or list, or dict.'.format(name))
        if isinstance(tensors, (tuple, list)):
            arguments = tf_internals.fn_args(function)
            takes_varargs = any(
                parameter.kind is inspect.Parameter.VAR_POSITIONAL
                for parameter in inspect.signature(function).parameters.values()
            )
            if not takes_varargs and len(tensors) != len(arguments):
                raise RuntimeError(
                    'In TPUEstimatorSpec.{}, length of tensors {} does not match method args of the function, '
                    'which takes {}.'.format(name, len(tensors), len(arguments))
                )


def _call_host_call(name: str, host_call) -> Any:
    function, tensors = host_call
    if isinstance(tensors, (tuple, list)):
        return function(*tensors)
    try:
        return function(**tensors)
    except TypeError as error:
        logging.warning(
            "Exception while calling %s: %s. It is likely the tensors (%s[1]) do not match the function's arguments",
            name,
            error,
            name,
        )
        raise


class TPUEstimatorSpec(
    collections.namedtuple(
        'TPUEstimatorSpec',
        [
            'mode',
            'predictions',
            'loss',
            'train_op',
            'eval_metrics',
            'export_outputs',
            'scaffold_fn',
            'host_call',
            'training_hooks',
            'evaluation_hooks',
            'prediction_hooks',
        ],
    )
):
    """What a `TPUEstimator`'s `model_fn` returns: v1's fields and checks.

    `eval_metrics` is `(metric_fn, tensors)`: `metric_fn(*tensors)` (a list) or `metric_fn(**tensors)` (a dict)
    returns the `eval_metric_ops`. `scaffold_fn()` returns the `Scaffold` (it is where v1 programs call
    `tf.compat.v1.train.init_from_checkpoint`). `host_call` is `(fn, tensors)` too; its outputs run with every
    step of `train` and `evaluate`. Off the TPU all three are called on the host once the `model_fn` returns,
    as v1 did; `as_estimator_spec()` gives the `EstimatorSpec`.

    Example:

    ```python
    return compat_mts.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]), scaffold_fn=scaffold_fn)
    ```

    Raises:
      ValueError: a malformed `eval_metrics` or `host_call`, or a field the mode needs missing (v1's messages).
      TypeError: a hook that is not a `SessionRunHook`, a non-callable `eval_metrics[0]` (v1's messages).
      RuntimeError: a list of `tensors` that does not fit the function's arguments (v1's message).
    """

    def __new__(
        cls,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metrics=None,
        export_outputs=None,
        scaffold_fn=None,
        host_call=None,
        training_hooks=None,
        evaluation_hooks=None,
        prediction_hooks=None,
    ):
        host_calls = {}
        if eval_metrics is not None:
            host_calls['eval_metrics'] = eval_metrics
        if host_call is not None:
            host_calls['host_call'] = host_call
        _check_host_calls(host_calls)
        training_hooks = tuple(training_hooks or [])
        evaluation_hooks = tuple(evaluation_hooks or [])
        prediction_hooks = tuple(prediction_hooks or [])
        for hook in training_hooks + evaluation_hooks + prediction_hooks:
            if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
                raise TypeError('All hooks must be SessionRunHook instances, given: {}'.format(hook))
        return super().__new__(
            cls,
            mode,
            predictions,
            loss,
            train_op,
            eval_metrics,
            export_outputs,
            scaffold_fn,
            host_call,
            training_hooks,
            evaluation_hooks,
            prediction_hooks,
        )

    def as_estimator_spec(self) -> EstimatorSpec:
        """The `EstimatorSpec` v1 ran off the TPU: `eval_metrics`, `host_call` and `scaffold_fn` called here.

        Call it in the `model_fn`'s graph (the `TPUEstimator` does).
        """
        eval_metric_ops = None
        if self.eval_metrics is not None:
            eval_metric_ops = _call_host_call('eval_metrics', self.eval_metrics)
        hooks = ()
        if self.host_call is not None:
            hooks = (_host_call_hook(self.host_call),)
        scaffold = self.scaffold_fn() if self.scaffold_fn else None
        return EstimatorSpec(
            mode=self.mode,
            predictions=self.predictions,
            loss=self.loss,
            train_op=self.train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=self.export_outputs,
            scaffold=scaffold,
            training_hooks=self.training_hooks + hooks,
            evaluation_hooks=self.evaluation_hooks + hooks,
            prediction_hooks=self.prediction_hooks + hooks,
        )


_SUMMARY_WRITER_INIT_COLLECTION = '_SUMMARY_WRITER_V2'  # Where graph-mode `tf.summary` writers keep their init op.


def _host_call_hook(host_call) -> _HostCallHook:
    graph = tf.compat.v1.get_default_graph()
    known_writers = set(graph.get_collection(_SUMMARY_WRITER_INIT_COLLECTION))
    outputs = _call_host_call('host_call', host_call)
    init_ops = [op for op in graph.get_collection(_SUMMARY_WRITER_INIT_COLLECTION) if op not in known_writers]
    flush_ops = [tf.raw_ops.FlushSummaryWriter(writer=op.inputs[0]) for op in init_ops]
    return _HostCallHook(outputs, init_ops, flush_ops)


class ExamplesPerSecondHook(StepCounterHook):
    """`StepCounterHook` that also logs and records `examples/sec`: the global step rate times the batch size (v1's).

    `TPUEstimator` adds it to the training hooks in place of the loss logging and step counter of an
    `Estimator`, as v1 did.

    Args:
      batch_size: the global batch size of a step.
      every_n_steps: log every this many steps.
      every_n_secs: or every this many seconds.
      output_dir: the directory whose events get `global_step/sec` and `examples/sec`.
      summary_writer: a compat_mts summary writer instead of `output_dir`'s.
    """

    def __init__(self, batch_size, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        self._batch_size = batch_size
        super().__init__(
            every_n_steps=every_n_steps, every_n_secs=every_n_secs, output_dir=output_dir, summary_writer=summary_writer
        )

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int) -> None:
        global_step_per_sec = elapsed_steps / elapsed_time
        examples_per_sec = (self._batch_size or 0) * global_step_per_sec
        if self._summary_writer is not None:
            summary_lib.write_simple_value(self._summary_writer, 'global_step/sec', global_step_per_sec, global_step)
            summary_lib.write_simple_value(self._summary_writer, 'examples/sec', examples_per_sec, global_step)
        logging.info('global_step/sec: %g', global_step_per_sec)
        logging.info('examples/sec: %g', examples_per_sec)


class ExportSavedModelApiVersion(enum.Enum):
    V1 = 1
    V2 = 2


class TPUEstimator(estimator_lib.Estimator):
    """v1's `TPUEstimator` with `use_tpu=False`: an `Estimator` that tells `input_fn` and `model_fn` the batch size.

    As v1 did off the TPU:

    - `params['batch_size']` is `train_batch_size`, `eval_batch_size` or `predict_batch_size` by mode (not
      set when that one is None, nor for `export_saved_model`); `params['use_tpu']` is False in the `model_fn`.
      `input_fn` and `model_fn` must take `params`; `params` must not hold `batch_size` or `context`.
    - a `TPUEstimatorSpec` becomes its `as_estimator_spec()`; an `EstimatorSpec` is taken as it is.
    - `log_step_count_steps` gives an `ExamplesPerSecondHook` (every `ceil(log_step_count_steps /
      iterations_per_loop)` steps, or every `iterations_per_loop` seconds for a time) instead of the loss
      logging and `global_step/sec` of an `Estimator`.
    - `eval_on_tpu`, `export_to_tpu`, `export_to_cpu`, `batch_axis` are accepted and have no effect off the TPU;
      `export_saved_model` writes the CPU graph.

    Example:

    ```python
    estimator = compat_mts.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=run_config, use_tpu=False,
        train_batch_size=32, eval_batch_size=8, predict_batch_size=8)
    estimator.train(input_fn=train_input_fn, max_steps=100)
    ```

    Args:
      model_fn: the model function; it takes `params` and returns a `TPUEstimatorSpec` or `EstimatorSpec`.
      model_dir: as `Estimator`'s.
      config: a `compat_mts.estimator.tpu.RunConfig` (required, as in v1).
      params: hyperparameters, without the reserved keys `batch_size` and `context`.
      use_tpu: must be False here.
      train_batch_size: `params['batch_size']` for training.
      eval_batch_size: `params['batch_size']` for evaluation.
      predict_batch_size: `params['batch_size']` for prediction.
      batch_axis: accepted (TPU sharding).
      eval_on_tpu: accepted (TPU evaluation).
      export_to_tpu: accepted (TPU serving graph).
      export_to_cpu: accepted (the CPU graph is what `export_saved_model` writes).
      warm_start_from: as `Estimator`'s.
      embedding_config_spec: None or a `tpu.experimental.EmbeddingConfigSpec`: checked, then unused off the TPU
        (the `model_fn`'s embedding columns are ordinary lookups), as in v1.
      export_saved_model_api_version: 1 or 2 (v1's check).

    Raises:
      NotImplementedError: `use_tpu=True`: names `tf.distribute.TPUStrategy` and migration_guide/tpu.md.
      ValueError: a `config` that is not a `tpu.RunConfig`, reserved `params` keys, a bad
        `export_saved_model_api_version`, an `EmbeddingConfigSpec` with `partition_strategy='mod'` (v1's
        messages), or `Estimator`'s.
    """

    def __init__(
        self,
        model_fn: Callable | None = None,
        model_dir=None,
        config: RunConfig | None = None,
        params: dict | None = None,
        use_tpu: bool = True,
        train_batch_size: int | None = None,
        eval_batch_size: int | None = None,
        predict_batch_size: int | None = None,
        batch_axis=None,
        eval_on_tpu: bool = True,
        export_to_tpu: bool = True,
        export_to_cpu: bool = True,
        warm_start_from=None,
        embedding_config_spec=None,
        export_saved_model_api_version=ExportSavedModelApiVersion.V1,
    ):
        if config is None or not isinstance(config, RunConfig):
            raise ValueError('`config` must be provided with type `tpu_config.RunConfig`')
        if params is not None and any(key in params for key in _RESERVED_PARAMS_KEYS):
            raise ValueError('{} are reserved keys but existed in params {}.'.format(_RESERVED_PARAMS_KEYS, params))
        if use_tpu:
            raise NotImplementedError(_TPU_REFUSAL.format(what='TPUEstimator(use_tpu=True)'))
        if embedding_config_spec is not None and not isinstance(
            embedding_config_spec, experimental.EmbeddingConfigSpec
        ):
            raise ValueError(
                '`embedding_config_spec` must be None or a tpu.experimental.EmbeddingConfigSpec; got '
                f'{embedding_config_spec!r}.'
            )
        if embedding_config_spec is not None and embedding_config_spec.partition_strategy == 'mod':
            raise ValueError('Mod sharding of embedding tables not supported on CPU.')
        if model_fn is None:
            raise ValueError('model_fn must be provided to Estimator.')
        if not (
            isinstance(export_saved_model_api_version, ExportSavedModelApiVersion)
            or export_saved_model_api_version in (1, 2)
        ):
            raise ValueError(
                'export_saved_model_api_version should be 1 or 2; got {}.'.format(export_saved_model_api_version)
            )
        estimator_lib._verify_model_fn_args(model_fn, params)
        self._user_model_fn = model_fn
        self._batch_sizes = {
            ModeKeys.TRAIN: train_batch_size,
            ModeKeys.EVAL: eval_batch_size,
            ModeKeys.PREDICT: predict_batch_size,
        }
        iterations, unit = _parse_iterations_per_loop(config.tpu_config.iterations_per_loop)
        self._log_every_n_steps = config.log_step_count_steps
        self._log_every_n_secs = None
        if unit == 'seconds':
            self._log_every_n_steps, self._log_every_n_secs = None, iterations
        elif self._log_every_n_steps is not None:
            self._log_every_n_steps = int(math.ceil(float(self._log_every_n_steps) / iterations))
        self._input_fn_called = False
        self._use_tpu = use_tpu
        self._eval_on_tpu = eval_on_tpu
        self._export_to_tpu = export_to_tpu
        self._export_to_cpu = export_to_cpu
        self._batch_axis = batch_axis
        super().__init__(
            model_fn=self._augmented_model_fn,
            model_dir=model_dir,
            config=config.replace(log_step_count_steps=None),
            params=params or {},
            warm_start_from=warm_start_from,
        )

    def _input(self, input_fn, mode: str):
        if 'params' not in tf_internals.fn_args(input_fn):
            raise ValueError(
                'input_fn ({}) does not include params argument, required by TPUEstimator to pass batch size as '
                'params["batch_size"]'.format(input_fn)
            )
        params = self.params
        if self._batch_sizes[mode] is not None:
            params[_BATCH_SIZE_KEY] = self._batch_sizes[mode]
        self._input_fn_called = True  # export_saved_model calls no input_fn: v1 told the modes apart so.
        return _inputs.parse_input_fn_result(_inputs.call_input_fn(input_fn, mode, params, self.config))

    def _augmented_model_fn(self, features, labels, mode, config, params):
        export_mode, self._input_fn_called = not self._input_fn_called, False
        if 'params' not in tf_internals.fn_args(self._user_model_fn):
            raise ValueError(
                'model_fn ({}) does not include params argument, required by TPUEstimator to pass batch size as '
                "params['batch_size']".format(self._user_model_fn)
            )
        batch_size = None if export_mode else self._batch_sizes[mode]
        if batch_size is not None:
            params[_BATCH_SIZE_KEY] = batch_size
        params[_USE_TPU_KEY] = False
        kwargs = {}
        arguments = tf_internals.fn_args(self._user_model_fn)
        if 'labels' in arguments:
            kwargs['labels'] = labels
        elif labels is not None:
            raise ValueError('model_fn does not take labels, but input_fn returns labels.')
        if 'mode' in arguments:
            kwargs['mode'] = mode
        if 'config' in arguments:
            kwargs['config'] = config
        logging.info('Running %s on CPU/GPU', mode)
        spec = self._user_model_fn(features=features, params=params, **kwargs)
        if isinstance(spec, TPUEstimatorSpec):
            spec = spec.as_estimator_spec()
        if self._log_every_n_steps is not None or self._log_every_n_secs is not None:
            examples_hook = ExamplesPerSecondHook(
                self._batch_sizes[mode],
                output_dir=self.model_dir if config.save_summary_steps else None,
                every_n_steps=self._log_every_n_steps,
                every_n_secs=self._log_every_n_secs,
            )
            spec = spec._replace(training_hooks=spec.training_hooks + (examples_hook,))
        return spec
