"""`compat-mts upgrade`'s edits, in process: what each stage-1 edit turns a v1 script into, that the rest of the
script stays as written, that a second run changes nothing, and the command line around them.

The runs of the upgraded programs, and `--verify`, are in tests/test_upgrade_programs.py.
"""

from __future__ import annotations

import ast
import difflib
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from compat_mts import _tf_tools
from compat_mts.cli import check, upgrade
from compat_mts.cli.upgrade import edits as upgrade_edits
from tests import support

SAMPLES = os.path.join(support.TESTS_DIR, 'upgrade_samples')
V1_PROGRAMS = os.path.join(support.TESTS_DIR, 'v1_programs')
# Every v1 script of the suite: the upgrade samples, the hand-ported v1 programs, the checker's samples.
ALL_SCRIPTS = sorted(
    glob.glob(os.path.join(SAMPLES, '*.py'))
    + glob.glob(os.path.join(SAMPLES, '*', '*.py'))  # The programs of several files.
    + glob.glob(os.path.join(V1_PROGRAMS, '*_v1.py'))
    + glob.glob(os.path.join(support.TESTS_DIR, 'check_samples', '*.py'))
)
ALL_SCRIPTS = [path for path in ALL_SCRIPTS if not path.endswith('__init__.py')]


def _edited(source: str) -> tuple[str, list[upgrade_edits.Note]]:
    return upgrade_edits.apply_edits(textwrap.dedent(source))


def _read(path: str) -> str:
    with open(path, encoding='utf-8') as file:
        return file.read()


def test_session_and_hook_names_become_compat_mts_and_the_graph_code_keeps_its_v1_names():
    text, notes = _edited("""
        import tensorflow as tf

        def train(loss, train_op):
            with tf.Graph().as_default():
                step = tf.compat.v1.train.get_or_create_global_step()
                hooks = [tf.compat.v1.train.StopAtStepHook(last_step=10), tf.compat.v1.train.NanTensorHook(loss)]
                with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks) as sess:  # the loop
                    while not sess.should_stop():
                        sess.run(train_op)
        """)
    assert 'import compat_mts as mts\nimport tensorflow as tf\n' in text  # compat_mts first: a quiet start
    assert '[mts.StopAtStepHook(last_step=10), mts.NanTensorHook(loss)]' in text
    assert 'with mts.MonitoredTrainingSession(hooks=hooks) as sess:  # the loop' in text
    assert 'tf.compat.v1.train.get_or_create_global_step()' in text  # Graph code: as written.
    assert [note.line for note in notes if note.done and 'StopAtStepHook' in note.text] == [
        7
    ]  # The source's first line is empty.


def test_an_existing_compat_mts_import_is_used_under_its_own_name():
    text, _ = _edited("""
        import tensorflow as tf
        import compat_mts as cm

        with tf.Graph().as_default():
            with tf.compat.v1.train.MonitoredSession() as sess:
                pass
        """)
    assert 'with cm.MonitoredSession() as sess:' in text
    assert text.count('import compat_mts') == 1


def test_disable_v2_behavior_goes_and_a_graph_built_at_the_top_of_main_goes_under_a_graph_block():
    text, notes = _edited("""
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()


        def main():
            steps = 3
            x = tf.placeholder(tf.float32, [None, 1], name='x')
            loss = tf.reduce_mean(tf.layers.dense(x, 1))
            train_op = tf.train.AdamOptimizer().minimize(loss)
            with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=steps)]) as sess:
                while not sess.should_stop():
                    sess.run(train_op, feed_dict={x: [[1.0]]})
            print('done')
        """)
    assert 'disable_v2_behavior' not in text
    assert (
        textwrap.dedent("""
        def main():
            steps = 3
            with tf.Graph().as_default():
                x = tf.placeholder(tf.float32, [None, 1], name='x')
        """)
        in text
    )
    assert "\n        print('done')\n" in text  # The rest of main() goes in the block too.
    assert "os.environ['TF_USE_LEGACY_KERAS'] = '1'" in text.split('import tensorflow')[0]
    assert any('top level of main()' in note.text for note in notes)
    compile(text, '<upgraded>', 'exec')


