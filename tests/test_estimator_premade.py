"""The premade Estimators against TF 2.15's: the iris `DNNClassifier` and census wide & deep programs.

One TF 2.15 child process (tests/tf215.py) runs its part of both programs; this process runs compat_mts's. The
model directories are handed over both ways, and each side continues from the same checkpoint, so the
initialisations (random on each side) do not matter:

- TF 2.15 trains `tf215` for `FIRST` steps; a copy of it, `tf215_to_compat`, is continued here, the original
  there, each for `MORE` steps: the per-step losses (the `loss` summaries of the events files) agree, and so do
  the evaluation metrics and predictions of the two results;
- compat_mts trains `compat` for `FIRST` steps; a copy, `compat_to_tf215`, is continued by TF 2.15, the original
  here: the same comparisons, the other way;
- the checkpoints of both sides hold the same variable names and shapes (optimizer slots included).
"""

import json
import sys
import os

import numpy as np
import pytest
import tensorflow as tf

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import premade_runner

pytestmark = pytest.mark.slow

PROGRAMS = ('premade_iris', 'census_wide_deep')
FIRST = 10
MORE = 15
RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'premade_runner.py')


def _step(program, op, model_dir, **extra):
    return dict(program=program, op=op, model_dir=str(model_dir), **extra)


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Both sides' directories and results, per program (see the module docstring)."""
    root = tmp_path_factory.mktemp('premade')
    dirs = {
        program: {name: root / program / name for name in ('tf215', 'tf215_to_compat', 'compat', 'compat_to_tf215')}
        for program in PROGRAMS
    }
    for program in PROGRAMS:
        (root / program).mkdir()
    compat_first = []
    for program in PROGRAMS:
        d = dirs[program]
        compat_first += [
            _step(program, 'train', d['compat'], steps=FIRST),
            _step(program, 'copy', d['compat'], to=str(d['compat_to_tf215'])),
        ]
    premade_runner.run_steps(estimator, compat_first)
    child_steps = []
    for program in PROGRAMS:
        d = dirs[program]
        child_steps += [
            _step(program, 'train', d['tf215'], steps=FIRST),
            _step(program, 'copy', d['tf215'], to=str(d['tf215_to_compat'])),
            _step(program, 'train', d['tf215'], steps=MORE),
            _step(program, 'evaluate', d['tf215']),
            _step(program, 'predict', d['tf215']),
            _step(program, 'train', d['compat_to_tf215'], steps=MORE),
            _step(program, 'evaluate', d['compat_to_tf215']),
            _step(program, 'predict', d['compat_to_tf215']),
        ]
    child = tf215.run(RUNNER, json.dumps(child_steps), timeout=1200)
    assert child.returncode == 0, child.stderr[-3000:]
    child_results = json.loads(child.stdout.split('RESULTS:', 1)[1])
    compat_steps = []
    for program in PROGRAMS:
        d = dirs[program]
        compat_steps += [
            _step(program, 'train', d['tf215_to_compat'], steps=MORE),
            _step(program, 'evaluate', d['tf215_to_compat']),
            _step(program, 'predict', d['tf215_to_compat']),
            _step(program, 'train', d['compat'], steps=MORE),
            _step(program, 'evaluate', d['compat']),
            _step(program, 'predict', d['compat']),
        ]
    compat_results = premade_runner.run_steps(estimator, compat_steps)
    results = {}
    for index, program in enumerate(PROGRAMS):
        theirs = child_results[8 * index : 8 * index + 8]
        ours = compat_results[6 * index : 6 * index + 6]
        results[program] = {
            'tf215': {'evaluate': theirs[3], 'predict': theirs[4]},
            'compat_to_tf215': {'evaluate': theirs[6], 'predict': theirs[7]},
            'tf215_to_compat': {'evaluate': ours[1], 'predict': ours[2]},
            'compat': {'evaluate': ours[4], 'predict': ours[5]},
        }
    return dirs, results


def _losses_after(model_dir, first_step):
    """`{step: loss}` of the `loss` summaries after `first_step` (what the continued training wrote)."""
    losses = {step: value for step, value in support.read_events(str(model_dir)).get('loss', []) if step > first_step}
    return [losses[step] for step in sorted(losses)]


def _variables(model_dir):
    return dict(tf.train.list_variables(str(model_dir)))


@pytest.mark.parametrize('program', PROGRAMS)
@pytest.mark.parametrize('continued, original', [('tf215_to_compat', 'tf215'), ('compat', 'compat_to_tf215')])
def test_training_continued_on_both_sides_has_the_same_losses_step_by_step(runs, program, continued, original):
    dirs, _ = runs
    ours = _losses_after(dirs[program][continued], FIRST)
    theirs = _losses_after(dirs[program][original], FIRST)
    assert len(ours) == len(theirs) == MORE
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=1e-5)
    assert ours[-1] != ours[0]  # The model learned: the losses compared are of real steps.


