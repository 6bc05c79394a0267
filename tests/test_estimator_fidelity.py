"""What real programs hit in the premade Estimators and the model_fn contract, against TF 2.15.

Every scenario of `tests/estimator_programs/fidelity_scenarios.py` runs once in one TF 2.15 child (tests/tf215.py)
and once with compat_mts: here, or, for those of Keras 2 (`tf.keras.optimizers.legacy`, tf-keras metrics), in
one program with `TF_USE_LEGACY_KERAS=1`. The numbers, error types and messages are compared with TF 2.15's:
Keras 2 optimizer instances, subclasses and a zero learning rate; Keras 3 optimizers with momentum; two
optimizers of one kind in a wide & deep model; boolean labels; a v1 feature column; Keras metric objects; a
`model_fn` without `mode`; hooks whose class lacks the protocol's methods; the heads' op names, fetched by name
from hooks. `census_noise.py` compares what a premade Estimator's run prints.
"""

import concurrent.futures
import json
import os
import re

import pytest

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import fidelity_scenarios

pytestmark = pytest.mark.slow

SCENARIOS = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'fidelity_scenarios.py')
NOISE_PROGRAM = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'census_noise.py')
KERAS2_SCENARIOS = ['keras2_optimizers', 'keras_metric']
HERE = [name for name in fidelity_scenarios.SCENARIOS if name != 'keras2_optimizers']


def _results(completed):
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.split('RESULTS:', 1)[1])


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Every scenario under TF 2.15 and with compat_mts, and each side's run of the noise program.

    The four programs (TF 2.15's scenarios and noise, compat_mts's Keras 2 scenarios and noise) run two at a
    time; the Keras 3 scenarios run here after them.
    """
    pytest.importorskip('tf_keras')
    root = tmp_path_factory.mktemp('fidelity')
    programs = [
        (tf215.run, SCENARIOS, json.dumps(list(fidelity_scenarios.SCENARIOS)), str(root / 'tf215'), {}),
        (tf215.run, NOISE_PROGRAM, str(root / 'tf215_noise'), {}),
        (
            support.run_python,
            SCENARIOS,
            json.dumps(KERAS2_SCENARIOS),
            str(root / 'keras2'),
            {'env': {'TF_USE_LEGACY_KERAS': '1'}},
        ),
        (support.run_python, NOISE_PROGRAM, str(root / 'noise'), {}),
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(run, *arguments, **keywords) for run, *arguments, keywords in programs]
        tf215_scenarios, tf215_noise, keras2, noise = (future.result() for future in futures)
    for completed in (tf215_noise, noise):
        assert completed.returncode == 0, completed.stderr[-3000:]
    return {
        'tf215': _results(tf215_scenarios),
        'keras2': _results(keras2),
        'keras3': fidelity_scenarios.run(estimator, HERE, str(root / 'keras3')),
        'tf215_noise': tf215_noise.stderr,
        'noise': noise.stderr,
    }


def _approx(value):
    if isinstance(value, dict):
        return {key: _approx(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_approx(item) for item in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-5, abs=1e-6)
    return value


@pytest.mark.parametrize('scenario', ['keras2_optimizers', 'keras_metric'])
def test_keras2_optimizers_and_metrics_give_tf215s_numbers(runs, scenario):
    assert runs['keras2'][scenario] == _approx(runs['tf215'][scenario])


@pytest.mark.parametrize(
    'scenario',
    [
        'keras3_optimizers',
        'same_kind_optimizers',
        'boolean_labels',
        'keras_metric',
        'model_fn_without_mode',
        'hooks_without_methods_in_their_class',
        'logging_tensor_hook_by_name',
        'head_op_names',
    ],
)
def test_scenario_gives_tf215s_numbers(runs, scenario):
    assert runs['keras3'][scenario] == _approx(runs['tf215'][scenario])


def test_zero_learning_rate_leaves_the_weights_as_tf215(runs):
    theirs = runs['tf215']
    assert theirs['keras2_optimizers']['zero_rate'] == [[0.0], [0.0]]
    assert runs['keras2']['keras2_optimizers']['zero_rate'] == theirs['keras2_optimizers']['zero_rate']
    assert runs['keras3']['keras3_optimizers']['zero_rate'] == theirs['keras3_optimizers']['zero_rate']


def test_head_ops_a_program_names_exist_on_both_sides(runs):
    for found in (runs['tf215']['head_op_names'], runs['keras3']['head_op_names']):
        assert all(all(present) for present in found.values()), found


def test_v1_feature_column_gets_tf215s_error(runs):
    assert runs['keras3']['v1_feature_column'] == runs['tf215']['v1_feature_column']


def test_unknown_tensor_name_is_a_key_error_that_does_not_refuse_graph_names(runs):
    theirs = runs['tf215']['unknown_tensor_name']
    kind, message = runs['keras3']['unknown_tensor_name']
    assert kind == theirs[0] == 'KeyError'
    assert "'head/no_such_op'" in message and 'graph' in message
    assert 'neither an output of the callables of this run nor a registered variable' not in message


def test_missing_feature_key_names_the_key_the_keys_there_and_the_column(runs):
    theirs = runs['tf215']['missing_feature_key']
    ours = runs['keras3']['missing_feature_key']
    for (their_kind, their_message), (kind, message), column in zip(theirs, ours, ("'job'", "'job_indicator'")):
        assert kind == their_kind
        tf215_words = re.search(r'Feature \w+ is not in features dictionary\.', their_message).group(0)
        assert message.startswith(tf215_words)
        assert "['x']" in message and column in message


def _deprecations(stderr, program):
    """The `(line, function, module)` of each deprecation warning about the program's own lines; the others' files."""
    own, others = set(), set()
    pattern = r'From (\S+?):(\d+): (\S+) \(from ([\w.]+)\) is deprecated'
    for path, line, function, module in re.findall(pattern, stderr):
        if os.path.basename(path) == program:
            own.add((int(line), function, module))
        else:
            others.add(path)
    return own, others


def test_a_premade_run_prints_tf215s_warnings_for_the_programs_calls_and_none_for_compat_mts(runs):
    program = os.path.basename(NOISE_PROGRAM)
    their_own, _ = _deprecations(runs['tf215_noise'], program)
    our_own, our_others = _deprecations(runs['noise'], program)
    # TF 2.15 also says that its Estimator classes are deprecated; compat_mts's are their successors.
    assert our_own == {warning for warning in their_own if not warning[2].startswith('tensorflow_estimator')}
    assert len(our_own) == 3
    assert our_others == set()
    assert 'UserWarning' not in runs['noise'] and 'DeprecationWarning' not in runs['noise']
