"""`compat-mts check`: lists the v1 training-loop constructs of a script, with their replacement and migration stage.

`tf_upgrade_v2` rewrites names (`tf.train.Saver` → `tf.compat.v1.train.Saver`); this checker says how the
training loop migrates. It reads each file's syntax tree and never runs it, and imports neither TensorFlow
nor the rest of compat_mts, so `python compat_mts/check.py FILE...` works on a machine without TensorFlow.

A finding is one construct on one line: a `MonitoredTrainingSession` call and each argument given to it,
a built-in hook or a user `SessionRunHook` subclass, `Scaffold`, the global-step helpers, `Saver`,
placeholders and `feed_dict`, `tf.compat.v1.summary`, `ConfigProto`, `Session` and `sess.run`,
`Server`/`ClusterSpec`, v1 optimizers and `minimize(global_step=...)`, `get_variable`/`variable_scope`,
`tf.compat.v1.data` iterators. The `compat_mts` names a half-migrated script uses are findings too, at the
stage that removes them, so a script is fully migrated when the checker finds nothing.

The stage of a finding is the stage (of the four in `migration_guide/stages.md`) at which that line has
to change; the note says what keeps working until then:

1. the script runs eagerly on compat_mts (`tf.compat.v1.train` → `compat_mts`, graph code in `wrap_graph`);
2. the model becomes Keras / a `tf.function` step, driven by the same session loop and hooks;
3. the loop becomes `model.fit`, the hooks run inside `compat_mts.keras.HooksCallback`;
4. the hooks become native Keras callbacks and compat_mts is no longer imported.

Exit status of the command: 0 when nothing was found, 1 when constructs were found (0 with
`--fail-on none`), 2 when a file could not be read or parsed (or the command line was wrong).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import itertools
import json
import pathlib
import re
import sys
import textwrap
from typing import Iterable, Sequence

STAGES = {
        1: 'run eagerly on compat_mts',
        2: 'Keras / tf.function model, same session loop',
        3: 'model.fit, hooks in compat_mts.keras.HooksCallback',
        4: 'native Keras callbacks, no compat_mts',
}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One construct to migrate: where it is, what replaces it, and at which stage (1-4).

    `line` and `col` are 1-based, as editors count. `construct` names the v1 (or compat_mts) API in its
    canonical spelling (`tf.compat.v1.train.StopAtStepHook` however the script imported it).
    """

    file: str
    line: int
    col: int
    construct: str
    replacement: str
    stage: int
    note: str


class CheckError(Exception):
    """A file that could not be read or parsed; `line`/`col` locate a syntax error (0 when unknown)."""

    def __init__(self, file: str, message: str, line: int = 0, col: int = 0):
        super().__init__(f'{file}:{line}:{col}: {message}' if line else f'{file}: {message}')
        self.file = file
        self.message = message
        self.line = line
        self.col = col


@dataclasses.dataclass(frozen=True)
class _Rule:
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

