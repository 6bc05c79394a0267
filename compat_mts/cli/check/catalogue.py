"""The catalogue of `compat-mts check`: each v1 (or compat_mts) construct, its replacement and its stage.

Data, mostly: a `Rule` per construct, keyed by its path below `tensorflow.compat.v1` (`V1_RULES`) or below
`compat_mts` (`MTS_RULES`), and `lookup`, which maps a full dotted path to its canonical spelling and rule.
Standard library only, as `check.py`, which reads scripts against it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import re

if __package__:
    from compat_mts import premade_estimators
else:  # `python compat_mts/cli/check FILE...`: the package is not importable; its module is read from its file.
    _spec = importlib.util.spec_from_file_location(
        'premade_estimators', pathlib.Path(__file__).resolve().parents[2] / 'premade_estimators.py'
    )
    premade_estimators = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(premade_estimators)


@dataclasses.dataclass(frozen=True)
class Rule:
    """What replaces a construct, at which stage (1-4) its line changes, and what keeps working until then.

    `blocks`: the line fails on TensorFlow 2.21 as written, so the script cannot run at stage 1 until it
    changes (such a rule is always a stage-1 rule). `unless`: (a setting of the script, the rule that applies
    when the script makes it), e.g. v1 shapes kept by `disable_v2_tensorshape()`. `module`: the module (a key
    such as 'contrib.slim') whose import edit also replaces this name, so a use through an alias of that
    module is not listed again.
    """

    replacement: str
    stage: int
    note: str
    blocks: bool = False
    unless: tuple[str, Rule] | None = None
    module: str = ''


def _blocker(replacement: str, note: str, unless: tuple[str, Rule] | None = None, module: str = '') -> Rule:
    return Rule(replacement, 1, note, blocks=True, unless=unless, module=module)


# ---------------------------------------------------------------------------------------------------------
# The catalogue. Keys are paths below `tensorflow.compat.v1` ("v1") or below `compat_mts` ("mts").

_SESSION_LOOP_NOTE = 'At stage 3 the session loop becomes model.fit.'
_HOOK_FETCH_NOTE = (
    'Tensors of a wrap_graph graph still work at stage 1; at stage 2 they become step-output '
    "names ('loss'), variables or callables."
)
_WRAP_GRAPH_NOTE = 'Works unchanged inside compat_mts.wrap_graph at stage 1.'
_DISTRIBUTED_NOTE = (
    'compat_mts runs on tf.distribute and never runs its own parameter exchange: describe the '
    'cluster in TF_CONFIG and build the model in the strategy scope; is_chief defaults from '
    'that cluster.'
)
_TF_CONFIG_CALLS = (
    'tf.config.threading.set_intra_op_parallelism_threads / set_inter_op_parallelism_threads, '
    'tf.config.set_soft_device_placement, tf.debugging.set_log_device_placement, '
    'tf.config.experimental.set_memory_growth, tf.config.set_visible_devices'
)
_CONFIG_NOTE = (
    'Works unchanged as config= of a compat_mts session, which applies the fields that have a '
    'tf.config equivalent and names the rest in one warning; model.fit has no session to take it.'
)
_SUMMARY_NOTE = (
    f'{_WRAP_GRAPH_NOTE} Called inside the step, a TF2 summary is recorded on the steps where '
    'SummarySaverHook triggers, stamped with the global step (step= may be omitted).'
)
_OPTIMIZER_NOTE = (
    f'{_WRAP_GRAPH_NOTE} At stage 2 the step computes gradients with tf.GradientTape and calls '
    'optimizer.apply_gradients.'
)
_ITERATOR_NOTE = (
    f'{_WRAP_GRAPH_NOTE} At stage 2 the step takes the batch (iterate the dataset, or pass '
    'next(iterator) through feed_dict string keys); at stage 3 model.fit takes the dataset.'
)
_GLOBAL_STEP_NOTE = (
    'Inside the function given to compat_mts.wrap_graph the v1 call works too, and its variable '
    'becomes the session global step. At stage 3 the global step is optimizer.iterations.'
)
_EAGER_NOTE = (
    'compat_mts runs v1 programs eagerly. Graph code needs a graph of its own then: a '
    "'with tf.Graph().as_default():' block (a compat_mts session created inside it runs that graph "
    'eagerly) or the function given to compat_mts.wrap_graph.'
)
_INITIALIZER_NOTE = (
    'Works as written at stage 1, in the graph code: a compat_mts session initializes the variables (or '
    'restores the latest checkpoint) itself, so running it is not needed; run after a restore, it resets '
    'the restored values, as under a v1 MonitoredTrainingSession. It goes with the graph at stage 2.'
)
PARAMETER_SERVER_SETTING = 'compat_mts.parameter_server_strategy(cluster)'
_PS_EDITS = (
    "add a 'chief' job to the cluster (the task that runs the session loop), let the ps and worker tasks "
    'start their server and join() it, and call compat_mts.parameter_server_strategy(cluster) in the chief '
    'before it builds the graph; drop master='
)
_NO_PS_NOTE = (
    'Fails as written: a ps cluster runs on compat_mts with a chief that drives the session (a ValueError '
    f'says so until then). The edits: {_PS_EDITS}. replica_device_setter then stays as written; see '
    'migration_guide/distributed.md, "Parameter-server clusters".'
)
_PS_WORKS_NOTE = (
    'Works at stage 1 on the chief of compat_mts.parameter_server_strategy: the variables stay on the '
    'ps tasks it names, the steps run on the workers. At stage 2 the model is built under '
    'strategy.scope(), which places TF2 variables on the ps tasks itself.'
)
_SERVER_NOTE = (
    "master=server.target of the program's own single-task server runs in-process at stage 1. " + _DISTRIBUTED_NOTE
)
_CHECKPOINT_MANAGER = (
    'tf.train.CheckpointManager(tf.train.Checkpoint(...), checkpoint_dir, max_to_keep=N) as '
    'compat_mts.Scaffold(saver=...)'
)
_SAVER_NOTE = (
    'Works at stage 1 when it is built in the graph code and given to compat_mts.Scaffold(saver=...) '
    'or compat_mts.CheckpointSaverHook(saver=...): var_list, max_to_keep and '
    'keep_checkpoint_every_n_hours are honoured and the checkpoints keep the v1 names. At stage 2 '
    'compat_mts.legacy.restore_from_v1 maps those names onto the new variables once.'
)
_USER_HOOK_NOTE = (
    'A hook written against the v1 protocol works unchanged in a compat_mts session. '
    f'{_HOOK_FETCH_NOTE} At stage 3 it runs inside compat_mts.keras.HooksCallback; at stage 4 it '
    'becomes a keras.callbacks.Callback.'
)

# Built-in hooks: compat_mts has each under the same name (stage 1); the Keras callback that replaces it at
# stage 4.
_HOOKS = {
    'StopAtStepHook': ('epochs / steps_per_epoch of model.fit', 'Same arguments (num_steps, last_step).'),
    'NanTensorHook': ('keras.callbacks.TerminateOnNaN()', _HOOK_FETCH_NOTE),
    'LoggingTensorHook': ('the model.fit progress bar, or a small keras.callbacks.Callback', _HOOK_FETCH_NOTE),
    'CheckpointSaverHook': (
        'keras.callbacks.BackupAndRestore / keras.callbacks.ModelCheckpoint',
        'Writes model.ckpt-<step>, as v1 did; saver= takes the Saver built in the graph code, a '
        'tf.train.Checkpoint or a CheckpointManager.',
    ),
    'CheckpointSaverListener': ('a keras.callbacks.Callback', 'Same before_save/after_save protocol.'),
    'StepCounterHook': ('keras.callbacks.TensorBoard', 'Logs and writes global_step/sec as v1 did.'),
    'SummarySaverHook': (
        'keras.callbacks.TensorBoard',
        "Records the step's own tf.summary calls on its trigger steps; a merged summary "
        'tensor of a wrap_graph graph still works as summary_op at stage 1.',
    ),
    'GlobalStepWaiterHook': ('a keras.callbacks.Callback', 'Same arguments (wait_until_step).'),
    'FinalOpsHook': ('code after model.fit returns', _HOOK_FETCH_NOTE),
    'FeedFnHook': (
        'a tf.data input pipeline given to model.fit',
        'The feed_fn dict keys become strings (keyword arguments of the step) at stage 2.',
    ),
    'ProfilerHook': ('keras.callbacks.TensorBoard(profile_batch=...)', 'Same arguments.'),
    'SecondOrStepTimer': ('a keras.callbacks.Callback', 'Same trigger arithmetic.'),
    'NanLossDuringTrainingError': ('keras.callbacks.TerminateOnNaN()', 'Raised by NanTensorHook as in v1.'),
}

# The hooks and the hook protocol's classes that tf.estimator also exported (tensorflow/estimator's
# `estimator_export('estimator.<name>')`): gone with tf.estimator, compat_mts's under the same names.
ESTIMATOR_HOOK_ALIASES = frozenset(
    {*_HOOKS, 'SessionRunHook', 'SessionRunArgs', 'SessionRunContext', 'SessionRunValues'}
)
ESTIMATOR_HOOK_ALIAS_RULES = {
    name: _blocker(
        f'compat_mts.{name}',
        f'tf.estimator.{name} was tf.compat.v1.train.{name} under a second name, and left TensorFlow with '
        f'tf.estimator in 2.16 (AttributeError on 2.21); compat_mts.{name} is the same class on the eager session.',
    )
    for name in ESTIMATOR_HOOK_ALIASES
}

_OPTIMIZERS = {
    'GradientDescentOptimizer': 'tf.keras.optimizers.SGD',
    'MomentumOptimizer': 'tf.keras.optimizers.SGD(momentum=...)',
    'AdamOptimizer': 'tf.keras.optimizers.Adam',
    'AdagradOptimizer': 'tf.keras.optimizers.Adagrad',
    'AdadeltaOptimizer': 'tf.keras.optimizers.Adadelta',
    'RMSPropOptimizer': 'tf.keras.optimizers.RMSprop',
    'FtrlOptimizer': 'tf.keras.optimizers.Ftrl',
    'ProximalGradientDescentOptimizer': 'a tf.keras.optimizers optimizer (Keras has no proximal variant)',
    'ProximalAdagradOptimizer': 'a tf.keras.optimizers optimizer (Keras has no proximal variant)',
    'AdagradDAOptimizer': 'a tf.keras.optimizers optimizer (Keras has no dual-averaging variant)',
    'Optimizer': 'tf.keras.optimizers.Optimizer',
}

_SESSION_CLASSES = (
    'MonitoredTrainingSession',
    'MonitoredSession',
    'SingularMonitoredSession',
    'ChiefSessionCreator',
    'WorkerSessionCreator',
)

V1_RULES: dict[str, Rule] = {
    **{
        f'train.{name}': Rule(
            f'compat_mts.{name}', 1, 'Same arguments and defaults; runs eagerly. ' + _SESSION_LOOP_NOTE
        )
        for name in _SESSION_CLASSES
        if name != 'MonitoredTrainingSession'
    },
    'train.MonitoredTrainingSession': Rule(
        'compat_mts.MonitoredTrainingSession',
        1,
        'Same 16 arguments, positional order and defaults; runs eagerly. Each argument given is listed '
        'on its own line. ' + _SESSION_LOOP_NOTE,
    ),
    'train.SessionCreator': Rule(
        'compat_mts.SessionCreator',
        1,
        'The same abstract base; create_session() returns the session of a compat_mts creator '
        '(ChiefSessionCreator or WorkerSessionCreator), not a tf.compat.v1.Session. ' + _SESSION_LOOP_NOTE,
    ),
    'Session': Rule(
        'compat_mts.MonitoredTrainingSession or compat_mts.SingularMonitoredSession',
        1,
        'Eager TensorFlow 2 has no Session. A compat_mts session runs the same sess.run calls and '
        'initializes or restores the variables itself.',
    ),
    'InteractiveSession': Rule(
        'compat_mts.SingularMonitoredSession', 1, 'Eager TensorFlow 2 has no Session; eager tensors print their values.'
    ),
    'global_variables_initializer': Rule('nothing: remove it and its run', 2, _INITIALIZER_NOTE),
    'local_variables_initializer': Rule('nothing: remove it and its run', 2, _INITIALIZER_NOTE),
    'variables_initializer': Rule('nothing: remove it and its run', 2, _INITIALIZER_NOTE),
    'disable_eager_execution': Rule('nothing: remove the call', 1, _EAGER_NOTE),
    'disable_v2_behavior': Rule(
        'nothing: remove the call (tf.compat.v1.disable_v2_tensorshape() in its place keeps v1 shapes)',
        1,
        f'{_EAGER_NOTE} Removing it also switches tensor shapes to TF2 ones: x.shape[i] is an int or '
        'None, so x.shape[i].value raises AttributeError (each such read is listed as blocking). '
        'tf.compat.v1.disable_v2_tensorshape() keeps v1 shapes, and with it those reads work.',
    ),
    'disable_v2_tensorshape': Rule(
        'nothing: remove the call once no line reads x.shape[i].value',
        2,
        'v1 shapes work in a compat_mts session. TF2 code reads x.shape[i] as an int or None '
        '(tf.compat.v1.dimension_value(x.shape[i]) reads either kind).',
    ),
    'ConfigProto': Rule(_TF_CONFIG_CALLS, 3, _CONFIG_NOTE),
    'GPUOptions': Rule('tf.config.experimental.set_memory_growth, tf.config.set_visible_devices', 3, _CONFIG_NOTE),
    **{
        f'train.{name}': Rule(f'compat_mts.{name}', 1, f'{note} At stage 4: {keras}.')
        for name, (keras, note) in _HOOKS.items()
    },
    'train.SessionRunHook': Rule('compat_mts.SessionRunHook (the v1 class works unchanged)', 2, _USER_HOOK_NOTE),
    'train.SessionRunArgs': Rule(
        'compat_mts.SessionRunArgs (the v1 class works unchanged)',
        2,
        'Same fields (fetches, feed_dict, options). ' + _HOOK_FETCH_NOTE,
    ),
    'train.SessionRunContext': Rule(
        'compat_mts.SessionRunContext', 2, 'Same request_stop() and session; works unchanged.'
    ),
    'train.SessionRunValues': Rule(
        'compat_mts.SessionRunValues', 2, 'results holds what the hook asked for, as NumPy values.'
    ),
    'train.Supervisor': _blocker(
        'compat_mts.Supervisor',
        "v1's Supervisor needs graph mode (RuntimeError: Supervisors are incompatible with eager execution). "
        "compat_mts.Supervisor takes the same arguments, in the program's graph block: managed_session() is a "
        "compat_mts session restoring logdir's latest checkpoint, its checkpoint, summary and step-counter "
        "services are hooks, and sv.saver.save(session, path, global_step=sv.global_step) writes v1's files "
        '(migration_guide/supervisor.md). At stage 3 the loop becomes model.fit.',
    ),
    'train.Scaffold': Rule(
        'compat_mts.Scaffold',
        1,
        'Same arguments. saver= takes the Saver built in the graph code (its var_list and max_to_keep are '
        'honoured, the checkpoints keep the v1 names), a tf.train.Checkpoint or a CheckpointManager; '
        'init_op and local_init_op are callables or wrap_graph ops; summary_op=None records the '
        "step's own tf.summary calls.",
    ),
    'train.get_or_create_global_step': Rule('compat_mts.get_or_create_global_step()', 1, _GLOBAL_STEP_NOTE),
    'train.get_global_step': Rule('compat_mts.get_global_step()', 1, _GLOBAL_STEP_NOTE),
    'train.create_global_step': Rule('compat_mts.create_global_step()', 1, _GLOBAL_STEP_NOTE),
    'train.global_step': Rule(
        'int(compat_mts.get_global_step().numpy())',
        1,
        'v1 read the step through a Session; eagerly the variable is read directly.',
    ),
    'train.assert_global_step': Rule(
        'nothing: compat_mts.set_global_step checks its variable',
        1,
        'The global step is an int64 variable registered process-wide.',
    ),
    'train.Saver': Rule(_CHECKPOINT_MANAGER, 2, _SAVER_NOTE),
    'train.Server': Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _SERVER_NOTE),
    'distribute.Server': Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _SERVER_NOTE),
    'train.ClusterSpec': Rule("the 'cluster' of TF_CONFIG", 1, _SERVER_NOTE),
    'train.replica_device_setter': _blocker(
        f'the same, on the chief of {PARAMETER_SERVER_SETTING}',
        f'It places the variables on /job:ps tasks. {_NO_PS_NOTE}',
        unless=(
            PARAMETER_SERVER_SETTING,
            Rule('strategy.scope() of tf.distribute.ParameterServerStrategy', 2, _PS_WORKS_NOTE),
        ),
    ),
    'train.SyncReplicasOptimizer': Rule(
        'tf.distribute.MultiWorkerMirroredStrategy', 1, 'Synchronous training is the all-reduce of the strategy.'
    ),
    **{f'train.{name}': Rule(keras, 2, _OPTIMIZER_NOTE) for name, keras in _OPTIMIZERS.items()},
    'placeholder': Rule(
        "an argument of the tf.function step, fed with feed_dict={'x': batch}",
        2,
        f'{_WRAP_GRAPH_NOTE} At stage 3 model.fit takes the data.',
    ),
    'placeholder_with_default': Rule('an argument of the tf.function step, with a default value', 2, _WRAP_GRAPH_NOTE),
    'get_variable': Rule(
        'tf.Variable, or the weights of a Keras layer',
        2,
        f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.',
    ),
    'variable_scope': Rule(
        'Keras layers (tf.name_scope for names only)',
        2,
        f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.',
    ),
    'get_default_graph': Rule(
        "step-output names ('loss') or variables",
        2,
        'Eager code has no default graph. At stage 1 the tensors of a wrap_graph '
        "graph can be fetched by name ('loss:0').",
    ),
    **{
        f'summary.{name}': Rule(f'tf.summary.{name}(name, data) inside the step', 2, _SUMMARY_NOTE)
        for name in ('scalar', 'histogram', 'image', 'audio', 'text')
    },
    'summary.tensor_summary': Rule('tf.summary.write(tag, tensor) inside the step', 2, _SUMMARY_NOTE),
    'summary.merge_all': Rule(
        'nothing: remove it',
        2,
        "SummarySaverHook records the step's own tf.summary calls (Scaffold(summary_op=None), the "
        'default). A merged summary tensor of a wrap_graph graph still works at stage 1.',
    ),
    'summary.merge': Rule(
        'nothing: remove it',
        2,
        "SummarySaverHook records the step's own tf.summary calls. A merged summary tensor of a "
        'wrap_graph graph still works at stage 1.',
    ),
    'summary.FileWriter': Rule(
        'tf.summary.create_file_writer(logdir)',
        1,
        'v1 FileWriter does not work with eager execution. A compat_mts session already writes to '
        'summary_dir (or checkpoint_dir), one writer per directory.',
    ),
    'summary.FileWriterCache': Rule(
        'tf.summary.create_file_writer(logdir)', 1, 'v1 FileWriterCache does not work with eager execution.'
    ),
    'summary.Summary': Rule(
        'tf.summary.scalar(tag, value, step=step)', 1, 'Summary protos go to a v1 FileWriter, which needs graph mode.'
    ),
    'data.make_one_shot_iterator': Rule('iter(dataset)', 2, _ITERATOR_NOTE),
    'data.make_initializable_iterator': Rule('iter(dataset), created again to restart', 2, _ITERATOR_NOTE),
    'data.Iterator': Rule('iter(dataset) (a tf.data.Iterator)', 2, _ITERATOR_NOTE),
    **{
        f'data.get_output_{kind}': Rule(
            'dataset.element_spec', 2, 'TF2 datasets describe their elements with element_spec.'
        )
        for kind in ('shapes', 'types', 'classes')
    },
}

# v1 names that TensorFlow 2 also has at the same bare path (`tf.summary.scalar`): under a bare
# `import tensorflow as tf` they are reported only when the script is TF 1.x code.
ALSO_IN_TF2 = frozenset(
    {
        'train.ClusterSpec',
        'distribute.Server',
        'data.Iterator',
        'summary.scalar',
        'summary.histogram',
        'summary.image',
        'summary.audio',
        'summary.text',
    }
)

# Bare `tensorflow` paths that only TF 1.x has: a script using one treats `tensorflow` as TF 1.x.
TF1_ONLY_PREFIXES = (
    'contrib',
    'logging',
    'app',
    'flags',
    'gfile',
    'layers',
    'get_collection',
    'add_to_collection',
    'GraphKeys',
    'reset_default_graph',
    'trainable_variables',
    'global_variables',
    'Print',
    'to_float',
    'to_int32',
    'random_normal',
    'random_uniform',
    'truncated_normal',
    'variables_initializer',
    'train.exponential_decay',
    'train.start_queue_runners',
    'nn.rnn_cell',
)

_STAGE_3_SESSION = Rule(
    'model.fit(...), with the hooks in callbacks=[compat_mts.keras.HooksCallback(hooks)]',
    3,
    'The session loop becomes model.fit. A multi-worker program keeps the session loop: Keras 3 '
    'model.fit has no multi-worker support.',
)
_STAGE_3_GLOBAL_STEP = Rule('optimizer.iterations', 3, 'Inside model.fit the global step is optimizer.iterations.')
_STAGE_4_PROTOCOL = Rule(
    'keras.callbacks.Callback (on_train_batch_begin/end, on_train_end)',
    4,
    'Inside HooksCallback a hook sees the batch logs as step outputs.',
)

MTS_RULES: dict[str, Rule] = {
    **{name: _STAGE_3_SESSION for name in (*_SESSION_CLASSES, 'SessionCreator', 'StepContext', 'USE_DEFAULT')},
    'Scaffold': Rule(
        'the model and optimizer given to model.fit',
        3,
        'Inside model.fit, compat_mts.CheckpointSaverHook in HooksCallback checkpoints the '
        'model and optimizer (weights, slots, iterations).',
    ),
    'parameter_server_strategy': Rule(
        'tf.distribute.ParameterServerStrategy and ClusterCoordinator',
        2,
        'At stage 2 the model is built in the strategy scope and the step is a '
        'tf.function the coordinator schedules; the session loop stays.',
    ),
    'wrap_graph': Rule(
        'Keras layers and a tf.function step',
        2,
        'The legacy graph code becomes TF2 code; Scaffold(saver=tf.train.Checkpoint(...)) '
        'says what a checkpoint holds.',
    ),
    **{
        name: _STAGE_3_GLOBAL_STEP
        for name in (
            'get_or_create_global_step',
            'get_global_step',
            'create_global_step',
            'set_global_step',
            'reset_global_step',
        )
    },
    **{
        name: Rule(keras, 4, 'compat_mts is no longer needed once every hook has its Keras callback.')
        for name, (keras, _) in _HOOKS.items()
    },
    'SessionRunHook': _STAGE_4_PROTOCOL,
    'SessionRunArgs': _STAGE_4_PROTOCOL,
    'SessionRunContext': _STAGE_4_PROTOCOL,
    'SessionRunValues': _STAGE_4_PROTOCOL,
    'STALE_GLOBAL_STEP': Rule('optimizer.iterations', 4, 'Keras callbacks see the batch index.'),
    'keras.HooksCallback': Rule(
        'native Keras callbacks', 4, 'Each hook inside it gets its Keras callback; see each hook.'
    ),
    'keras.CallbackHook': Rule(
        'callbacks=[...] of model.fit', 3, 'With model.fit the Keras callbacks are passed to fit directly.'
    ),
}
_MTS_BY_LAST_NAME = {key.rsplit('.', 1)[-1]: key for key in MTS_RULES}

# v1 module paths (private modules included) that hold the `tf.compat.v1.train` names.
_TRAIN_MODULES = frozenset(
    {
        'estimator',
        'python.training.session_run_hook',
        'python.training.basic_session_run_hooks',
        'python.training.monitored_session',
        'python.training.training_util',
        'python.training.saver',
        'python.training.server_lib',
        'python.training.training',
    }
)
V1_ROOT = 'tensorflow.compat.v1.'

# MonitoredTrainingSession's 16 arguments in v1's positional order: what each becomes when the session
# loop goes (stage 3). compat_mts keeps every one of them until then.
MTS_ARGUMENTS = {
    'master': (
        'tf.config.experimental_connect_to_host(target) before model.fit, or TF_CONFIG + '
        'tf.distribute.MultiWorkerMirroredStrategy',
        "'' runs in-process; a grpc://host:port target connects eager execution to that server.",
    ),
    'is_chief': (
        "the strategy's cluster (TF_CONFIG)",
        'A non-chief runs hooks only and writes nothing into the chief directory; it defaults from '
        'the TF_CONFIG cluster. Keras 3 model.fit has no multi-worker support, so a multi-worker '
        'program keeps the session loop.',
    ),
    'checkpoint_dir': (
        'compat_mts.CheckpointSaverHook(checkpoint_dir, ...) in HooksCallback; at stage 4 '
        'keras.callbacks.BackupAndRestore / ModelCheckpoint',
        'Restores the latest checkpoint (v1 name-based ones too) and saves model.ckpt-<step>, as v1 did.',
    ),
    'scaffold': (
        'the model and optimizer given to model.fit',
        'Scaffold(saver=tf.train.Checkpoint(...)) says what a checkpoint holds.',
    ),
    'hooks': (
        'callbacks=[compat_mts.keras.HooksCallback(hooks)]',
        'Runs on every worker, last in the hook order; each hook is listed on its own line.',
    ),
    'chief_only_hooks': (
        'callbacks=[compat_mts.keras.HooksCallback(hooks)] on the chief',
        'Runs first, on the chief only.',
    ),
    'save_checkpoint_secs': (
        'compat_mts.CheckpointSaverHook(save_secs=...); at stage 4 keras.callbacks.BackupAndRestore(save_freq=...)',
        'Same USE_DEFAULT resolution and timer as v1.',
    ),
    'save_summaries_steps': (
        'compat_mts.SummarySaverHook(save_steps=...); at stage 4 keras.callbacks.TensorBoard(update_freq=...)',
        'Same USE_DEFAULT resolution as v1.',
    ),
    'save_summaries_secs': (
        'compat_mts.SummarySaverHook(save_secs=...); at stage 4 keras.callbacks.TensorBoard(update_freq=...)',
        'Same USE_DEFAULT resolution as v1.',
    ),
    'config': (
        'tf.config calls before the model is built',
        'The session applies the ConfigProto fields that have a tf.config equivalent and names the '
        'rest in one warning.',
    ),
    'stop_grace_period_secs': (
        'nothing: model.fit has no coordinator threads',
        'close() waits that long for hook threads, checkpoint writes and summary flushes.',
    ),
    'log_step_count_steps': (
        'compat_mts.StepCounterHook(every_n_steps=...); at stage 4 keras.callbacks.TensorBoard',
        'global_step/sec is logged and written as v1 did.',
    ),
    'max_wait_secs': (
        'nothing: the strategy synchronizes the workers',
        "A non-chief waits that long for the chief's first checkpoint.",
    ),
    'save_checkpoint_steps': (
        'compat_mts.CheckpointSaverHook(save_steps=...); at stage 4 keras.callbacks.BackupAndRestore(save_freq=...)',
        'Same USE_DEFAULT resolution as v1.',
    ),
    'summary_dir': ('keras.callbacks.TensorBoard(log_dir=...)', 'One summary writer per directory.'),
    'save_graph_def': (
        'keras.callbacks.TensorBoard(write_graph=...)',
        'Writes graph.pbtxt of the traced step; no .meta files.',
    ),
}
MTS_ARGUMENT_ORDER = tuple(MTS_ARGUMENTS)

RUN = Rule(
    'model.fit(...); a read of a variable becomes variable.numpy()',
    3,
    'A compat_mts session keeps sess.run: a fetch is a wrap_graph tensor or op (stage 1), then a '
    'tf.function step, a step-output name or a variable (stage 2).',
)
FEED_DICT = Rule(
    "string keys, feed_dict={'x': batch}: keyword arguments of the step callable",
    2,
    'Placeholder keys still feed a wrap_graph graph at stage 1.',
)
FEED_DICT_BY_NAME = Rule(
    'the data given to model.fit (a tf.data.Dataset or arrays)',
    3,
    'Keys that are keyword names are keyword arguments of the step callable of a compat_mts session.',
)
MINIMIZE = Rule(
    'a tf.function step: tf.GradientTape, optimizer.apply_gradients(...), global_step.assign_add(1)',
    2,
    'v1 incremented the global step here; a Keras optimizer takes no global_step, so the step '
    'increments it. At stage 3 model.fit counts optimizer.iterations. ' + _WRAP_GRAPH_NOTE,
)
ITERATOR_METHOD = Rule('iter(dataset)', 2, _ITERATOR_NOTE)
GET_NEXT = Rule('next(iterator)', 2, _ITERATOR_NOTE)

GLOBAL_STEP_HELPERS = (
    'tf.compat.v1.train.get_or_create_global_step',
    'tf.compat.v1.train.get_global_step',
    'tf.compat.v1.train.create_global_step',
)
SESSION_CONSTRUCTORS = (
    'Session',
    'InteractiveSession',
    'MonitoredTrainingSession',
    'MonitoredSession',
    'SingularMonitoredSession',
)
SESSION_NAME = re.compile(r'(?:^|_)sess(?:ion)?$', re.IGNORECASE)
V1_ITERATOR_METHODS = ('make_one_shot_iterator', 'make_initializable_iterator')
V1_ITERATOR_CONSTRUCTS = (
    'tf.compat.v1.data.make_one_shot_iterator',
    'tf.compat.v1.data.make_initializable_iterator',
    'tf.compat.v1.data.Iterator',
)


# ---------------------------------------------------------------------------------------------------------
# What blocks stage 1: lines that fail on TensorFlow 2.21 as written, each with the edit that makes them run.

# tf.contrib (removed in TensorFlow 2.0). Keys are paths below `contrib`.
_CONTRIB_NOTE = 'tf.contrib was removed in TensorFlow 2.0: the line fails before anything runs.'
_TF_SLIM_NOTE = (
    'tf_slim (pip install tf-slim) is tf.contrib.slim, with most of tf.contrib.layers and '
    'tf.contrib.framework, under the same names, and builds the same v1 graph on TensorFlow 2.21. '
    'At stage 2 the model becomes Keras layers.'
)
# The tf.contrib.layers and tf.contrib.framework names that tf_slim has under the same name.
_TF_SLIM_NAMES = frozenset(
    """
        avg_pool2d avg_pool3d batch_norm bias_add conv1d conv2d conv2d_in_plane conv2d_transpose conv3d
        conv3d_transpose convolution convolution1d convolution2d convolution2d_in_plane convolution2d_transpose
        convolution3d convolution3d_transpose dense_to_sparse dropout elu flatten fully_connected gdn group_norm
        images_to_sequence instance_norm layer_norm linear max_pool2d max_pool3d maxout one_hot_encoding pool relu
        relu6 repeat separable_conv2d separable_convolution2d sequence_to_images softmax spatial_softmax stack
        unit_norm xavier_initializer xavier_initializer_conv2d variance_scaling_initializer l1_regularizer
        l2_regularizer l1_l2_regularizer sum_regularizer apply_regularization optimize_loss summarize_activation
        summarize_activations summarize_collection summarize_tensor summarize_tensors summarize_variables
        summarize_weights summarize_biases legacy_fully_connected bucketize scale_gradient recompute_grad
        add_arg_scope add_model_variable arg_scope arg_scoped_arguments assert_global_step
        assert_or_get_global_step assign_from_checkpoint assign_from_checkpoint_fn assign_from_values
        assign_from_values_fn create_global_step current_arg_scope filter_variables get_global_step
        get_local_variables get_model_variables get_or_create_global_step get_trainable_variables
        get_unique_variable get_variable_full_name get_variables get_variables_by_name get_variables_by_suffix
        get_variables_to_restore global_variable has_arg_scope local_variable model_variable variable
        """.split()
)
_GLOROT = 'The same Glorot (Xavier) scaling. tf_slim.xavier_initializer is the contrib function itself.'
_V1_ORDER = (
    'Pass the arguments by keyword: the contrib functions took (predictions or logits, labels), '
    'tf.compat.v1 takes labels first.'
)
SLIM_TRAIN = _blocker(
    'compat_mts.slim_learning.train (the same arguments)',
    'slim.learning.train runs a v1 Supervisor and Session, which need graph mode (RuntimeError: Supervisors are '
    'incompatible with eager execution). compat_mts.slim_learning.train runs the same loop on compat_mts.Supervisor; '
    'tf_slim.learning.create_train_op still builds the train_op (migration_guide/supervisor.md).',
)
_CONTRIB: dict[str, tuple[str, str]] = {
    'layers.xavier_initializer': (
        'tf.compat.v1.glorot_uniform_initializer() (uniform=False: tf.compat.v1.glorot_normal_initializer())',
        _GLOROT,
    ),
    'layers.xavier_initializer_conv2d': (
        'tf.compat.v1.glorot_uniform_initializer() (uniform=False: tf.compat.v1.glorot_normal_initializer())',
        _GLOROT,
    ),
    'layers.variance_scaling_initializer': (
        'tf.compat.v1.variance_scaling_initializer(scale=factor, mode=mode.lower(), '
        "distribution='truncated_normal') (uniform=True: distribution='uniform')",
        "The contrib defaults are factor=2.0, mode='FAN_IN', uniform=False.",
    ),
    'layers.l2_regularizer': (
        'tf.keras.regularizers.l2(scale / 2)',
        "contrib's l2_regularizer(scale) adds scale * tf.nn.l2_loss(w) = scale * sum(w**2) / 2 and "
        "Keras's l2(l) adds l * sum(w**2), hence the / 2. A Keras regularizer works as regularizer= of "
        'tf.compat.v1.get_variable; tf_slim.l2_regularizer is the contrib function itself.',
    ),
    'layers.l1_regularizer': ('tf.keras.regularizers.l1(scale)', 'The same penalty, scale * sum(abs(w)).'),
    'layers.l1_l2_regularizer': (
        'tf.keras.regularizers.l1_l2(l1=scale_l1, l2=scale_l2 / 2)',
        "contrib's l2 part is scale_l2 * sum(w**2) / 2, Keras's l2 * sum(w**2).",
    ),
    'training.HParams': (
        'a plain Python object: types.SimpleNamespace(**values) or a dataclass',
        'TensorFlow 2 has no HParams; what HParams.parse read from a string comes from argparse or absl.flags.',
    ),
    'framework.get_or_create_global_step': (
        'tf.compat.v1.train.get_or_create_global_step()',
        'The same variable; a compat_mts session uses it as its global step.',
    ),
    'framework.get_global_step': ('tf.compat.v1.train.get_global_step()', 'The same variable.'),
    'framework.nest': ('tf.nest', 'The same functions.'),
    'slim.learning.train': (SLIM_TRAIN.replacement, SLIM_TRAIN.note),
    'slim.evaluation.evaluation_loop': (
        'a compat_mts session loop over the evaluation data',
        'It runs a v1 MonitoredSession, which needs graph mode.',
    ),
    'slim.evaluation.evaluate_once': (
        'a compat_mts session loop over the evaluation data',
        'It runs a v1 MonitoredSession, which needs graph mode.',
    ),
    **{
        f'distribute.{name}': (f'tf.distribute.{name}', 'The same strategy, in core TensorFlow.')
        for name in ('MirroredStrategy', 'OneDeviceStrategy')
    },
    'distribute.CollectiveAllReduceStrategy': ('tf.distribute.MultiWorkerMirroredStrategy', 'Its TF2 name.'),
    **{
        f'summary.{name}': (f'tf.summary.{name}', 'contrib.summary became TF2 tf.summary.')
        for name in ('scalar', 'histogram', 'image', 'audio', 'create_file_writer', 'flush')
    },
    **{
        f'losses.{name}': (f'tf.compat.v1.losses.{name}', _V1_ORDER)
        for name in (
            'absolute_difference',
            'cosine_distance',
            'hinge_loss',
            'log_loss',
            'mean_pairwise_squared_error',
            'mean_squared_error',
            'sigmoid_cross_entropy',
            'softmax_cross_entropy',
            'sparse_softmax_cross_entropy',
            'compute_weighted_loss',
        )
    },
    **{
        f'losses.{name}': (f'tf.compat.v1.losses.{name}', 'The same function.')
        for name in ('add_loss', 'get_losses', 'get_regularization_losses', 'get_total_loss')
    },
    **{
        f'metrics.streaming_{name}': (f'tf.compat.v1.metrics.{name}', _V1_ORDER)
        for name in (
            'accuracy',
            'auc',
            'precision',
            'recall',
            'mean_absolute_error',
            'mean_squared_error',
            'root_mean_squared_error',
            'mean_iou',
            'true_positives',
            'false_positives',
            'true_negatives',
            'false_negatives',
        )
    },
    'metrics.streaming_mean': ('tf.compat.v1.metrics.mean', 'The same metric.'),
}
# Modules of tf.contrib whose replacement is one import edit: (replacement, what the alias becomes).
_CONTRIB_MODULES = {
    'slim': ('tf_slim (pip install tf-slim): import tf_slim as slim', _TF_SLIM_NOTE),
    'layers': ('tf_slim (pip install tf-slim), which has most of its names: import tf_slim as layers', _TF_SLIM_NOTE),
    'framework': (
        'tf_slim (pip install tf-slim), which has most of its names: import tf_slim as framework',
        _TF_SLIM_NOTE,
    ),
    'keras': ('tf.keras (from tensorflow import keras)', 'contrib.keras became tf.keras.'),
}
_RNN_CELLS = (
    'BasicLSTMCell',
    'BasicRNNCell',
    'GRUCell',
    'LSTMCell',
    'LSTMStateTuple',
    'MultiRNNCell',
    'RNNCell',
    'DropoutWrapper',
    'ResidualWrapper',
    'DeviceWrapper',
)
# The Keras layer that replaces each v1 RNN cell at stage 2.
_KERAS_CELLS = {
    'BasicLSTMCell': 'LSTMCell',
    'BasicRNNCell': 'SimpleRNNCell',
    'GRUCell': 'GRUCell',
    'LSTMCell': 'LSTMCell',
    'LSTMStateTuple': 'the [h, c] state list of tf.keras.layers.LSTMCell',
    'MultiRNNCell': 'StackedRNNCells',
    'RNNCell': 'AbstractRNNCell',
    'DropoutWrapper': 'the dropout= and recurrent_dropout= of the cell',
    'ResidualWrapper': 'a residual connection in a Keras model',
    'DeviceWrapper': 'tf.device',
}


def _contrib_rule(relative: str) -> Rule:
    """The rule of `contrib.<relative>` (a module or a name below `tensorflow.contrib`)."""
    module, _, name = relative.partition('.')
    if relative in _CONTRIB:
        replacement, note = _CONTRIB[relative]
        covered = module in ('layers', 'framework') and name in _TF_SLIM_NAMES
        return _blocker(replacement, f'{_CONTRIB_NOTE} {note}', module=f'contrib.{module}' if covered else '')
    if relative in _CONTRIB_MODULES:
        replacement, note = _CONTRIB_MODULES[relative]
        return _blocker(replacement, f'{_CONTRIB_NOTE} {note}')
    if module == 'slim' and name and not name.startswith(('learning.train', 'evaluation.', 'nets')):
        return _blocker(f'tf_slim.{name}', f'{_CONTRIB_NOTE} {_TF_SLIM_NOTE}', module='contrib.slim')
    if module in ('layers', 'framework') and name in _TF_SLIM_NAMES:
        return _blocker(f'tf_slim.{name}', f'{_CONTRIB_NOTE} {_TF_SLIM_NOTE}', module=f'contrib.{module}')
    if module == 'tpu' and name in TPU_NAMES:
        return _blocker(f'compat_mts.estimator.tpu.{name}', f'{_CONTRIB_NOTE} {_TPU_NOTE}')
    if module == 'keras' and name:
        return _blocker(f'tf.keras.{name}', f'{_CONTRIB_NOTE} contrib.keras became tf.keras.', module='contrib.keras')
    if module == 'rnn' and name in _RNN_CELLS:
        return _blocker(
            f'tf.compat.v1.nn.rnn_cell.{name}, with {_LEGACY_KERAS}',
            f'{_CONTRIB_NOTE} The v1 cell is built on Keras 2: {_LEGACY_KERAS_NOTE}',
        )
    if module == 'rnn' and name.startswith('static_'):
        return _blocker(f'tf.compat.v1.nn.{name}', f'{_CONTRIB_NOTE} The same function.')
    return _blocker(
        'a rewrite: TensorFlow 2 has no tf.contrib.' + relative if relative else 'a rewrite of each tf.contrib use',
        f'{_CONTRIB_NOTE} Rewrite it with core TensorFlow, Keras or tf_slim before stage 1.',
    )


# tf.compat.v1.layers and tf.compat.v1.nn.rnn_cell: built on Keras 2, which TensorFlow 2.21 does not ship.
_LEGACY_KERAS = "pip install 'compat-mts[legacy]' and TF_USE_LEGACY_KERAS=1 set before TensorFlow is imported"
_LEGACY_KERAS_NOTE = (
    "under Keras 3, TensorFlow 2.21's default, every name of it raises AttributeError "
    "('`dense` is not available with Keras 3'). With tf-keras installed (the [legacy] extra) and "
    'TF_USE_LEGACY_KERAS=1 set before the first TensorFlow import (in the shell, or '
    "os.environ['TF_USE_LEGACY_KERAS'] = '1' at the top of the script), it builds the same "
    'v1 graph and variable names.'
)
LEGACY_KERAS_SETTING = 'TF_USE_LEGACY_KERAS=1'
_KERAS_LAYERS = {
    'dense': 'Dense',
    'dropout': 'Dropout',
    'flatten': 'Flatten',
    'batch_normalization': 'BatchNormalization',
    'conv1d': 'Conv1D',
    'conv2d': 'Conv2D',
    'conv3d': 'Conv3D',
    'conv2d_transpose': 'Conv2DTranspose',
    'conv3d_transpose': 'Conv3DTranspose',
    'separable_conv1d': 'SeparableConv1D',
    'separable_conv2d': 'SeparableConv2D',
    'average_pooling1d': 'AveragePooling1D',
    'average_pooling2d': 'AveragePooling2D',
    'average_pooling3d': 'AveragePooling3D',
    'max_pooling1d': 'MaxPooling1D',
    'max_pooling2d': 'MaxPooling2D',
    'max_pooling3d': 'MaxPooling3D',
}


def _legacy_keras_rule(construct: str, keras: str) -> Rule:
    """A v1 name built on Keras 2: blocking, unless the script sets TF_USE_LEGACY_KERAS=1 itself."""
    stage_2 = f'At stage 2 it becomes {keras}.'
    working = Rule(
        keras,
        2,
        f'Works at stage 1 with tf-keras installed, since the script sets '
        f'{LEGACY_KERAS_SETTING} before importing TensorFlow. {stage_2}',
    )
    return _blocker(
        f'{_LEGACY_KERAS}; at stage 2 {keras}',
        f'{construct} is built on Keras 2: {_LEGACY_KERAS_NOTE} {stage_2}',
        unless=(LEGACY_KERAS_SETTING, working),
    )


def _layers_rule(name: str) -> Rule:
    keras = f'tf.keras.layers.{_KERAS_LAYERS.get(name, name)}'
    return _legacy_keras_rule('tf.compat.v1.layers', keras)


def _rnn_cell_rule(name: str) -> Rule:
    keras = _KERAS_CELLS.get(name, name)
    return _legacy_keras_rule('tf.compat.v1.nn.rnn_cell', f'tf.keras.layers.{keras}' if keras[:1].isupper() else keras)


# tf.estimator (removed in TensorFlow 2.16): compat_mts.estimator has the custom-model_fn part of it.
_ESTIMATOR_NAMES = frozenset(
    {
        'BestExporter',
        'add_metrics',
        'classifier_parse_example_spec',
        'regressor_parse_example_spec',
        'Estimator',
        'EstimatorSpec',
        'EvalSpec',
        'Exporter',
        'FinalExporter',
        'LatestExporter',
        'ModeKeys',
        'RunConfig',
        'TrainSpec',
        'VocabInfo',
        'WarmStartSettings',
        'train_and_evaluate',
    }
)
_ESTIMATOR_EXPORT_NAMES = frozenset(
    {
        'ServingInputReceiver',
        'TensorServingInputReceiver',
        'build_raw_serving_input_receiver_fn',
        'build_parsing_serving_input_receiver_fn',
        'ExportOutput',
        'PredictOutput',
        'ClassificationOutput',
        'RegressionOutput',
        'EvalOutput',
    }
)
# The names of tf.estimator.inputs and tf.estimator.experimental that compat_mts.estimator has, by submodule.
_ESTIMATOR_SUBMODULE_NAMES = {
    'inputs': frozenset({'numpy_input_fn', 'pandas_input_fn'}),
    'experimental': frozenset(
        {
            'InMemoryEvaluatorHook',
            'build_raw_supervised_input_receiver_fn',
            'call_logit_fn',
            'make_early_stopping_hook',
            'make_stop_at_checkpoint_step_hook',
            'stop_if_higher_hook',
            'stop_if_lower_hook',
            'stop_if_no_decrease_hook',
            'stop_if_no_increase_hook',
        }
    ),
}
PREMADE_ESTIMATORS = premade_estimators.PREMADE_ESTIMATORS  # Kept here by name: the checker's rules read it.
_ESTIMATOR_NOTE = (
    'tf.estimator left TensorFlow in 2.16; compat_mts.estimator has its Estimator, specs, '
    'train_and_evaluate and export with v1 signatures, on the eager session '
    '(migration_guide/estimator.md).'
)


def _estimator_rule(relative: str) -> tuple[str, Rule]:
    """(the matched name, its rule) for `estimator.<relative>`; '' is the module itself."""
    first, _, rest = relative.partition('.')
    if not relative:
        return '', Rule(
            'compat_mts.estimator (import compat_mts.estimator as estimator)',
            1,
            f'{_ESTIMATOR_NOTE} The import is the one edit of stage 1.',
        )
    if first == 'ModeKeys':
        return first, Rule(
            'compat_mts.estimator.ModeKeys',
            1,
            f"{_ESTIMATOR_NOTE} The same strings ('train', 'eval', 'infer'). The mode branches of the "
            'model_fn stay until stage 3, where they become model.fit, model.evaluate and model.predict, '
            'and training= of the Keras layers.',
            module='estimator',
        )
    if first in _ESTIMATOR_NAMES or relative == 'export':
        return first, Rule(
            f'compat_mts.estimator.{first}', 1, f'{_ESTIMATOR_NOTE} Same arguments and defaults.', module='estimator'
        )
    if first == 'export' and rest.split('.')[0] in _ESTIMATOR_EXPORT_NAMES:
        name = rest.split('.')[0]
        return f'export.{name}', Rule(
            f'compat_mts.estimator.export.{name}', 1, f'{_ESTIMATOR_NOTE} Same arguments.', module='estimator'
        )
    if rest.split('.')[0] in _ESTIMATOR_SUBMODULE_NAMES.get(first, ()):
        name = f'{first}.{rest.split(".")[0]}'
        return name, Rule(
            f'compat_mts.estimator.{name}',
            1,
            f'{_ESTIMATOR_NOTE} Same arguments and defaults; what differs is in migration_guide/estimator.md.',
            module='estimator',
        )
    if first in PREMADE_ESTIMATORS:
        return first, premade_rule(first)
    if first == 'tpu':
        name = rest.split('.')[0]
        return f'tpu.{name}' if name else 'tpu', tpu_rule(name) if name else Rule(
            'compat_mts.estimator.tpu', 1, _TPU_NOTE, module='estimator'
        )
    name = '.'.join(relative.split('.')[:2]) if first in ('inputs', 'experimental', 'export') else first
    return name, _blocker(f'a rewrite: compat_mts.estimator has no {name}', f'{_ESTIMATOR_NOTE} It has no {name}.')


# Shapes: TF2 shapes hold ints (or None), so `x.shape[i].value` fails unless v1 shapes are kept.
V1_TENSORSHAPE_SETTING = 'tf.compat.v1.disable_v2_tensorshape()'


def shape_value_rule(dimension: str) -> Rule:
    """The rule of `<dimension>.value`, where `dimension` (`x.shape[1]`) is one dimension of a shape."""
    return _blocker(
        f'tf.compat.v1.dimension_value({dimension}), or tf.compat.v1.disable_v2_tensorshape() at the top of the script',
        'TensorFlow 2 shapes, the default unless disable_v2_behavior() or '
        'disable_v2_tensorshape() is called, hold ints or None, which have no .value (AttributeError: '
        "'int' object has no attribute 'value'). x.shape.dims[i].value still works.",
        unless=(
            V1_TENSORSHAPE_SETTING,
            Rule(
                f'tf.compat.v1.dimension_value({dimension}), or {dimension} (an int or None)',
                2,
                'Works at stage 1: the script calls tf.compat.v1.disable_v2_tensorshape(). TF2 code reads '
                'a dimension as an int or None.',
            ),
        ),
    )


GRAPH_OUTSIDE_A_GRAPH = _blocker(
    "the graph code under 'with tf.Graph().as_default():' (the session too), or in the function given to "
    'compat_mts.wrap_graph',
    'compat_mts runs eagerly, so a placeholder built outside a graph fails (RuntimeError: '
    'tf.placeholder() is not compatible with eager execution); v1 built it in the default graph, or '
    'disable_eager_execution() made one. Inside a graph block the graph code runs as written, and a '
    'compat_mts session created in the block runs that graph.',
)
GRAPH_AS_DEFAULT = Rule(
    'Keras layers and a tf.function step (the block goes)',
    2,
    'Runs as written at stage 1: a compat_mts session created inside it runs that graph eagerly (hooks '
    'begin in the graph, a fresh init or restore per session). A graph built at the top level needs this '
    'block or compat_mts.wrap_graph.',
)
PS_CLUSTER = _blocker(
    f"the same cluster with a 'chief' job, and {PARAMETER_SERVER_SETTING} in the chief",
    f"A 'ps' job makes it a parameter-server cluster. {_NO_PS_NOTE}",
    unless=(
        PARAMETER_SERVER_SETTING,
        Rule(
            "the 'cluster' of TF_CONFIG",
            1,
            "Works at stage 1 with its 'chief' job: the ps and worker tasks serve, the chief runs "
            f'{PARAMETER_SERVER_SETTING} and the session loop.',
        ),
    ),
)
DEVICE_FUNCTION = _blocker(
    'tf.compat.v1.device(...)',
    "TF2's tf.device takes device strings only (RuntimeError: tf.device does not support functions); "
    'tf.compat.v1.device takes a device function in a graph. A replica_device_setter is listed on its own: '
    'it places the graph on /job:ps.',
)
# tf.compat.v1.train.Saver's arguments that say how many checkpoints are kept, in v1's positional order.
SAVER_ARGUMENT_ORDER = ('var_list', 'reshape', 'sharded', 'max_to_keep', 'keep_checkpoint_every_n_hours')
SAVER_ARGUMENTS = {
    name: Rule(
        f'tf.train.CheckpointManager(..., {name}=...) as compat_mts.Scaffold(saver=...)',
        2,
        f'Honoured at stage 1 by the Saver given to compat_mts.Scaffold(saver=...) or '
        f'CheckpointSaverHook(saver=...); tf.train.CheckpointManager takes the same {name}.',
    )
    for name in ('max_to_keep', 'keep_checkpoint_every_n_hours')
}

# Queue-runner input: v1's input pipeline of queues filled by Python threads. A compat_mts session starts no
# queue runners (wrap_graph refuses a graph that has them: "wrap_graph cannot run queue runners"), so each of
# these lines blocks stage 1; tf.data replaces the whole pipeline.
_QUEUE_GUIDE = 'migration_guide/queue_runners.md'
_QUEUE_NOTE = (
    'Queue runners fill queues from Python threads that a compat_mts session never starts: wrap_graph '
    'refuses the graph (ValueError: wrap_graph cannot run queue runners). The pipeline becomes one '
    f'tf.data.Dataset, read in the graph with tf.compat.v1.data.make_one_shot_iterator(dataset).get_next(); '
    f'{_QUEUE_GUIDE} shows the rewrite.'
)
_QUEUE_RUNNER_NAMES = {
    'string_input_producer': 'tf.data.Dataset.from_tensor_slices(filenames).repeat(num_epochs).shuffle(n)',
    'input_producer': 'tf.data.Dataset.from_tensor_slices(tensor).repeat(num_epochs)',
    'range_input_producer': 'tf.data.Dataset.range(limit).repeat(num_epochs)',
    'slice_input_producer': 'tf.data.Dataset.from_tensor_slices(tuple(tensors)).repeat(num_epochs)',
    'batch': 'dataset.batch(batch_size)',
    'batch_join': 'dataset.batch(batch_size), one dataset made with Dataset.interleave',
    'maybe_batch': 'dataset.filter(keep).batch(batch_size)',
    'shuffle_batch': 'dataset.shuffle(min_after_dequeue + batch_size).batch(batch_size)',
    'shuffle_batch_join': 'dataset.shuffle(buffer).batch(batch_size), one dataset made with Dataset.interleave',
    'maybe_shuffle_batch': 'dataset.filter(keep).shuffle(buffer).batch(batch_size)',
    'start_queue_runners': 'nothing: remove the call (a tf.data iterator needs no threads)',
    'QueueRunner': 'a tf.data.Dataset',
    'add_queue_runner': 'nothing: remove it (a tf.data.Dataset needs no runner)',
    'queue_runner': 'a tf.data.Dataset',
}
_READERS = {
    'TFRecordReader': 'tf.data.TFRecordDataset(filenames)',
    'TextLineReader': 'tf.data.TextLineDataset(filenames) (skip_header_lines: .skip(n))',
    'FixedLengthRecordReader': 'tf.data.FixedLengthRecordDataset(filenames, record_bytes, header_bytes)',
    'WholeFileReader': 'tf.data.Dataset.from_tensor_slices(filenames).map(lambda f: (f, tf.io.read_file(f)))',
    'IdentityReader': 'tf.data.Dataset.from_tensor_slices(work_items)',
    'LMDBReader': 'a tf.data.Dataset.from_generator over the lmdb package',
    'ReaderBase': 'a tf.data.Dataset',
}
QUEUE_RUNNER_RULES = {
    **{
        f'train.{name}': _blocker(
            replacement if replacement.startswith('nothing') else f'tf.data: {replacement}', _QUEUE_NOTE
        )
        for name, replacement in _QUEUE_RUNNER_NAMES.items()
    },
    **{
        name: _blocker(f'tf.data: {replacement}', f'A v1 reader is fed by a queue of file names. {_QUEUE_NOTE}')
        for name, replacement in _READERS.items()
    },
}
V1_RULES.update(QUEUE_RUNNER_RULES)

# The MNIST tutorial reader of TensorFlow 1.x (`tensorflow.examples.tutorials.mnist.input_data`): not in TF 2.
_TUTORIALS_NOTE = (
    'tensorflow.examples.tutorials left TensorFlow in 2.0: the import fails. '
    'tf.keras.datasets.mnist.load_data() returns the same 70,000 images as uint8 arrays (60,000 to train, '
    "10,000 to test; the tutorial's 5,000-image validation split was taken from the training set): "
    'x.reshape(-1, 784).astype("float32") / 255 gives the tutorial\'s images, tf.one_hot(y, 10) its '
    'one_hot=True labels, and a tf.data.Dataset.from_tensor_slices((x, y)).shuffle(60000).batch(n).repeat() '
    'iterator its train.next_batch(n).'
)
TUTORIALS_RULE = _blocker(
    'tf.keras.datasets.mnist.load_data(), batched by a tf.data.Dataset', _TUTORIALS_NOTE, module='examples'
)

# Horovod: its TensorFlow binding is built against TensorFlow 1.x and 2.x up to its last release, and its v1
# API (DistributedOptimizer over a v1 optimizer, BroadcastGlobalVariablesHook) wraps graph collections. The
# same data-parallel training is tf.distribute.MultiWorkerMirroredStrategy, one process per worker.
_HOROVOD_GUIDE = 'migration_guide/horovod.md'
_HOROVOD_NOTE = (
    'Horovod does not run on the eager compat_mts session: its TensorFlow ops are built for the TensorFlow '
    'it was compiled against, and its v1 API works on graph collections. tf.distribute.'
    'MultiWorkerMirroredStrategy is the same synchronous all-reduce training, one process per worker '
    f'described by TF_CONFIG instead of horovodrun; {_HOROVOD_GUIDE} maps each hvd call. At stage 1, '
    '`from compat_mts.legacy import horovod as hvd` runs the graph calls (init, rank, size, DistributedOptimizer, '
    'BroadcastGlobalVariablesHook, allreduce, broadcast, broadcast_variables, broadcast_global_variables) on the '
    "strategy's collectives: `compat-mts upgrade` makes that edit."
)
_HOROVOD_NAMES = {
    '': 'tf.distribute.MultiWorkerMirroredStrategy (TF_CONFIG in place of horovodrun)',
    'init': 'strategy = tf.distribute.MultiWorkerMirroredStrategy()',
    'rank': 'strategy.cluster_resolver.task_id (0 is the chief)',
    'size': 'strategy.num_replicas_in_sync',
    'local_rank': 'nothing: the strategy places each worker on its own devices',
    'local_size': 'nothing: the strategy places each worker on its own devices',
    'DistributedOptimizer': 'the optimizer itself, with the model built in strategy.scope()',
    'DistributedGradientTape': 'tf.GradientTape inside strategy.run (gradients are all-reduced)',
    'BroadcastGlobalVariablesHook': 'nothing: variables made in strategy.scope() start equal on every worker',
    'broadcast_global_variables': 'nothing: variables made in strategy.scope() start equal on every worker',
    'broadcast_variables': 'nothing: variables made in strategy.scope() start equal on every worker',
    'allreduce': "strategy.reduce('MEAN', value, axis=None), or the replica context's all_reduce",
    'allgather': "the replica context's all_gather (tf.distribute.get_replica_context().all_gather)",
    'callbacks': 'nothing: the strategy synchronizes the workers',
}
HOROVOD_MODULES = ('horovod.tensorflow', 'horovod.keras', 'horovod.tensorflow.keras')


def horovod_rule(name: str) -> Rule:
    """The rule of Horovod's `name` (`init`, `DistributedOptimizer`; '' is the module itself)."""
    replacement = _HOROVOD_NAMES.get(name, f'the MultiWorkerMirroredStrategy equivalent of hvd.{name}')
    return _blocker(replacement, _HOROVOD_NOTE, module='horovod' if not name else '')


