"""`compat-mts check`: every v1 construct of a script is listed with its line, replacement and stage, and nothing else.

The checker reads syntax trees only, so these tests need no TensorFlow; the command is run as a real process.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from compat_mts.cli import check
from compat_mts.cli.check import catalogue, names as check_names
from tests.support import run_python

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = pathlib.Path(__file__).resolve().parent / 'check_samples'
CHECK_DIRECTORY = REPO / 'compat_mts' / 'cli' / 'check'
CHECK_SCRIPT = CHECK_DIRECTORY / '__main__.py'
CATALOGUE = CHECK_DIRECTORY / 'catalogue.py'
CHECKER_MODULES = [CHECK_DIRECTORY / f'{name}.py' for name in ('__init__', '__main__', 'names', 'checker', 'report')]

MTS = 'tf.compat.v1.train.MonitoredTrainingSession'


def constructs(source: str) -> list[tuple[str, int]]:
    """(construct, line) of each finding in `source` (dedented)."""
    return [(finding.construct, finding.line) for finding in check.check_source(textwrap.dedent(source), 'x.py')]


def only(source: str) -> check.Finding:
    findings = check.check_source(textwrap.dedent(source), 'x.py')
    assert len(findings) == 1, findings
    return findings[0]


# ---------------------------------------------------------------------------------------------------------
# The three sample v1 programs, against hand-made lists.

EXPECTED = {
    'regression.py': [
        ('tf.compat.v1.disable_eager_execution', 8),
        ('tf.compat.v1.placeholder', 14),
        ('tf.compat.v1.placeholder outside a graph', 14),
        ('tf.compat.v1.placeholder', 15),
        ('tf.compat.v1.placeholder outside a graph', 15),
        ('tf.compat.v1.get_variable', 16),
        ('tf.compat.v1.get_variable', 17),
        ('tf.compat.v1.train.get_or_create_global_step', 19),
        ('tf.compat.v1.train.GradientDescentOptimizer', 20),
        ('Optimizer.minimize(global_step=...)', 21),
        ('tf.compat.v1.train.StopAtStepHook', 28),
        (MTS, 29),
        (f'{MTS}(checkpoint_dir=...)', 29),
        (f'{MTS}(hooks=...)', 29),
        ('sess.run(...)', 32),
        ('feed_dict', 32),
    ],
    'dataset_summaries.py': [
        ('tf.compat.v1.data.make_one_shot_iterator', 17),
        ('Iterator.get_next()', 18),
        ('tf.compat.v1.variable_scope', 22),
        ('tf.compat.v1.get_variable', 23),
        ('tf.compat.v1.get_variable', 24),
        ('tf.compat.v1.summary.scalar', 28),
        ('tf.compat.v1.summary.scalar', 29),
        ('tf.compat.v1.summary.histogram', 30),
        ('tf.compat.v1.train.get_or_create_global_step', 31),
        ('tf.compat.v1.train.AdamOptimizer', 32),
        ('Optimizer.minimize(global_step=...)', 32),
        ('tf.compat.v1.summary.merge_all', 39),
        ('tf.compat.v1.train.Scaffold', 40),
        ('tf.compat.v1.train.Saver', 40),
        ('tf.compat.v1.train.Saver(max_to_keep=...)', 40),
        ('tf.compat.v1.train.StopAtStepHook', 42),
        ('tf.compat.v1.train.SummarySaverHook', 43),
        (MTS, 45),
        (f'{MTS}(checkpoint_dir=...)', 45),
        (f'{MTS}(scaffold=...)', 45),
        (f'{MTS}(hooks=...)', 45),
        (f'{MTS}(save_summaries_steps=...)', 46),
        (f'{MTS}(save_checkpoint_steps=...)', 46),
        ('sess.run(...)', 48),
    ],
    'distributed_hooks.py': [
        ('class LossThresholdHook(tf.compat.v1.train.SessionRunHook)', 10),
        ('tf.compat.v1.get_default_graph', 17),
        ('tf.compat.v1.train.get_global_step', 18),
        ('tf.compat.v1.train.SessionRunArgs', 21),
        ('tf.compat.v1.train.ClusterSpec', 30),
        ('tf.compat.v1.train.Server', 31),
        ('tf.device(<device function>)', 37),
        ('tf.compat.v1.train.replica_device_setter', 37),
        ('tf.compat.v1.get_variable', 39),
        ('tf.compat.v1.train.get_or_create_global_step', 41),
        ('tf.compat.v1.train.AdagradOptimizer', 42),
        ('Optimizer.minimize(global_step=...)', 42),
        ('tf.compat.v1.ConfigProto', 44),
        ('tf.compat.v1.train.StopAtStepHook', 46),
        ('tf.compat.v1.train.LoggingTensorHook', 47),
        (MTS, 50),
        (f'{MTS}(master=...)', 50),
        (f'{MTS}(is_chief=...)', 50),
        (f'{MTS}(checkpoint_dir=...)', 51),
        (f'{MTS}(hooks=...)', 51),
        (f'{MTS}(config=...)', 52),
        ('sess.run(...)', 54),
    ],
}


# What of it blocks stage 1: placeholders built outside a graph (the script relied on disable_eager_execution,
# which goes at stage 1), the parameter-server cluster and its device placement.
BLOCKING = {
    'regression.py': [
        ('tf.compat.v1.placeholder outside a graph', 14),
        ('tf.compat.v1.placeholder outside a graph', 15),
    ],
    'dataset_summaries.py': [],
    'distributed_hooks.py': [
        ('tf.compat.v1.train.ClusterSpec', 30),
        ('tf.compat.v1.train.Server', 31),
        ('tf.device(<device function>)', 37),
        ('tf.compat.v1.train.replica_device_setter', 37),
    ],
}


@pytest.mark.parametrize('sample', sorted(EXPECTED))
def test_sample_program_lists_exactly_its_v1_constructs(sample):
    findings = check.check_file(SAMPLES / sample)
    assert [(finding.construct, finding.line) for finding in findings] == EXPECTED[sample]
    assert [(finding.construct, finding.line) for finding in findings if finding.blocks] == BLOCKING[sample]
    assert {finding.file for finding in findings} == {str(SAMPLES / sample)}


def test_sample_findings_carry_the_replacement_and_stage_of_design():
    findings = {(f.construct, f.line): f for f in check.check_file(SAMPLES / 'regression.py')}
    session = findings[(MTS, 29)]
    assert (session.replacement, session.stage, session.col) == ('compat_mts.MonitoredTrainingSession', 1, 10)
    stop = findings[('tf.compat.v1.train.StopAtStepHook', 28)]
    assert (stop.replacement, stop.stage) == ('compat_mts.StopAtStepHook', 1)
    assert 'steps_per_epoch' in stop.note  # its stage-4 Keras peer
    assert findings[('tf.compat.v1.placeholder', 14)].stage == 2
    assert findings[('Optimizer.minimize(global_step=...)', 21)].stage == 2
    assert findings[('sess.run(...)', 32)].stage == 3
    assert findings[(f'{MTS}(checkpoint_dir=...)', 29)].stage == 3


# Each v1 test program but the Horovod reference (the one-process v1 run an upgraded Horovod program is compared
# with, tests/test_upgrade_programs.py) has a stage-1 twin beside it.
REFERENCES_WITHOUT_TWIN = {'horovod_mnist_single_v1.py'}
V1_PROGRAMS = sorted(
    path for path in (REPO / 'tests' / 'v1_programs').glob('*_v1.py') if path.name not in REFERENCES_WITHOUT_TWIN
)


def test_every_v1_program_has_its_stage_1_twin_but_the_references():
    v1_programs = {path.name for path in (REPO / 'tests' / 'v1_programs').glob('*_v1.py')}
    without_twin = {
        name
        for name in v1_programs
        if not (REPO / 'tests' / 'v1_programs' / name.replace('_v1.py', '_compat.py')).exists()
    }
    assert without_twin == REFERENCES_WITHOUT_TWIN


@pytest.mark.parametrize('v1_program', V1_PROGRAMS, ids=lambda path: path.name)
def test_the_stage_1_twin_of_each_v1_test_program_has_nothing_left_for_stage_1(v1_program):
    twin = v1_program.with_name(v1_program.name.replace('_v1.py', '_compat.py'))
    assert any(finding.stage == 1 for finding in check.check_file(v1_program))
    assert [finding for finding in check.check_file(twin) if finding.stage == 1] == []


# ---------------------------------------------------------------------------------------------------------
# How names are resolved.


@pytest.mark.parametrize(
    'source',
    [
        'import tensorflow.compat.v1 as tf\ntf.train.Saver()',
        'import tensorflow as tf\ntf.compat.v1.train.Saver()',
        'import tensorflow as tf\ntf.train.Saver()',  # TF 1.x: only v1 has tf.train.Saver
        'import tensorflow.compat.v1\ntensorflow.compat.v1.train.Saver()',
        'from tensorflow.compat import v1\nv1.train.Saver()',
        'from tensorflow.compat.v1 import train\ntrain.Saver()',
        'from tensorflow.compat.v1.train import Saver as V1Saver\nV1Saver()',
        'from tensorflow.compat.v1.train import *\nSaver()',
        'import tensorflow as tf\ntf1 = tf.compat.v1\ntf1.train.Saver()',
        'import tensorflow as tf\nv1_train = tf.compat.v1.train\nv1_train.Saver()',
        'from tensorflow.python.training import saver\nsaver.Saver()',
    ],
)
def test_every_import_form_resolves_to_the_v1_name(source):
    assert constructs(source) == [('tf.compat.v1.train.Saver', source.count('\n') + 1)]


def test_statements_are_every_statement_in_the_walk_s_order_and_bind_the_names_the_walk_would():
    """`names.statements` skips the expressions but keeps `ast.walk`'s order, in which a handler's or a case's
    statements are a level deeper than the `try`'s or `match`'s own: the later binding of a name wins."""
    source = textwrap.dedent("""\
        import os
        try:
            import tensorflow as tf
        except ImportError:
            import other as tf
        else:
            v1 = tf.compat.v1
        finally:
            pass
        match os.name:
            case 'posix':
                import tensorflow.compat.v1 as tf
                for _ in ():
                    while True:
                        train = tf.train
        def main():
            class Inner:
                import tf_slim as slim
            if True:
                summary = tf.summary
        """)
    tree = ast.parse(source)
    assert check_names.statements(tree) == [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    resolved = check_names.Names(tree)
    assert resolved.aliases == {
        'os': 'os',
        'tf': 'tensorflow.compat.v1',  # The case's import, a level deeper than the `try`'s, comes later.
        'v1': 'tensorflow.compat.v1.compat.v1',  # Aliases are bound after every import.
        'slim': 'tf_slim',
        'train': 'tensorflow.compat.v1.train',
        'summary': 'tensorflow.compat.v1.summary',
    }


def test_names_of_tf2_that_v1_also_has_are_v1_only_in_tf1_code():
    tf2_code = """\
        import tensorflow as tf
        tf.summary.scalar('loss', 0.5, step=1)
        cluster = tf.train.ClusterSpec({'worker': ['localhost:2222']})
        """
    assert constructs(tf2_code) == []
    tf1_code = tf2_code + 'x = tf.placeholder(tf.float32)\n'
    assert constructs(tf1_code) == [
        ('tf.compat.v1.summary.scalar', 2),
        ('tf.compat.v1.train.ClusterSpec', 3),
        ('tf.compat.v1.placeholder', 4),
        ('tf.compat.v1.placeholder outside a graph', 4),
    ]
    assert constructs("import tensorflow as tf\ntf.logging.info('hi')\ntf.summary.scalar('loss', 1.0)") == [
        ('tf.compat.v1.summary.scalar', 3)
    ]


def test_v1_spelled_explicitly_is_reported_in_tf2_code_and_compat_v2_never():
    assert constructs("""\
        import tensorflow as tf
        tf.compat.v1.summary.scalar('loss', 1.0)
        tf.compat.v2.summary.scalar('loss', 1.0, step=1)
        tf.summary.scalar('loss', 1.0, step=1)
        """) == [('tf.compat.v1.summary.scalar', 2)]


def test_the_v1_binding_wins_in_a_try_except_import():
    assert constructs("""\
        try:
            import tensorflow.compat.v1 as tf
        except ImportError:
            import tensorflow as tf
        tf.summary.scalar('loss', 1.0)
        """) == [('tf.compat.v1.summary.scalar', 5)]


def test_module_alias_made_from_the_name_it_replaces():
    assert constructs("""\
        import tensorflow as tf
        tf = tf.compat.v1
        tf.summary.merge_all()
        """) == [('tf.compat.v1.summary.merge_all', 3)]


def test_estimator_and_private_module_spellings_of_the_hooks():
    assert constructs("""\
        import tensorflow as tf
        from tensorflow.python.training import session_run_hook
        tf.estimator.StopAtStepHook(num_steps=10)
        class Hook(session_run_hook.SessionRunHook):
            pass
        """) == [('tf.estimator.StopAtStepHook', 3), ('class Hook(tf.compat.v1.train.SessionRunHook)', 4)]


def test_imports_alone_are_not_findings():
    assert constructs('from tensorflow.compat.v1.train import Saver, MonitoredTrainingSession\n') == []


# ---------------------------------------------------------------------------------------------------------
# Each construct.


def test_monitored_training_session_lists_each_argument_by_keyword_and_by_position():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        options = {}
        with tf.train.MonitoredTrainingSession('', True, '/tmp/ckpt', hooks=[], **options) as sess:
            pass
        """) == [
        (MTS, 3),
        (f'{MTS}(master=...)', 3),
        (f'{MTS}(is_chief=...)', 3),
        (f'{MTS}(checkpoint_dir=...)', 3),
        (f'{MTS}(hooks=...)', 3),
    ]