_V1_RULES: dict[str, _Rule] = {
        **{f'train.{name}': _Rule(f'compat_mts.{name}', 1,
                                  'Same arguments and defaults; runs eagerly. ' + _SESSION_LOOP_NOTE)
           for name in _SESSION_CLASSES if name != 'MonitoredTrainingSession'},
        'train.MonitoredTrainingSession': _Rule(
                'compat_mts.MonitoredTrainingSession', 1,
                'Same 16 arguments, positional order and defaults; runs eagerly. Each argument given is listed '
                'on its own line. ' + _SESSION_LOOP_NOTE),
        'train.SessionCreator': _Rule(
                'compat_mts.SessionCreator', 1,
                'The same abstract base; create_session() returns the session of a compat_mts creator '
                '(ChiefSessionCreator or WorkerSessionCreator), not a tf.compat.v1.Session. ' + _SESSION_LOOP_NOTE),
        'Session': _Rule('compat_mts.MonitoredTrainingSession or compat_mts.SingularMonitoredSession', 1,
                         'Eager TensorFlow 2 has no Session. A compat_mts session runs the same sess.run calls and '
                         'initializes or restores the variables itself.'),
        'InteractiveSession': _Rule('compat_mts.SingularMonitoredSession', 1,
                                    'Eager TensorFlow 2 has no Session; eager tensors print their values.'),
        'global_variables_initializer': _Rule(
                'nothing: remove it and its run', 1,
                'A compat_mts session restores the latest checkpoint or initializes (Scaffold.init_fn).'),
        'local_variables_initializer': _Rule(
                'nothing: remove it and its run', 1,
                'A compat_mts session restores the latest checkpoint or initializes (Scaffold.init_fn).'),
        'disable_eager_execution': _Rule('nothing: remove the call', 1, 'compat_mts runs v1 programs eagerly.'),
        'disable_v2_behavior': _Rule('nothing: remove the call', 1, 'compat_mts runs v1 programs eagerly.'),
        'ConfigProto': _Rule(_TF_CONFIG_CALLS, 3, _CONFIG_NOTE),
        'GPUOptions': _Rule('tf.config.experimental.set_memory_growth, tf.config.set_visible_devices', 3,
                            _CONFIG_NOTE),
        **{f'train.{name}': _Rule(f'compat_mts.{name}', 1, f'{note} At stage 4: {keras}.')
           for name, (keras, note) in _HOOKS.items()},
        'train.SessionRunHook': _Rule('compat_mts.SessionRunHook (the v1 class works unchanged)', 2,
                                      _USER_HOOK_NOTE),
        'train.SessionRunArgs': _Rule('compat_mts.SessionRunArgs (the v1 class works unchanged)', 2,
                                      'Same fields (fetches, feed_dict, options). ' + _HOOK_FETCH_NOTE),
        'train.SessionRunContext': _Rule('compat_mts.SessionRunContext', 2,
                                         'Same request_stop() and session; works unchanged.'),
        'train.SessionRunValues': _Rule('compat_mts.SessionRunValues', 2,
                                        'results holds what the hook asked for, as NumPy values.'),
        'train.Scaffold': _Rule(
                'compat_mts.Scaffold', 1,
                'Same arguments. saver= takes a tf.train.Checkpoint or CheckpointManager (not a Saver); '
                'init_op and local_init_op are callables or wrap_graph ops; summary_op=None records the '
                "step's own tf.summary calls."),
        'train.get_or_create_global_step': _Rule('compat_mts.get_or_create_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.get_global_step': _Rule('compat_mts.get_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.create_global_step': _Rule('compat_mts.create_global_step()', 1, _GLOBAL_STEP_NOTE),
        'train.global_step': _Rule('int(compat_mts.get_global_step().numpy())', 1,
                                   'v1 read the step through a Session; eagerly the variable is read directly.'),
        'train.assert_global_step': _Rule('nothing: compat_mts.set_global_step checks its variable', 1,
                                          'The global step is an int64 variable registered process-wide.'),
        'train.Saver': _Rule(
                'tf.train.Checkpoint(model=..., optimizer=...) as Scaffold(saver=...); '
                'tf.train.CheckpointManager to save by hand', 1,
                'A Saver needs a graph and a Session, and compat_mts rejects it with a TypeError. In a '
                'wrap_graph program leave the saver out: the default checkpoint holds every graph variable '
                'under its v1 name. v1 name-based checkpoints are still restored.'),
        'train.Server': _Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _DISTRIBUTED_NOTE),
        'distribute.Server': _Rule('TF_CONFIG + tf.distribute.MultiWorkerMirroredStrategy', 1, _DISTRIBUTED_NOTE),
        'train.ClusterSpec': _Rule("the 'cluster' of TF_CONFIG", 1, _DISTRIBUTED_NOTE),
        'train.replica_device_setter': _Rule('strategy.scope() of a tf.distribute strategy', 1,
                                             'The strategy places the variables.'),
        'train.SyncReplicasOptimizer': _Rule('tf.distribute.MultiWorkerMirroredStrategy', 1,
                                             'Synchronous training is the all-reduce of the strategy.'),
        **{f'train.{name}': _Rule(keras, 2, _OPTIMIZER_NOTE) for name, keras in _OPTIMIZERS.items()},
        'placeholder': _Rule("an argument of the tf.function step, fed with feed_dict={'x': batch}", 2,
                             f'{_WRAP_GRAPH_NOTE} At stage 3 model.fit takes the data.'),
        'placeholder_with_default': _Rule('an argument of the tf.function step, with a default value', 2,
                                          _WRAP_GRAPH_NOTE),
        'get_variable': _Rule('tf.Variable, or the weights of a Keras layer', 2,
                              f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.'),
        'variable_scope': _Rule('Keras layers (tf.name_scope for names only)', 2,
                                f'{_WRAP_GRAPH_NOTE} Its checkpoints keep the v1 variable names.'),
        'get_default_graph': _Rule("step-output names ('loss') or variables", 2,
                                   "Eager code has no default graph. At stage 1 the tensors of a wrap_graph "
                                   "graph can be fetched by name ('loss:0')."),
        **{f'summary.{name}': _Rule(f'tf.summary.{name}(name, data) inside the step', 2, _SUMMARY_NOTE)
           for name in ('scalar', 'histogram', 'image', 'audio', 'text')},
        'summary.tensor_summary': _Rule('tf.summary.write(tag, tensor) inside the step', 2, _SUMMARY_NOTE),
        'summary.merge_all': _Rule(
                'nothing: remove it', 2,
                "SummarySaverHook records the step's own tf.summary calls (Scaffold(summary_op=None), the "
                'default). A merged summary tensor of a wrap_graph graph still works at stage 1.'),
        'summary.merge': _Rule(
                'nothing: remove it', 2,
                "SummarySaverHook records the step's own tf.summary calls. A merged summary tensor of a "
                'wrap_graph graph still works at stage 1.'),
        'summary.FileWriter': _Rule(
                'tf.summary.create_file_writer(logdir)', 1,
                'v1 FileWriter does not work with eager execution. A compat_mts session already writes to '
                'summary_dir (or checkpoint_dir), one writer per directory.'),
        'summary.FileWriterCache': _Rule('tf.summary.create_file_writer(logdir)', 1,
                                         'v1 FileWriterCache does not work with eager execution.'),
        'summary.Summary': _Rule('tf.summary.scalar(tag, value, step=step)', 1,
                                 'Summary protos go to a v1 FileWriter, which needs graph mode.'),
        'data.make_one_shot_iterator': _Rule('iter(dataset)', 2, _ITERATOR_NOTE),
        'data.make_initializable_iterator': _Rule('iter(dataset), created again to restart', 2, _ITERATOR_NOTE),
        'data.Iterator': _Rule('iter(dataset) (a tf.data.Iterator)', 2, _ITERATOR_NOTE),
        **{f'data.get_output_{kind}': _Rule('dataset.element_spec', 2, 'TF2 datasets describe their elements '
                                            'with element_spec.') for kind in ('shapes', 'types', 'classes')},
}

# v1 names that TensorFlow 2 also has at the same bare path (`tf.summary.scalar`): under a bare
# `import tensorflow as tf` they are reported only when the script is TF 1.x code.
_ALSO_IN_TF2 = frozenset({'train.ClusterSpec', 'distribute.Server', 'data.Iterator', 'summary.scalar',
                          'summary.histogram', 'summary.image', 'summary.audio', 'summary.text'})

# Bare `tensorflow` paths that only TF 1.x has: a script using one treats `tensorflow` as TF 1.x.
_TF1_ONLY_PREFIXES = ('contrib', 'logging', 'app', 'flags', 'layers', 'get_collection', 'add_to_collection',
                      'GraphKeys', 'reset_default_graph', 'trainable_variables', 'global_variables', 'Print',
                      'to_float', 'to_int32', 'random_normal', 'random_uniform', 'truncated_normal',
                      'variables_initializer', 'train.exponential_decay', 'train.start_queue_runners',
                      'nn.rnn_cell')

_STAGE_3_SESSION = _Rule(
        'model.fit(...), with the hooks in callbacks=[compat_mts.keras.HooksCallback(hooks)]', 3,
        'The session loop becomes model.fit. A multi-worker program keeps the session loop: Keras 3 '
        'model.fit has no multi-worker support.')
_STAGE_3_GLOBAL_STEP = _Rule('optimizer.iterations', 3, 'Inside model.fit the global step is optimizer.iterations.')
_STAGE_4_PROTOCOL = _Rule('keras.callbacks.Callback (on_train_batch_begin/end, on_train_end)', 4,
                          'Inside HooksCallback a hook sees the batch logs as step outputs.')

_MTS_RULES: dict[str, _Rule] = {
        **{name: _STAGE_3_SESSION for name in (*_SESSION_CLASSES, 'SessionCreator', 'StepContext', 'USE_DEFAULT')},
        'Scaffold': _Rule('the model and optimizer given to model.fit', 3,
                          'Inside model.fit, compat_mts.CheckpointSaverHook in HooksCallback checkpoints the '
                          'model and optimizer (weights, slots, iterations).'),
        'wrap_graph': _Rule('Keras layers and a tf.function step', 2,
                            'The legacy graph code becomes TF2 code; Scaffold(saver=tf.train.Checkpoint(...)) '
                            'says what a checkpoint holds.'),
        **{name: _STAGE_3_GLOBAL_STEP for name in ('get_or_create_global_step', 'get_global_step',
                                                   'create_global_step', 'set_global_step', 'reset_global_step')},
        **{name: _Rule(keras, 4, 'compat_mts is no longer needed once every hook has its Keras callback.')
           for name, (keras, _) in _HOOKS.items()},
        'SessionRunHook': _STAGE_4_PROTOCOL,
        'SessionRunArgs': _STAGE_4_PROTOCOL,
        'SessionRunContext': _STAGE_4_PROTOCOL,
        'SessionRunValues': _STAGE_4_PROTOCOL,
        'STALE_GLOBAL_STEP': _Rule('optimizer.iterations', 4, 'Keras callbacks see the batch index.'),
        'keras.HooksCallback': _Rule('native Keras callbacks', 4,
                                     'Each hook inside it gets its Keras callback; see each hook.'),
        'keras.CallbackHook': _Rule('callbacks=[...] of model.fit', 3,
                                    'With model.fit the Keras callbacks are passed to fit directly.'),
}
_MTS_BY_LAST_NAME = {key.rsplit('.', 1)[-1]: key for key in _MTS_RULES}

# v1 module paths (private modules included) that hold the `tf.compat.v1.train` names.
_TRAIN_MODULES = frozenset({'estimator', 'python.training.session_run_hook', 'python.training.basic_session_run_hooks',
                            'python.training.monitored_session', 'python.training.training_util',
                            'python.training.saver', 'python.training.server_lib', 'python.training.training'})
_V1_ROOT = 'tensorflow.compat.v1.'

# MonitoredTrainingSession's 16 arguments in v1's positional order: what each becomes when the session
# loop goes (stage 3). compat_mts keeps every one of them until then.
_MTS_ARGUMENTS = {
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
_MTS_ARGUMENT_ORDER = tuple(_MTS_ARGUMENTS)

_RUN = _Rule('model.fit(...); a read of a variable becomes variable.numpy()', 3,
             'A compat_mts session keeps sess.run: a fetch is a wrap_graph tensor or op (stage 1), then a '
             'tf.function step, a step-output name or a variable (stage 2).')
_FEED_DICT = _Rule("string keys, feed_dict={'x': batch}: keyword arguments of the step callable", 2,
                   'Placeholder keys still feed a wrap_graph graph at stage 1.')
_FEED_DICT_BY_NAME = _Rule('the data given to model.fit (a tf.data.Dataset or arrays)', 3,
                           'Keys that are keyword names are keyword arguments of the step callable of a '
                           'compat_mts session.')
_MINIMIZE = _Rule('a tf.function step: tf.GradientTape, optimizer.apply_gradients(...), '
                  'global_step.assign_add(1)', 2,
                  'v1 incremented the global step here; a Keras optimizer takes no global_step, so the step '
                  'increments it. At stage 3 model.fit counts optimizer.iterations. ' + _WRAP_GRAPH_NOTE)
_ITERATOR_METHOD = _Rule('iter(dataset)', 2, _ITERATOR_NOTE)
_GET_NEXT = _Rule('next(iterator)', 2, _ITERATOR_NOTE)

_GLOBAL_STEP_HELPERS = ('tf.compat.v1.train.get_or_create_global_step', 'tf.compat.v1.train.get_global_step',
                        'tf.compat.v1.train.create_global_step')
_SESSION_CONSTRUCTORS = ('Session', 'InteractiveSession', 'MonitoredTrainingSession', 'MonitoredSession',
                         'SingularMonitoredSession')
_SESSION_NAME = re.compile(r'(?:^|_)sess(?:ion)?$', re.IGNORECASE)
_V1_ITERATOR_METHODS = ('make_one_shot_iterator', 'make_initializable_iterator')
_V1_ITERATOR_CONSTRUCTS = ('tf.compat.v1.data.make_one_shot_iterator', 'tf.compat.v1.data.make_initializable_iterator',
                           'tf.compat.v1.data.Iterator')


# ---------------------------------------------------------------------------------------------------------
# Name resolution.

def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ['a', 'b', 'c']; None for anything but a chain of names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _root(path: str) -> str:
    return path.split('.', 1)[0]


class _Names:
    """What each name of a script stands for: import aliases (`tf` → `tensorflow.compat.v1`), module aliases
    (`tf1 = tf.compat.v1`), star imports, and whether a bare `tensorflow` is TF 1.x there.

    Scopes are ignored: an alias made anywhere in the file counts everywhere, as it does in practice.
    """

    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._bind(alias.asname, alias.name)
                    else:
                        self._bind(_root(alias.name), _root(alias.name))
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ''
                if node.level:
                    module = '.' * node.level + module  # a local module: never TensorFlow
                for alias in node.names:
                    if alias.name == '*':
                        self.star_modules.append(module)
                    else:
                        self._bind(alias.asname or alias.name, f'{module}.{alias.name}')
        self.uses_tensorflow = any(_root(path) in ('tensorflow', 'compat_mts')
                                   for path in (*self.aliases.values(), *self.star_modules))
        self._bind_module_aliases(tree)
        self.bare_tensorflow_is_v1 = self._bare_tensorflow_is_v1(tree)

    def _bind(self, name: str, path: str) -> None:
        # `try: import tensorflow.compat.v1 as tf / except ImportError: import tensorflow as tf`: the v1
        # binding is what the script means.
        if self.aliases.get(name, '').startswith(_V1_ROOT[:-1]) and _root(path) == 'tensorflow':
            return
        self.aliases[name] = path

    def _bind_module_aliases(self, tree: ast.Module) -> None:
        statements = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Assign)),
                            key=lambda node: (node.lineno, node.col_offset))
        for node in statements:
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            path = self.resolve(node.value)
            if path and _root(path) in ('tensorflow', 'compat_mts') and _lookup(path, v1_style=True) is None:
                self.aliases[node.targets[0].id] = path

    def _bare_tensorflow_is_v1(self, tree: ast.Module) -> bool:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Attribute, ast.Name)):
                path = self.resolve(node)
                if path and path.startswith('tensorflow.') and not path.startswith('tensorflow.compat.'):
                    relative = path[len('tensorflow.'):]
                    if ((relative in _V1_RULES and relative not in _ALSO_IN_TF2)
                            or any(relative == prefix or relative.startswith(prefix + '.')
                                   for prefix in _TF1_ONLY_PREFIXES)):
                        return True
        return False

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted path `node` names (`tensorflow.compat.v1.train.Saver`), or None."""
        parts = _dotted(node)
        if parts is None:
            return None
        head, rest = parts[0], parts[1:]
        if head in self.aliases:
            return '.'.join([self.aliases[head], *rest])
        for module in self.star_modules:
            candidate = '.'.join([module, head, *rest])
            if _lookup(candidate, v1_style=True) is not None:
                return candidate
        return None

    def rule_for(self, node: ast.AST) -> tuple[str, _Rule] | None:
        """(canonical construct, rule) when `node` names a catalogued construct."""
        path = self.resolve(node)
        return _lookup(path, v1_style=self.bare_tensorflow_is_v1) if path else None


def _lookup(path: str, v1_style: bool) -> tuple[str, _Rule] | None:
    """(canonical construct, rule) of a full dotted path, or None when it is not in the catalogue."""
    if _root(path) == 'compat_mts':
        parts = path.split('.')
        key = _MTS_BY_LAST_NAME.get(parts[-1]) if len(parts) > 1 else None
        if key is None or (key.startswith('keras.') and 'keras' not in parts):
            return None
        return f'compat_mts.{key}', _MTS_RULES[key]
    if not path.startswith('tensorflow.') or path.startswith('tensorflow.compat.v2.'):
        return None
    definite = path.startswith(_V1_ROOT)
    relative = path[len(_V1_ROOT):] if definite else path[len('tensorflow.'):]
    module, _, name = relative.rpartition('.')
    if module in _TRAIN_MODULES:
        relative, definite = f'train.{name}', True
    elif relative == 'python.client.session.Session':
        relative, definite = 'Session', True
    rule = _V1_RULES.get(relative)
    if rule is None or not (definite or v1_style or relative not in _ALSO_IN_TF2):
        return None
    return f'tf.compat.v1.{relative}', rule


# ---------------------------------------------------------------------------------------------------------
# The checker.

def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset + 1


def _method_position(call: ast.Call) -> tuple[int, int]:
    """Where the method name of `receiver.method(...)` starts, 1-based."""
    func = call.func
    return func.end_lineno, func.end_col_offset - len(func.attr) + 1


class _Checker(ast.NodeVisitor):

    def __init__(self, filename: str, tree: ast.Module):
        self.filename = filename
        self.names = _Names(tree)
        self.findings: dict[tuple[int, int, str], Finding] = {}
        self._sessions, self._iterators, self._foreign = self._bound_values(tree)
        self._graph_functions = self._wrapped_graph_functions(tree)
        self._in_graph_function = False

    def _bound_values(self, tree: ast.Module) -> tuple[set[str], set[str], set[str]]:
        """The targets (as source text) bound to a session, to a v1 iterator, and to another library's call."""
        sessions, iterators, foreign = set(), set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs = [(node.targets[0], node.value)]
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                pairs = [(item.optional_vars, item.context_expr) for item in node.items if item.optional_vars]
            else:
                continue
            for target, value in pairs:
                if not isinstance(value, ast.Call):
                    continue
                key = ast.unparse(target)
                if self._is_session_constructor(value):
                    sessions.add(key)
                elif self._makes_v1_iterator(value):
                    iterators.add(key)
                else:
                    path = self.names.resolve(value.func)
                    if path and _root(path) not in ('tensorflow', 'compat_mts'):
                        foreign.add(key)
        return sessions, iterators, foreign

    def _wrapped_graph_functions(self, tree: ast.Module) -> set[str]:
        """The names of the functions given to `compat_mts.wrap_graph` (its `build_fn`)."""
        names = set()
        for node in ast.walk(tree):
            found = self.names.rule_for(node.func) if isinstance(node, ast.Call) else None
            if found is not None and found[0] == 'compat_mts.wrap_graph':
                build_fn = [*node.args[:1], *(k.value for k in node.keywords if k.arg == 'build_fn')]
                names.update(arg.id for arg in build_fn if isinstance(arg, ast.Name))
        return names

    def _is_session_constructor(self, call: ast.Call) -> bool:
        found = self.names.rule_for(call.func)
        return found is not None and found[0].rsplit('.', 1)[-1] in _SESSION_CONSTRUCTORS

    def _makes_v1_iterator(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr in _V1_ITERATOR_METHODS:
            return self.names.uses_tensorflow
        found = self.names.rule_for(call.func)
        if found is None and isinstance(call.func, ast.Attribute):  # tf.compat.v1.data.Iterator.from_structure
            found = self.names.rule_for(call.func.value)
        return found is not None and found[0] in _V1_ITERATOR_CONSTRUCTS

    def _is_session(self, receiver: ast.AST) -> bool:
        key = ast.unparse(receiver)
        if key in self._sessions:
            return True
        if isinstance(receiver, ast.Call):
            if self._is_session_constructor(receiver):
                return True
            receiver = receiver.func  # sess.raw_session().run(...)
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, 'id', '')
        return (self.names.uses_tensorflow and key not in self._foreign and bool(_SESSION_NAME.search(name))
                and self.names.resolve(receiver) is None)

    def _add(self, position: tuple[int, int], construct: str, rule: _Rule) -> None:
        line, col = position
        self.findings.setdefault((line, col, construct), Finding(self.filename, line, col, construct,
                                                                 rule.replacement, rule.stage, rule.note))

    # Visitors.

    def visit_Import(self, node: ast.Import) -> None:
        """Imports are where names come from, not uses: the uses are reported."""

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self._in_graph_function
        self._in_graph_function = outer or node.name in self._graph_functions
        self.generic_visit(node)
        self._in_graph_function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_reference(self, node: ast.Attribute | ast.Name) -> None:
        found = self.names.rule_for(node)
        if found is not None:
            construct, rule = found
            if self._in_graph_function and construct in _GLOBAL_STEP_HELPERS:
                rule = dataclasses.replace(rule, stage=2)  # the graph's own global step, kept by wrap_graph
            self._add(_position(node), construct, rule)
        else:
            self.generic_visit(node)

    visit_Attribute = _visit_reference
    visit_Name = _visit_reference

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            found = self.names.rule_for(base)
            if found is None:
                self.visit(base)
            else:
                construct, rule = found
                self._add(_position(base), f'class {node.name}({construct})', rule)
        for child in (*node.decorator_list, *node.keywords, *node.body):
            self.visit(child)

    def visit_Call(self, node: ast.Call) -> None:
        found = self.names.rule_for(node.func)
        if found is not None and found[0].endswith('.MonitoredTrainingSession'):
            self._add_session_arguments(node, found[0])
        if isinstance(node.func, ast.Attribute):
            self._check_method_call(node)
        if self.names.uses_tensorflow:
            for keyword in node.keywords:
                if keyword.arg == 'feed_dict':
                    self._add_feed_dict(keyword, keyword.value)
        self.generic_visit(node)

    def _add_session_arguments(self, call: ast.Call, construct: str) -> None:
        positional = itertools.takewhile(lambda arg: not isinstance(arg, ast.Starred), call.args)
        given = list(zip(_MTS_ARGUMENT_ORDER, positional))
        given += [(keyword.arg, keyword) for keyword in call.keywords if keyword.arg in _MTS_ARGUMENTS]
        for name, node in given:
            replacement, note = _MTS_ARGUMENTS[name]
            self._add(_position(node), f'{construct}({name}=...)', _Rule(replacement, 3, note))

    def _check_method_call(self, call: ast.Call) -> None:
        method, receiver = call.func.attr, call.func.value
        if method == 'run' and self._is_session(receiver):
            self._add(_method_position(call), f'{ast.unparse(receiver)}.run(...)', _RUN)
            if len(call.args) > 1:
                self._add_feed_dict(call.args[1], call.args[1])
        elif not self.names.uses_tensorflow or self.names.resolve(receiver):
            return
        elif method in ('minimize', 'apply_gradients'):
            for keyword in call.keywords:
                if keyword.arg == 'global_step':
                    self._add(_position(keyword), f'Optimizer.{method}(global_step=...)', _MINIMIZE)
        elif method in _V1_ITERATOR_METHODS:
            self._add(_method_position(call), f'Dataset.{method}()', _ITERATOR_METHOD)
        elif method == 'get_next' and (ast.unparse(receiver) in self._iterators or (
                isinstance(receiver, ast.Call) and self._makes_v1_iterator(receiver))):
            self._add(_method_position(call), 'Iterator.get_next()', _GET_NEXT)

    def _add_feed_dict(self, node: ast.AST, value: ast.AST) -> None:
        # Keyword names ('x') feed a step callable; tensor names ('x:0') still feed a graph.
        by_name = isinstance(value, ast.Dict) and value.keys and all(
                isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier()
                for key in value.keys)
        self._add(_position(node), 'feed_dict', _FEED_DICT_BY_NAME if by_name else _FEED_DICT)


