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

from compat_mts import check
from tests.support import run_python

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = pathlib.Path(__file__).resolve().parent / 'check_samples'
CHECK_SCRIPT = REPO / 'compat_mts' / 'check.py'
CATALOGUE = REPO / 'compat_mts' / 'check_catalogue.py'

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
                ('tf.compat.v1.placeholder', 15),
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


@pytest.mark.parametrize('sample', sorted(EXPECTED))
def test_sample_program_lists_exactly_its_v1_constructs(sample):
    findings = check.check_file(SAMPLES / sample)
    assert [(finding.construct, finding.line) for finding in findings] == EXPECTED[sample]
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


V1_PROGRAMS = sorted((REPO / 'tests' / 'v1_programs').glob('*_v1.py'))


@pytest.mark.parametrize('v1_program', V1_PROGRAMS, ids=lambda path: path.name)
def test_the_stage_1_twin_of_each_v1_test_program_has_nothing_left_for_stage_1(v1_program):
    twin = v1_program.with_name(v1_program.name.replace('_v1.py', '_compat.py'))
    assert any(finding.stage == 1 for finding in check.check_file(v1_program))
    assert [finding for finding in check.check_file(twin) if finding.stage == 1] == []


# ---------------------------------------------------------------------------------------------------------
# How names are resolved.

@pytest.mark.parametrize('source', [
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
])
def test_every_import_form_resolves_to_the_v1_name(source):
    assert constructs(source) == [('tf.compat.v1.train.Saver', source.count('\n') + 1)]


def test_names_of_tf2_that_v1_also_has_are_v1_only_in_tf1_code():
    tf2_code = """\
        import tensorflow as tf
        tf.summary.scalar('loss', 0.5, step=1)
        cluster = tf.train.ClusterSpec({'worker': ['localhost:2222']})
        """
    assert constructs(tf2_code) == []
    tf1_code = tf2_code + 'x = tf.placeholder(tf.float32)\n'
    assert constructs(tf1_code) == [('tf.compat.v1.summary.scalar', 2), ('tf.compat.v1.train.ClusterSpec', 3),
                                    ('tf.compat.v1.placeholder', 4)]
    assert constructs("import tensorflow as tf\ntf.logging.info('hi')\ntf.summary.scalar('loss', 1.0)") == [
            ('tf.compat.v1.summary.scalar', 3)]


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
        """) == [('tf.compat.v1.train.StopAtStepHook', 3), ('class Hook(tf.compat.v1.train.SessionRunHook)', 4)]


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
        """) == [(MTS, 3), (f'{MTS}(master=...)', 3), (f'{MTS}(is_chief=...)', 3),
                 (f'{MTS}(checkpoint_dir=...)', 3), (f'{MTS}(hooks=...)', 3)]


@pytest.mark.parametrize('argument', [
        'master', 'is_chief', 'checkpoint_dir', 'scaffold', 'hooks', 'chief_only_hooks', 'save_checkpoint_secs',
        'save_summaries_steps', 'save_summaries_secs', 'config', 'stop_grace_period_secs', 'log_step_count_steps',
        'max_wait_secs', 'save_checkpoint_steps', 'summary_dir', 'save_graph_def'])
def test_each_session_argument_changes_when_the_loop_becomes_model_fit(argument):
    findings = check.check_source(
            f'import tensorflow.compat.v1 as tf\ntf.train.MonitoredTrainingSession({argument}=None)\n')
    session, given = findings
    assert session.construct == MTS and session.stage == 1
    assert (given.construct, given.stage, given.col) == (f'{MTS}({argument}=...)', 3, 35)
    assert given.replacement and given.note


@pytest.mark.parametrize('hook', [
        'StopAtStepHook', 'NanTensorHook', 'LoggingTensorHook', 'CheckpointSaverHook', 'CheckpointSaverListener',
        'StepCounterHook', 'SummarySaverHook', 'GlobalStepWaiterHook', 'FinalOpsHook', 'FeedFnHook',
        'ProfilerHook', 'SecondOrStepTimer', 'NanLossDuringTrainingError'])
