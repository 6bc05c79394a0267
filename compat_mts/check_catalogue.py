"""The catalogue of `compat-mts check`: each v1 (or compat_mts) construct, its replacement and its stage.

Data, mostly: a `Rule` per construct, keyed by its path below `tensorflow.compat.v1` (`V1_RULES`) or below
`compat_mts` (`MTS_RULES`), and `lookup`, which maps a full dotted path to its canonical spelling and rule.
Standard library only, as `check.py`, which reads scripts against it.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Rule:
    replacement: str
    stage: int
    note: str


# ---------------------------------------------------------------------------------------------------------
# The catalogue. Keys are paths below `tensorflow.compat.v1` ("v1") or below `compat_mts` ("mts").

_SESSION_LOOP_NOTE = 'At stage 3 the session loop becomes model.fit.'
_HOOK_FETCH_NOTE = ('Tensors of a wrap_graph graph still work at stage 1; at stage 2 they become step-output '
                    "names ('loss'), variables or callables.")
_WRAP_GRAPH_NOTE = 'Works unchanged inside compat_mts.wrap_graph at stage 1.'
_DISTRIBUTED_NOTE = ('compat_mts runs on tf.distribute and never runs its own parameter exchange: describe the '
                     'cluster in TF_CONFIG and build the model in the strategy scope; is_chief defaults from '
                     'that cluster.')
_TF_CONFIG_CALLS = ('tf.config.threading.set_intra_op_parallelism_threads / set_inter_op_parallelism_threads, '
                    'tf.config.set_soft_device_placement, tf.debugging.set_log_device_placement, '
                    'tf.config.experimental.set_memory_growth, tf.config.set_visible_devices')
_CONFIG_NOTE = ('Works unchanged as config= of a compat_mts session, which applies the fields that have a '
                'tf.config equivalent and names the rest in one warning; model.fit has no session to take it.')
_SUMMARY_NOTE = (f'{_WRAP_GRAPH_NOTE} Called inside the step, a TF2 summary is recorded on the steps where '
                 'SummarySaverHook triggers, stamped with the global step (step= may be omitted).')
_OPTIMIZER_NOTE = (f'{_WRAP_GRAPH_NOTE} At stage 2 the step computes gradients with tf.GradientTape and calls '
                   'optimizer.apply_gradients.')
_ITERATOR_NOTE = (f'{_WRAP_GRAPH_NOTE} At stage 2 the step takes the batch (iterate the dataset, or pass '
                  'next(iterator) through feed_dict string keys); at stage 3 model.fit takes the dataset.')
_GLOBAL_STEP_NOTE = ('Inside the function given to compat_mts.wrap_graph the v1 call works too, and its variable '
                     'becomes the session global step. At stage 3 the global step is optimizer.iterations.')
_USER_HOOK_NOTE = ('A hook written against the v1 protocol works unchanged in a compat_mts session. '
                   f'{_HOOK_FETCH_NOTE} At stage 3 it runs inside compat_mts.keras.HooksCallback; at stage 4 it '
                   'becomes a keras.callbacks.Callback.')

# Built-in hooks: compat_mts has each under the same name (stage 1); the Keras callback that replaces it at
# stage 4.
_HOOKS = {
        'StopAtStepHook': ('epochs / steps_per_epoch of model.fit', 'Same arguments (num_steps, last_step).'),
        'NanTensorHook': ('keras.callbacks.TerminateOnNaN()', _HOOK_FETCH_NOTE),
        'LoggingTensorHook': ('the model.fit progress bar, or a small keras.callbacks.Callback', _HOOK_FETCH_NOTE),
        'CheckpointSaverHook': ('keras.callbacks.BackupAndRestore / keras.callbacks.ModelCheckpoint',
                                'Writes model.ckpt-<step> through tf.train.CheckpointManager; its scaffold or '
                                'saver holds a tf.train.Checkpoint, not a Saver.'),
        'CheckpointSaverListener': ('a keras.callbacks.Callback', 'Same before_save/after_save protocol.'),
        'StepCounterHook': ('keras.callbacks.TensorBoard', 'Logs and writes global_step/sec as v1 did.'),
        'SummarySaverHook': ('keras.callbacks.TensorBoard',
                             "Records the step's own tf.summary calls on its trigger steps; a merged summary "
                             'tensor of a wrap_graph graph still works as summary_op at stage 1.'),
        'GlobalStepWaiterHook': ('a keras.callbacks.Callback', 'Same arguments (wait_until_step).'),
        'FinalOpsHook': ('code after model.fit returns', _HOOK_FETCH_NOTE),
        'FeedFnHook': ('a tf.data input pipeline given to model.fit',
                       'The feed_fn dict keys become strings (keyword arguments of the step) at stage 2.'),
        'ProfilerHook': ('keras.callbacks.TensorBoard(profile_batch=...)', 'Same arguments.'),
        'SecondOrStepTimer': ('a keras.callbacks.Callback', 'Same trigger arithmetic.'),
        'NanLossDuringTrainingError': ('keras.callbacks.TerminateOnNaN()', 'Raised by NanTensorHook as in v1.'),
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

_SESSION_CLASSES = ('MonitoredTrainingSession', 'MonitoredSession', 'SingularMonitoredSession',
                    'ChiefSessionCreator', 'WorkerSessionCreator')

V1_RULES: dict[str, Rule] = {
        **{f'train.{name}': Rule(f'compat_mts.{name}', 1,
                                 'Same arguments and defaults; runs eagerly. ' + _SESSION_LOOP_NOTE)
           for name in _SESSION_CLASSES if name != 'MonitoredTrainingSession'},
        'train.MonitoredTrainingSession': Rule(
                'compat_mts.MonitoredTrainingSession', 1,
                'Same 16 arguments, positional order and defaults; runs eagerly. Each argument given is listed '
                'on its own line. ' + _SESSION_LOOP_NOTE),
        'Session': Rule('compat_mts.MonitoredTrainingSession or compat_mts.SingularMonitoredSession', 1,
                        'Eager TensorFlow 2 has no Session. A compat_mts session runs the same sess.run calls and '
                        'initializes or restores the variables itself.'),
        'InteractiveSession': Rule('compat_mts.SingularMonitoredSession', 1,
                                   'Eager TensorFlow 2 has no Session; eager tensors print their values.'),
        'global_variables_initializer': Rule(
                'nothing: remove it and its run', 1,
                'A compat_mts session restores the latest checkpoint or initializes (Scaffold.init_fn).'),
        'local_variables_initializer': Rule(
                'nothing: remove it and its run', 1,
                'A compat_mts session restores the latest checkpoint or initializes (Scaffold.init_fn).'),
        'disable_eager_execution': Rule('nothing: remove the call', 1, 'compat_mts runs v1 programs eagerly.'),
        'disable_v2_behavior': Rule('nothing: remove the call', 1, 'compat_mts runs v1 programs eagerly.'),
        'ConfigProto': Rule(_TF_CONFIG_CALLS, 3, _CONFIG_NOTE),
        'GPUOptions': Rule('tf.config.experimental.set_memory_growth, tf.config.set_visible_devices', 3,
                           _CONFIG_NOTE),
        **{f'train.{name}': Rule(f'compat_mts.{name}', 1, f'{note} At stage 4: {keras}.')
           for name, (keras, note) in _HOOKS.items()},
        'train.SessionRunHook': Rule('compat_mts.SessionRunHook (the v1 class works unchanged)', 2,
                                     _USER_HOOK_NOTE),
        'train.SessionRunArgs': Rule('compat_mts.SessionRunArgs (the v1 class works unchanged)', 2,
                                     'Same fields (fetches, feed_dict, options). ' + _HOOK_FETCH_NOTE),
        'train.SessionRunContext': Rule('compat_mts.SessionRunContext', 2,
                                        'Same request_stop() and session; works unchanged.'),
        'train.SessionRunValues': Rule('compat_mts.SessionRunValues', 2,
                                       'results holds what the hook asked for, as NumPy values.'),
        'train.Scaffold': Rule(
                'compat_mts.Scaffold', 1,
                'Same arguments. saver= takes a tf.train.Checkpoint or CheckpointManager (not a Saver); '
                'init_op and local_init_op are callables or wrap_graph ops; summary_op=None records the '
                "step's own tf.summary calls."),
        'train.get_or_create_global_step': Rule('compat_mts.get_or_create_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.get_global_step': Rule('compat_mts.get_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.create_global_step': Rule('compat_mts.create_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.global_step': Rule('int(compat_mts.get_global_step().numpy())', 1,
                                  'v1 read the step through a Session; eagerly the variable is read directly.'),
        'train.assert_global_step': Rule('nothing: compat_mts.set_global_step checks its variable', 1,
                                         'The global step is an int64 variable registered process-wide.'),
        'train.Saver': Rule(
                'tf.train.Checkpoint(model=..., optimizer=...) as Scaffold(saver=...); '
                'tf.train.CheckpointManager to save by hand', 1,
                'A Saver needs a graph and a Session, and compat_mts rejects it with a TypeError. In a '
                'wrap_graph program leave the saver out: the default checkpoint holds every graph variable '
                'under its v1 name. v1 name-based checkpoints are still restored.'),
        'train.Server': Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _DISTRIBUTED_NOTE),
        'distribute.Server': Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _DISTRIBUTED_NOTE),
        'train.ClusterSpec': Rule("the 'cluster' of TF_CONFIG", 1, _DISTRIBUTED_NOTE),
        'train.replica_device_setter': Rule('strategy.scope() of a tf.distribute strategy', 1,
                                            'The strategy places the variables.'),
        'train.SyncReplicasOptimizer': Rule('tf.distribute.MultiWorkerMirroredStrategy', 1,
                                            'Synchronous training is the all-reduce of the strategy.'),
        **{f'train.{name}': Rule(keras, 2, _OPTIMIZER_NOTE) for name, keras in _OPTIMIZERS.items()},
        'placeholder': Rule("an argument of the tf.function step, fed with feed_dict={'x': batch}", 2,
                            f'{_WRAP_GRAPH_NOTE} At stage 3 model.fit takes the data.'),
        'placeholder_with_default': Rule('an argument of the tf.function step, with a default value', 2,
                                         _WRAP_GRAPH_NOTE),
        'get_variable': Rule('tf.Variable, or the weights of a Keras layer', 2,
                             f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.'),
        'variable_scope': Rule('Keras layers (tf.name_scope for names only)', 2,
                               f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.'),
        'get_default_graph': Rule("step-output names ('loss') or variables", 2,
                                  "Eager code has no default graph. At stage 1 the tensors of a wrap_graph "
                                  "graph can be fetched by name ('loss:0')."),
        **{f'summary.{name}': Rule(f'tf.summary.{name}(name, data) inside the step', 2, _SUMMARY_NOTE)
           for name in ('scalar', 'histogram', 'image', 'audio', 'text')},
        'summary.tensor_summary': Rule('tf.summary.write(tag, tensor) inside the step', 2, _SUMMARY_NOTE),
        'summary.merge_all': Rule(
                'nothing: remove it', 2,
                "SummarySaverHook records the step's own tf.summary calls (Scaffold(summary_op=None), the "
                'default). A merged summary tensor of a wrap_graph graph still works at stage 1.'),
        'summary.merge': Rule(
                'nothing: remove it', 2,
                "SummarySaverHook records the step's own tf.summary calls. A merged summary tensor of a "
                'wrap_graph graph still works at stage 1.'),
        'summary.FileWriter': Rule(
                'tf.summary.create_file_writer(logdir)', 1,
                'v1 FileWriter does not work with eager execution. A compat_mts session already writes to '
                'summary_dir (or checkpoint_dir), one writer per directory.'),
        'summary.FileWriterCache': Rule('tf.summary.create_file_writer(logdir)', 1,
                                        'v1 FileWriterCache does not work with eager execution.'),
        'summary.Summary': Rule('tf.summary.scalar(tag, value, step=step)', 1,
                                'Summary protos go to a v1 FileWriter, which needs graph mode.'),
        'data.make_one_shot_iterator': Rule('iter(dataset)', 2, _ITERATOR_NOTE),
        'data.make_initializable_iterator': Rule('iter(dataset), created again to restart', 2, _ITERATOR_NOTE),
        'data.Iterator': Rule('iter(dataset) (a tf.data.Iterator)', 2, _ITERATOR_NOTE),
        **{f'data.get_output_{kind}': Rule('dataset.element_spec', 2, 'TF2 datasets describe their elements '
                                           'with element_spec.') for kind in ('shapes', 'types', 'classes')},
}

# v1 names that TensorFlow 2 also has at the same bare path (`tf.summary.scalar`): under a bare
# `import tensorflow as tf` they are reported only when the script is TF 1.x code.
ALSO_IN_TF2 = frozenset({'train.ClusterSpec', 'distribute.Server', 'data.Iterator', 'summary.scalar',
                         'summary.histogram', 'summary.image', 'summary.audio', 'summary.text'})

# Bare `tensorflow` paths that only TF 1.x has: a script using one treats `tensorflow` as TF 1.x.
TF1_ONLY_PREFIXES = ('contrib', 'logging', 'app', 'flags', 'layers', 'get_collection', 'add_to_collection',
                     'GraphKeys', 'reset_default_graph', 'trainable_variables', 'global_variables', 'Print',
                     'to_float', 'to_int32', 'random_normal', 'random_uniform', 'truncated_normal',
                     'variables_initializer', 'train.exponential_decay', 'train.start_queue_runners',
                     'nn.rnn_cell')

_STAGE_3_SESSION = Rule(
        'model.fit(...), with the hooks in callbacks=[compat_mts.keras.HooksCallback(hooks)]', 3,
        'The session loop becomes model.fit. A multi-worker program keeps the session loop: Keras 3 '
        'model.fit has no multi-worker support.')
_STAGE_3_GLOBAL_STEP = Rule('optimizer.iterations', 3, 'Inside model.fit the global step is optimizer.iterations.')
_STAGE_4_PROTOCOL = Rule('keras.callbacks.Callback (on_train_batch_begin/end, on_train_end)', 4,
                         'Inside HooksCallback a hook sees the batch logs as step outputs.')

MTS_RULES: dict[str, Rule] = {
        **{name: _STAGE_3_SESSION for name in (*_SESSION_CLASSES, 'StepContext', 'USE_DEFAULT')},
        'Scaffold': Rule('the model and optimizer given to model.fit', 3,
                         'Inside model.fit, compat_mts.CheckpointSaverHook in HooksCallback checkpoints the '
                         'model and optimizer (weights, slots, iterations).'),
        'wrap_graph': Rule('Keras layers and a tf.function step', 2,
                           'The legacy graph code becomes TF2 code; Scaffold(saver=tf.train.Checkpoint(...)) '
                           'says what a checkpoint holds.'),
        **{name: _STAGE_3_GLOBAL_STEP for name in ('get_or_create_global_step', 'get_global_step',
                                                   'create_global_step', 'set_global_step', 'reset_global_step')},
        **{name: Rule(keras, 4, 'compat_mts is no longer needed once every hook has its Keras callback.')
           for name, (keras, _) in _HOOKS.items()},
        'SessionRunHook': _STAGE_4_PROTOCOL,
        'SessionRunArgs': _STAGE_4_PROTOCOL,
        'SessionRunContext': _STAGE_4_PROTOCOL,
        'SessionRunValues': _STAGE_4_PROTOCOL,
        'STALE_GLOBAL_STEP': Rule('optimizer.iterations', 4, 'Keras callbacks see the batch index.'),
        'keras.HooksCallback': Rule('native Keras callbacks', 4,
                                    'Each hook inside it gets its Keras callback; see each hook.'),
        'keras.CallbackHook': Rule('callbacks=[...] of model.fit', 3,
                                   'With model.fit the Keras callbacks are passed to fit directly.'),
}
_MTS_BY_LAST_NAME = {key.rsplit('.', 1)[-1]: key for key in MTS_RULES}

# v1 module paths (private modules included) that hold the `tf.compat.v1.train` names.
_TRAIN_MODULES = frozenset({'estimator', 'python.training.session_run_hook', 'python.training.basic_session_run_hooks',
                            'python.training.monitored_session', 'python.training.training_util',
                            'python.training.saver', 'python.training.server_lib', 'python.training.training'})
V1_ROOT = 'tensorflow.compat.v1.'

# MonitoredTrainingSession's 16 arguments in v1's positional order: what each becomes when the session
# loop goes (stage 3). compat_mts keeps every one of them until then.
MTS_ARGUMENTS = {
        'master': ('tf.config.experimental_connect_to_host(target) before model.fit, or TF_CONFIG + '
                   'tf.distribute.MultiWorkerMirroredStrategy',
                   "'' runs in-process; a grpc://host:port target connects eager execution to that server."),
        'is_chief': ("the strategy's cluster (TF_CONFIG)",
                     'A non-chief runs hooks only and writes nothing into the chief directory; it defaults from '
                     'the TF_CONFIG cluster. Keras 3 model.fit has no multi-worker support, so a multi-worker '
                     'program keeps the session loop.'),
        'checkpoint_dir': ('compat_mts.CheckpointSaverHook(checkpoint_dir, ...) in HooksCallback; at stage 4 '
                           'keras.callbacks.BackupAndRestore / ModelCheckpoint',
                           'Restores the latest checkpoint (v1 name-based ones too) and saves '
                           'model.ckpt-<step>, as v1 did.'),
        'scaffold': ('the model and optimizer given to model.fit',
                     'Scaffold(saver=tf.train.Checkpoint(...)) says what a checkpoint holds.'),
        'hooks': ('callbacks=[compat_mts.keras.HooksCallback(hooks)]',
                  'Runs on every worker, last in the hook order; each hook is listed on its own line.'),
        'chief_only_hooks': ('callbacks=[compat_mts.keras.HooksCallback(hooks)] on the chief',
                             'Runs first, on the chief only.'),
        'save_checkpoint_secs': ('compat_mts.CheckpointSaverHook(save_secs=...); at stage 4 '
                                 'keras.callbacks.BackupAndRestore(save_freq=...)',
                                 "Same USE_DEFAULT resolution and timer as v1."),
        'save_summaries_steps': ('compat_mts.SummarySaverHook(save_steps=...); at stage 4 '
                                 'keras.callbacks.TensorBoard(update_freq=...)',
                                 'Same USE_DEFAULT resolution as v1.'),
        'save_summaries_secs': ('compat_mts.SummarySaverHook(save_secs=...); at stage 4 '
                                'keras.callbacks.TensorBoard(update_freq=...)',
                                'Same USE_DEFAULT resolution as v1.'),
        'config': ('tf.config calls before the model is built',
                   'The session applies the ConfigProto fields that have a tf.config equivalent and names the '
                   'rest in one warning.'),
        'stop_grace_period_secs': ('nothing: model.fit has no coordinator threads',
                                   'close() waits that long for hook threads, checkpoint writes and summary '
                                   'flushes.'),
        'log_step_count_steps': ('compat_mts.StepCounterHook(every_n_steps=...); at stage 4 '
                                 'keras.callbacks.TensorBoard',
                                 'global_step/sec is logged and written as v1 did.'),
        'max_wait_secs': ('nothing: the strategy synchronizes the workers',
                          "A non-chief waits that long for the chief's first checkpoint."),
        'save_checkpoint_steps': ('compat_mts.CheckpointSaverHook(save_steps=...); at stage 4 '
                                  'keras.callbacks.BackupAndRestore(save_freq=...)',
                                  'Same USE_DEFAULT resolution as v1.'),
        'summary_dir': ('keras.callbacks.TensorBoard(log_dir=...)', 'One summary writer per directory.'),
        'save_graph_def': ('keras.callbacks.TensorBoard(write_graph=...)',
                           'Writes graph.pbtxt of the traced step; no .meta files.'),
}
MTS_ARGUMENT_ORDER = tuple(MTS_ARGUMENTS)

RUN = Rule('model.fit(...); a read of a variable becomes variable.numpy()', 3,
           'A compat_mts session keeps sess.run: a fetch is a wrap_graph tensor or op (stage 1), then a '
           'tf.function step, a step-output name or a variable (stage 2).')
FEED_DICT = Rule("string keys, feed_dict={'x': batch}: keyword arguments of the step callable", 2,
                 'Placeholder keys still feed a wrap_graph graph at stage 1.')
FEED_DICT_BY_NAME = Rule('the data given to model.fit (a tf.data.Dataset or arrays)', 3,
                         'Keys that are keyword names are keyword arguments of the step callable of a '
                         'compat_mts session.')
MINIMIZE = Rule('a tf.function step: tf.GradientTape, optimizer.apply_gradients(...), '
                'global_step.assign_add(1)', 2,
                'v1 incremented the global step here; a Keras optimizer takes no global_step, so the step '
                'increments it. At stage 3 model.fit counts optimizer.iterations. ' + _WRAP_GRAPH_NOTE)
ITERATOR_METHOD = Rule('iter(dataset)', 2, _ITERATOR_NOTE)
GET_NEXT = Rule('next(iterator)', 2, _ITERATOR_NOTE)

GLOBAL_STEP_HELPERS = ('tf.compat.v1.train.get_or_create_global_step', 'tf.compat.v1.train.get_global_step',
                       'tf.compat.v1.train.create_global_step')
SESSION_CONSTRUCTORS = ('Session', 'InteractiveSession', 'MonitoredTrainingSession', 'MonitoredSession',
                        'SingularMonitoredSession')
SESSION_NAME = re.compile(r'(?:^|_)sess(?:ion)?$', re.IGNORECASE)
V1_ITERATOR_METHODS = ('make_one_shot_iterator', 'make_initializable_iterator')
V1_ITERATOR_CONSTRUCTS = ('tf.compat.v1.data.make_one_shot_iterator', 'tf.compat.v1.data.make_initializable_iterator',
                          'tf.compat.v1.data.Iterator')


def root(path: str) -> str:
    return path.split('.', 1)[0]


def lookup(path: str, v1_style: bool) -> tuple[str, Rule] | None:
    """(canonical construct, rule) of a full dotted path, or None when it is not in the catalogue."""
    if root(path) == 'compat_mts':
        parts = path.split('.')
        key = _MTS_BY_LAST_NAME.get(parts[-1]) if len(parts) > 1 else None
        if key is None or (key.startswith('keras.') and 'keras' not in parts):
            return None
        return f'compat_mts.{key}', MTS_RULES[key]
    if not path.startswith('tensorflow.') or path.startswith('tensorflow.compat.v2.'):
        return None
    definite = path.startswith(V1_ROOT)
    relative = path[len(V1_ROOT):] if definite else path[len('tensorflow.'):]
    module, _, name = relative.rpartition('.')
    if module in _TRAIN_MODULES:
        relative, definite = f'train.{name}', True
    elif relative == 'python.client.session.Session':
        relative, definite = 'Session', True
    rule = V1_RULES.get(relative)
    if rule is None or not (definite or v1_style or relative not in ALSO_IN_TF2):
        return None
    return f'tf.compat.v1.{relative}', rule