@pytest.mark.parametrize(
    'argument',
    [
        'master',
        'is_chief',
        'checkpoint_dir',
        'scaffold',
        'hooks',
        'chief_only_hooks',
        'save_checkpoint_secs',
        'save_summaries_steps',
        'save_summaries_secs',
        'config',
        'stop_grace_period_secs',
        'log_step_count_steps',
        'max_wait_secs',
        'save_checkpoint_steps',
        'summary_dir',
        'save_graph_def',
    ],
)
def test_each_session_argument_changes_when_the_loop_becomes_model_fit(argument):
    findings = check.check_source(
        f'import tensorflow.compat.v1 as tf\ntf.train.MonitoredTrainingSession({argument}=None)\n'
    )
    session, given = findings
    assert session.construct == MTS and session.stage == 1
    assert (given.construct, given.stage, given.col) == (f'{MTS}({argument}=...)', 3, 35)
    assert given.replacement and given.note


@pytest.mark.parametrize(
    'hook',
    [
        'StopAtStepHook',
        'NanTensorHook',
        'LoggingTensorHook',
        'CheckpointSaverHook',
        'CheckpointSaverListener',
        'StepCounterHook',
        'SummarySaverHook',
        'GlobalStepWaiterHook',
        'FinalOpsHook',
        'FeedFnHook',
        'ProfilerHook',
        'SecondOrStepTimer',
        'NanLossDuringTrainingError',
    ],
)
def test_each_built_in_hook_becomes_its_compat_mts_namesake_at_stage_1(hook):
    finding = only(f'import tensorflow as tf\nh = tf.compat.v1.train.{hook}()\n')
    assert (finding.construct, finding.replacement, finding.stage) == (
        f'tf.compat.v1.train.{hook}',
        f'compat_mts.{hook}',
        1,
    )
    assert 'At stage 4:' in finding.note


def test_a_session_creator_base_becomes_compat_mts_session_creator():
    finding = only('import tensorflow as tf\nclass Mine(tf.compat.v1.train.SessionCreator):\n    pass\n')
    assert (finding.replacement, finding.stage) == ('compat_mts.SessionCreator', 1)
    assert 'not a tf.compat.v1.Session' in finding.note


def test_user_hook_subclass_is_one_finding_that_says_it_works_unchanged():
    finding = only("""\
        import tensorflow.compat.v1 as tf

        class EveryStepHook(tf.train.SessionRunHook):
            def after_run(self, run_context, run_values):
                pass
        """)
    assert (finding.construct, finding.line, finding.stage) == (
        'class EveryStepHook(tf.compat.v1.train.SessionRunHook)',
        3,
        2,
    )
    assert 'works unchanged' in finding.note and 'step-output names' in finding.note


def test_subclass_of_a_built_in_hook_becomes_a_subclass_of_the_compat_mts_hook():
    finding = only('from tensorflow.compat.v1 import train\nclass Quiet(train.LoggingTensorHook):\n    pass\n')
    assert (finding.construct, finding.replacement, finding.stage) == (
        'class Quiet(tf.compat.v1.train.LoggingTensorHook)',
        'compat_mts.LoggingTensorHook',
        1,
    )


def test_scaffold_saver_and_global_step_helpers():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        step = tf.train.get_or_create_global_step()
        same = tf.train.get_global_step()
        other = tf.train.create_global_step()
        value = tf.train.global_step(sess, step)
        scaffold = tf.train.Scaffold(saver=tf.train.Saver(), init_fn=None)
        """) == [
        ('tf.compat.v1.train.get_or_create_global_step', 2),
        ('tf.compat.v1.train.get_global_step', 3),
        ('tf.compat.v1.train.create_global_step', 4),
        ('tf.compat.v1.train.global_step', 5),
        ('tf.compat.v1.train.Scaffold', 6),
        ('tf.compat.v1.train.Saver', 6),
    ]


def test_placeholders_and_feed_dict_stage_depends_on_the_keys():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        x = tf.placeholder(tf.float32, [None, 3])
        sess.run(loss, feed_dict={x: batch})
        sess.run(step, feed_dict={'x': batch})
        sess.run(loss, {x: batch})
        sess.run(loss, feed_dict={'x:0': batch})
        """)
    )
    assert [(f.construct, f.line, f.stage) for f in findings] == [
        ('tf.compat.v1.placeholder', 2, 2),
        ('tf.compat.v1.placeholder outside a graph', 2, 1),
        ('sess.run(...)', 3, 3),
        ('feed_dict', 3, 2),
        ('sess.run(...)', 4, 3),
        ('feed_dict', 4, 3),  # keyword names already feed a compat_mts step
        ('sess.run(...)', 5, 3),
        ('feed_dict', 5, 2),
        ('sess.run(...)', 6, 3),
        ('feed_dict', 6, 2),
    ]  # a tensor name feeds a graph


def test_v1_summaries_and_the_file_writer():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        tf.summary.scalar('loss', loss)
        tf.summary.image('input', images)
        merged = tf.summary.merge_all()
        writer = tf.summary.FileWriter('/tmp/logs')
        writer.add_summary(tf.summary.Summary(value=[]), 1)
        """)
    )
    assert [(f.construct, f.stage) for f in findings] == [
        ('tf.compat.v1.summary.scalar', 2),
        ('tf.compat.v1.summary.image', 2),
        ('tf.compat.v1.summary.merge_all', 2),
        ('tf.compat.v1.summary.FileWriter', 1),
        ('tf.compat.v1.summary.Summary', 1),
    ]


def test_config_proto_sessions_and_their_run_calls():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
        with tf.Session(config=config) as s:
            s.run(tf.global_variables_initializer())
        interactive = tf.InteractiveSession()
        tf.Session().run(x)
        """) == [
        ('tf.compat.v1.ConfigProto', 2),
        ('tf.compat.v1.GPUOptions', 2),
        ('tf.compat.v1.Session', 3),
        ('s.run(...)', 4),
        ('tf.compat.v1.global_variables_initializer', 4),
        ('tf.compat.v1.InteractiveSession', 5),
        ('tf.compat.v1.Session', 6),
        ('tf.Session().run(...)', 6),
    ]  # the receiver as the script spells it