# ---------------------------------------------------------------------------------------------------------
# Estimator programs made to run by other work (premade Estimators, TPUEstimator on the CPU, train_distribute,
# Keras layers in a model_fn, export_savedmodel): what each becomes, in one place.

# The premade Estimators and heads that compat_mts.estimator has (TF 2.15's, with its checkpoint names); the others
# of PREMADE_ESTIMATORS stay blockers with the successor compat_mts.estimator names when asked for them.
PREMADE_PROVIDED = frozenset(PREMADE_ESTIMATORS) - frozenset(premade_estimators.NOT_PROVIDED)
PREMADE_NOT_PROVIDED = premade_estimators.NOT_PROVIDED  # compat_mts.estimator refuses the same names.


def premade_rule(name: str) -> Rule:
    """The rule of the premade `tf.estimator.<name>` (a premade Estimator, a head or BestExporter)."""
    if name in PREMADE_PROVIDED:
        return Rule(
            f'compat_mts.estimator.{name}',
            1,
            'compat_mts.estimator has the premade Estimators on tf.feature_column as TF 2.15 had them: same '
            f'arguments, heads, optimizers and checkpoint names, so a model_dir resumes. At stage 3 it becomes '
            f'Keras: {PREMADE_ESTIMATORS[name]} (migration_guide/estimator.md).',
            module='estimator',
        )
    return _blocker(
        PREMADE_NOT_PROVIDED.get(name, f'Keras: {PREMADE_ESTIMATORS.get(name, name)}'),
        f'tf.estimator left TensorFlow in 2.16 and compat_mts.estimator has no {name}; '
        'migration_guide/estimator.md shows the move to Keras.',
    )