def test_each_built_in_hook_becomes_its_compat_mts_namesake_at_stage_1(hook):
    finding = only(f'import tensorflow as tf\nh = tf.compat.v1.train.{hook}()\n')
    assert (finding.construct, finding.replacement, finding.stage) == (
            f'tf.compat.v1.train.{hook}', f'compat_mts.{hook}', 1)
    assert 'At stage 4:' in finding.note


def test_user_hook_subclass_is_one_finding_that_says_it_works_unchanged():
    finding = only("""\
        import tensorflow.compat.v1 as tf

        class EveryStepHook(tf.train.SessionRunHook):
            def after_run(self, run_context, run_values):
                pass
        """)
    assert (finding.construct, finding.line, finding.stage) == (
            'class EveryStepHook(tf.compat.v1.train.SessionRunHook)', 3, 2)
    assert 'works unchanged' in finding.note and 'step-output names' in finding.note


def test_subclass_of_a_built_in_hook_becomes_a_subclass_of_the_compat_mts_hook():
    finding = only('from tensorflow.compat.v1 import train\nclass Quiet(train.LoggingTensorHook):\n    pass\n')
    assert (finding.construct, finding.replacement, finding.stage) == (
            'class Quiet(tf.compat.v1.train.LoggingTensorHook)', 'compat_mts.LoggingTensorHook', 1)


def test_scaffold_saver_and_global_step_helpers():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        step = tf.train.get_or_create_global_step()
        same = tf.train.get_global_step()
        other = tf.train.create_global_step()
        value = tf.train.global_step(sess, step)
        scaffold = tf.train.Scaffold(saver=tf.train.Saver(), init_fn=None)
        """) == [('tf.compat.v1.train.get_or_create_global_step', 2), ('tf.compat.v1.train.get_global_step', 3),
                 ('tf.compat.v1.train.create_global_step', 4), ('tf.compat.v1.train.global_step', 5),
                 ('tf.compat.v1.train.Scaffold', 6), ('tf.compat.v1.train.Saver', 6)]


def test_placeholders_and_feed_dict_stage_depends_on_the_keys():
    findings = check.check_source(textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        x = tf.placeholder(tf.float32, [None, 3])
        sess.run(loss, feed_dict={x: batch})
        sess.run(step, feed_dict={'x': batch})
        sess.run(loss, {x: batch})
        sess.run(loss, feed_dict={'x:0': batch})
        """))
    assert [(f.construct, f.line, f.stage) for f in findings] == [
            ('tf.compat.v1.placeholder', 2, 2),
            ('sess.run(...)', 3, 3), ('feed_dict', 3, 2),
            ('sess.run(...)', 4, 3), ('feed_dict', 4, 3),  # keyword names already feed a compat_mts step
            ('sess.run(...)', 5, 3), ('feed_dict', 5, 2),
            ('sess.run(...)', 6, 3), ('feed_dict', 6, 2)]  # a tensor name feeds a graph


def test_v1_summaries_and_the_file_writer():
    findings = check.check_source(textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        tf.summary.scalar('loss', loss)
        tf.summary.image('input', images)
        merged = tf.summary.merge_all()
        writer = tf.summary.FileWriter('/tmp/logs')
        writer.add_summary(tf.summary.Summary(value=[]), 1)
        """))
    assert [(f.construct, f.stage) for f in findings] == [
            ('tf.compat.v1.summary.scalar', 2), ('tf.compat.v1.summary.image', 2),
            ('tf.compat.v1.summary.merge_all', 2), ('tf.compat.v1.summary.FileWriter', 1),
            ('tf.compat.v1.summary.Summary', 1)]


def test_config_proto_sessions_and_their_run_calls():
    assert constructs("""\
        import tensorflow.compat.v1 as tf
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
        with tf.Session(config=config) as s:
            s.run(tf.global_variables_initializer())
        interactive = tf.InteractiveSession()
        tf.Session().run(x)
        """) == [('tf.compat.v1.ConfigProto', 2), ('tf.compat.v1.GPUOptions', 2), ('tf.compat.v1.Session', 3),
                 ('s.run(...)', 4), ('tf.compat.v1.global_variables_initializer', 4),
                 ('tf.compat.v1.InteractiveSession', 5), ('tf.compat.v1.Session', 6),
                 ('tf.Session().run(...)', 6)]  # the receiver as the script spells it


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
        """) == [('tf.compat.v1.train.ClusterSpec', 2), ('tf.compat.v1.train.Server', 3),
                 ('tf.compat.v1.distribute.Server', 4)]