# ---------------------------------------------------------------------------------------------------------
# Public API.

def check_source(text: str | bytes, filename: str = '<string>') -> list[Finding]:
    """The constructs to migrate in the Python source `text`, in line order. The source is parsed, never run.

    Raises:
      CheckError: `text` is not valid Python (the error's line and column say where).
    """
    try:
        tree = ast.parse(text, filename=filename)
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes in the source
        line = getattr(error, 'lineno', None) or 0
        col = getattr(error, 'offset', None) or 0
        message = getattr(error, 'msg', None) or str(error)
        raise CheckError(filename, f'syntax error: {message}', line, col) from None
    checker = _Checker(filename, tree)
    checker.visit(tree)
    return sorted(checker.findings.values(), key=lambda f: (f.line, f.col, f.construct))


def check_file(path: str | pathlib.Path) -> list[Finding]:
    """The constructs to migrate in the Python file at `path` (see `check_source`).

    Raises:
      CheckError: the file cannot be read, or is not valid Python.
    """
    filename = str(path)
    try:
        source = pathlib.Path(path).read_bytes()
    except OSError as error:
        raise CheckError(filename, f'cannot read: {error.strerror or error}') from None
    return check_source(source, filename)


def format_text(findings: Sequence[Finding], files_checked: int | None = None) -> str:
    """Findings for people: `file:line:col: stage N: construct -> replacement`, the note indented below,
    then a one-line count by stage (over `files_checked` files, when given)."""
    lines = []
    for finding in findings:
        lines.append(f'{finding.file}:{finding.line}:{finding.col}: stage {finding.stage}: '
                     f'{finding.construct} -> {finding.replacement}')
        lines.append(textwrap.fill(finding.note, width=110, initial_indent='    ', subsequent_indent='    '))
    in_files = '' if files_checked is None else f' in {files_checked} file{"s" if files_checked != 1 else ""}'
    if not findings:
        lines.append(f'Nothing to migrate{in_files}.')
    else:
        stages = sorted({finding.stage for finding in findings})
        counts = ', '.join(f'stage {stage}: {sum(f.stage == stage for f in findings)}' for stage in stages)
        plural = 's' if len(findings) != 1 else ''
        lines.append(f'{len(findings)} construct{plural} to migrate{in_files} ({counts}).')
    return '\n'.join(lines) + '\n'


