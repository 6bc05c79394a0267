"""`compat-mts upgrade` on the names `tf_upgrade_v2` (TensorFlow 2.21's) leaves: the v1 default of the canned
Estimators' `loss_reduction`, tf.estimator's hook aliases, tf.contrib.tpu, tf.gfile, tf.flags, the iterator methods;
and `check` on a serving input function's placeholders."""

from __future__ import annotations

import json
import textwrap

import pytest

from compat_mts.cli import check, upgrade
from tests import support, tf215

REDUCTION = 'loss_reduction=tf.keras.losses.Reduction.SUM'


def _upgrade(tmp_path, source: str, name: str = 'train.py') -> upgrade.Upgrade:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return upgrade.upgrade_files([str(path)], processes=1)[0]


def _notes(result: upgrade.Upgrade, done: bool) -> list[str]:
    return [note.text for note in result.notes if note.done is done]


def test_a_tensorflow_1_scripts_canned_estimators_keep_the_v1_loss_reduction(tmp_path):
    result = _upgrade(
        tmp_path,
        """\
        import tensorflow as tf
        tf.logging.set_verbosity(tf.logging.INFO)
        columns = [tf.feature_column.numeric_column('x')]
        a = tf.estimator.DNNClassifier(hidden_units=[3], feature_columns=columns)
        b = tf.estimator.LinearRegressor(columns, loss_reduction=tf.losses.Reduction.MEAN)
        c = tf.estimator.Estimator(model_fn=None)
        """,
    )
    lines = result.upgraded.splitlines()
    assert lines[-3].endswith(f'feature_columns=columns, {REDUCTION})')
    assert lines[-2].count('loss_reduction=') == 1 and REDUCTION not in lines[-2]  # The script's own is kept.
    assert 'loss_reduction' not in lines[-1]  # Not a canned Estimator.
    added = [text for text in _notes(result, True) if 'loss_reduction=' in text]
    assert len(added) == 1 and 'tf.estimator.DNNClassifier' in added[0]


_CANNED_PROGRAM = """\
import json, sys, tempfile
import numpy as np
import tensorflow as tf
tf.logging.set_verbosity(tf.logging.ERROR)


def input_fn():
    x = np.arange(40, dtype=np.float32).reshape(40, 1) / 40
    return tf.data.Dataset.from_tensors(({'x': x}, 2 * x + 1)).repeat()


estimator = tf.estimator.LinearRegressor([tf.feature_column.numeric_column('x')], model_dir=tempfile.mkdtemp())
estimator.train(input_fn, steps=3)
print(json.dumps(float(estimator.evaluate(input_fn, steps=1)['loss'])))
"""


@pytest.mark.slow
def test_the_upgraded_canned_estimator_reports_the_loss_of_tensorflow_1(tmp_path):
    original = tmp_path / 'v1.py'  # TensorFlow 1.x's tf.estimator: TF 2.15's tf.compat.v1.estimator.
    original.write_text(_CANNED_PROGRAM.replace('import tensorflow as tf', 'import tensorflow.compat.v1 as tf'))
    upgraded = tmp_path / 'upgraded.py'
    upgraded.write_text(_upgrade(tmp_path, _CANNED_PROGRAM).upgraded)
    v1 = tf215.run(str(original))
    mts = support.run_python(str(upgraded))
    assert v1.returncode == 0, v1.stderr[-2000:]
    assert mts.returncode == 0, mts.stderr[-2000:]
    v1_loss, mts_loss = json.loads(v1.stdout.splitlines()[-1]), json.loads(mts.stdout.splitlines()[-1])
    assert mts_loss == pytest.approx(v1_loss, rel=1e-5)
    assert v1_loss > 20  # Summed over the batch of 40, not averaged: what a dropped loss_reduction changes.


def test_tf_compat_v1_canned_estimators_keep_it_and_tensorflow_2_ones_do_not_get_it(tmp_path):
    v1 = _upgrade(tmp_path, 'import tensorflow as tf\nm = tf.compat.v1.estimator.BaselineRegressor()\n', 'a.py')
    assert f'mts.estimator.BaselineRegressor({REDUCTION})' in v1.upgraded
    v2 = _upgrade(tmp_path, 'import tensorflow as tf\nm = tf.estimator.BaselineRegressor()\n', 'b.py')
    assert 'mts.estimator.BaselineRegressor()' in v2.upgraded


def test_the_names_tf_upgrade_v2_leaves_are_rewritten_and_reported(tmp_path):
    result = _upgrade(
        tmp_path,
        """\
        \"\"\"A program.\"\"\"
        import tensorflow as tf

        flags = tf.flags


        class Hook(tf.estimator.SessionRunHook):
            pass


        def input_fn(dataset):
            return dataset.make_one_shot_iterator().get_next()


        hooks = [tf.estimator.LoggingTensorHook({'loss': 'loss'}, every_n_iter=10), tf.estimator.SecondOrStepTimer(1)]
        config = tf.contrib.tpu.RunConfig(tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=2))
        estimator = tf.contrib.tpu.TPUEstimator(model_fn=None, config=config, use_tpu=False)
        """,
    )
    text = result.upgraded
    assert text.startswith('"""A program."""\nimport compat_mts as mts\nimport tensorflow as tf\n')
    assert 'flags = tf.compat.v1.flags' in text
    assert 'class Hook(mts.SessionRunHook)' in text
    assert 'return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()' in text
    assert "[mts.LoggingTensorHook({'loss': 'loss'}, every_n_iter=10), mts.SecondOrStepTimer(1)]" in text
    assert 'mts.estimator.tpu.RunConfig(tpu_config=mts.estimator.tpu.TPUConfig(iterations_per_loop=2))' in text
    assert 'mts.estimator.tpu.TPUEstimator(model_fn=None' in text
    assert 'tf.estimator' not in text and 'contrib' not in text
    done = '\n'.join(_notes(result, True))
    for name in ('tf.flags', 'tf.estimator.SessionRunHook', 'tf.estimator.LoggingTensorHook', 'TPUEstimator'):
        assert name in done
    assert _notes(result, False) == [  # tf_upgrade_v2's own rewrite, which it asks to check.
        'tf_upgrade_v2: WARNING: Changing dataset.make_one_shot_iterator() to '
        'tf.compat.v1.data.make_one_shot_iterator(dataset). Please check this transformation.'
    ]
    compile(text, 'train.py', 'exec')


def test_a_file_whose_only_tensorflow_1_name_is_tf_gfile_is_upgraded(tmp_path):
    result = _upgrade(tmp_path, "import tensorflow as tf\nwith tf.gfile.GFile('a.txt') as f:\n    f.read()\n")
    assert result.changed and "tf.io.gfile.GFile('a.txt')" in result.upgraded
    assert 'nothing to change' not in result.report()


def test_check_calls_the_hook_aliases_blockers_and_a_serving_functions_placeholders_not():
    findings = check.check_source(
        textwrap.dedent("""\
        import tensorflow as tf

        def json_serving_input_fn():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})

        SERVING_FUNCTIONS = {'JSON': json_serving_input_fn}
        hook = tf.estimator.StopAtStepHook(10)
        """),
        'x.py',
    )
    blockers = {finding.construct: finding.replacement for finding in findings if finding.blocks}
    assert blockers == {'tf.estimator.StopAtStepHook': 'compat_mts.StopAtStepHook'}