def test_run_on_session_like_names_only():
    assert constructs("""\
        import tensorflow as tf
        mon_sess.run(train_op)
        run_context.session.run(loss)
        self._session.run(loss)
        strategy.run(step_fn, args=(batch,))
        tf.compat.v1.app.run(main)
        subprocess.run(['ls'])
        """) == [('mon_sess.run(...)', 2), ('run_context.session.run(...)', 3), ('self._session.run(...)', 4)]


def test_distributed_constructs_in_tf1_code():
    assert constructs("""\
        import tensorflow as tf
        cluster = tf.train.ClusterSpec({'worker': ['localhost:2222']})
        server = tf.train.Server(cluster, job_name='worker', task_index=0)
        other = tf.distribute.Server(cluster, job_name='worker', task_index=0)
        """) == [
        ('tf.compat.v1.train.ClusterSpec', 2),
        ('tf.compat.v1.train.Server', 3),
        ('tf.compat.v1.distribute.Server', 4),
    ]


def test_v1_optimizers_and_minimize_with_a_global_step():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        optimizer = tf.train.MomentumOptimizer(0.1, momentum=0.9)
        train_op = optimizer.minimize(loss, global_step=step)
        apply_op = optimizer.apply_gradients(grads_and_vars, global_step=step)
        """)
    )
    assert [(f.construct, f.line, f.col, f.stage) for f in findings] == [
        ('tf.compat.v1.train.MomentumOptimizer', 2, 13, 2),
        ('Optimizer.minimize(global_step=...)', 3, 37, 2),
        ('Optimizer.apply_gradients(global_step=...)', 4, 54, 2),
    ]
    assert findings[0].replacement == 'tf.keras.optimizers.SGD(momentum=...)'


def test_variables_and_scopes():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        with tf.variable_scope('dense'):
            w = tf.get_variable('w', [3, 1])
        """) == [('tf.compat.v1.variable_scope', 2), ('tf.compat.v1.get_variable', 3)]


def test_v1_dataset_iterators():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        iterator = dataset.make_initializable_iterator()
        features = iterator.get_next()
        batch = tf.data.make_one_shot_iterator(dataset).get_next()
        structured = tf.data.Iterator.from_structure(types, shapes)
        """) == [
        ('Dataset.make_initializable_iterator()', 2),
        ('Iterator.get_next()', 3),
        ('tf.compat.v1.data.make_one_shot_iterator', 4),
        ('Iterator.get_next()', 4),
        ('tf.compat.v1.data.Iterator', 5),
    ]


def test_eager_switches_are_removed_at_stage_1():
    findings = check.check_source(
        'import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\ntf.compat.v1.disable_eager_execution()\n'
    )
    assert [(f.construct, f.stage, f.blocks) for f in findings] == [
        ('tf.compat.v1.disable_v2_behavior', 1, False),
        ('tf.compat.v1.disable_eager_execution', 1, False),
    ]
    assert findings[1].replacement == 'nothing: remove the call'
    assert "'with tf.Graph().as_default():' block" in findings[1].note and 'wrap_graph' in findings[1].note


# ---------------------------------------------------------------------------------------------------------
# What blocks stage 1: lines that fail on TensorFlow 2.21 as written, each with the edit that makes it run.


def blocking(source: str) -> list[tuple[str, int]]:
    """(construct, line) of each finding of `source` (dedented) that blocks stage 1."""
    return [(f.construct, f.line) for f in check.check_source(textwrap.dedent(source), 'x.py') if f.blocks]


@pytest.mark.parametrize(
    'source, construct, replacement',
    [
        (
            'import tensorflow as tf\ninit = tf.contrib.layers.xavier_initializer()',
            'tf.contrib.layers.xavier_initializer',
            'tf.compat.v1.glorot_uniform_initializer() (uniform=False: tf.compat.v1.glorot_normal_initializer())',
        ),
        (
            'import tensorflow.compat.v1 as tf\nreg = tf.contrib.layers.l2_regularizer(0.1)',
            'tf.contrib.layers.l2_regularizer',
            'tf.keras.regularizers.l2(scale / 2)',
        ),
        (
            'import tensorflow as tf\nhparams = tf.contrib.training.HParams(learning_rate=0.1)',
            'tf.contrib.training.HParams',
            'a plain Python object: types.SimpleNamespace(**values) or a dataclass',
        ),
        (
            'import tensorflow as tf\nnet = tf.contrib.slim.conv2d(images, 32, 3)',
            'tf.contrib.slim.conv2d',
            'tf_slim.conv2d',
        ),
        (
            'import tensorflow as tf\nstep = tf.contrib.framework.get_or_create_global_step()',
            'tf.contrib.framework.get_or_create_global_step',
            'tf.compat.v1.train.get_or_create_global_step()',
        ),
        (
            'import tensorflow as tf\ncell = tf.contrib.rnn.LSTMCell(64)',
            'tf.contrib.rnn.LSTMCell',
            "tf.compat.v1.nn.rnn_cell.LSTMCell, with pip install 'compat-mts[legacy]' and TF_USE_LEGACY_KERAS=1 "
            'set before TensorFlow is imported',
        ),
        (
            'import tensorflow as tf\ndecoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, state)',
            'tf.contrib.seq2seq.BasicDecoder',
            'a rewrite: TensorFlow 2 has no tf.contrib.seq2seq.BasicDecoder',
        ),
    ],
)
def test_each_use_of_tf_contrib_blocks_stage_1_with_its_replacement(source, construct, replacement):
    finding = only(source)
    assert (finding.construct, finding.replacement, finding.stage, finding.blocks) == (construct, replacement, 1, True)
    assert finding.note.startswith('tf.contrib was removed in TensorFlow 2.0')


def test_the_l2_regularizer_edit_keeps_the_contrib_penalty():
    finding = only('import tensorflow as tf\nreg = tf.contrib.layers.l2_regularizer(0.1)')
    assert 'scale * sum(w**2) / 2' in finding.note and 'l * sum(w**2)' in finding.note


def test_a_contrib_import_is_one_finding_and_the_uses_it_covers_are_not_repeated():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        from tensorflow.contrib import slim
        import tensorflow.contrib.layers as layers
        from tensorflow.contrib.layers import xavier_initializer
        framework = tf.contrib.framework
        net = slim.conv2d(images, 32, 3)
        slim.learning.train(train_op, '/tmp/logs')
        init = xavier_initializer()
        reg = layers.l2_regularizer(0.1)
        embedded = layers.embed_sequence(ids, vocab_size=10, embed_dim=4)
        with framework.arg_scope([slim.conv2d], padding='SAME'):
            pass
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.col, f.blocks) for f in findings] == [
        ('tf.contrib.slim', 2, 32, True),
        ('tf.contrib.layers', 3, 8, True),
        ('tf.contrib.layers.xavier_initializer', 4, 39, True),
        ('tf.contrib.framework', 5, 13, True),
        ('tf.contrib.slim.learning.train', 7, 1, True),  # tf_slim's loop needs graph mode
        ('tf.contrib.layers.embed_sequence', 10, 12, True),
    ]  # nor this
    assert findings[0].replacement == 'tf_slim (pip install tf-slim): import tf_slim as slim'
    assert findings[4].replacement.startswith('compat_mts.slim_learning.train')


def test_premade_estimators_and_heads_are_stage_1_and_boosted_trees_block():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        classifier = tf.estimator.DNNClassifier(hidden_units=[10], feature_columns=columns, n_classes=3)
        regressor = tf.compat.v1.estimator.LinearRegressor(feature_columns=columns)
        head = tf.estimator.MultiClassHead(3)
        trees = tf.estimator.BoostedTreesClassifier(columns, n_batches_per_layer=1)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.replacement, f.blocks) for f in findings] == [
        ('tf.estimator.DNNClassifier', 2, 'compat_mts.estimator.DNNClassifier', False),
        ('tf.estimator.LinearRegressor', 3, 'compat_mts.estimator.LinearRegressor', False),
        ('tf.estimator.MultiClassHead', 4, 'compat_mts.estimator.MultiClassHead', False),
        ('tf.estimator.BoostedTreesClassifier', 5, findings[-1].replacement, True),
    ]
    assert {f.stage for f in findings} == {1}
    assert 'At stage 3 it becomes Keras: tf.keras.Sequential of Dense layers' in findings[0].note
    assert findings[-1].replacement.startswith('YDF (pip install ydf; ydf.GradientBoostedTreesLearner')


def test_other_estimator_names_become_compat_mts_estimator_at_stage_1():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        config = tf.estimator.RunConfig(model_dir='/tmp/model')
        estimator = tf.compat.v1.estimator.Estimator(model_fn, config=config)
        spec = tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op)
        receiver = tf.estimator.export.ServingInputReceiver(features, receivers)
        tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
        input_fn = tf.estimator.inputs.numpy_input_fn({'x': x}, y)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.replacement, f.blocks) for f in findings] == [
        ('tf.estimator.RunConfig', 2, 'compat_mts.estimator.RunConfig', False),
        ('tf.estimator.Estimator', 3, 'compat_mts.estimator.Estimator', False),
        ('tf.estimator.EstimatorSpec', 4, 'compat_mts.estimator.EstimatorSpec', False),
        ('tf.estimator.ModeKeys', 4, 'compat_mts.estimator.ModeKeys', False),
        ('tf.estimator.export.ServingInputReceiver', 5, 'compat_mts.estimator.export.ServingInputReceiver', False),
        ('tf.estimator.train_and_evaluate', 6, 'compat_mts.estimator.train_and_evaluate', False),
        ('tf.estimator.inputs.numpy_input_fn', 7, 'compat_mts.estimator.inputs.numpy_input_fn', False),
    ]
    assert {f.stage for f in findings} == {1}


def test_an_estimator_import_is_the_edit_and_only_the_names_it_cannot_cover_are_listed_again():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        from tensorflow import estimator
        est = tf.estimator
        model = estimator.Estimator(model_fn)
        baseline = est.BaselineClassifier(n_classes=2)
        trees = est.BoostedTreesClassifier(columns, n_batches_per_layer=1)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.replacement, f.blocks) for f in findings] == [
        ('tf.estimator', 2, 'compat_mts.estimator (import compat_mts.estimator as estimator)', False),
        ('tf.estimator', 3, 'compat_mts.estimator (import compat_mts.estimator as estimator)', False),
        ('tf.estimator.BoostedTreesClassifier', 6, findings[-1].replacement, True),
    ]
    assert 'ydf' in findings[-1].replacement


def _literal_assignment(path: pathlib.Path, name: str):
    """The literal value assigned to `name` at the top level of the module at `path`, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [target.id for target in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f'{path} assigns no {name}')