TPU_NAMES = frozenset({'TPUEstimator', 'TPUEstimatorSpec', 'RunConfig', 'TPUConfig', 'InputPipelineConfig'})
_TPU_NOTE = (
    'compat_mts.estimator.tpu runs a TPUEstimator program with use_tpu=False on the CPU or GPU, as v1 did '
    "(params['batch_size'] by mode, eval_metrics, host_call and scaffold_fn on the host); nothing runs on a "
    'TPU (migration_guide/tpu.md).'
)
USE_TPU = _blocker(
    'use_tpu=False, or tf.distribute.TPUStrategy with Keras (migration_guide/tpu.md)',
    'compat_mts runs no program on a TPU: TPUEstimator(use_tpu=True) raises, naming TPUStrategy. '
    'use_tpu=False runs the same model_fn on the host.',
)

USE_TPU_UNKNOWN = Rule(
    'use_tpu=False when it runs on compat_mts',
    1,
    'check cannot tell the value of use_tpu here. With False the model_fn runs on the host; with True '
    'TPUEstimator raises, naming TPUStrategy (migration_guide/tpu.md).',
)


def tpu_rule(name: str) -> Rule:
    """The rule of `tf.compat.v1.estimator.tpu.<name>`."""
    if name in TPU_NAMES:
        return Rule(f'compat_mts.estimator.tpu.{name}', 1, _TPU_NOTE, module='estimator')
    return _blocker(f'a rewrite: compat_mts.estimator.tpu has no {name}', _TPU_NOTE)


