"""What one Estimator call leaves behind, and what its hooks' `begin()` may do in its graph (v1's lifecycle).

Each `train`/`evaluate`/`predict` call builds its graph and functions and must release them when it returns
(not at the process's exit, where freeing thousands of functions took seconds): the counts of live wrapped
graphs and of live functions stay flat over rounds. A hook's `begin()` sees the `model_fn`'s graph as the
default graph, not finalized, and the ops it adds there run in its `before_run` fetches, as in TF 2.15; the
variables it creates there are initialized, and the global ones checkpointed and restored, as in TF 2.15.
"""

from __future__ import annotations

import gc

import pytest
import tensorflow as tf
from tensorflow.python.eager import context

import compat_mts.estimator as estimator
from compat_mts import _tf_internals
from compat_mts.legacy import graph as legacy_graph
from tests import tf215
from tests.estimator_programs import hook_begin_ops

PROGRAM = hook_begin_ops.__file__


def _live(kind: type) -> int:
    gc.collect()
    return sum(1 for value in gc.get_objects() if isinstance(value, kind))


def test_rounds_of_train_and_evaluate_release_their_graphs_and_functions(tmp_path):
    model = hook_begin_ops.make_estimator(estimator, str(tmp_path))
    functions, registered = [], []
    for _ in range(4):
        model.train(hook_begin_ops.input_fn, steps=2)
        model.evaluate(hook_begin_ops.input_fn, steps=1)
        assert _live(legacy_graph.WrappedGraph) == 0
        functions.append(_live(tf.types.experimental.ConcreteFunction))
        # What the eager context holds: the graphs' functions and their `tf.cond` branches, released each call.
        registered.append(len(context.context().list_function_names()))
    assert functions[3] == functions[2] == functions[1]
    if _tf_internals.CAN_MAKE_SUBGRAPH_FUNCTIONS:
        assert registered[3] == registered[2] == registered[1]
    else:
        # The public fallback (`tf.compat.v1.wrap_function`) registers the functions of each call's graph (its
        # `tf.cond` branches) and no public API releases them: as many more per round, no more.
        assert registered[3] - registered[2] == registered[2] - registered[1] > 0


@pytest.mark.slow
def test_ops_and_variables_that_hooks_add_in_begin_run_as_in_tf215(tmp_path):
    ours, theirs = tf215.results_beside(
        PROGRAM, lambda: hook_begin_ops.main(estimator, str(tmp_path / 'ours')), str(tmp_path / 'theirs')
    )
    assert ours == theirs
    assert ours['train']['finalized'] is False and ours['evaluate']['added'][-1]['step'] == 3
    assert ours['checkpoint']['hook_runs'] == 13 and ours['predict']['counted'] == [[14, 1.5]]