def test_the_estimator_catalogue_is_what_compat_mts_estimator_has():
    package = REPO / 'compat_mts' / 'estimator'
    import compat_mts.estimator as estimator

    provided = set(_literal_assignment(package / '__init__.py', '__all__'))
    for name in set(catalogue.PREMADE_ESTIMATORS) - provided:  # The premade names the package lacks, it refuses.
        with pytest.raises(AttributeError, match=f'compat_mts.estimator.{name} is not provided; use instead'):
            getattr(estimator, name)
    assert catalogue._ESTIMATOR_NAMES <= provided
    for submodule, names in catalogue._ESTIMATOR_SUBMODULE_NAMES.items():
        path = (
            package / f'{submodule}.py'
            if (package / f'{submodule}.py').is_file()
            else package / submodule / '__init__.py'
        )
        assert names <= set(_literal_assignment(path, '__all__')), submodule
    export = {
        node.name
        for node in ast.parse((package / 'export' / '__init__.py').read_text()).body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    assert catalogue._ESTIMATOR_EXPORT_NAMES <= export


@pytest.mark.parametrize(
    'source, construct, keras',
    [
        (
            'import tensorflow.compat.v1 as tf\nh = tf.layers.dense(x, 10)',
            'tf.compat.v1.layers.dense',
            'tf.keras.layers.Dense',
        ),
        (
            'import tensorflow as tf\nh = tf.compat.v1.layers.Conv2D(8, 3)(x)',
            'tf.compat.v1.layers.Conv2D',
            'tf.keras.layers.Conv2D',
        ),
        (
            'import tensorflow as tf\nh = tf.layers.max_pooling2d(x, 2, 2)',
            'tf.compat.v1.layers.max_pooling2d',
            'tf.keras.layers.MaxPooling2D',
        ),
        (
            'from tensorflow.compat.v1 import layers\nh = layers.batch_normalization(x)',
            'tf.compat.v1.layers.batch_normalization',
            'tf.keras.layers.BatchNormalization',
        ),
        (
            'import tensorflow as tf\ncell = tf.compat.v1.nn.rnn_cell.BasicLSTMCell(8)',
            'tf.compat.v1.nn.rnn_cell.BasicLSTMCell',
            'tf.keras.layers.LSTMCell',
        ),
    ],
)
def test_v1_layers_block_stage_1_with_the_legacy_keras_edit_and_become_keras_at_stage_2(source, construct, keras):
    finding = only(source)
    assert (finding.construct, finding.stage, finding.blocks) == (construct, 1, True)
    assert finding.replacement == (
        f"pip install 'compat-mts[legacy]' and TF_USE_LEGACY_KERAS=1 set before "
        f'TensorFlow is imported; at stage 2 {keras}'
    )
    assert 'is not available with Keras 3' in finding.note


def test_v1_layers_do_not_block_when_the_script_sets_legacy_keras_before_importing_tensorflow():
    layers = 'h = tf.compat.v1.layers.dense(x, 10)\n'
    before = "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\nimport tensorflow as tf\n" + layers
    finding = only(before)
    assert (finding.stage, finding.blocks, finding.replacement) == (2, False, 'tf.keras.layers.Dense')
    assert 'sets TF_USE_LEGACY_KERAS=1' in finding.note
    assert (
        only("import os\nos.environ.setdefault('TF_USE_LEGACY_KERAS', '1')\nimport tensorflow as tf\n" + layers).blocks
        is False
    )
    too_late = "import os\nimport tensorflow as tf\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\n" + layers
    assert only(too_late).blocks is True
    assert only("import os\nos.environ['TF_USE_LEGACY_KERAS'] = '0'\nimport tensorflow as tf\n" + layers).blocks


def test_v1_losses_and_metrics_are_not_findings():
    assert (
        constructs("""\
        import tensorflow.compat.v1 as tf
        loss = tf.losses.softmax_cross_entropy(labels, logits)
        accuracy, update = tf.metrics.accuracy(labels, predictions)
        """)
        == []
    )


def test_reading_value_of_a_shape_dimension_blocks_stage_1():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        units = x.shape[1].value
        dim = reshape.get_shape()[1].value
        shape = images.get_shape()
        channels = shape[-1].value
        also = images.shape
        width = also[2].value
        fine = x.shape.dims[1].value
        rest = x.shape[1:].num_elements()
        known = tf.compat.v1.dimension_value(x.shape[1])
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.col, f.blocks) for f in findings] == [
        ('x.shape[1].value', 2, 9, True),
        ('reshape.get_shape()[1].value', 3, 7, True),
        ('shape[-1].value', 5, 12, True),
        ('also[2].value', 7, 9, True),
    ]
    assert findings[0].replacement == (
        'tf.compat.v1.dimension_value(x.shape[1]), or tf.compat.v1.disable_v2_tensorshape() at the top of the script'
    )
    assert "'int' object has no attribute 'value'" in findings[0].note


def test_shape_value_does_not_block_once_the_script_keeps_v1_shapes():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        tf.compat.v1.disable_v2_tensorshape()
        units = x.shape[1].value
        """),
        'x.py',
    )
    assert [(f.construct, f.stage, f.blocks) for f in findings] == [
        ('tf.compat.v1.disable_v2_tensorshape', 2, False),
        ('x.shape[1].value', 2, False),
    ]
    assert findings[1].replacement == 'tf.compat.v1.dimension_value(x.shape[1]), or x.shape[1] (an int or None)'


def test_disable_v2_behavior_does_not_keep_shape_reads_working_since_it_goes_at_stage_1():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        units = x.shape[1].value
        """),
        'x.py',
    )
    assert [(f.construct, f.stage, f.blocks) for f in findings] == [
        ('tf.compat.v1.disable_v2_behavior', 1, False),
        ('x.shape[1].value', 1, True),
    ]
    switch = findings[0]
    assert switch.replacement == (
        'nothing: remove the call (tf.compat.v1.disable_v2_tensorshape() in its place keeps v1 shapes)'
    )
    assert 'x.shape[i].value raises AttributeError' in switch.note
    assert 'disable_v2_tensorshape() keeps v1 shapes' in switch.note


def test_a_graph_block_runs_as_written_at_stage_1():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        with tf.Graph().as_default():
            pass
        graph = tf.compat.v1.Graph()
        with graph.as_default() as g:
            pass
        other.as_default()
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.stage, f.blocks) for f in findings] == [
        ('tf.Graph().as_default()', 2, 2, False),
        ('graph.as_default()', 5, 2, False),
    ]
    assert findings[0].note.startswith(
        'Runs as written at stage 1: a compat_mts session created inside it runs that graph eagerly'
    )


def test_a_parameter_server_cluster_blocks_stage_1():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        hosts = {'ps': ['ps0:2222'], 'worker': ['worker0:2222']}
        cluster = tf.train.ClusterSpec(hosts)
        inline = tf.train.ClusterSpec({'ps': ['ps0:2222'], 'worker': ['worker0:2222']})
        server = tf.train.Server(cluster, job_name='worker', task_index=0)
        ps_task = tf.train.Server(other_cluster, job_name='ps', task_index=0)
        workers = tf.train.ClusterSpec({'worker': ['localhost:2222']})
        single = tf.train.Server(workers, job_name='worker', task_index=0)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.blocks) for f in findings] == [
        ('tf.compat.v1.train.ClusterSpec', 3, True),
        ('tf.compat.v1.train.ClusterSpec', 4, True),
        ('tf.compat.v1.train.Server', 5, True),
        ('tf.compat.v1.train.Server', 6, True),
        ('tf.compat.v1.train.ClusterSpec', 7, False),
        ('tf.compat.v1.train.Server', 8, False),
    ]
    assert "add a 'chief' job to the cluster" in findings[0].note
    assert 'compat_mts.parameter_server_strategy(cluster)' in findings[0].replacement
    assert 'single-task server runs in-process' in findings[-1].note