def test_v1_optimizers_and_minimize_with_a_global_step():
    findings = check.check_source(textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        optimizer = tf.train.MomentumOptimizer(0.1, momentum=0.9)
        train_op = optimizer.minimize(loss, global_step=step)
        apply_op = optimizer.apply_gradients(grads_and_vars, global_step=step)
        """))
    assert [(f.construct, f.line, f.col, f.stage) for f in findings] == [
            ('tf.compat.v1.train.MomentumOptimizer', 2, 13, 2),
            ('Optimizer.minimize(global_step=...)', 3, 37, 2),
            ('Optimizer.apply_gradients(global_step=...)', 4, 54, 2)]
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
        """) == [('Dataset.make_initializable_iterator()', 2), ('Iterator.get_next()', 3),
                 ('tf.compat.v1.data.make_one_shot_iterator', 4), ('Iterator.get_next()', 4),
                 ('tf.compat.v1.data.Iterator', 5)]


def test_eager_switches_are_removed_at_stage_1():
    assert [(f.construct, f.stage) for f in check.check_source(
            'import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n')] == [
            ('tf.compat.v1.disable_v2_behavior', 1)]


# ---------------------------------------------------------------------------------------------------------
# What is not reported.

def test_a_tf2_keras_script_has_nothing_to_migrate():
    assert constructs("""\
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
        """) == []


def test_names_from_other_libraries_are_not_reported():
    assert constructs("""\
        import tensorflow as tf
        from requests import Session
        from mylib import placeholder, Saver

        session = Session()
        session.run('https://example.com')
        placeholder()
        Saver().save()
        """) == []


def test_session_heuristics_need_a_tensorflow_import():
    assert constructs("sess.run(x, feed_dict={'a': 1})\noptimizer.minimize(loss, global_step=3)\n") == []


# ---------------------------------------------------------------------------------------------------------
# A half-migrated script: the compat_mts constructs are listed at the stage that removes them.

def test_a_stage_2_compat_mts_script_lists_what_stages_3_and_4_change():
    findings = check.check_source(textwrap.dedent("""\
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
        """))
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
            ('compat_mts.wrap_graph', 16, 2)]
    assert findings[3].replacement == 'keras.callbacks.TerminateOnNaN()'


