"""`tf.train.Supervisor` programs: `check` names the Supervisor, `upgrade` rewrites it to `compat_mts.Supervisor`,
and the ptb_word_lm-shaped sample then trains as it did under v1 graph mode (the same losses, the same checkpoint)."""

from __future__ import annotations

import os
import re
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from compat_mts.cli import check, upgrade
from tests import support

PTB = os.path.join(support.TESTS_DIR, 'upgrade_samples', 'ptb_supervisor.py')
_V1_GRAPH_MODE = textwrap.dedent("""\
    import runpy, sys
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name='__main__')
    """)


def test_check_calls_the_supervisor_a_blocker_with_its_replacement():
    findings = check.check_source('import tensorflow as tf\nsv = tf.train.Supervisor(logdir="/tmp/x")\n', 'x.py')
    assert [(f.construct, f.replacement, f.blocks) for f in findings] == [
        ('tf.compat.v1.train.Supervisor', 'compat_mts.Supervisor', True)
    ]


@pytest.mark.slow
def test_the_ptb_program_trains_after_upgrade_as_under_v1_graph_mode(tmp_path):
    result = upgrade.upgrade_files([PTB], processes=1)[0]
    assert 'mts.Supervisor(logdir=save_path)' in result.upgraded
    assert not [note for note in result.notes if not note.done], result.report()
    upgraded = tmp_path / 'ptb_upgraded.py'
    upgraded.write_text(result.upgraded)
    original = tmp_path / 'ptb_v1.py'  # TensorFlow 1.x's names, as `import tensorflow.compat.v1 as tf` gives them.
    with open(PTB) as file:
        original.write_text(file.read().replace('import tensorflow as tf', 'import tensorflow.compat.v1 as tf'))
    v1_dir, mts_dir = tmp_path / 'v1', tmp_path / 'mts'
    v1, mts = support.run_pythons(
        (_V1_GRAPH_MODE, str(original), str(v1_dir / 'ptb')), (str(upgraded), str(mts_dir / 'ptb'))
    )
    assert v1.returncode == 0, v1.stderr[-3000:]
    assert mts.returncode == 0, mts.stderr[-3000:]

    def losses(output: str) -> list[float]:
        return [float(value) for value in re.findall(r'^step \d+ loss (\S+)$', output, re.MULTILINE)]

    assert len(losses(v1.stdout)) == 6
    np.testing.assert_allclose(losses(mts.stdout), losses(v1.stdout), rtol=1e-5)
    v1_reader, mts_reader = (
        tf.train.load_checkpoint(str(v1_dir / 'ptb-6')),
        tf.train.load_checkpoint(str(mts_dir / 'ptb-6')),
    )
    names = sorted(v1_reader.get_variable_to_shape_map())
    assert sorted(mts_reader.get_variable_to_shape_map()) == names
    for name in names:
        np.testing.assert_allclose(mts_reader.get_tensor(name), v1_reader.get_tensor(name), rtol=1e-5, atol=1e-6)
    # The checkpoint service saved at the start into logdir, as v1's thread did; the summary service wrote there.
    for logdir in (v1_dir / 'ptb', mts_dir / 'ptb'):
        assert tf.train.load_checkpoint(str(logdir / 'model.ckpt-0')).get_tensor('Model/global_step') == 0
        assert any(name.startswith('events.out.tfevents') for name in os.listdir(logdir))