def test_a_ps_cluster_and_its_device_setter_work_at_stage_1_on_the_chief_of_parameter_server_strategy():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        import compat_mts as mts
        cluster = tf.train.ClusterSpec({'chief': ['c:1'], 'ps': ['ps0:2222'], 'worker': ['worker0:2222']})
        strategy = mts.parameter_server_strategy(cluster)
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            pass
        """),
        'x.py',
    )
    by_construct = {f.construct: f for f in findings}
    assert not any(f.blocks for f in findings), findings
    assert by_construct['tf.compat.v1.train.replica_device_setter'].stage == 2
    assert 'Works at stage 1 on the chief' in by_construct['tf.compat.v1.train.replica_device_setter'].note
    assert "Works at stage 1 with its 'chief' job" in by_construct['tf.compat.v1.train.ClusterSpec'].note


def test_a_device_function_blocks_stage_1_under_tf2_tf_device_only():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        setter = tf.compat.v1.train.replica_device_setter(ps_tasks=1)
        with tf.device(setter):
            pass
        with tf.device(lambda op: '/cpu:0'):
            pass
        with tf.compat.v1.device(setter):
            pass
        with tf.device('/cpu:0'):
            pass
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.replacement, f.blocks) for f in findings] == [
        ('tf.compat.v1.train.replica_device_setter', 2, findings[0].replacement, True),
        ('tf.device(<device function>)', 3, 'tf.compat.v1.device(...)', True),
        ('tf.device(<device function>)', 5, 'tf.compat.v1.device(...)', True),
    ]
    assert 'tf.device does not support functions' in findings[1].note
    assert blocking('import tensorflow.compat.v1 as tf\nwith tf.device(setter):\n    pass\n') == []


def test_saver_max_to_keep_is_honoured_at_stage_1_and_says_where_it_goes():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        saver = tf.train.Saver(max_to_keep=3, keep_checkpoint_every_n_hours=2)
        positional = tf.train.Saver(None, False, False, 10)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.stage, f.blocks) for f in findings] == [
        ('tf.compat.v1.train.Saver', 2, 2, False),
        ('tf.compat.v1.train.Saver(max_to_keep=...)', 2, 2, False),
        ('tf.compat.v1.train.Saver(keep_checkpoint_every_n_hours=...)', 2, 2, False),
        ('tf.compat.v1.train.Saver', 3, 2, False),
        ('tf.compat.v1.train.Saver(max_to_keep=...)', 3, 2, False),
    ]
    assert findings[1].replacement == (
        'tf.train.CheckpointManager(..., max_to_keep=...) as compat_mts.Scaffold(saver=...)'
    )
    assert 'compat_mts.Scaffold(saver=...)' in findings[0].note and 'max_to_keep' in findings[0].note


def test_text_marks_what_blocks_stage_1_and_counts_it():
    findings = check.check_source(
        'import tensorflow as tf\nh = tf.compat.v1.train.StopAtStepHook(num_steps=5)\n'
        'init = tf.contrib.layers.xavier_initializer()\n',
        'train.py',
    )
    lines = check.format_text(findings, files_checked=1).splitlines()
    assert lines[0].startswith('train.py:2:5: stage 1: tf.compat.v1.train.StopAtStepHook -> ')
    assert lines[2].startswith(
        'train.py:3:8: blocks stage 1: tf.contrib.layers.xavier_initializer -> '
        'tf.compat.v1.glorot_uniform_initializer()'
    )
    assert lines[-2:] == [
        '2 constructs to migrate in 1 file (stage 1: 2).',
        '1 construct blocks stage 1: the script cannot run on compat_mts until it changes.',
    ]


def test_json_says_which_findings_block_stage_1():
    findings = check.check_source(
        'import tensorflow as tf\nh = tf.compat.v1.train.StopAtStepHook(num_steps=5)\nunits = x.shape[1].value\n',
        'train.py',
    )
    document = json.loads(check.format_json(findings))
    assert [(f['construct'], f['blocks']) for f in document['findings']] == [
        ('tf.compat.v1.train.StopAtStepHook', False),
        ('x.shape[1].value', True),
    ]


@pytest.mark.slow
def test_fail_on_blocking_fails_only_on_what_blocks_stage_1(tmp_path):
    runs_on_compat_mts = tmp_path / 'hooks.py'
    runs_on_compat_mts.write_text('import tensorflow as tf\nh = tf.compat.v1.train.StopAtStepHook(num_steps=5)\n')
    blocked = tmp_path / 'contrib.py'
    blocked.write_text('import tensorflow as tf\ninit = tf.contrib.layers.xavier_initializer()\n')
    assert run_standalone('--fail-on', 'blocking', str(runs_on_compat_mts), cwd=tmp_path).returncode == 0
    result = run_standalone('--fail-on', 'blocking', str(runs_on_compat_mts), str(blocked), cwd=tmp_path)
    assert result.returncode == 1
    assert f'{blocked}:2:8: blocks stage 1: tf.contrib.layers.xavier_initializer' in result.stdout
    assert run_standalone(str(runs_on_compat_mts), cwd=tmp_path).returncode == 1


# The catalogue's claims about TensorFlow 2.21, checked on the TensorFlow installed here.

_BLOCKERS_FAIL = r"""
import tensorflow as tf
v1 = tf.compat.v1

def error(build):
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 4])
        labels = v1.placeholder(tf.int32, [None])
        try:
            build(x, labels)
        except Exception as failure:
            return type(failure).__name__ + ': ' + str(failure)
    return None

assert not hasattr(tf, 'contrib') and not hasattr(v1, 'contrib')
assert not hasattr(tf, 'estimator')
assert 'not available with Keras 3' in error(lambda x, labels: v1.layers.dense(x, 3))
assert 'not available with Keras 3' in error(lambda x, labels: v1.nn.rnn_cell.LSTMCell(3))
assert "'int' object has no attribute 'value'" in error(lambda x, labels: x.shape[1].value)
assert "'int' object has no attribute 'value'" in error(lambda x, labels: x.get_shape()[1].value)
assert error(lambda x, labels: x.shape.dims[1].value) is None
assert 'does not support functions' in error(lambda x, labels: tf.device(lambda op: '/cpu:0').__enter__())
assert error(lambda x, labels: v1.device(v1.train.replica_device_setter(ps_tasks=1)).__enter__()) is None
# Not findings: v1 losses and metrics build their graph under Keras 3.
assert error(lambda x, labels: v1.losses.sparse_softmax_cross_entropy(labels, x)) is None
assert error(lambda x, labels: v1.metrics.accuracy(labels, tf.argmax(x, 1, output_type=tf.int32))) is None
assert error(lambda x, labels: v1.get_variable('w', [4], regularizer=tf.keras.regularizers.l2(0.1))) is None
v1.disable_v2_tensorshape()
assert error(lambda x, labels: x.shape[1].value) is None
print('ok')
"""

_LEGACY_KERAS_WORKS = r"""
import tensorflow as tf
with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4])
    dense = tf.compat.v1.layers.dense(x, 3, name='dense')
    outputs, _ = tf.compat.v1.nn.dynamic_rnn(tf.compat.v1.nn.rnn_cell.LSTMCell(2), tf.zeros([2, 3, 4]),
                                             dtype=tf.float32)
    print(sorted(v.name for v in tf.compat.v1.global_variables())[:2])
"""


@pytest.mark.slow
def test_what_the_catalogue_calls_blocking_fails_on_this_tensorflow():
    result = run_python(_BLOCKERS_FAIL, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == 'ok', result.stderr[-3000:]


@pytest.mark.slow
def test_v1_layers_build_with_legacy_keras_as_the_edit_says():
    result = run_python(_LEGACY_KERAS_WORKS, env={'TF_USE_LEGACY_KERAS': '1'}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "['dense/bias:0', 'dense/kernel:0']"


# ---------------------------------------------------------------------------------------------------------
# What is not reported.


def test_a_tf2_keras_script_has_nothing_to_migrate():
    assert (
        constructs("""\
        import tensorflow as tf
        from tensorflow import keras

        strategy = tf.distribute.MirroredStrategy()
        dataset = tf.data.Dataset.range(100).map(lambda i: (tf.cast([i], tf.float32), tf.cast([i], tf.float32)))
        iterator = iter(dataset.batch(10))
        first = iterator.get_next()
        with strategy.scope():
            model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1)])
            optimizer = keras.optimizers.Adam(1e-3)
        model.compile(optimizer=optimizer, loss='mse')
        writer = tf.summary.create_file_writer('/tmp/logs')
        with writer.as_default():
            tf.summary.scalar('lr', 1e-3, step=0)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        manager = tf.train.CheckpointManager(checkpoint, '/tmp/ckpt', max_to_keep=5)
        strategy.run(lambda: optimizer.minimize(lambda: 0.0, var_list=model.trainable_variables))
        model.fit(dataset.batch(10), epochs=2,
                  callbacks=[keras.callbacks.TensorBoard('/tmp/logs'), keras.callbacks.TerminateOnNaN()])
        """)
        == []
    )


def test_names_from_other_libraries_are_not_reported():
    assert (
        constructs("""\
        import tensorflow as tf
        from requests import Session
        from mylib import placeholder, Saver

        session = Session()
        session.run('https://example.com')
        placeholder()
        Saver().save()
        """)
        == []
    )


def test_session_heuristics_need_a_tensorflow_import():
    assert constructs("sess.run(x, feed_dict={'a': 1})\noptimizer.minimize(loss, global_step=3)\n") == []


# ---------------------------------------------------------------------------------------------------------
# A half-migrated script: the compat_mts constructs are listed at the stage that removes them.


def test_a_stage_2_compat_mts_script_lists_what_stages_3_and_4_change():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        import compat_mts as mts
        from compat_mts.keras import HooksCallback

        step = mts.get_or_create_global_step()
        scaffold = mts.Scaffold(saver=tf.train.Checkpoint(step=step))
        hooks = [mts.StopAtStepHook(last_step=200), mts.NanTensorHook('loss')]
        with mts.MonitoredTrainingSession(checkpoint_dir='/tmp/ckpt', scaffold=scaffold, hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train_step, feed_dict={'x': batch})

        class Recorder(mts.SessionRunHook):
            pass

        callback = HooksCallback(hooks)
        graph = mts.wrap_graph(build_graph)
        """)
    )
    assert [(f.construct, f.line, f.stage) for f in findings] == [
        ('compat_mts.get_or_create_global_step', 5, 3),
        ('compat_mts.Scaffold', 6, 3),
        ('compat_mts.StopAtStepHook', 7, 4),
        ('compat_mts.NanTensorHook', 7, 4),
        ('compat_mts.MonitoredTrainingSession', 8, 3),
        ('compat_mts.MonitoredTrainingSession(checkpoint_dir=...)', 8, 3),
        ('compat_mts.MonitoredTrainingSession(scaffold=...)', 8, 3),
        ('compat_mts.MonitoredTrainingSession(hooks=...)', 8, 3),
        ('sess.run(...)', 10, 3),
        ('feed_dict', 10, 3),
        ('class Recorder(compat_mts.SessionRunHook)', 12, 4),
        ('compat_mts.keras.HooksCallback', 15, 4),
        ('compat_mts.wrap_graph', 16, 2),
    ]
    assert findings[3].replacement == 'keras.callbacks.TerminateOnNaN()'