@pytest.mark.parametrize('program', PROGRAMS)
@pytest.mark.parametrize('continued, original', [('tf215_to_compat', 'tf215'), ('compat', 'compat_to_tf215')])
def test_evaluation_metrics_and_predictions_equal_tf215s(runs, program, continued, original):
    _, results = runs
    ours, theirs = results[program][continued], results[program][original]
    assert sorted(ours['evaluate']) == sorted(theirs['evaluate'])
    assert ours['evaluate']['global_step'] == theirs['evaluate']['global_step'] == FIRST + MORE
    for key, value in theirs['evaluate'].items():
        assert ours['evaluate'][key] == pytest.approx(value, rel=1e-3, abs=1e-4), key
    assert len(ours['predict']) == len(theirs['predict'])
    for mine, reference in zip(ours['predict'], theirs['predict']):
        assert sorted(mine) == sorted(reference)
        for key, value in reference.items():
            if isinstance(np.asarray(value).flat[0], str):
                assert mine[key] == value, key
            else:
                np.testing.assert_allclose(mine[key], value, rtol=1e-3, atol=1e-5, err_msg=key)


@pytest.mark.parametrize('program', PROGRAMS)
def test_checkpoints_hold_tf215s_variable_names_and_shapes(runs, program):
    dirs, _ = runs
    ours = _variables(dirs[program]['compat'])
    theirs = _variables(dirs[program]['tf215'])
    assert ours == theirs
    assert any('/Adagrad/' in name for name in ours)


def _run_premade_benchmark(*arguments: str):
    """benchmarks/premade_estimator.py run with `arguments` in a fresh process; asserts it exited 0."""
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
    script = os.path.join(support.REPO_ROOT, 'benchmarks', 'premade_estimator.py')
    result = support.run(
        [sys.executable, script, *arguments], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_premade_benchmark_runs_both_sides_with_finite_numbers(tmp_path):
    """benchmarks/premade_estimator.py end to end at a tiny size (no timing asserted)."""
    out = tmp_path / 'results.json'
    arguments = ['--steps', '5', '--warmup', '3', '--rounds', '1', '--tf215-python', tf215.python(), '--out', str(out)]
    result = _run_premade_benchmark(*arguments)
    assert 'compat_mts / TF 2.15:' in result.stdout
    report = json.loads(out.read_text())
    for side in ('compat_mts', 'tf215'):
        values = report['rounds'][0][side]
        assert all(np.isfinite(values[key]) and values[key] > 0 for key in ('mean_us', 'p50_us', 'cpu_us')), values
    assert np.isfinite(report['ratio_median']) and report['ratio_median'] > 0


def test_premade_benchmark_times_each_model_s_step_on_both_sides(tmp_path):
    """benchmarks/premade_estimator.py --models (the per-step mode) end to end at a tiny size (no timing asserted)."""
    out = tmp_path / 'results.json'
    arguments = ['--models', 'custom,bert1', '--steps', '4', '--warmup', '3', '--rounds', '1', '--goal', '1e9']
    result = _run_premade_benchmark(*arguments, '--tf215-python', tf215.python(), '--out', str(out))
    assert 'compat_mts / TF 2.15 per step, the worst model:' in result.stdout
    report = json.loads(out.read_text())
    assert sorted(report['summary']) == ['bert1', 'custom']
    for model in ('custom', 'bert1'):
        (one_round,) = report['results'][model]
        for side in ('compat_mts', 'tf215'):
            values = one_round[side]
            assert all(np.isfinite(values[key]) and values[key] > 0 for key in ('mean_us', 'p50_us', 'cpu_us'))
        assert report['summary'][model]['ratio'] == one_round['ratio'] > 0


def test_premade_benchmark_times_the_stale_step_read_both_ways():
    """benchmarks/premade_estimator.py --stale-read-blocks end to end, one block (no timing asserted)."""
    result = _run_premade_benchmark('--stale-read-blocks', '1')
    lines = [line for line in result.stdout.splitlines() if line.startswith('stale step ')]
    assert [line.split(':')[0] for line in lines] == ['stale step in the call', 'stale step eager read first']
    assert all(float(line.split('median ')[1].split(' ')[0]) > 0 for line in lines), lines


def _summary_tags(directory):
    scalars = set(support.read_events(str(directory)))
    histograms = set()
    for path in support.events_files(str(directory)):
        for event in tf.compat.v1.train.summary_iterator(path):
            histograms.update(value.tag for value in event.summary.value if value.HasField('histo'))
    return scalars, histograms


@pytest.mark.parametrize('program', PROGRAMS)
def test_training_and_evaluation_summaries_are_tf215s(runs, program):
    dirs, _ = runs
    ours, theirs = dirs[program]['compat'], dirs[program]['tf215']
    assert _summary_tags(ours) == _summary_tags(theirs)
    assert set(support.read_events(str(ours / 'eval'))) == set(support.read_events(str(theirs / 'eval')))
    assert 'dnn/hiddenlayer_0/fraction_of_zero_values' in _summary_tags(ours)[0]
    assert 'dnn/logits/activation' in _summary_tags(ours)[1]
