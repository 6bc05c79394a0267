"""The SavedModels of `export_saved_model` carry TF 2.15's signatures, and both TensorFlows serve them.

Each case of tests/estimator_programs/serving_runner.py (the premade Estimators' heads and families, a `model_fn`
with classification, regression and predict outputs; parsing, raw and alternative receivers) is trained and
exported here; one TF 2.15 child (tests/tf215.py) exports the same checkpoints with `tf.estimator` and loads both
exports with its `tf.saved_model.load`. Compared:

- the log's report of the signatures included for each method and those left out (and why);
- the SignatureDefs of `saved_model.pb`, field by field (signature names, method names, input and output keys,
  dtypes, shapes; the tensor names are each graph's own). compat_mts's have one entry more, TF2's
  `__saved_model_init_op` (the SavedModel's initializer, which TF Serving runs; not a signature);
- every signature called as a client would (serialized `tf.Example`s as `inputs` or `examples`, raw features by
  name): compat_mts's export under TF 2.15's and TF 2.21's `tf.saved_model.load`, and run by a TF 2.15 v1 session
  on the tensors its SignatureDefs name (as TF Serving runs it), gives what TF 2.15's export of the same
  checkpoint gives, and what `predict()` yields;
- what TF 2.15's `saved_model_cli show --all` prints of one export of each side (`serving_runner.SHOWN`).
"""

import json
import os

import numpy as np
import pytest

import compat_mts.estimator as estimator
from tests import support
from tests import tf215
from tests.estimator_programs import serving_runner

pytestmark = pytest.mark.slow

RUNNER = os.path.join(support.REPO_ROOT, 'tests', 'estimator_programs', 'serving_runner.py')
CASES = sorted(serving_runner.CASES)
EXPORTS = [(case, kind) for case in CASES for kind in serving_runner.CASES[case][3]]
INIT_OP = '__saved_model_init_op'


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp('serving')
    ours, jobs = {}, {}
    for case in CASES:
        model_dir = str(root / case / 'model')
        model = serving_runner.make_estimator(estimator, case, model_dir)
        serving_runner.train(model, case)
        exported = serving_runner.export(estimator, case, model_dir, str(root / case / 'compat'))
        exports = {kind: value['directory'] for kind, value in exported.items()}
        reports = {kind: value['report'] for kind, value in exported.items()}
        ours[case] = {'predict': serving_runner.predict(model), 'exports': exports, 'reports': reports}
        jobs[case] = {'model_dir': model_dir, 'export_base': str(root / case / 'tf215'), 'compat_exports': exports}
    child = tf215.run(RUNNER, json.dumps(jobs), timeout=1200)
    assert child.returncode == 0, child.stderr[-4000:]
    (line,) = [line for line in child.stdout.splitlines() if line.startswith('RESULTS:')]
    return ours, json.loads(line[len('RESULTS:') :])


def _without_names(signature_defs: dict) -> dict:
    return {
        name: {
            'method_name': signature['method_name'],
            **{
                side: {key: {'dtype': info['dtype'], 'shape': info['shape']} for key, info in signature[side].items()}
                for side in ('inputs', 'outputs')
            },
        }
        for name, signature in signature_defs.items()
    }


@pytest.mark.parametrize('case, kind', EXPORTS)
def test_signature_defs_equal_tf215s_field_by_field(runs, case, kind):
    ours, theirs = runs
    ours_defs = _without_names(serving_runner.signature_defs(ours[case]['exports'][kind]))
    theirs_defs = _without_names(theirs[case][kind]['signature_defs'])
    assert ours_defs.pop(INIT_OP)['method_name'] == '' and INIT_OP not in theirs_defs
    assert ours_defs == theirs_defs


def _report(lines: list) -> list:
    """The report's lines, an excluded signature's reason cut to its start: the rest names graph tensors."""
    return [line[:100] if line.startswith("'") else line for line in lines]