def test_the_global_step_of_a_wrapped_graph_changes_with_the_model_at_stage_2():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        import compat_mts as mts

        def build_graph():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            step = tf.compat.v1.train.get_or_create_global_step()
            return x, step

        graph = mts.wrap_graph(build_graph)
        outside = tf.compat.v1.train.get_global_step()
        """)
    )
    assert [(f.construct, f.line, f.stage) for f in findings] == [
        ('tf.compat.v1.placeholder', 5, 2),
        ('tf.compat.v1.train.get_or_create_global_step', 6, 2),  # wrap_graph keeps it at stage 1
        ('compat_mts.wrap_graph', 9, 2),
        ('tf.compat.v1.train.get_global_step', 10, 1),
    ]


def test_the_stage_1_example_of_the_guide_has_nothing_left_for_stage_1():
    stages = (REPO / 'migration_guide' / 'stages.md').read_text(encoding='utf-8')
    stage_1_program = re.findall(r'```python\n(.*?)```', stages, re.DOTALL)[0]
    findings = check.check_source(stage_1_program, 'stages.md')
    assert findings and [f for f in findings if f.stage == 1] == []


# ---------------------------------------------------------------------------------------------------------
# Errors, output formats and the checker's own guarantees.


def test_syntax_error_names_its_line():
    with pytest.raises(check.CheckError) as error:
        check.check_source('import tensorflow as tf\n\ndef broken(:\n    pass\n', 'broken.py')
    assert (error.value.file, error.value.line) == ('broken.py', 3)
    assert str(error.value).startswith('broken.py:3:') and 'syntax error' in str(error.value)


def test_unreadable_file_is_a_check_error(tmp_path):
    with pytest.raises(check.CheckError, match='cannot read'):
        check.check_file(tmp_path / 'missing.py')


def test_the_file_is_read_never_run(tmp_path):
    marker = tmp_path / 'ran'
    script = tmp_path / 'script.py'
    script.write_text(f'import tensorflow.compat.v1 as tf\nopen({str(marker)!r}, "w").close()\ntf.Session()\n')
    assert [(f.construct, f.line) for f in check.check_file(script)] == [('tf.compat.v1.Session', 3)]
    assert not marker.exists()


def test_check_imports_nothing_but_the_standard_library_and_its_catalogue():
    siblings = {
        f'{prefix}{name}'
        for name in ('catalogue', 'names', 'checker', 'report')
        for prefix in ('compat_mts.cli.check.', '')
    } | {'compat_mts.premade_estimators', 'compat_mts.cli.check'}
    for path in (CATALOGUE, *CHECKER_MODULES, REPO / 'compat_mts' / 'premade_estimators.py'):
        tree = ast.parse(path.read_text())
        modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        modules |= {
            f'{node.module}.{alias.name}'
            if node.module in ('compat_mts', 'compat_mts.cli', 'compat_mts.cli.check')
            else node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        others = {module for module in modules - siblings if module.split('.')[0] != '__future__'}
        assert {module.split('.')[0] for module in others} <= set(sys.stdlib_module_names), (path, modules)


def test_json_output_shape():
    findings = check.check_file(SAMPLES / 'regression.py')
    error = check.CheckError('bad.py', 'syntax error: invalid syntax', 3, 12)
    document = json.loads(check.format_json(findings, [error]))
    assert set(document) == {'findings', 'errors'}
    assert len(document['findings']) == len(EXPECTED['regression.py'])
    first = document['findings'][0]
    assert first == {
        'file': str(SAMPLES / 'regression.py'),
        'line': 8,
        'col': 1,
        'construct': 'tf.compat.v1.disable_eager_execution',
        'replacement': 'nothing: remove the call',
        'stage': 1,
        'note': first['note'],
        'blocks': False,
    }
    assert document['errors'] == [{'file': 'bad.py', 'line': 3, 'col': 12, 'message': 'syntax error: invalid syntax'}]


def test_text_output_has_one_located_line_per_finding_and_a_count_by_stage():
    findings = check.check_source(
        'import tensorflow.compat.v1 as tf\nwith tf.Graph().as_default():\n    x = tf.placeholder(tf.float32)\n'
        'h = tf.train.StopAtStepHook(num_steps=5)\n',
        'train.py',
    )
    text = check.format_text(findings, files_checked=1)
    lines = text.splitlines()
    assert lines[0].startswith('train.py:2:6: stage 2: tf.Graph().as_default() -> ')
    placeholder = lines.index(
        'train.py:3:9: stage 2: tf.compat.v1.placeholder -> an argument of the tf.function step, '
        "fed with feed_dict={'x': batch}"
    )
    assert lines[placeholder + 1].startswith('    Works unchanged inside compat_mts.wrap_graph')
    assert lines[-1] == '3 constructs to migrate in 1 file (stage 1: 1, stage 2: 2).'
    assert check.format_text([], files_checked=3) == 'Nothing to migrate in 3 files.\n'


def test_options_filter_by_stage_and_turn_failure_off(capsys):
    sample = str(SAMPLES / 'regression.py')
    assert check.main([sample, '--max-stage', '1']) == 1
    output = capsys.readouterr().out
    assert re.findall(r': stage (\d):', output) == ['1'] * 4
    assert check.main([sample, '--fail-on', 'none']) == 0
    capsys.readouterr()


def test_directories_are_checked_file_by_file(capsys):
    assert check.main([str(SAMPLES), '--json']) == 1
    document = json.loads(capsys.readouterr().out)
    assert len(document['findings']) == sum(map(len, EXPECTED.values()))


def test_add_check_command_plugs_into_a_subcommand_parser(capsys):
    parser = argparse.ArgumentParser(prog='compat-mts')
    subcommands = parser.add_subparsers(dest='command')
    check.add_check_command(subcommands)
    args = parser.parse_args(['check', '--json', str(SAMPLES / 'regression.py')])
    assert args.run(args) == 1
    assert json.loads(capsys.readouterr().out)['errors'] == []


# The exit status, through real processes. `python -m compat_mts.cli.check` imports the compat_mts package (and so
# TensorFlow) first; the file itself runs standalone, without TensorFlow, which keeps the other runs quick.


def run_standalone(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return run_python(str(CHECK_SCRIPT), *args, cwd=cwd, timeout=60)


@pytest.mark.slow
def test_module_command_exits_1_on_v1_constructs_and_prints_json(tmp_path):
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL='2',
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')])),
    )
    result = subprocess.run(
        [sys.executable, '-m', 'compat_mts.cli.check', '--json', str(SAMPLES / 'regression.py')],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    findings = json.loads(result.stdout)['findings']
    assert [(f['construct'], f['line']) for f in findings] == EXPECTED['regression.py']


@pytest.mark.slow
def test_exit_0_when_nothing_is_found(tmp_path):
    script = tmp_path / 'migrated.py'
    script.write_text('import tensorflow as tf\nmodel = tf.keras.Sequential()\n')
    result = run_standalone(str(script), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, 'Nothing to migrate in 1 file.\n')


@pytest.mark.slow
def test_exit_1_when_constructs_are_found(tmp_path):
    result = run_standalone(str(SAMPLES / 'distributed_hooks.py'), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-2:] == [
        '22 constructs to migrate in 1 file (stage 1: 9, stage 2: 6, stage 3: 7).',
        '4 constructs block stage 1: the script cannot run on compat_mts until they change.',
    ]


@pytest.mark.slow
def test_exit_2_when_a_file_does_not_parse_even_if_others_have_findings(tmp_path):
    broken = tmp_path / 'broken.py'
    broken.write_text('import tensorflow as tf\nwith tf.Session() as sess\n    pass\n')
    result = run_standalone(str(broken), str(SAMPLES / 'regression.py'), cwd=tmp_path)
    assert result.returncode == 2
    assert re.match(rf'{re.escape(str(broken))}:2:\d+: syntax error: ', result.stderr), result.stderr
    assert 'regression.py:8:1: stage 1:' in result.stdout
    assert result.stdout.splitlines()[-3:] == [
        '16 constructs to migrate in the 1 file checked (stage 1: 6, stage 2: 7, stage 3: 3).',
        '2 constructs block stage 1: the script cannot run on compat_mts until they change.',
        '1 file could not be read or parsed, so it was not checked.',
    ]


@pytest.mark.slow
def test_a_file_that_does_not_parse_alone_prints_only_its_error(tmp_path):
    broken = tmp_path / 'broken.py'
    broken.write_text('import tensorflow as tf\nwith tf.Session() as sess\n    pass\n')
    result = run_standalone(str(broken), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, '')
    assert re.fullmatch(rf'{re.escape(str(broken))}:2:\d+: syntax error: [^\n]+\n', result.stderr), result.stderr


@pytest.mark.slow
def test_a_missing_file_among_clean_ones_is_not_called_clean(tmp_path):
    migrated = tmp_path / 'migrated.py'
    migrated.write_text('import tensorflow as tf\nmodel = tf.keras.Sequential()\n')
    missing = tmp_path / 'missing.py'
    result = run_standalone(str(migrated), str(missing), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f'{missing}: cannot read: ')
    assert result.stdout == (
        'No constructs found in the 1 file checked.\n1 file could not be read or parsed, so it was not checked.\n'
    )
    assert 'Nothing to migrate' not in result.stdout
    alone = run_standalone(str(missing), str(tmp_path / 'also_missing.py'), cwd=tmp_path)
    assert (alone.returncode, alone.stdout, len(alone.stderr.splitlines())) == (2, '', 2)


def test_text_summary_counts_the_files_that_could_not_be_checked():
    assert check.format_text([], files_checked=0, files_failed=2) == ''
    assert check.format_text([], files_checked=2, files_failed=1) == (
        'No constructs found in the 2 files checked.\n1 file could not be read or parsed, so it was not checked.\n'
    )
    assert check.format_text([], files_checked=1, files_failed=3).splitlines()[-1] == (
        '3 files could not be read or parsed, so they were not checked.'
    )


@pytest.mark.slow
def test_exit_2_on_a_bad_command_line(tmp_path):
    assert run_standalone(cwd=tmp_path).returncode == 2
    assert run_standalone('--max-stage', '5', str(SAMPLES), cwd=tmp_path).returncode == 2


# ---------------------------------------------------------------------------------------------------------
# The guide's example output is what the checker prints.


def test_guide_example_output_is_current():
    guide = (REPO / 'migration_guide' / 'check.md').read_text(encoding='utf-8')
    example = guide[guide.index('## Example') :]
    program, output = re.findall(r'```text\n(.*?)```', example, re.DOTALL)[:2]
    command, expected = output.split('\n', 1)
    assert command == '$ compat-mts check train.py'
    assert check.format_text(check.check_source(program, 'train.py'), files_checked=1) == expected


def test_the_global_step_of_a_graph_block_stays_until_stage_2_as_in_a_wrap_graph_build_fn():
    source = (
        'import tensorflow as tf\n'
        'with tf.Graph().as_default():\n'
        '    step = tf.compat.v1.train.get_or_create_global_step()\n'
        'other = tf.compat.v1.train.get_or_create_global_step()\n'
    )
    stages = {(f.construct, f.line): f.stage for f in check.check_source(source, 'graph_block.py')}
    assert stages[('tf.compat.v1.train.get_or_create_global_step', 3)] == 2
    assert stages[('tf.compat.v1.train.get_or_create_global_step', 4)] == 1


# ---------------------------------------------------------------------------------------------------------
# What check reads: regular files only, up to a cap, in time linear in their length.


@pytest.mark.slow
def test_a_fifo_is_refused_at_once_instead_of_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / 'train.py'
    os.mkfifo(fifo)
    # Before, opening the FIFO waited for a writer that never comes: the timeout would expire.
    result = run_standalone(str(fifo), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr
        == f'{fifo}: not checked: a FIFO (named pipe), not a regular file; check reads Python files only\n'
    )
    assert result.stdout == ''


@pytest.mark.slow
def test_a_device_is_refused_instead_of_read_forever(tmp_path):
    result = run_standalone('/dev/zero', str(SAMPLES / 'regression.py'), cwd=tmp_path)
    assert result.returncode == 2
    assert '/dev/zero: not checked: a character device, not a regular file' in result.stderr
    assert result.stdout.splitlines()[-1] == '1 file could not be read or parsed, so it was not checked.'


def test_a_file_over_the_cap_is_refused_with_the_file_and_the_cap_named(tmp_path):
    script = tmp_path / 'generated.py'
    script.write_text('import tensorflow.compat.v1 as tf\n' + 'x = 1\n' * 100)
    with pytest.raises(check.CheckError) as error:
        check.check_file(script, max_bytes=256)
    assert str(error.value) == (
        f'{script}: not checked: larger than the 256 bytes that check reads of a file; a training script '
        'is far smaller, so this is likely generated code or data'
    )
    assert [f.construct for f in check.check_file(script, max_bytes=script.stat().st_size)] == []


def test_the_default_cap_is_named_in_mebibytes(tmp_path):
    script = tmp_path / 'huge.py'
    with open(script, 'wb') as file:
        file.truncate(check.MAX_FILE_BYTES + 1)  # sparse: no disk space is used
    with pytest.raises(check.CheckError, match=r'larger than the 16 MiB \(16777216 bytes\)'):
        check.check_file(script)


@pytest.mark.slow
def test_an_expression_nested_beyond_the_parser_is_a_check_error_not_a_traceback(tmp_path):
    script = tmp_path / 'chain.py'
    script.write_text('import tensorflow as tf\nd = (tf.data.Dataset.range(10)\n' + '    .map(f)\n' * 5000 + ')\n')
    result = run_standalone(str(script), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f'{script}: nested too deeply to check (an expression of hundreds of levels, such as a very long chain '
        'of calls)\n'
    )


@pytest.mark.slow
def test_a_200000_line_file_is_checked_in_one_pass(tmp_path):
    # The sample program repeated: every kind of finding, 200,000 lines. The timeout is generous for a loaded
    # two-core machine; one walk of the tree per file keeps the time linear in the lines.
    sample = (SAMPLES / 'distributed_hooks.py').read_text()
    copies = 200_000 // len(sample.splitlines()) + 1
    script = tmp_path / 'long.py'
    script.write_text(sample * copies)
    result = run_python(str(CHECK_SCRIPT), '--json', str(script), cwd=tmp_path, timeout=600)
    assert result.returncode == 1, result.stderr[-2000:]
    findings = json.loads(result.stdout)['findings']
    assert len(findings) == copies * len(EXPECTED['distributed_hooks.py'])


def test_the_checkers_walk_gives_every_node_ast_walk_gives_in_its_order():
    # Every field `check_names.walk` skips as one that never holds a node is written in the first text.
    syntax = textwrap.dedent("""\
        from . import a as b
        import c.d as e
        def f(x: int = 1, *args, y, **kw) -> None:  # type: (int) -> None
            global g
            def h():
                nonlocal x
            for i in range(3):  # type: int
                z: int = i
            with open(f'{x!r:>{y}}') as w:  # type: ignore
                pass
            try:
                pass
            except ValueError as err:
                raise
            return [u async for u in v if u.attr]
        class K(object, metaclass=type):
            async def m(self):
                async with a as q:  # type: int
                    pass
                async for r in q:  # type: int
                    pass
        match b:
            case {'k': 1, **rest}:
                pass
            case K(p=[_, *others]) as kind:
                pass
        """)
    for text in [syntax, *(path.read_text() for path in CHECKER_MODULES)]:
        tree = ast.parse(text, type_comments=True)
        assert [id(node) for node in check_names.walk(tree)] == [id(node) for node in ast.walk(tree)]
        module = ast.parse(text)  # Its walk is its statements' by depth, joined level by level.
        levels = [check_names.walk_levels(statement) for statement in module.body]
        assert [id(node) for node in check_names.joined_levels(module, levels)] == [
            id(node) for node in ast.walk(module)
        ]


# ---------------------------------------------------------------------------------------------------------
# What blocked real v1 programs: each found and marked blocking, with its edit.


def test_queue_runner_input_blocks_stage_1_with_the_tf_data_rewrite():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        queue = tf.train.string_input_producer(filenames)
        _, record = tf.TFRecordReader().read(queue)
        x, y = tf.train.shuffle_batch([record, record], 32, 100, 10)
        b = tf.compat.v1.train.batch([x], 8)
        threads = tf.train.start_queue_runners(sess=sess, coord=tf.train.Coordinator())
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.blocks) for f in findings] == [
        ('tf.compat.v1.train.string_input_producer', 2, True),
        ('tf.compat.v1.TFRecordReader', 3, True),
        ('tf.compat.v1.train.shuffle_batch', 4, True),
        ('tf.compat.v1.train.batch', 5, True),
        ('tf.compat.v1.train.start_queue_runners', 6, True),
    ]
    assert findings[1].replacement == 'tf.data: tf.data.TFRecordDataset(filenames)'
    assert all('migration_guide/queue_runners.md' in f.note for f in findings)
    assert 'wrap_graph cannot run queue runners' in findings[0].note


def test_horovod_import_and_each_call_block_with_their_strategy_counterpart():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        import horovod.tensorflow as hvd
        hvd.init()
        opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.replacement, f.blocks) for f in findings] == [
        (
            'horovod.tensorflow',
            2,
            'tf.distribute.MultiWorkerMirroredStrategy (TF_CONFIG in place of horovodrun)',
            True,
        ),
        ('horovod.tensorflow.init', 3, 'strategy = tf.distribute.MultiWorkerMirroredStrategy()', True),
        (
            'horovod.tensorflow.DistributedOptimizer',
            4,
            'the optimizer itself, with the model built in strategy.scope()',
            True,
        ),
        ('horovod.tensorflow.size', 4, 'strategy.num_replicas_in_sync', True),
        (
            'horovod.tensorflow.BroadcastGlobalVariablesHook',
            5,
            'nothing: variables made in strategy.scope() start equal on every worker',
            True,
        ),
    ]
    assert all('migration_guide/horovod.md' in f.note for f in findings)


_HOROVOD_MNIST = """\
import tensorflow as tf
import horovod.tensorflow as hvd
from tensorflow.examples.tutorials.mnist import input_data


