"""`tf.train.Supervisor` and `tf_slim.learning.train` programs: `check` names both, `upgrade` rewrites them to
`compat_mts.Supervisor` and `compat_mts.slim_learning.train`, and the ptb_word_lm-shaped and
train_image_classifier-shaped samples then train as they did under v1 graph mode (the same losses, the same
checkpoint). The slim program needs tf_slim (`pip install tf-slim`, in the `test` extra)."""

from __future__ import annotations

import os
import pathlib
import re
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from compat_mts.cli import check, upgrade
from tests import support

PTB = os.path.join(support.TESTS_DIR, 'upgrade_samples', 'ptb_supervisor.py')
SLIM = os.path.join(support.TESTS_DIR, 'upgrade_samples', 'slim_train_classifier.py')
_V1_GRAPH_MODE = textwrap.dedent("""\
    import runpy, sys
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name='__main__')
    """)


def test_check_calls_the_supervisor_and_slims_train_blockers_with_their_replacements():
    source = (
        'import tensorflow as tf\nimport tf_slim as slim\nsv = tf.train.Supervisor()\nslim.learning.train(op, "d")\n'
    )
    assert [(f.construct, f.replacement, f.blocks) for f in check.check_source(source, 'x.py')] == [
        ('tf.compat.v1.train.Supervisor', 'compat_mts.Supervisor', True),
        ('tf_slim.learning.train', 'compat_mts.slim_learning.train (the same arguments)', True),
    ]


def _run_both(tmp_path, sample: str, marker: str, output: str) -> tuple[pathlib.Path, pathlib.Path, str, str]:
    """Upgrades `sample` (its upgrade must hold `marker` and leave nothing to do but `tf_upgrade_v2`'s checks),
    runs the original in v1 graph mode and the upgraded script eagerly, each with `<its dir>/<output>` as its
    argument; returns the two directories and the two outputs (stdout and stderr)."""
    result = upgrade.upgrade_files([sample], processes=1)[0]
    assert marker in result.upgraded
    left = [note for note in result.notes if not note.done and not note.text.startswith('tf_upgrade_v2: ')]
    assert not left, result.report()
    upgraded = tmp_path / 'upgraded.py'
    upgraded.write_text(result.upgraded)
    original = tmp_path / 'v1.py'  # TensorFlow 1.x's names, as `import tensorflow.compat.v1 as tf` gives them.
    with open(sample) as file:
        original.write_text(file.read().replace('import tensorflow as tf', 'import tensorflow.compat.v1 as tf'))
    v1_dir, mts_dir = tmp_path / 'v1', tmp_path / 'mts'
    v1, mts = support.run_pythons(
        (_V1_GRAPH_MODE, str(original), str(v1_dir / output)), (str(upgraded), str(mts_dir / output))
    )
    assert v1.returncode == 0, v1.stderr[-3000:]
    assert mts.returncode == 0, mts.stderr[-3000:]
    return v1_dir, mts_dir, v1.stdout + v1.stderr, mts.stdout + mts.stderr


def _same_checkpoints(v1_path: pathlib.Path, mts_path: pathlib.Path) -> None:
    v1_reader, mts_reader = tf.train.load_checkpoint(str(v1_path)), tf.train.load_checkpoint(str(mts_path))
    names = sorted(v1_reader.get_variable_to_shape_map())
    assert sorted(mts_reader.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_allclose(mts_reader.get_tensor(name), v1_reader.get_tensor(name), rtol=1e-5, atol=1e-6)


def _losses(output: str, pattern: str) -> list[float]:
    return [float(value) for value in re.findall(pattern, output, re.MULTILINE)]


@pytest.mark.slow
def test_the_ptb_program_trains_after_upgrade_as_under_v1_graph_mode(tmp_path):
    v1_dir, mts_dir, v1, mts = _run_both(tmp_path, PTB, 'mts.Supervisor(logdir=save_path)', 'ptb')
    pattern = r'^step \d+ loss (\S+)$'
    assert len(_losses(v1, pattern)) == 6
    np.testing.assert_allclose(_losses(mts, pattern), _losses(v1, pattern), rtol=1e-5)
    _same_checkpoints(v1_dir / 'ptb-6', mts_dir / 'ptb-6')
    # The checkpoint service saved at the start into logdir, as v1's thread did; the summary service wrote there.
    # v1's thread named the file from the step it read first and saved the variables in a second run, while the
    # training loop ran on: the step inside its file is 0 or a later one. The session saves before its first run.
    steps = {}
    for side, logdir in (('v1', v1_dir / 'ptb'), ('mts', mts_dir / 'ptb')):
        steps[side] = tf.train.load_checkpoint(str(logdir / 'model.ckpt-0')).get_tensor('Model/global_step')
        assert any(name.startswith('events.out.tfevents') for name in os.listdir(logdir))
    assert steps['mts'] == 0
    assert 0 <= steps['v1'] <= 6


@pytest.mark.slow
def test_the_slim_program_trains_after_upgrade_as_under_v1_graph_mode(tmp_path):
    v1_dir, mts_dir, v1, mts = _run_both(tmp_path, SLIM, 'mts.slim_learning.train(train_op, logdir', 'train')
    pattern = r'global step \d+: loss = (\S+) '
    assert len(_losses(v1, pattern)) == 6
    assert _losses(mts, pattern) == _losses(v1, pattern)
    _same_checkpoints(v1_dir / 'train' / 'model.ckpt-6', mts_dir / 'train' / 'model.ckpt-6')
