"""The private TensorFlow APIs (`compat_mts._tf_internals`): found on this TensorFlow, and the core works without.

`COMPAT_MTS_NO_PRIVATE_TF=1` turns every private path off; the core tests then run again on the public fallbacks,
in a fresh process (the switch is read at import).
"""

from __future__ import annotations

import pytest

from compat_mts import _tf_internals as tf_internals
from tests.support import run_python

# The core tests, on the fallbacks. Left out: the tests that start programs of their own (a killed writer, the
# real v1 session, an import check), which take most of the time and exercise no private path of their own.
CORE_TESTS = [
    'tests/test_fetches.py',
    'tests/test_monitored_session.py',
    'tests/test_hooks_default.py',
    'tests/test_checkpoints.py',
    'tests/test_training_session.py',
    'tests/test_tf_internals.py',
]
STARTING_PROGRAMS = (
    'sigkill or real_v1_session or data_runs_out or import_no_legacy or core_tests_pass or no_tensorflow_runtime'
)

_PRIVATE_PATHS = [
    '_private_context',
    '_eager_mode',
    '_read_op',
    '_tensor_numpy',
    '_eager_tensor',
    '_call_function',
    '_private_fn_args',
    '_save_context',
    '_trace',
    '_unfinalize',
    '_meta_graph_lib',
    '_record',
    '_interpolate_errors',
    '_wrap_function',
]


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='COMPAT_MTS_NO_PRIVATE_TF is set')
def test_this_tensorflow_has_every_private_api_compat_mts_uses():
    missing = [name for name in _PRIVATE_PATHS if getattr(tf_internals, name) is None]
    assert not missing, f'TensorFlow moved these; compat_mts falls back to public APIs (slower): {missing}'
    assert tf_internals.CAN_UNFINALIZE
    assert [cls.__name__ for cls in tf_internals.PLAIN_VARIABLE_TYPES] == ['ResourceVariable', 'UninitializedVariable']


def test_importing_the_session_starts_no_tensorflow_runtime():
    result = run_python(
        'import compat_mts.monitored_session\n'
        'from tensorflow.python.eager import context\n'
        'assert not context.context()._initialized\n',
        env={'COMPAT_MTS_NO_PRIVATE_TF': '1'},
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.skipif(tf_internals.PRIVATE_TF, reason='checks the fallbacks, under COMPAT_MTS_NO_PRIVATE_TF=1')
def test_with_the_switch_on_every_private_path_is_off():
    taken = [name for name in _PRIVATE_PATHS if name != '_eager_mode' and getattr(tf_internals, name) is not None]
    assert not taken
    assert not tf_internals.CAN_UNFINALIZE


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='runs the core tests with the switch on: already on')
def test_the_core_tests_pass_on_the_public_fallbacks():
    result = run_python(
        'import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))',
        '-q',
        '-p',
        'no:cacheprovider',
        '-k',
        f'not ({STARTING_PROGRAMS})',
        *CORE_TESTS,
        env={'COMPAT_MTS_NO_PRIVATE_TF': '1'},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert ' passed' in result.stdout and 'skipped' in result.stdout  # The switch was on in the child.


@pytest.mark.skipif(tf_internals.PRIVATE_TF, reason='checks the fallbacks, under COMPAT_MTS_NO_PRIVATE_TF=1')
def test_without_the_private_placement_a_parameter_server_cluster_is_refused_not_run_on_the_workers():
    from compat_mts import parameter_server

    cluster = {'chief': ['localhost:1'], 'ps': ['localhost:2'], 'worker': ['localhost:3']}
    with pytest.raises(RuntimeError, match=r'places the variables .* on the ps tasks.*COMPAT_MTS_NO_PRIVATE_TF'):
        parameter_server.parameter_server_strategy(cluster)