def conv_model(feature, target, mode):
    return tf.layers.dense(feature, 10)


def main(_):
    hvd.init()
    mnist = input_data.read_data_sets('MNIST-data-%d' % hvd.rank())
    with tf.name_scope('input'):
        image = tf.placeholder(tf.float32, [None, 784], name='image')
        label = tf.placeholder(tf.float32, [None], name='label')
    predict, loss = conv_model(image, label, tf.contrib.learn.ModeKeys.TRAIN)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=None) as mon_sess:
        mon_sess.run(loss, feed_dict={image: mnist.train.images, label: mnist.train.labels})


if __name__ == '__main__':
    tf.app.run(main)
"""


def test_the_horovod_mnist_program_blocks_on_its_top_level_graph_tutorial_reader_and_horovod():
    findings = check.check_source(_HOROVOD_MNIST, 'tensorflow_mnist.py')
    blocking = {(f.construct, f.line) for f in findings if f.blocks}
    assert {
        ('horovod.tensorflow', 2),
        ('tensorflow.examples.tutorials.mnist', 3),
        ('tf.compat.v1.layers.dense', 7),
        ('horovod.tensorflow.init', 11),
        ('horovod.tensorflow.rank', 12),
        ('tf.compat.v1.placeholder outside a graph', 14),
        ('tf.compat.v1.placeholder outside a graph', 15),
    } <= blocking
    tutorial = next(f for f in findings if f.construct == 'tensorflow.examples.tutorials.mnist')
    assert tutorial.replacement == 'tf.keras.datasets.mnist.load_data(), batched by a tf.data.Dataset'
    placeholder = next(f for f in findings if f.construct == 'tf.compat.v1.placeholder outside a graph')
    assert placeholder.replacement.startswith("the graph code under 'with tf.Graph().as_default():'")
    assert 'tf.placeholder() is not compatible with eager execution' in placeholder.note


def test_a_placeholder_in_a_graph_block_or_in_a_function_called_there_is_not_outside_a_graph():
    source = """\
        import tensorflow as tf

        def build():
            return tf.compat.v1.placeholder(tf.float32)

        def model_fn(features, labels, mode):
            return tf.compat.v1.placeholder(tf.float32)

        def main(_):
            with tf.Graph().as_default():
                x = build()
                y = tf.compat.v1.placeholder(tf.float32)
            estimator = tf.estimator.Estimator(model_fn)

        tf.compat.v1.app.run(main)
        """
    assert not [f for f in check.check_source(textwrap.dedent(source), 'x.py') if 'outside a graph' in f.construct]


def test_tpu_estimator_runs_at_stage_1_with_use_tpu_false_only():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        cpu = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, use_tpu=False, train_batch_size=8)
        tpu = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, use_tpu=True, train_batch_size=8)
        default = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, train_batch_size=8)
        flag = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, use_tpu=FLAGS.use_tpu, train_batch_size=8)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.blocks) for f in findings] == [
        ('tf.estimator.tpu.TPUEstimator', 2, False),
        ('tf.estimator.tpu.TPUEstimator', 3, False),
        ('tf.estimator.tpu.TPUEstimator(use_tpu=...)', 3, True),
        ('tf.estimator.tpu.TPUEstimator', 4, False),
        ('tf.estimator.tpu.TPUEstimator(use_tpu=True, the default)', 4, True),
        ('tf.estimator.tpu.TPUEstimator', 5, False),
        ('tf.estimator.tpu.TPUEstimator(use_tpu=...)', 5, False),
    ]
    assert findings[0].replacement == 'compat_mts.estimator.tpu.TPUEstimator'


def test_train_distribute_runs_with_mirrored_one_device_and_multi_worker_and_blocks_with_others():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        mirrored = tf.distribute.MirroredStrategy()
        central = tf.distribute.experimental.CentralStorageStrategy()
        a = tf.estimator.RunConfig(train_distribute=mirrored)
        b = tf.estimator.RunConfig(train_distribute=tf.distribute.OneDeviceStrategy('/cpu:0'))
        c = tf.estimator.RunConfig(train_distribute=central, eval_distribute=mirrored)
        d = tf.estimator.RunConfig(train_distribute=make_strategy())
        e = tf.estimator.RunConfig(train_distribute=tf.distribute.MultiWorkerMirroredStrategy())
        """),
        'x.py',
    )
    arguments = [(f.construct, f.line, f.blocks) for f in findings if '=...' in f.construct]
    assert arguments == [
        ('tf.estimator.RunConfig(train_distribute=...)', 4, False),
        ('tf.estimator.RunConfig(train_distribute=...)', 5, False),
        ('tf.estimator.RunConfig(train_distribute=...)', 6, True),
        ('tf.estimator.RunConfig(eval_distribute=...)', 6, False),
        ('tf.estimator.RunConfig(train_distribute=...)', 7, False),
        ('tf.estimator.RunConfig(train_distribute=...)', 8, False),
    ]
    by_line = {(f.line, f.construct): f for f in findings if '=...' in f.construct}
    assert by_line[4, 'tf.estimator.RunConfig(train_distribute=...)'].stage == 1
    assert 'once per replica' in by_line[4, 'tf.estimator.RunConfig(train_distribute=...)'].note
    assert 'raises ValueError' in by_line[6, 'tf.estimator.RunConfig(train_distribute=...)'].note
    assert 'cannot tell which strategy' in by_line[7, 'tf.estimator.RunConfig(train_distribute=...)'].note
    assert 'the chief writes' in by_line[8, 'tf.estimator.RunConfig(train_distribute=...)'].note


