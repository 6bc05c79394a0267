"""A v1 `Saver` in the `EstimatorSpec`'s scaffold: the Estimator saves and restores through it, as TF 2.15's did.

The checkpoints hold the Saver's `var_list` under its names (a list: the variables' own; a dict: its keys), the
Saver's `max_to_keep` rotates them, and `evaluate`, `predict` and `export_saved_model` restore through it. A
Saver that leaves global variables out restores nothing usable: the next call fails with TF 2.15's error naming
them. Its `keep_checkpoint_every_n_hours` (and the `RunConfig`'s) keeps the checkpoints TF 2.15 kept, counted from
the Saver's creation in each `train` call.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import tf215
from tests.estimator_programs import scaffold_saver

PROGRAM = scaffold_saver.__file__


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    directory = tmp_path_factory.mktemp('scaffold_saver')
    return tf215.results_beside(
        PROGRAM, lambda: scaffold_saver.main(estimator, str(directory / 'ours')), str(directory / 'theirs')
    )


@pytest.mark.slow
def test_a_dict_saver_saves_its_names_keeps_its_max_to_keep_and_restores_as_in_tf215(results):
    ours, theirs = results
    assert ours['dict'] == theirs['dict']
    assert sorted(ours['dict']['variables']) == ['bias', 'renamed', 'step']
    assert ours['dict']['state'] == ['model.ckpt-5', 'model.ckpt-6'] and ours['dict']['variables']['step'] == 6


@pytest.mark.slow
def test_a_saver_of_one_variable_saves_it_alone_and_fails_to_restore_as_in_tf215(results):
    ours, theirs = results
    assert ours['list'] == theirs['list']
    assert ours['list']['first_variables'] == [['w', [2, 1]]]
    assert ours['list']['evaluate_error'][2] == 'Variables not initialized: global_step, b'


@pytest.mark.slow
@pytest.mark.parametrize('form', ['hours', 'config'])
def test_keep_checkpoint_every_n_hours_keeps_the_checkpoints_tf215_kept_across_train_calls(results, form):
    ours, theirs = results
    assert ours[form] == theirs[form]
    # Kept beyond max_to_keep: every checkpoint saved after the Saver was made, of an earlier train call only the
    # one it ended on (saved again at the next call's start); the state file lists the last two.
    assert ours[form][-1] == [[0, 1, 3, 4, 6, 7, 8, 9], [8, 9]]


def test_a_saver_of_a_variable_not_of_the_graph_is_refused(tmp_path):
    def model_fn(features, labels, mode):
        with tf.Graph().as_default():
            elsewhere = tf.compat.v1.get_variable('elsewhere', [1])
        w = tf.compat.v1.get_variable('w', [1])
        loss = tf.reduce_sum(w * features)
        saver = tf.compat.v1.train.Saver(var_list={'elsewhere': elsewhere})
        train_op = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
        return estimator.EstimatorSpec(
            mode, loss=loss, train_op=train_op, scaffold=tf.compat.v1.train.Scaffold(saver=saver)
        )

    model = estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(TypeError, match='The var_list of the tf.compat.v1.train.Saver given as saver holds'):
        model.train(lambda: tf.data.Dataset.from_tensors((1.0, 0.0)).repeat(), steps=1)