@pytest.mark.parametrize('case, kind', EXPORTS)
def test_the_log_reports_the_signatures_as_tf215s(runs, case, kind):
    ours, theirs = runs
    assert _report(ours[case]['reports'][kind]) == _report(theirs[case][kind]['report'])


def test_the_cases_cover_every_method_and_the_signatures_tf215_leaves_out(runs):
    """What the comparison above covers: classify, regress and predict signatures, alternatives' signatures,
    and the outputs TF 2.15 leaves out (a raw receiver's classification, a float64 regression)."""
    _, theirs = runs
    premade = theirs['dnn_binary']
    assert {name: s['method_name'] for name, s in premade['parsing']['signature_defs'].items()} == {
        'serving_default': 'tensorflow/serving/classify',
        'classification': 'tensorflow/serving/classify',
        'regression': 'tensorflow/serving/regress',
        'predict': 'tensorflow/serving/predict',
    }
    assert sorted(premade['raw']['signature_defs']) == ['predict']
    custom = theirs['model_fn']['alternatives']['signature_defs']
    assert 'serialized_again:serving_default' in custom and 'features:predict' in custom
    assert 'double_value' not in custom and 'a_only:predict' not in custom
    assert list(custom['serving_default']['inputs']) == ['inputs']


def _assert_close(served: dict, expected: dict, where: str) -> None:
    assert sorted(served) == sorted(expected), where
    for key, value in expected.items():
        if np.asarray(value).dtype.kind == 'U':
            assert served[key] == value, f'{where}[{key}]'
        else:
            np.testing.assert_allclose(served[key], value, rtol=1e-5, atol=1e-6, err_msg=f'{where}[{key}]')


@pytest.mark.parametrize('case, kind', EXPORTS)
def test_tf215_and_tf221_serve_the_export_as_tf215s_own(runs, case, kind):
    ours, theirs = runs
    reference = theirs[case][kind]['served']
    assert sorted(theirs[case][kind]['compat_served']) == sorted(reference)
    tf221_served = serving_runner.serve(ours[case]['exports'][kind])
    for name, outputs in reference.items():
        _assert_close(theirs[case][kind]['compat_served'][name], outputs, f'TF 2.15 serving {case}/{kind}: {name}')
        _assert_close(tf221_served[name], outputs, f'TF 2.21 serving {case}/{kind}: {name}')


@pytest.mark.parametrize('case, kind', EXPORTS)
def test_a_v1_session_serves_the_signature_defs_tensors_as_tf215s_export(runs, case, kind):
    """TF Serving's way: `tf.compat.v1.saved_model.load` into a session, which runs the init op, then a run of
    the tensors the SignatureDef names (the method name decides which API may call it)."""
    _, theirs = runs
    served = theirs[case][kind]['compat_session_served']
    reference = theirs[case][kind]['served']
    assert sorted(served) == sorted(reference)
    for name, outputs in reference.items():
        _assert_close(served[name], outputs, f'a TF 2.15 session serving {case}/{kind}: {name}')


def test_tf215s_saved_model_cli_shows_the_export_as_tf215s_own(runs):
    """`saved_model_cli show --all` (TF 2.15's) on one export of each side: the same signatures, inputs, outputs,
    dtypes, shapes and method names, line for line (tensor names and TF2's init op apart)."""
    shown = runs[1]['saved_model_cli']
    assert any('Method name is: tensorflow/serving/predict' in line for line in shown['tf215'])
    assert shown['compat'] == shown['tf215']


@pytest.mark.parametrize('case, kind', [(case, kind) for case, kind in EXPORTS if kind != 'alternatives'])
def test_the_predict_signature_serves_what_predict_yields(runs, case, kind):
    ours, theirs = runs
    served = theirs[case][kind]['compat_served']['predict']
    rows = ours[case]['predict']
    for key in rows[0]:
        _assert_close({key: served[key]}, {key: [row[key] for row in rows]}, f'{case}/{kind}: predict[{key}]')