def test_keras_layers_in_a_model_fn_and_export_savedmodel_are_noted_not_blocking():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf
        from tensorflow.keras import layers

        def model_fn(features, labels, mode):
            logits = tf.keras.layers.Dense(10)(features['x'])
            hidden = layers.Dense(3)(logits)

        estimator = tf.estimator.Estimator(model_fn=model_fn)
        estimator.export_savedmodel('/tmp/export', serving_input_fn)
        """),
        'x.py',
    )
    assert [(f.construct, f.line, f.stage, f.blocks) for f in findings] == [
        ('tf.keras.layers.Dense in a model_fn', 5, 3, False),
        ('tf.keras.layers.Dense in a model_fn', 6, 3, False),
        ('tf.estimator.Estimator', 8, 1, False),
        ('Estimator.export_savedmodel(...)', 9, 1, False),
    ]
    assert findings[-1].replacement == 'export_saved_model (the same arguments)'


def test_a_long_script_explains_each_kind_once_and_lists_the_other_places():
    body = ''.join(f'    x{i} = tf.placeholder(tf.float32)\n' for i in range(150))
    source = f'import tensorflow.compat.v1 as tf\nwith tf.Graph().as_default():\n{body}'
    findings = check.check_source(source, 'long.py')
    text = check.format_text(findings, files_checked=1)
    assert len(findings) == 151
    assert len(text.splitlines()) < 30
    assert text.count('Works unchanged inside compat_mts.wrap_graph') == 1
    assert '    also at 4:10, 5:10, 6:10,' in text
    # Another file's places are named with their file.
    other = check.check_source(source, 'other.py')
    assert 'other.py:3:10' in check.format_text(findings + other)


# ---------------------------------------------------------------------------------------------------------
# The catalogue and the guide say the same thing.

GUIDE = REPO / 'migration_guide'


def _guide_rows(table_heading: str) -> list[tuple[list[str], str]]:
    """(backticked names of the first column, last column) of each row of the table under `table_heading`."""
    text = (GUIDE / 'check.md').read_text(encoding='utf-8')
    section = text[text.index(table_heading) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith('## '):
            break
        if line.startswith('| `'):
            cells = [cell.strip() for cell in line.strip('|').split('|')]
            rows.append((re.findall(r'`([^`]+)`', cells[0]), cells[-1]))
    return rows


def _catalogued(name: str):
    for prefix in ('tensorflow.compat.v1.', 'tensorflow.compat.v1.train.', 'tensorflow.'):
        found = catalogue.lookup(prefix + name, v1_style=True)
        if found is not None:
            return found
    return None


def test_the_stage_of_each_construct_in_the_guide_table_is_the_catalogue_stage():
    checked = 0
    for names, stage in _guide_rows('## What it looks for'):
        for name in names:
            found = _catalogued(name) if re.fullmatch(r'[\w.]+', name) else None
            if found is not None and stage.isdigit():
                assert (name, found[1].stage) == (name, int(stage))
                checked += 1
    assert checked >= 20


def test_no_note_refuses_the_saver_the_guide_and_the_saver_finding_accept():
    legacy = (GUIDE / 'legacy.md').read_text(encoding='utf-8')
    assert 'A `tf.compat.v1.train.Saver` built in the graph code and given to `Scaffold`' in legacy
    saver = catalogue.V1_RULES['train.Saver']
    assert 'Works at stage 1 when it is built in the graph code' in saver.note
    texts = [
        f'{key}: {rule.replacement} {rule.note}'
        for key, rule in [*catalogue.V1_RULES.items(), *catalogue.MTS_RULES.items()]
    ]
    assert not [text for text in texts if re.search(r'not a Saver|no Saver|\(not a Saver\)', text)]


def test_what_a_note_says_works_at_stage_1_is_not_removed_or_blocking_at_stage_1():
    rules = [*catalogue.V1_RULES.values(), *catalogue.MTS_RULES.values()]
    for rule in rules:
        if re.search(r'Works (as written |unchanged )?at stage 1|works unchanged', rule.note):
            assert not rule.blocks, rule
            assert not (rule.stage == 1 and rule.replacement.startswith('nothing: remove')), rule


def test_every_guide_page_a_note_names_exists():
    rules = [*catalogue.V1_RULES.values(), *catalogue.MTS_RULES.values()]
    rules += [catalogue.horovod_rule(''), catalogue.TUTORIALS_RULE, catalogue.TRAIN_DISTRIBUTE_BLOCKS]
    pages = {page for rule in rules for page in re.findall(r'migration_guide/(\w+\.md)', rule.note + rule.replacement)}
    assert {'queue_runners.md', 'horovod.md'} <= pages
    assert all((GUIDE / page).exists() for page in pages), pages


@pytest.mark.parametrize('v1_use, found', [('', False), ('x = tf.placeholder(tf.float32)\n', True)])
def test_a_name_tf2_has_too_is_found_under_a_bare_tensorflow_only_in_a_tf1_script(v1_use, found):
    # `tf.summary.scalar` under a bare `tensorflow` is TF 1.x's only where the script uses a name TF2 moved.
    tree = ast.parse(f"import tensorflow as tf\n{v1_use}tf.summary.scalar('loss', 1.0)\n")
    names = check_names.Names(tree)
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == 'scalar')
    rule = names.rule_for(call)
    assert (rule is not None) is found
    assert names.bare_tensorflow_is_v1 is found
    if found:
        assert rule == catalogue.lookup('tensorflow.summary.scalar', v1_style=True)