def test_a_graph_built_through_a_chain_of_the_module_s_functions_goes_under_a_graph_block():
    """A statement builds the graph when it calls a function of the module that names a graph op, itself or through
    the functions it calls; functions that only call each other build none (and are no endless search)."""
    text, notes = _edited("""
        import tensorflow.compat.v1 as tf


        def ping(n):
            return pong(n - 1) if n else 0


        def pong(n):
            return ping(n)


        def layer(x):
            return tf.layers.dense(x, 1)


        def model(x):
            return layer(x)


        def main():
            count = ping(3)
            loss = tf.reduce_mean(model(tf.ones([1, 1])))
            with tf.train.MonitoredTrainingSession() as sess:
                sess.run(loss)
        """)
    assert (
        textwrap.dedent("""
        def main():
            count = ping(3)
            with tf.Graph().as_default():
                loss = tf.reduce_mean(model(tf.ones([1, 1])))
        """)
        in text
    )
    text, notes = _edited("""
        import tensorflow.compat.v1 as tf


        def layer(x):
            return tf.layers.dense(x, 1)


        def model(x):
            return layer(x)


        def main():
            logits = model(1)
            with tf.train.MonitoredTrainingSession() as sess:
                sess.run(logits)
        """)
    assert '\n    with tf.Graph().as_default():\n        logits = model(1)\n' in text
    assert any('top level of main()' in note.text for note in notes)


def test_disable_v2_behavior_becomes_disable_v2_tensorshape_where_the_graph_reads_dimension_values():
    text, _ = _edited("""
        import tensorflow as tf

        tf.compat.v1.disable_v2_behavior()

        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            width = x.shape[1].value
        """)
    assert 'tf.compat.v1.disable_v2_tensorshape()\n' in text
    assert 'disable_v2_behavior' not in text
    assert not [finding for finding in check.check_source(text) if finding.blocks]


def test_disable_eager_execution_alone_in_a_block_leaves_a_pass():
    text, _ = _edited("""
        import tensorflow as tf

        if True:
            tf.compat.v1.disable_eager_execution()
        """)
    assert 'disable_eager_execution' not in text
    assert 'if True:\n    pass\n' in text


def test_estimator_names_become_compat_mts_estimator_and_export_savedmodel_export_saved_model():
    text, notes = _edited("""
        import tensorflow as tf

        def model_fn(features, labels, mode):
            if mode == tf.estimator.ModeKeys.PREDICT:
                return tf.estimator.EstimatorSpec(mode, predictions=features)

        estimator = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(tf_random_seed=1))
        image = tf.compat.v1.placeholder(tf.float32, [None, 28, 28], name='image')
        receiver = tf.estimator.export.build_raw_serving_input_receiver_fn({'image': image})
        estimator.export_savedmodel('/tmp/export', receiver, strip_default_attrs=True)
        """)
    assert 'mode == mts.estimator.ModeKeys.PREDICT' in text
    assert 'mts.estimator.Estimator(model_fn, config=mts.estimator.RunConfig(tf_random_seed=1))' in text
    assert 'mts.estimator.export.build_raw_serving_input_receiver_fn(' in text
    assert "estimator.export_saved_model('/tmp/export', receiver)" in text
    assert "image = tf.TensorSpec([None, 28, 28], tf.float32, name='image')" in text
    assert 'tf.estimator' not in text
    assert sum('estimator.export ->' in note.text for note in notes) == 0  # Whole names only, once each.


def test_a_premade_estimator_moves_to_compat_mts_estimator_and_nothing_is_left_for_a_person():
    text, notes = _edited("""
        import tensorflow as tf

        classifier = tf.estimator.DNNClassifier(hidden_units=[10], feature_columns=[])
        """)
    assert 'tf.estimator.DNNClassifier' not in text and 'estimator.DNNClassifier(' in text
    assert not [note for note in notes if not note.done]


def test_a_ps_program_gets_the_four_parameter_server_edits_of_the_guide():
    text, notes = upgrade_edits.apply_edits(_read(os.path.join(SAMPLES, 'mnist_ps.py')))
    # 1. (left for a person: the cluster comes from CLUSTER) 2. the ps and worker tasks serve.
    assert textwrap.dedent("""\
            if job_name in ('ps', 'worker'):
                server = tf.train.Server(cluster, job_name=job_name, task_index=task_index)
                server.join()
            mts.parameter_server_strategy(cluster)
        """).replace('\n', '\n    ').rstrip() in text.replace('\n', '\n')
    # 3. the strategy before the graph, which goes under a graph block, its device function under v1's tf.device.
    assert text.index('mts.parameter_server_strategy(cluster)') < text.index('with tf.Graph().as_default():')
    assert 'with tf.Graph().as_default():\n        with tf.compat.v1.device(tf.train.replica_device_setter(' in text
    # 4. no master=.
    keywords = {
        keyword.arg for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call) for keyword in node.keywords
    }
    assert 'master' not in keywords and 'mts.MonitoredTrainingSession(is_chief=(task_index == 0),' in text
    assert [note for note in notes if not note.done and "'chief' job" in note.text]
    assert not [finding for finding in check.check_source(text) if finding.blocks and 'ps' in finding.note]


