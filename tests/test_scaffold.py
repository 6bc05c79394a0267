"""Scaffold: what is checkpointed, init_fn, copy_from_scaffold, restore reporting."""

from __future__ import annotations

import pytest
import tensorflow as tf

import compat_mts as mts
from tests.models import Regression
from tests import support
from tests.support import checkpoint_steps


def test_finalize_adds_the_global_step_to_the_users_checkpoint():
    model = Regression()
    scaffold = model.scaffold()
    assert scaffold.checkpoint is None
    assert scaffold.finalize() is scaffold
    assert scaffold.checkpoint is model.checkpoint
    assert model.checkpoint.global_step is model.global_step
    assert scaffold.finalize().checkpoint is model.checkpoint


def test_a_checkpoint_manager_is_accepted_as_saver(tmp_path):
    model = Regression()
    manager = tf.train.CheckpointManager(model.checkpoint, str(tmp_path), max_to_keep=2)
    assert mts.Scaffold(saver=manager).finalize().checkpoint is model.checkpoint


def test_without_a_saver_the_checkpoint_holds_the_global_step_alone(tf_logs, tmp_path):
    model = Regression()
    checkpoint = mts.Scaffold().finalize().checkpoint
    path = checkpoint.write(str(tmp_path / 'ckpt'))
    names = {name for name, _ in tf.train.list_variables(path)}
    assert 'global_step/.ATTRIBUTES/VARIABLE_VALUE' in names
    assert not any(name.startswith('w/') for name in names)
    del model


_NO_SAVER = 'Scaffold has no saver'


@pytest.mark.parametrize('checkpointed', [False, True])
def test_no_saver_is_mentioned_only_by_sessions_that_checkpoint(checkpointed, tf_logs, tmp_path, monkeypatch):
    """v1's default Saver never logged; the step-only checkpoint is worth a line only where one is written."""
    from compat_mts.session import scaffold as scaffold_lib

    monkeypatch.setattr(scaffold_lib, '_logged_step_only', False)
    model = Regression()
    for _ in range(2):  # once per process
        with mts.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path) if checkpointed else None, hooks=[mts.StopAtStepHook(num_steps=2)]
        ) as session:
            while not session.should_stop():
                session.run(model.step)
    mentions = [message for message in tf_logs.messages() if message.startswith(_NO_SAVER)]
    assert len(mentions) == (1 if checkpointed else 0), tf_logs.messages()


def test_a_different_global_step_in_the_checkpoint_is_refused():
    Regression()
    other = tf.Variable(0, dtype=tf.int64)
    with pytest.raises(ValueError, match='already holds a different `global_step`'):
        mts.Scaffold(saver=tf.train.Checkpoint(global_step=other)).finalize()


def test_copy_from_scaffold_keeps_fields_unless_given():
    def init_fn(scaffold, session):
        del scaffold, session

    checkpoint = tf.train.Checkpoint()
    source = mts.Scaffold(init_fn=init_fn, saver=checkpoint, init_feed_dict={'a': 1})
    copy = mts.Scaffold(copy_from_scaffold=source, init_feed_dict={'b': 2})
    assert copy.saver is checkpoint
    assert copy.init_feed_dict == {'b': 2}
    assert copy._user_init_fn is init_fn
    with pytest.raises(TypeError, match='copy_from_scaffold is not a Scaffold instance.'):
        mts.Scaffold(copy_from_scaffold=object())


def test_init_fn_is_called_with_the_scaffold_and_the_session():
    Regression()
    seen = []
    scaffold = mts.Scaffold(init_fn=lambda scaffold, session: seen.append((scaffold, session)))
    with mts.MonitoredSession(session_creator=mts.ChiefSessionCreator(scaffold=scaffold)):
        pass
    assert seen[0][0] is scaffold
    assert hasattr(seen[0][1], 'run')


def test_init_and_local_init_callables_run_in_v1_order_with_their_feeds():
    order = []
    scaffold = mts.Scaffold(
        init_op=lambda value: order.append(('init_op', value)),
        init_feed_dict={'value': 1},
        init_fn=lambda scaffold, session: order.append(('init_fn', None)),
        local_init_op=lambda value: order.append(('local_init_op', value)),
        local_init_feed_dict={'value': 2},
    )
    with mts.SingularMonitoredSession(scaffold=scaffold):
        pass
    assert order == [('init_op', 1), ('init_fn', None), ('local_init_op', 2)]


def test_a_ready_op_that_reports_missing_pieces_fails_the_creation():
    scaffold = mts.Scaffold(ready_op=lambda: tf.constant(['w']))
    with pytest.raises(RuntimeError, match='Init operations did not make model ready.'):
        mts.SingularMonitoredSession(scaffold=scaffold)


@pytest.mark.parametrize(
    'kwargs, message',
    [
        ({'init_fn': 3}, '`init_fn` must be None or a callable'),
        ({'init_feed_dict': [1]}, '`init_feed_dict` must be None or a dict'),
        ({'saver': 'path'}, '`saver` must be a tf.train.Checkpoint or a tf.train.CheckpointManager'),
    ],
)
def test_bad_scaffold_arguments_are_named(kwargs, message):
    with pytest.raises(TypeError, match=message):
        mts.Scaffold(**kwargs)


def _grown_program_on(directory):
    """A checkpoint of `Regression`, then the same program with one more variable, `bias`."""
    model = Regression()
    with mts.MonitoredTrainingSession(checkpoint_dir=directory, scaffold=model.scaffold()):
        pass
    mts.reset_global_step()
    grown = Regression()
    grown.checkpoint.bias = tf.Variable(0.5, name='bias')
    return grown