def test_the_global_step_of_a_wrapped_graph_changes_with_the_model_at_stage_2():
    findings = check.check_source(textwrap.dedent("""\
        import tensorflow as tf
        import compat_mts as mts

        def build_graph():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            step = tf.compat.v1.train.get_or_create_global_step()
            return x, step

        graph = mts.wrap_graph(build_graph)
        outside = tf.compat.v1.train.get_global_step()
        """))
    assert [(f.construct, f.line, f.stage) for f in findings] == [
            ('tf.compat.v1.placeholder', 5, 2),
            ('tf.compat.v1.train.get_or_create_global_step', 6, 2),  # wrap_graph keeps it at stage 1
            ('compat_mts.wrap_graph', 9, 2),
            ('tf.compat.v1.train.get_global_step', 10, 1)]


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
    for path in (CHECK_SCRIPT, CATALOGUE):
        tree = ast.parse(path.read_text())
        modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        modules |= {f'{node.module}.{alias.name}' if node.module == 'compat_mts' else node.module
                    for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        catalogue = {'compat_mts.check_catalogue', 'check_catalogue'} if path == CHECK_SCRIPT else set()
        others = {module for module in modules - catalogue if module.split('.')[0] != '__future__'}
        assert {module.split('.')[0] for module in others} <= set(sys.stdlib_module_names), (path, modules)


def test_json_output_shape():
    findings = check.check_file(SAMPLES / 'regression.py')
    error = check.CheckError('bad.py', 'syntax error: invalid syntax', 3, 12)
    document = json.loads(check.format_json(findings, [error]))
    assert set(document) == {'findings', 'errors'}
    assert len(document['findings']) == len(EXPECTED['regression.py'])
    first = document['findings'][0]
    assert first == {'file': str(SAMPLES / 'regression.py'), 'line': 8, 'col': 1,
                     'construct': 'tf.compat.v1.disable_eager_execution', 'replacement': 'nothing: remove the call',
                     'stage': 1, 'note': first['note']}
    assert document['errors'] == [{'file': 'bad.py', 'line': 3, 'col': 12, 'message': 'syntax error: invalid syntax'}]


def test_text_output_has_one_located_line_per_finding_and_a_count_by_stage():
    findings = check.check_source('import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n'
                                  'h = tf.train.StopAtStepHook(num_steps=5)\n', 'train.py')
    text = check.format_text(findings, files_checked=1)
    lines = text.splitlines()
    assert lines[0] == "train.py:2:5: stage 2: tf.compat.v1.placeholder -> an argument of the tf.function step, " \
                       "fed with feed_dict={'x': batch}"
    assert lines[1].startswith('    Works unchanged inside compat_mts.wrap_graph')
    assert lines[-1] == '2 constructs to migrate in 1 file (stage 1: 1, stage 2: 1).'
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


# The exit status, through real processes. `python -m compat_mts.check` imports the compat_mts package (and so
# TensorFlow) first; the file itself runs standalone, without TensorFlow, which keeps the other runs quick.

def run_standalone(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return run_python(str(CHECK_SCRIPT), *args, cwd=cwd, timeout=60)


def test_module_command_exits_1_on_v1_constructs_and_prints_json(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    result = subprocess.run([sys.executable, '-m', 'compat_mts.check', '--json', str(SAMPLES / 'regression.py')],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr[-3000:]
    findings = json.loads(result.stdout)['findings']
    assert [(f['construct'], f['line']) for f in findings] == EXPECTED['regression.py']


def test_exit_0_when_nothing_is_found(tmp_path):
    script = tmp_path / 'migrated.py'
    script.write_text('import tensorflow as tf\nmodel = tf.keras.Sequential()\n')
    result = run_standalone(str(script), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, 'Nothing to migrate in 1 file.\n')


def test_exit_1_when_constructs_are_found(tmp_path):
    result = run_standalone(str(SAMPLES / 'distributed_hooks.py'), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == '21 constructs to migrate in 1 file (stage 1: 8, stage 2: 6, stage 3: 7).'


def test_exit_2_when_a_file_does_not_parse_even_if_others_have_findings(tmp_path):
    broken = tmp_path / 'broken.py'
    broken.write_text('import tensorflow as tf\nwith tf.Session() as sess\n    pass\n')
    result = run_standalone(str(broken), str(SAMPLES / 'regression.py'), cwd=tmp_path)
    assert result.returncode == 2
    assert re.match(rf'{re.escape(str(broken))}:2:\d+: syntax error: ', result.stderr), result.stderr
    assert 'regression.py:8:1: stage 1:' in result.stdout


def test_exit_2_on_a_bad_command_line(tmp_path):
    assert run_standalone(cwd=tmp_path).returncode == 2
    assert run_standalone('--max-stage', '5', str(SAMPLES), cwd=tmp_path).returncode == 2


# ---------------------------------------------------------------------------------------------------------
# The guide's example output is what the checker prints.

def test_guide_example_output_is_current():
    guide = (REPO / 'migration_guide' / 'check.md').read_text(encoding='utf-8')
    example = guide[guide.index('## Example'):]
    program, output = re.findall(r'```text\n(.*?)```', example, re.DOTALL)[:2]
    command, expected = output.split('\n', 1)
    assert command == '$ compat-mts check train.py'
    assert check.format_text(check.check_source(program, 'train.py'), files_checked=1) == expected
