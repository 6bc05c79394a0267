"""What a v1 program sees on stderr: the hooks' lines, through the `tensorflow` logger, once each, as v1 printed them.

The same program runs in real v1 graph mode and on compat_mts, each in a fresh process whose only logging set-up is
v1's `tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)`: a first session of 3 steps with a
`LoggingTensorHook`, then a second one that resumes and runs to step 5.
"""

from __future__ import annotations

import re

import pytest
from support import run_v1_and_compat

pytestmark = pytest.mark.slow  # Every test compares with v1 graph mode in a process.

_PROGRAM = """
import sys
import tempfile
import tensorflow as tf
if sys.argv[1] == 'v1':
    tf.compat.v1.disable_eager_execution()
    train = tf.compat.v1.train
else:
    import compat_mts as train
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

global_step = train.get_or_create_global_step()
if sys.argv[1] == 'v1':
    loss = tf.constant(1.5)
    step = tf.compat.v1.assign_add(global_step, 1)
    logged = {'loss': loss}
else:
    @tf.function
    def step():
        global_step.assign_add(1)
        return {'loss': tf.constant(1.5)}
    logged = {'loss': 'loss'}

directory = tempfile.mkdtemp()
print('DIRECTORY', directory)
hooks = [train.LoggingTensorHook(logged, every_n_iter=2), train.StopAtStepHook(last_step=3)]
with train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks) as session:
    while not session.should_stop():
        session.run(step)
with train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=[train.StopAtStepHook(last_step=5)]) as session:
    while not session.should_stop():
        session.run(step)
"""

# v1's lines that a session with these hooks prints; v1's graph-only lines (`Graph was finalized.`, `Running
# local_init_op.`) have no eager counterpart.
_V1_LINE = re.compile(
    r'^INFO:tensorflow:(loss = |Saving checkpoints for |Restoring parameters from |'
    r'Calling checkpoint listeners |Create CheckpointSaverHook)'
)


def _hook_lines(result) -> list[str]:
    assert result.returncode == 0, result.stderr[-3000:]
    directory = re.search(r'^DIRECTORY (\S+)$', result.stdout, re.MULTILINE).group(1)
    lines = [line.replace(directory, '<dir>') for line in result.stderr.splitlines() if _V1_LINE.match(line)]
    return [re.sub(r'\(\d+\.\d+ sec\)', '(<secs> sec)', line) for line in lines]


def test_the_hooks_print_v1s_lines_once_each_under_v1s_verbosity_setting():
    v1_lines, compat_lines = map(_hook_lines, run_v1_and_compat((_PROGRAM, 'v1'), (_PROGRAM, 'compat')))
    assert 'INFO:tensorflow:loss = 1.5 (<secs> sec)' in v1_lines  # The scenario shows what it is about.
    assert 'INFO:tensorflow:Restoring parameters from <dir>/model.ckpt-3' in v1_lines
    assert compat_lines == v1_lines


def test_without_the_verbosity_setting_nothing_is_printed_at_info_as_in_v1():
    program = _PROGRAM.replace('tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)', '')
    v1, compat = run_v1_and_compat((program, 'v1'), (program, 'compat'))
    assert _hook_lines(v1) == _hook_lines(compat) == []