def test_a_checkpoint_lacking_variables_of_the_program_is_refused_with_their_names(tmp_path):
    grown = _grown_program_on(str(tmp_path))
    with pytest.raises(
        mts.CheckpointMismatchError,
        match=r'model\.ckpt-0 does not hold these variables of the '
        r'program: bias\. .*allow_partial_restore=True',
    ):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=grown.scaffold(), save_checkpoint_secs=0)


def test_allow_partial_restore_restores_what_matches_and_names_the_rest(tmp_path, tf_logs):
    grown = _grown_program_on(str(tmp_path))
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), save_checkpoint_secs=0, scaffold=grown.scaffold(allow_partial_restore=True)
    ):
        pass
    warnings = [m for m in tf_logs.messages() if 'left these variables of the program unmatched' in m]
    assert warnings and 'model.ckpt-0' in warnings[0] and warnings[0].endswith(': bias.')
    assert float(grown.checkpoint.bias.numpy()) == 0.5


def test_a_v1_saver_built_eagerly_is_refused_with_the_replacement():
    variable = tf.Variable(1.0, name='eager_variable')
    with pytest.raises(TypeError, match=r'tf\.compat\.v1\.train\.Saver built eagerly.*tf\.train\.Checkpoint'):
        mts.Scaffold(saver=tf.compat.v1.train.Saver(var_list=[variable]))


def test_a_v1_saver_of_the_graph_code_needs_the_graph_to_be_run():
    with tf.Graph().as_default():
        tf.compat.v1.get_variable('w', [1])
        saver = tf.compat.v1.train.Saver(max_to_keep=3)
    scaffold = mts.Scaffold(saver=saver)
    assert scaffold.max_to_keep == 3
    with pytest.raises(TypeError, match='no graph of the program is being run'):
        scaffold.finalize()


def test_a_checkpoint_manager_as_saver_keeps_its_own_max_to_keep(tmp_path):
    model = Regression()
    manager = tf.train.CheckpointManager(model.checkpoint, str(tmp_path), max_to_keep=2, checkpoint_name='model.ckpt')
    with mts.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), scaffold=mts.Scaffold(saver=manager), save_checkpoint_steps=1
    ) as session:
        for _ in range(4):
            session.run(model.step)
    assert checkpoint_steps(str(tmp_path)) == [3, 4]


def test_a_checkpoint_manager_on_another_directory_is_refused(tmp_path):
    model = Regression()
    manager = tf.train.CheckpointManager(model.checkpoint, str(tmp_path / 'elsewhere'), max_to_keep=2)
    with pytest.raises(ValueError, match=r'writes to .*elsewhere.*Create the manager on checkpoint_dir'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'here'), scaffold=mts.Scaffold(saver=manager))


def test_a_refused_session_leaves_no_summary_defaults_behind(tmp_path):
    # Refused in a hook's after_create_session, once the session's summaries were the defaults: a v1 graph built
    # afterwards (an Estimator's) read their eager recording condition ("Attempting to capture an EagerTensor").
    model = Regression()
    manager = tf.train.CheckpointManager(model.checkpoint, str(tmp_path / 'elsewhere'), max_to_keep=2)
    with pytest.raises(ValueError, match='Create the manager on checkpoint_dir'):
        mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'here'), scaffold=mts.Scaffold(saver=manager))
    with tf.Graph().as_default():  # A host_call's `tf.summary` in an Estimator's graph.
        tf.summary.scalar('loss', tf.constant(1.0), step=tf.constant(0, tf.int64))
    assert not bool(tf.summary.scalar('eager', 1.0, step=0))  # No default writer, as before the session.


PARTIAL_SAVER_PROGRAM = """
import sys
import tensorflow as tf

side, directory = sys.argv[1], sys.argv[2]
if side == 'v1':
    tf.compat.v1.disable_eager_execution()
    session_of, scaffold_of = tf.compat.v1.train.MonitoredTrainingSession, tf.compat.v1.train.Scaffold
else:
    import compat_mts

    session_of, scaffold_of = compat_mts.MonitoredTrainingSession, compat_mts.Scaffold


def train():
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        weight = tf.compat.v1.get_variable('w', initializer=1.0)
        train_op = tf.group(weight.assign_add(1.0), step.assign_add(1))
        scaffold = scaffold_of(saver=tf.compat.v1.train.Saver(var_list=[weight]))
        with session_of(
            checkpoint_dir=directory, scaffold=scaffold, save_summaries_steps=None, log_step_count_steps=None
        ) as session:
            session.run(train_op)


train()
print('saved', sorted(name for name, _ in tf.train.list_variables(tf.train.latest_checkpoint(directory))))
try:
    train()
except RuntimeError as error:
    print('error', str(error).split('Variables not initialized:')[1].split('.')[0].strip())
"""


@pytest.mark.slow
def test_a_v1_saver_of_part_of_the_graph_cannot_resume_as_in_v1(tmp_path):
    """The Saver saves its `var_list` alone (no global step), so the next session restores it and leaves the
    global step uninitialized: v1's `RuntimeError` naming it, where resuming at step 0 would be silent."""
    v1, compat = support.run_v1_and_compat(
        (PARTIAL_SAVER_PROGRAM, 'v1', str(tmp_path / 'v1')), (PARTIAL_SAVER_PROGRAM, 'compat', str(tmp_path / 'compat'))
    )
    assert v1.returncode == 0 and compat.returncode == 0, (v1.stderr[-2000:], compat.stderr[-2000:])
    assert v1.stdout.split() == ['saved', "['w']", 'error', 'global_step']
    assert compat.stdout.split() == v1.stdout.split()