def format_json(findings: Sequence[Finding], errors: Sequence[CheckError] = ()) -> str:
    """Findings for tools: `{"findings": [{file, line, col, construct, replacement, stage, note}, ...],
    "errors": [{file, line, col, message}, ...]}`."""
    document = {
            'findings': [dataclasses.asdict(finding) for finding in findings],
            'errors': [{'file': error.file, 'line': error.line, 'col': error.col, 'message': error.message}
                       for error in errors],
    }
    return json.dumps(document, indent=2) + '\n'


# ---------------------------------------------------------------------------------------------------------
# The command.

def _python_files(paths: Iterable[str]) -> list[pathlib.Path]:
    files = []
    for path in map(pathlib.Path, paths):
        files.extend(sorted(path.rglob('*.py')) if path.is_dir() else [path])
    return files


_DESCRIPTION = ('List the v1 training-loop constructs of Python scripts (read, never run), with the compat_mts '
                'or TF2 replacement of each and the migration stage (1-4) that changes it. Exit status: 0 '
                'nothing found, 1 constructs found, 2 a file could not be read or parsed.')


def _configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument('files', nargs='+', metavar='FILE',
                        help='Python files to check (a directory means every *.py file below it)')
    parser.add_argument('--json', action='store_true', help='print the findings as JSON, for tools')
    parser.add_argument('--max-stage', type=int, choices=sorted(STAGES), default=4, metavar='N',
                        help='list only what stages 1..N change (default: 4, everything); the stages: ' +
                             '; '.join(f'{stage} = {text}' for stage, text in STAGES.items()))
    parser.add_argument('--fail-on', choices=('any', 'none'), default='any',
                        help='exit with status 1 when anything is found (any, the default) or never (none)')
    parser.set_defaults(run=run)
    return parser


def add_check_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds `check` to the `add_subparsers()` object of the `compat-mts` parser; it dispatches on `args.run`."""
    return _configure_parser(subparsers.add_parser(
            'check', help='list the v1 constructs of scripts, their replacement and migration stage',
            description=_DESCRIPTION))


def run(args: argparse.Namespace) -> int:
    """Checks `args.files` and prints the findings; returns the exit status (0, 1 or 2)."""
    findings, errors = [], []
    files = _python_files(args.files)
    for path in files:
        try:
            findings.extend(f for f in check_file(path) if f.stage <= args.max_stage)
        except CheckError as error:
            errors.append(error)
    if args.json:
        sys.stdout.write(format_json(findings, errors))
    else:
        for error in errors:
            print(f'{error}', file=sys.stderr)
        sys.stdout.write(format_text(findings, files_checked=len(files) - len(errors)))
    if errors:
        return 2
    return 1 if findings and args.fail_on == 'any' else 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m compat_mts.check FILE...`: the `compat-mts check` command on its own."""
    parser = _configure_parser(argparse.ArgumentParser(prog='compat-mts check', description=_DESCRIPTION))
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == '__main__':
    sys.exit(main())