def test_the_horovod_shaped_trainer_comes_out_as_its_hand_port():
    upgraded, _ = upgrade_edits.apply_edits(_read(os.path.join(V1_PROGRAMS, 'mnist_layers_v1.py')))
    hand_port = _read(os.path.join(V1_PROGRAMS, 'mnist_layers_compat.py'))

    def definitions(text):
        return [ast.dump(node) for node in ast.parse(text).body if not isinstance(node, (ast.Expr, ast.Import))]

    assert definitions(upgraded) == definitions(hand_port)
    imports = {ast.dump(node) for node in ast.parse(hand_port).body if isinstance(node, ast.Import)}
    assert imports == {ast.dump(node) for node in ast.parse(upgraded).body if isinstance(node, ast.Import)}


def test_lines_no_edit_touches_stay_byte_for_byte():
    original = _read(os.path.join(SAMPLES, 'cifar10_train.py')).replace('tf.train.', 'tf.compat.v1.train.')
    upgraded, _ = upgrade_edits.apply_edits(original)
    removed = [line for line in difflib.ndiff(original.splitlines(), upgraded.splitlines()) if line[:2] == '- ']
    added = [line for line in difflib.ndiff(original.splitlines(), upgraded.splitlines()) if line[:2] == '+ ']
    assert removed and all('tf.compat.v1.train.' in line or '.make_one_shot_iterator()' in line for line in removed)
    assert all(
        'mts.' in line
        or 'import compat_mts' in line
        or 'disable_v2_tensorshape' in line
        or 'data.make_one_shot' in line
        for line in added
    )
    assert '# Asks for loss value.' in upgraded


@pytest.mark.parametrize('path', ALL_SCRIPTS, ids=os.path.basename)
def test_a_second_upgrade_changes_nothing(path):
    once, _ = upgrade_edits.apply_edits(_read(path))
    twice, notes = upgrade_edits.apply_edits(once)
    assert twice == once
    assert not [note for note in notes if note.done]
    compile(once, path, 'exec')


def test_a_script_without_tensorflow_is_left_alone():
    source = 'import os\n\nprint(os.getcwd())  # nothing to do\n'
    assert upgrade_edits.apply_edits(source) == (source, [])


def test_tensorflow_1_scripts_are_told_apart_from_tensorflow_2_ones():
    assert upgrade.is_tf1_script('import tensorflow as tf\nx = tf.placeholder(tf.float32)\n')
    assert not upgrade.is_tf1_script('import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n')
    assert not upgrade.is_tf1_script('import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n')


def test_tensorflow_1_summaries_and_layers_become_v1_names_before_tf_upgrade_v2():
    text, notes = upgrade_edits.v1_modules(
        'import tensorflow as tf\n\ntf.summary.scalar("loss", loss)\ny = tf.layers.dense(x, 1)\n'
    )
    assert 'tf.compat.v1.summary.scalar("loss", loss)' in text and 'tf.compat.v1.layers.dense(x, 1)' in text
    assert [note.line for note in notes] == [3, 4]


