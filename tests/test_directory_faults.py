"""Checkpoint directories on real faulty file systems: read-only, full, unusable paths (issue 20).

The read-only and full file systems are real mounts (`tests/mounts.py`): a read-only bind mount, which
refuses writes even to root, and a small tmpfs.
"""

from __future__ import annotations

import json
import os

import pytest

import compat_mts as mts
from tests import mounts
from tests.support import REPO_ROOT, checkpoint_steps, run_python
from tests.v1_programs.directory_legs import build

_LEGS = os.path.join(REPO_ROOT, 'tests', 'v1_programs', 'directory_legs.py')
_RESTORE_ONLY = dict(
    save_checkpoint_secs=None,
    save_summaries_steps=None,
    save_summaries_secs=None,
    log_step_count_steps=None,
)
_V1_RESTORE_ONLY = """
import json, sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from tests.v1_programs.directory_legs import build
global_step, _, train_op, _ = build()
with tf.compat.v1.train.MonitoredTrainingSession(
        checkpoint_dir=sys.argv[1], save_checkpoint_secs=None, save_summaries_steps=None,
        save_summaries_secs=None, log_step_count_steps=None) as session:
    start = int(session.run(global_step))
    session.run(train_op)
    print(json.dumps({'start': start, 'after': int(session.run(global_step))}))
"""


def _files(directory: str) -> dict[str, bytes]:
    return {name: open(os.path.join(directory, name), 'rb').read() for name in sorted(os.listdir(directory))}


def _restore_only_compat(directory: str, **saving) -> dict:
    mts.reset()
    global_step, _, train_op, _ = mts.wrap_graph(build).outputs
    with mts.MonitoredTrainingSession(checkpoint_dir=directory, **{**_RESTORE_ONLY, **saving}) as session:
        start = int(session.run(global_step))
        session.run(train_op)
        return {'start': start, 'after': int(session.run(global_step))}


@pytest.mark.slow
def test_a_restore_only_chief_reads_a_read_only_directory_as_v1_does(tmp_path):
    written = str(tmp_path / 'written')
    trained = run_python(_LEGS, 'v1', written, '3:1')
    assert trained.returncode == 0, trained.stderr[-3000:]
    before = _files(written)
    with mounts.read_only_view(written, str(tmp_path / 'read_only')) as read_only:
        v1 = run_python(_V1_RESTORE_ONLY, read_only)
        assert v1.returncode == 0, v1.stderr[-3000:]
        assert _restore_only_compat(read_only) == json.loads(v1.stdout.splitlines()[-1]) == {'start': 3, 'after': 4}
        with pytest.raises(PermissionError, match=f"`checkpoint_dir` '{read_only}' is not writable"):
            _restore_only_compat(read_only, save_checkpoint_steps=1)
    assert _files(written) == before
    assert checkpoint_steps(written) == [0, 1, 2, 3]