# RunConfig(train_distribute=...) / (eval_distribute=...): compat_mts.estimator replicates the model_fn under the
# strategies of one process and under MultiWorkerMirroredStrategy (one process per worker), and refuses the others.
ESTIMATOR_STRATEGIES = (
    'MirroredStrategy',
    'OneDeviceStrategy',
    'MultiWorkerMirroredStrategy',
    'CollectiveAllReduceStrategy',
    'ParameterServerStrategy',  # v1's (tf.compat.v1.distribute.experimental): a job with ps tasks.
)
_ESTIMATOR_STRATEGIES_NOTE = (
    'compat_mts.estimator calls the model_fn once per replica, as v1 did: each replica reads a batch of the '
    "input_fn of its own, the optimizers average the replicas' gradients, and the checkpoint keeps one copy of "
    'each variable under its v1 name; under MultiWorkerMirroredStrategy every worker of the TF_CONFIG cluster '
    "trains and the chief writes (migration_guide/distributed.md); under v1's ParameterServerStrategy the "
    "TF_CONFIG job trains on TensorFlow 2's parameter-server training (migration_guide/distributed_estimator.md). "
    'At stage 3 the strategy scope goes around model.fit.'
)
TRAIN_DISTRIBUTE_WORKS = Rule(
    'the same strategy (MirroredStrategy, OneDeviceStrategy or MultiWorkerMirroredStrategy)',
    1,
    _ESTIMATOR_STRATEGIES_NOTE,
)
TRAIN_DISTRIBUTE_BLOCKS = _blocker(
    'MirroredStrategy, OneDeviceStrategy or MultiWorkerMirroredStrategy (migration_guide/distributed.md)',
    'compat_mts.estimator takes MirroredStrategy over the devices of one process, OneDeviceStrategy and '
    'MultiWorkerMirroredStrategy in RunConfig(train_distribute=...) and eval_distribute=; any other strategy '
    'raises ValueError, naming them.',
)
TRAIN_DISTRIBUTE_UNKNOWN = Rule(
    'MirroredStrategy, OneDeviceStrategy or MultiWorkerMirroredStrategy when it runs on compat_mts',
    1,
    'check cannot tell which strategy this is. MirroredStrategy (over the devices of one process), '
    'OneDeviceStrategy and MultiWorkerMirroredStrategy run; any other raises ValueError, naming them '
    '(migration_guide/distributed.md).',
)
KERAS_LAYERS_IN_MODEL_FN = Rule(
    'the layers of the keras.Model given to model.fit',
    3,
    "Works at stage 1: compat_mts.estimator builds the model_fn's Keras layers in its graph and trains and "
    'checkpoints their weights. At stage 3 the layers become a keras.Model, and the model_fn goes.',
)
EXPORT_SAVEDMODEL = Rule(
    'export_saved_model (the same arguments)',
    1,
    'export_savedmodel is the name v1 deprecated in TensorFlow 1.13: compat_mts.estimator still runs it, '
    'with a deprecation warning, and writes the same SavedModel. Renaming the call ends the warning.',
)

