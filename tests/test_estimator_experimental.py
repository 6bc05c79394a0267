"""`compat_mts.estimator.experimental` against TF 2.15's `tf.estimator.experimental`: where training stops.

One TF 2.15 child process (tests/tf215.py) runs `tests/estimator_programs/experimental_runner.py`; this process
runs the same scenarios with compat_mts. A zero-initialized linear model trained by gradient descent has the
same losses on both sides, so the evaluations that `train_and_evaluate` (or `InMemoryEvaluatorHook`) writes to
`eval_dir()` are the same history, and the early-stopping hooks reading it must stop training at TF 2.15's
step: the steps, the histories, the checkpoints' variables (with v1's `signal_early_stopping/STOP`) and the
errors are compared.
"""

import os

import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import experimental_runner

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'experimental_runner.py')
STOPPED_BY_EVALUATIONS = ['no_decrease', 'no_increase', 'lower', 'higher']


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp('experimental')
    (root / 'tf215').mkdir()
    (root / 'compat').mkdir()
    return tf215.results_beside(
        RUNNER, lambda: experimental_runner.results(tf, estimator, str(root / 'compat')), str(root / 'tf215')
    )


def _assert_same_history(ours, theirs):
    assert sorted(ours, key=int) == sorted(theirs, key=int)
    for step, metrics in theirs.items():
        assert sorted(ours[step]) == sorted(metrics), step
        for name, value in metrics.items():
            assert ours[step][name] == pytest.approx(value, rel=1e-4, abs=1e-6), (step, name)


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', STOPPED_BY_EVALUATIONS)
def test_train_and_evaluate_stops_at_tf215s_step_on_the_same_evaluations(both, scenario):
    ours, theirs = both
    mine, reference = ours[scenario], theirs[scenario]
    _assert_same_history(mine['history'], reference['history'])
    assert mine['global_step'] == reference['global_step'] < 40  # Stopped before max_steps.
    assert mine['final_metrics'] == pytest.approx(reference['final_metrics'], rel=1e-4)
    assert mine['variables'] == reference['variables'] == ['b', 'global_step', 'signal_early_stopping/STOP', 'w']
    assert mine['stop'] == reference['stop']


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['after_evaluation', 'checkpoint_step', 'spec_hook'])
def test_train_stops_as_tf215(both, scenario):
    ours, theirs = both
    assert ours[scenario] == theirs[scenario]


@pytest.mark.slow  # The TF 2.15 child process.
def test_a_predicate_is_asked_at_every_step_and_stops_the_step_it_says_so(both):
    ours, theirs = both
    assert ours['custom']['calls'] == theirs['custom']['calls'] == 3
    assert ours['custom']['stop'] is theirs['custom']['stop'] is True
    # Asked at steps 0, 1 and 2: stopped at 3 (TF 2.15's sessions on one inter-op thread: see the runner).
    assert ours['custom']['global_step'] == theirs['custom']['global_step'] == 3


@pytest.mark.slow  # The TF 2.15 child process.
def test_a_model_dir_without_the_stop_variable_is_refused_as_tf215_refused_it(both):
    ours, theirs = both
    assert theirs['without_stop_variable'] == {'error': 'NotFoundError', 'global_step': 2}
    assert ours['without_stop_variable'] == {'error': 'CheckpointMismatchError', 'global_step': 2}


@pytest.mark.slow  # The TF 2.15 child process.
@pytest.mark.parametrize('scenario', ['every_3', 'with_stop'])
def test_in_memory_evaluations_are_tf215s_steps_and_values(both, scenario):
    ours, theirs = both
    mine, reference = ours['in_memory'][scenario], theirs['in_memory'][scenario]
    _assert_same_history(mine['history'], reference['history'])
    assert len(mine['history']) >= 3
    assert (mine['global_step'], mine['variables'], mine['stop']) == (
        reference['global_step'],
        reference['variables'],
        reference['stop'],
    )


@pytest.mark.slow  # The TF 2.15 child process.
def test_errors_are_tf215s(both):
    ours, theirs = both
    assert ours['errors'] == theirs['errors']
    assert all(ours['errors'])


def _model(tmp_path):
    def model_fn(features, labels, mode):
        raise AssertionError('not built')

    return estimator.Estimator(model_fn, model_dir=str(tmp_path))


@pytest.mark.parametrize(
    'make, message',
    [
        (lambda e, m: e.stop_if_lower_hook(m, 3, 0.5), '`metric_name` must be'),
        (lambda e, m: e.stop_if_no_decrease_hook(m, 'loss', '10'), '`max_steps_without_decrease` must be a number'),
        (lambda e, m: e.stop_if_higher_hook(m, 'loss', 1.0, min_steps=None), '`min_steps` must be a number'),
    ],
)
def test_bad_arguments_name_the_argument(tmp_path, make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make(estimator.experimental, _model(tmp_path))


def test_the_stop_at_checkpoint_step_hook_is_the_chiefs_stop_at_step_hook(tmp_path):
    hook = estimator.experimental.make_stop_at_checkpoint_step_hook(_model(tmp_path), 7)
    assert isinstance(hook, estimator.StopAtStepHook)