def test_the_v1_module_renames_keep_the_other_statements_and_count_lines_of_the_whole_script():
    # Renamed statement by statement: the alias made in one statement counts in the others, the statements that
    # name no module stay byte for byte, and a form feed (a line end to str.splitlines, not to Python) moves no cut.
    text, notes = upgrade_edits.v1_modules(
        'import tensorflow as tf\n\x0c\nlayers = tf.layers\n\n\ndef f(x):\n    return layers.dense(x, 1)\n\n\n'
        'y  =  ( 1 ,\n  2 )\ntf.summary.scalar("loss", y); z = tf.layers\n'
    )
    assert text == (
        'import tensorflow as tf\n\x0c\nlayers = tf.compat.v1.layers\n\n\n'
        'def f(x):\n    return layers.dense(x, 1)\n\n\n'
        'y  =  ( 1 ,\n  2 )\ntf.compat.v1.summary.scalar("loss", y); z = tf.compat.v1.layers\n'
    )
    assert [note.line for note in notes] == [3, 12, 12]


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
    return subprocess.run(
        [sys.executable, '-m', 'compat_mts', 'upgrade', *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


V2_STYLE = """\
import tensorflow as tf


def main():
    x = tf.compat.v1.placeholder(tf.float32, [None, 1])
    loss = tf.reduce_mean(x)  # the loss
    with tf.compat.v1.train.MonitoredTrainingSession() as sess:
        sess.run(loss, feed_dict={x: [[1.0]]})
"""


@pytest.mark.slow
def test_the_command_prints_a_diff_and_a_report_and_writes_nothing_by_default(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(V2_STYLE)
    result = _cli('train.py', cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '--- a/train.py\n+++ b/train.py\n' in result.stdout
    assert '+    with tf.Graph().as_default():\n' in result.stdout
    assert 'line 7: tf.compat.v1.train.MonitoredTrainingSession -> mts.MonitoredTrainingSession' in result.stdout
    assert script.read_text() == V2_STYLE


@pytest.mark.slow
def test_the_command_writes_in_place_or_to_a_directory_and_a_second_run_has_nothing_to_change(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(V2_STYLE)
    out = tmp_path / 'out'
    assert _cli('train.py', '-o', str(out), cwd=str(tmp_path)).returncode == 0
    assert script.read_text() == V2_STYLE
    written = (out / 'train.py').read_text()
    assert 'mts.MonitoredTrainingSession' in written
    result = _cli('train.py', '--in-place', cwd=str(tmp_path))
    assert result.returncode == 0 and '--- a/' not in result.stdout
    assert script.read_text() == written
    again = _cli('train.py', '--in-place', '--diff', cwd=str(tmp_path))
    assert again.returncode == 0 and 'train.py: nothing to change' in again.stdout and '--- a/' not in again.stdout


@pytest.mark.slow
def test_the_command_refuses_a_file_that_is_not_python_naming_it(tmp_path):
    (tmp_path / 'broken.py').write_text('def main(:\n')
    result = _cli('broken.py', cwd=str(tmp_path))
    assert result.returncode == 2
    assert 'compat-mts upgrade: nothing written, 1 file(s) not upgraded:\n  broken.py:1: ' in result.stderr
    missing = _cli('missing.py', cwd=str(tmp_path))
    assert missing.returncode == 2 and 'missing.py' in missing.stderr


@pytest.mark.slow
def test_verify_of_several_files_needs_main_naming_one_of_them(tmp_path):
    (tmp_path / 'a.py').write_text(V2_STYLE)
    (tmp_path / 'b.py').write_text(V2_STYLE)
    result = _cli('a.py', 'b.py', '--verify', '3', cwd=str(tmp_path))
    assert result.returncode == 2 and '--verify of several files needs --main FILE' in result.stderr
    assert 'one of a.py, b.py' in result.stderr
    result = _cli('a.py', 'b.py', '--verify', '3', '--main', 'c.py', cwd=str(tmp_path))
    assert result.returncode == 2 and '--main c.py: not one of the files upgraded; one of a.py, b.py' in result.stderr
    result = _cli('a.py', '--main', 'a.py', cwd=str(tmp_path))
    assert result.returncode == 2 and '--main goes with --verify N' in result.stderr


def test_without_renames_a_tensorflow_1_script_is_told_the_tf_upgrade_v2_command(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text('import tensorflow as tf\n\nx = tf.placeholder(tf.float32)\n')
    [result] = upgrade.upgrade_files([str(script)], renames=False)
    assert f'TensorFlow 1.x: run `tf_upgrade_v2 --infile {script} --inplace` first' in result.report()
    assert 'tf.placeholder' in result.upgraded


def test_continuation_lines_follow_a_renamed_call_and_no_other():
    text, _ = _edited("""
        import tensorflow as tf

        with tf.Graph().as_default():
            loss = tf.add(1.0,
                  2.0)  # not aligned with its parenthesis, and not renamed: kept
            with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir='/tmp/x',
                                                             hooks=[]) as sess:
                pass
        """)
    assert '    loss = tf.add(1.0,\n          2.0)  # not aligned' in text
    aligned = '\n' + ' ' * 38 + 'hooks=[])'
    assert "    with mts.MonitoredTrainingSession(checkpoint_dir='/tmp/x'," + aligned in text


def test_session_names_imported_from_v1s_train_module_come_from_compat_mts():
    text, notes = _edited("""
        import tensorflow as tf
        from tensorflow.compat.v1.train import MonitoredTrainingSession, StopAtStepHook

        with tf.Graph().as_default():
            loss = tf.compat.v1.placeholder(tf.float32)
            with MonitoredTrainingSession(hooks=[StopAtStepHook(last_step=1)]) as sess:
                pass
        """)
    assert 'from compat_mts import MonitoredTrainingSession, StopAtStepHook\n' in text
    assert 'import compat_mts as mts' not in text
    mixed, notes = _edited('from tensorflow.compat.v1.train import MonitoredSession, Saver\n')
    assert mixed == 'from tensorflow.compat.v1.train import MonitoredSession, Saver\n'
    assert [(note.line, note.done) for note in notes] == [(1, False)] and 'split the import' in notes[0].text


@pytest.mark.slow
def test_upgrade_runs_without_importing_tensorflow(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(V2_STYLE)
    probe = (
        'import sys; from compat_mts import cli\n'
        f'code = cli.main(["upgrade", {str(script)!r}])\n'
        'assert "tensorflow" not in sys.modules, "compat-mts upgrade imported TensorFlow"\n'
        'sys.exit(code)'
    )
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT)
    result = subprocess.run([sys.executable, '-c', probe], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert '+import compat_mts as mts' in result.stdout


FAST_PATH = """\
import json
import sys

from compat_mts.cli import upgrade

upgrades = upgrade.upgrade_files(sys.argv[2:], processes=2)
assert not [name for name in sys.modules if name.split('.')[0] == 'tensorflow'], 'TensorFlow was imported'
with open(sys.argv[1], 'w', encoding='utf-8') as file:
    json.dump([[u.path, u.upgraded, [[n.line, n.text, n.done] for n in u.notes]] for u in upgrades], file)
import tensorflow as tf  # The ordinary TensorFlow, after the stand-in packages of its tools are gone.

assert tf.reduce_sum(tf.constant([1.0, 2.0])).numpy() == 3.0 and hasattr(tf.compat.v1.train, 'Saver')
"""


@pytest.mark.slow
def test_the_in_process_renames_and_the_process_pool_give_the_tf_upgrade_v2_commands_text(tmp_path):
    """Every v1 script of the suite (the benchmark's corpus), upgraded in a fresh process the fast way (TensorFlow's
    tools loaded without TensorFlow, two processes), is what the `tf_upgrade_v2` command gives, byte for byte."""
    out = tmp_path / 'fast.json'
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
    result = subprocess.run(
        [sys.executable, '-c', FAST_PATH, str(out), *ALL_SCRIPTS],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    texts = {path: _read(path) for path in ALL_SCRIPTS}
    tf1 = {path for path, text in texts.items() if upgrade.is_tf1_script(text)}
    assert len(tf1) >= 3, 'TensorFlow 1.x scripts are among them: the renames run'
    with_the_command = upgrade._upgrade_with_the_command(texts, tf1)  # noqa: SLF001
    fast = json.loads(out.read_text(encoding='utf-8'))
    assert [path for path, _, _ in fast] == ALL_SCRIPTS
    for (path, text, notes), expected in zip(fast, with_the_command):
        assert text == expected.upgraded, path
        assert notes == [[note.line, note.text, note.done] for note in expected.notes], path
    renamed = [upgrade for upgrade in with_the_command if upgrade.path in tf1]
    assert all("tf_upgrade_v2's renames" in upgrade.report() for upgrade in renamed)


FORKED_PARTS = """\
import json
import sys

from benchmarks import check_upgrade_scaling
from compat_mts.cli import upgrade
from compat_mts.cli.upgrade import forked

text = check_upgrade_scaling.v1_program(forked.MIN_LINES + 600)
results = {}
for processes in (1, 2):
    result = upgrade._upgrade_one('long.py', text, True, True, processes=processes)
    results[processes] = [result.upgraded, [[note.line, note.text, note.done] for note in result.notes]]
with open(sys.argv[1], 'w', encoding='utf-8') as file:
    json.dump(results, file)
"""


@pytest.mark.slow
def test_a_long_script_upgraded_in_parts_by_forked_processes_is_upgraded_as_in_one(tmp_path):
    """The renames and the edits of a long TensorFlow 1.x script shared by two forked processes (its pieces, its
    top-level statements) give the text and the notes, in their order, of one process."""
    out = tmp_path / 'results.json'
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
    result = subprocess.run(
        [sys.executable, '-c', FORKED_PARTS, str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(out.read_text(encoding='utf-8'))
    one, shared = results['1'], results['2']
    assert shared[0] == one[0]
    assert shared[1] == one[1]
    assert 'mts.MonitoredTrainingSession' in one[0] and len(one[1]) > 100, 'the edits were made'


FORKED_CHECK = """\
import ast
import json
import os
import sys

from benchmarks import check_upgrade_scaling
from compat_mts.cli import upgrade
from compat_mts.cli.check import checker, names
from compat_mts.cli.upgrade import forked

text = check_upgrade_scaling.v1_program(forked.MIN_LINES + 600)
tree = ast.parse(text)
nodes = names.walk(tree)
pids = []


def forked_parts(function, runs):
    found = forked.forked_map(lambda run: (os.getpid(), function(run)), runs, 2)
    pids.extend(pid for pid, _ in found)
    return [findings for _, findings in found]


def check(**parts):
    findings = checker.check_tree(tree, nodes, names.Names(tree, nodes), **parts)
    return [list(vars(finding).values()) for finding in findings]


one = check()
shared = check(parts=2, map_parts=forked_parts)
with open(sys.argv[1], 'w', encoding='utf-8') as file:
    json.dump([one, shared, len(set(pids) - {os.getpid()}), sorted(upgrade._check_parts(text, 2))], file)
"""


@pytest.mark.slow
def test_the_check_of_a_long_script_shared_by_forked_processes_finds_what_one_process_finds(tmp_path):
    """The visit of a long script's top-level statements shared by two forked processes gives the findings of
    one process, in their order; `upgrade` shares it so where this process can fork."""
    out = tmp_path / 'findings.json'
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT)
    result = subprocess.run(
        [sys.executable, '-c', FORKED_CHECK, str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    one, shared, forked_processes, parts = json.loads(out.read_text(encoding='utf-8'))
    assert shared == one
    assert len(one) > 100 and any(finding[-1] for finding in one), 'blocking constructs were found'
    assert forked_processes == 2
    assert parts == ['map_parts', 'parts']


def test_the_check_of_a_long_script_is_not_shared_by_forked_processes_once_tensorflow_runs():
    """TensorFlow is not fork-safe: in a process that imported it, the upgraded script is checked in the one."""
    import tensorflow  # noqa: F401

    from benchmarks import check_upgrade_scaling
    from compat_mts.cli.upgrade import forked

    text = check_upgrade_scaling.v1_program(forked.MIN_LINES + 600)
    assert upgrade._check_parts(text, 2) == {}
    assert upgrade._check_parts(text, 1) == {}


def test_a_horovod_program_swaps_one_import_and_the_report_says_how_to_start_its_workers():
    [result] = upgrade.upgrade_files([os.path.join(SAMPLES, 'horovod_mnist.py')])
    text = result.upgraded
    assert 'from compat_mts.legacy import horovod as hvd\n' in text and '\nimport horovod' not in text
    for call in ('hvd.init()', 'hvd.DistributedOptimizer(opt)', 'hvd.BroadcastGlobalVariablesHook(0)'):
        assert call in text  # The Horovod calls stay as written.
    assert 'mts.StopAtStepHook(last_step=last_step // hvd.size())' in text
    assert text.index('hvd.init()') < text.index('with tf.Graph().as_default():')
    done = {note.text: note.line for note in result.notes if note.done}
    assert done['import horovod.tensorflow as hvd -> from compat_mts.legacy import horovod as hvd'] == 23
    assert done['tf.layers -> tf.compat.v1.layers'] == 25
    assert any(text.startswith('Horovod on MultiWorkerMirroredStrategy: start one process per worker') for text in done)
    assert not [note for note in result.notes if not note.done]
    assert not [finding for finding in check.check_source(text) if finding.blocks]
    assert upgrade.upgrade_source(text).changed is False


def test_horovod_names_compat_mts_does_not_provide_are_left_for_a_person_with_the_import_line():
    text, notes = _edited("""
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        total = hvd.allreduce(tf.constant(1.0))
        gathered = hvd.allgather(tf.constant([1.0]))
        """)
    assert 'from compat_mts.legacy import horovod as hvd' in text
    [left] = [note for note in notes if not note.done]
    assert left.line == 3 and left.text.startswith('hvd.allgather: not in compat_mts.legacy.horovod')


def test_the_edits_list_of_horovod_names_is_compat_mts_legacy_horovods():
    from compat_mts.legacy import horovod

    assert upgrade_edits.horovod_names() == frozenset(horovod.__all__)


def _renamer():
    """`_tf_tools.renamer()`, or the test skipped where TensorFlow's tools are not loaded."""
    rename = _tf_tools.renamer()
    if rename is None:
        pytest.skip(
            "TensorFlow's tools are not loaded here (COMPAT_MTS_NO_PRIVATE_TF=1, or a TensorFlow without them): "
            'the renames run as the tf_upgrade_v2 command'
        )
    return rename


def test_the_renames_made_in_pieces_give_the_text_of_the_renames_of_the_whole_file():
    rename = _renamer()
    for path in ALL_SCRIPTS:
        text, _ = upgrade_edits.v1_modules(_read(path))
        whole = rename(text)
        assert upgrade.renamed_in_pieces(text, rename, lines_per_piece=10) == whole, path
        triggers = _tf_tools.rename_triggers()
        for lines in (10, 300):  # Statement by statement: the statements that hold a name it changes.
            assert upgrade.renamed_in_pieces(text, rename, lines, triggers=triggers) == whole, path


def test_what_tf_upgrade_v2_says_of_a_line_the_report_leaves_unsaid_is_a_line_left_for_a_person(tmp_path):
    """`tf_upgrade_v2`'s warning on a name the edits leave (`tf.nn.embedding_lookup`) is a line left for a person,
    with its reason; its error on a `tf.contrib` name the report already leaves for a person is not said twice."""
    script = tmp_path / 'train.py'
    script.write_text(
        'import tensorflow as tf\n\n'
        'ids = tf.placeholder(tf.int32, [None])\n'
        'copy = tf.contrib.copy_graph.copy_op_to_graph(ids, None, [])\n'
        'rows = tf.nn.embedding_lookup(tf.ones([4, 2]), ids)\n'
    )
    [result] = upgrade.upgrade_files([str(script)])
    report = result.report()
    assert (
        '    line 5: tf_upgrade_v2: WARNING: tf.nn.embedding_lookup requires manual check. `partition_strategy` has '
        "been removed from tf.nn.embedding_lookup. The 'div' strategy will be used by default.\n"
    ) in report
    assert report.count('tf.contrib.copy_graph.copy_op_to_graph') == 2  # compat_mts's own line, once.
    assert 'cannot be converted automatically' not in report


_EDGES = '''\
"""Edits next to comments, blocks and lines of their own."""
import compat_mts as mts
import tensorflow.compat.v1 as tf


def helper():
    return 1
# A comment above the eager switch, after a function: libcst gives it to one of the two.
tf.disable_eager_execution()


@tf.estimator.experimental.make_early_stopping_hook if False else (lambda f: f)
def model_fn(features, labels, mode):
    """A model function."""
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=features)
    else:
        x = 1; spec = tf.estimator.EstimatorSpec(mode, loss=tf.constant(0.0))
    return spec


def only_the_switch():
    tf.disable_v2_behavior()


class Hook(tf.train.SessionRunHook):  # A class whose body holds no edit.
    def begin(self):
        self.x = [1,
                  2]


def train(directory):
    with tf.train.MonitoredTrainingSession(checkpoint_dir=directory,
                                           hooks=[tf.train.StopAtStepHook(last_step=3),
                                                  Hook()]) as session:
        while not session.should_stop():
            session.run(tf.train.get_or_create_global_step())
'''


def test_the_edits_made_statement_by_statement_are_those_made_on_the_whole_module():
    """`apply_edits` parses only the statements that hold an edit; its text and notes are those of the edits of
    the whole module, on every script of the suite (as written, and after `tf_upgrade_v2`'s renames) and on one
    with the edits next to comments, decorators, one-line blocks and removed statements."""
    scripts = sorted({*ALL_SCRIPTS, *glob.glob(os.path.join(V1_PROGRAMS, '*.py'))})
    scripts += glob.glob(os.path.join(support.TESTS_DIR, 'check_samples', '*.py'))
    rename = _tf_tools.renamer()
    texts = [_EDGES] + [_read(path) for path in scripts if not path.endswith('__init__.py')]
    if rename is not None:
        texts += [rename(upgrade_edits.v1_modules(text)[0]).text for text in texts if upgrade.is_tf1_script(text)]
    for text in texts:
        for v1_script in (False, True):
            whole = upgrade_edits.apply_edits(text, v1_script, statement_by_statement=False)
            assert upgrade_edits.apply_edits(text, v1_script) == whole, text[:200]
    edited, notes = upgrade_edits.apply_edits(_EDGES)
    assert 'tf.disable_eager_execution()' not in edited and 'def only_the_switch():\n    pass\n' in edited
    assert '# A comment above the eager switch' not in edited  # libcst gives it to the removed statement.
    assert 'x = 1; spec = mts.estimator.EstimatorSpec(' in edited and len(notes) == 10


_PROGRAM = """\
import compat_mts as mts
import tensorflow.compat.v1 as tf


def train_{n}(directory, steps):
    step = tf.train.get_or_create_global_step()
    hooks = [tf.train.StopAtStepHook(last_step=steps)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks) as session:
        while not session.should_stop():
            session.run(step)


def summary_{n}(results):
    lines = []
    for key in sorted(results):
        lines.append('%s: %s' % (key, results[key]))
    return '\\n'.join(lines)
"""


def test_the_edits_parse_each_statement_that_holds_one_once_and_no_other(monkeypatch):
    """Linear time, shown by what the editors are given (libcst, and the edits made on the text of a statement
    whose names alone change): the script of N copies of a program gets N times the parses of one copy, each the
    statements of an edit alone (never the plain Python), and its text is N copies' text."""
    parsed = []
    parse_module = upgrade_edits.cst.parse_module
    plain_edit = upgrade_edits._StageOneEdits.plain_edit

    def counted(source, *args, **kwargs):
        parsed.append(source)
        return parse_module(source, *args, **kwargs)

    def counted_plain(self, source, lines_before):
        parsed.append(source)
        return plain_edit(self, source, lines_before)

    monkeypatch.setattr(upgrade_edits.cst, 'parse_module', counted)
    monkeypatch.setattr(upgrade_edits._StageOneEdits, 'plain_edit', counted_plain)
    one, _ = upgrade_edits.apply_edits(_PROGRAM.format(n=0))
    once = list(parsed)
    assert once and all('summary_' not in source and 'def train_' not in source for source in once)
    assert sum(len(source) for source in once) < len(_PROGRAM) / 2
    parsed.clear()
    many, _ = upgrade_edits.apply_edits(''.join(_PROGRAM.format(n=0) for _ in range(5)))
    assert parsed == once * 5
    assert many == one * 5
    assert 'mts.MonitoredTrainingSession(' in one and 'mts.StopAtStepHook(' in one


COLLECTOR = """\
import gc
import sys

from compat_mts.cli import upgrade
from compat_mts.cli.upgrade import edits, forked


def collects(_):
    return gc.isenabled()


if __name__ == '__main__':
    text = open(sys.argv[1], encoding='utf-8').read()
    gc.disable()
    with forked.pool(2) as workers:
        paused = list(workers.map(collects, range(4)))
    with forked.pool(2, collect=True) as workers:
        on = list(workers.map(collects, range(4)))
    gc.enable()
    upgraded = upgrade.upgrade_files([sys.argv[1]], processes=1)[0]
    assert upgraded.changed
    print(repr((paused, on, gc.isenabled(), edits.parsed_last(text), edits.parsed_last(upgraded.upgraded))))
"""


@pytest.mark.slow
def test_the_collector_is_paused_over_an_upgrade_and_on_in_the_pool_s_workers_between_files(tmp_path):
    """The forked workers of a long file's parts start with the collector paused, as the parent had it; the pool's
    workers of many files collect between files; after `upgrade_files` the collector is on again, and the last
    file's tree is gone (a gigabyte for 120,000 lines)."""
    script = tmp_path / 'train.py'
    script.write_text(V2_STYLE)
    probe = tmp_path / 'probe.py'
    probe.write_text(COLLECTOR)
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT)
    result = subprocess.run(
        [sys.executable, str(probe), str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == repr(([False] * 4, [True] * 4, True, None, None))


def _same_tree(made: ast.Module, nodes: list[ast.AST], text: str) -> None:
    """`made` (and its walk, `nodes`) is the tree `ast.parse(text)` gives, with every node's position, and
    `nodes` holds its nodes in `ast.walk`'s order."""
    fresh = ast.parse(text)
    assert ast.dump(made, include_attributes=True) == ast.dump(fresh, include_attributes=True)
    assert [ast.dump(node, include_attributes=True) for node in nodes] == [
        ast.dump(node, include_attributes=True) for node in ast.walk(fresh)
    ]


def test_each_stage_s_tree_is_made_of_the_one_before_and_is_the_tree_of_its_text():
    """The stages record what their text is made of (`record_edit`); the next one's tree keeps the statements
    the stage kept, renumbered, and parses only the changed ones: the same tree, nodes and positions as a parse of
    the whole text. The v1 program has text kept, renamed, lines added at its top and blocks wrapped."""
    from benchmarks import check_upgrade_scaling

    rename = _renamer()
    text = check_upgrade_scaling.v1_program(400)
    assert upgrade.is_tf1_script(text)
    first = upgrade_edits.parsed_tree(text).body[0]
    modules, _ = upgrade_edits.v1_modules(text)
    assert modules != text
    tree, resolver = upgrade_edits.parsed_last(modules)
    assert tree.body[0] is first  # Kept, not parsed again.
    _same_tree(tree, resolver.nodes, modules)
    renamed = upgrade.renamed_in_pieces(modules, rename, 100, triggers=_tf_tools.rename_triggers())
    assert renamed.text != modules
    tree, resolver = upgrade_edits.parsed_last(renamed.text)
    _same_tree(tree, resolver.nodes, renamed.text)
    upgraded, notes = upgrade_edits.apply_edits(renamed.text, v1_script=True)
    assert any('goes under tf.Graph().as_default()' in note.text for note in notes)
    tree, resolver = upgrade_edits.parsed_last(upgraded)
    _same_tree(tree, resolver.nodes, upgraded)
    assert upgrade_edits.parsed_last(text) is None  # The first text's tree was given up: its statements moved.


def test_a_stage_s_text_whose_changed_parts_do_not_parse_alone_is_parsed_whole():
    text = 'a = 1\nb == 2\nc = 3\n'
    kept = upgrade_edits.parsed_tree(text).body[1]
    edited = 'x = f(\nb == 2\n)\n'  # The kept line is an argument now: the text around it does not parse alone.
    upgrade_edits.record_edit(edited, text, [(0, 1, 'x = f(\n'), (1, 2, 'b == 2\n'), (2, 3, ')\n')])
    tree, resolver = upgrade_edits.parsed(edited)
    _same_tree(tree, resolver.nodes, edited)
    assert kept.lineno == 2