# Module paths (below `tensorflow.` or `tensorflow.compat.v1.`) that TensorFlow 2.21 no longer has: even the
# import of one fails, so an import of them is a finding too. Horovod's TensorFlow modules are listed with them.
GONE_MODULES = ('contrib', 'estimator', 'examples')


def gone_module(path: str) -> str | None:
    """'contrib.slim' for `tensorflow.contrib.slim` (or `tensorflow.compat.v1.contrib.slim`), the path
    itself for a Horovod module, None for a path outside the modules TensorFlow 2.21 no longer has."""
    if path == 'horovod' or any(path == module or path.startswith(module + '.') for module in HOROVOD_MODULES):
        return path
    for prefix in (V1_ROOT, 'tensorflow.'):
        if path.startswith(prefix):
            relative = path[len(prefix) :]
            if relative.split('.', 1)[0] in GONE_MODULES:
                return relative
    return None


def root(path: str) -> str:
    return path.split('.', 1)[0]


def lookup(path: str, v1_style: bool) -> tuple[str, Rule] | None:
    """(canonical construct, rule) of a full dotted path, or None when it is not in the catalogue."""
    if root(path) == 'horovod':
        module = next((m for m in sorted(HOROVOD_MODULES, key=len, reverse=True) if path.startswith(m)), None)
        if module is None:
            return None
        name = path[len(module) + 1 :].split('.')[0]
        return (f'{module}.{name}' if name else module), horovod_rule(name)
    if path == 'tf_slim.learning.train':
        return path, SLIM_TRAIN
    if root(path) == 'compat_mts':
        parts = path.split('.')
        key = _MTS_BY_LAST_NAME.get(parts[-1]) if len(parts) > 1 else None
        if key is None or (key.startswith('keras.') and 'keras' not in parts):
            return None
        return f'compat_mts.{key}', MTS_RULES[key]
    if not path.startswith('tensorflow.') or path.startswith('tensorflow.compat.v2.'):
        return None
    definite = path.startswith(V1_ROOT)
    relative = path[len(V1_ROOT) :] if definite else path[len('tensorflow.') :]
    module, _, name = relative.rpartition('.')
    if module == 'estimator' and name in ESTIMATOR_HOOK_ALIASES:
        return f'tf.estimator.{name}', ESTIMATOR_HOOK_ALIAS_RULES[name]
    if module in _TRAIN_MODULES and f'train.{name}' in V1_RULES:
        relative, definite = f'train.{name}', True
    elif relative == 'python.client.session.Session':
        relative, definite = 'Session', True
    elif relative == 'contrib' or relative.startswith('contrib.'):
        below = relative[len('contrib.') :]
        return f'tf.{relative}', _contrib_rule(below)
    elif relative.startswith('examples.tutorials'):
        return 'tensorflow.examples.tutorials.mnist', TUTORIALS_RULE
    elif relative == 'estimator' or relative.startswith('estimator.'):
        matched, rule = _estimator_rule(relative[len('estimator.') :])
        return 'tf.estimator' + (f'.{matched}' if matched else ''), rule
    elif relative.startswith('layers.'):
        first = relative.split('.')[1]
        return f'tf.compat.v1.layers.{first}', _layers_rule(first)
    elif relative.startswith('nn.rnn_cell.'):
        first = relative.split('.')[2]
        return f'tf.compat.v1.nn.rnn_cell.{first}', _rnn_cell_rule(first)
    rule = V1_RULES.get(relative)
    if rule is None or not (definite or v1_style or relative not in ALSO_IN_TF2):
        return None
    return f'tf.compat.v1.{relative}', rule
