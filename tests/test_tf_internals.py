"""The private TensorFlow APIs (`compat_mts._tf_internals`): found on this TensorFlow, and the core works without.

`COMPAT_MTS_NO_PRIVATE_TF=1` turns every private path off; the core tests then run again on the public fallbacks,
in a fresh process (the switch is read at import).
"""

from __future__ import annotations

import ast
import pathlib

import pytest
import tensorflow as tf

from compat_mts import _tf_internals as tf_internals
from tests.support import run_python

# The core tests, on the fallbacks. Left out (`-m "not slow"`): the tests that start programs of their own (a killed
# writer, the real v1 session, an import check), which take most of the time and exercise no private path of their own.
CORE_TESTS = [
    'tests/test_fetches.py',
    'tests/test_monitored_session.py',
    'tests/test_hooks_default.py',
    'tests/test_checkpoints.py',
    'tests/test_training_session.py',
    'tests/test_tf_internals.py',
    # A v1 graph without unfinalizing (`CAN_UNFINALIZE`), about 0.5 s: left open, the ops made later run.
    'tests/test_legacy.py::test_outputs_are_what_build_fn_returned_and_are_hashable_plain_graph_tensors',
    'tests/test_legacy.py::test_graph_def_is_the_graph_with_the_ops_a_hook_added_and_a_copy_each_time',
    'tests/test_legacy_graph_context.py::'
    'test_hooks_add_ops_in_begin_and_the_graph_is_finalized_only_while_the_session_is_open',
]

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
    '_no_dependency',
    '_checkpoint_state',
    '_global_step_read',
    '_coordination_service',
    '_saved_model_fingerprinting',
    '_ops',
    '_switches',
]


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='COMPAT_MTS_NO_PRIVATE_TF is set')
def test_this_tensorflow_has_every_private_api_compat_mts_uses():
    missing = [name for name in _PRIVATE_PATHS if getattr(tf_internals, name) is None]
    assert not missing, f'TensorFlow moved these; compat_mts falls back to public APIs (slower): {missing}'
    assert tf_internals.CAN_UNFINALIZE
    assert [cls.__name__ for cls in tf_internals.PLAIN_VARIABLE_TYPES] == ['ResourceVariable', 'UninitializedVariable']


@pytest.mark.slow
def test_importing_the_session_starts_no_tensorflow_runtime():
    result = run_python(
        'import compat_mts.session.monitored_session\n'
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
    assert not tf_internals.HAS_COORDINATION_SERVICE


@pytest.mark.slow
@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='runs the core tests with the switch on: already on')
def test_the_core_tests_pass_on_the_public_fallbacks():
    result = run_python(
        'import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))',
        '-q',
        '-p',
        'no:cacheprovider',
        '-n',
        '0',  # No workers: each would import TensorFlow again.
        '-m',
        'not slow',
        *CORE_TESTS,
        env={'COMPAT_MTS_NO_PRIVATE_TF': '1'},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert ' passed' in result.stdout and 'skipped' in result.stdout  # The switch was on in the child.


@pytest.mark.skipif(tf_internals.PRIVATE_TF, reason='checks the fallbacks, under COMPAT_MTS_NO_PRIVATE_TF=1')
def test_without_the_private_placement_a_parameter_server_cluster_is_refused_not_run_on_the_workers():
    from compat_mts.deploy import parameter_server

    cluster = {'chief': ['localhost:1'], 'ps': ['localhost:2'], 'worker': ['localhost:3']}
    with pytest.raises(RuntimeError, match=r'places the variables .* on the ps tasks.*COMPAT_MTS_NO_PRIVATE_TF'):
        parameter_server.parameter_server_strategy(cluster)


_PRIVATE_MODULES = (
    'tensorflow.python',
    'tensorflow.tsl',
    'tensorflow.tools',
    'keras.src',
    'tf_keras.src',
    'tensorflow_estimator',
)
# `_tf_tools` loads TensorFlow's tf_upgrade_v2 without TensorFlow, which `_tf_internals` imports at once.
_PRIVATE_DOORS = ('_tf_internals.py', '_tf_tools.py')


def _imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module name `tree` imports: `import`, `from ... import`, and `importlib.import_module`/`__import__`
    of a literal string."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.lineno, node.module)] + [(node.lineno, f'{node.module}.{a.name}') for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, 'id', None)
            if function in ('import_module', '__import__') and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def _private(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + '.') for prefix in _PRIVATE_MODULES)


def test_no_module_but_tf_internals_imports_a_private_tensorflow_or_keras_module():
    package = pathlib.Path(tf_internals.__file__).parent
    modules = sorted(package.rglob('*.py'))
    assert len(modules) > 40  # Every module of the package is read, its subpackages' too.
    offenders = [
        f'{path.relative_to(package)}:{line}: {name}'
        for path in modules
        if path.name not in _PRIVATE_DOORS
        for line, name in _imported_names(ast.parse(path.read_text(encoding='utf-8')))
        if _private(name)
    ]
    assert not offenders


def test_the_private_import_check_sees_every_form_of_import():
    source = (
        'import tensorflow.python.eager.context\n'
        'from tensorflow.tsl.profiler.protobuf import xplane_pb2\n'
        'from keras.src import backend\n'
        'import tf_keras.src.layers as layers\n'
        'def f():\n'
        '    import tensorflow_estimator\n'
        '    importlib.import_module("tensorflow.python.profiler.trace")\n'
        "    __import__('keras.src.utils', fromlist=['x'])\n"
        'import tensorflow.compat.v1\nfrom tensorflow.core.protobuf import saved_model_pb2\n'
    )
    flagged = sorted({line for line, name in _imported_names(ast.parse(source)) if _private(name)})
    assert flagged == [1, 2, 3, 4, 6, 7, 8]
    assert any(_private(name) for _, name in _imported_names(ast.parse(open(tf_internals.__file__).read())))
    tools = pathlib.Path(tf_internals.__file__).with_name('_tf_tools.py')
    assert any(_private(name) for _, name in _imported_names(ast.parse(tools.read_text(encoding='utf-8'))))


# The public fallbacks that do what the private API does, compared with it on this TensorFlow.


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='compares with the private APIs')
def test_the_public_fn_args_are_v1s():
    import functools

    class Model:
        def model_fn(self, features, labels, mode):
            del features, labels, mode

        def __call__(self, features, params):
            del features, params

    def model_fn(features, labels=None, *, mode=None, **kwargs):
        del features, labels, mode, kwargs

    for fn in (
        model_fn,
        Model().model_fn,
        Model(),
        functools.partial(model_fn, 1),
        functools.partial(model_fn, labels=2),
        lambda step_context: None,
    ):
        assert tf_internals._public_fn_args(fn) == tf_internals.fn_args(fn), fn


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='compares with the private APIs')
def test_the_public_global_step_read_is_v1s_ops():
    def read_ops(get_read):
        with tf.Graph().as_default() as graph:
            tf.compat.v1.train.get_or_create_global_step()
            read = get_read()
            assert get_read() is read  # Cached.
            return read.name, sorted(op.name for op in graph.get_operations())

    assert read_ops(tf_internals._public_global_step_read) == read_ops(tf_internals.get_or_create_global_step_read)


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='compares with the private APIs')
def test_the_public_save_slice_info_is_the_private_one():
    with tf.Graph().as_default():
        partitioned = tf.compat.v1.get_variable(
            'w', shape=[4, 2], partitioner=tf.compat.v1.fixed_size_partitioner(2), use_resource=True
        )
        whole = tf.compat.v1.get_variable('b', shape=[2], use_resource=True)
    assert tf_internals._public_save_slice_info(whole) is None
    for part in partitioned:
        public, private = tf_internals._public_save_slice_info(part), tf_internals.save_slice_info(part)
        assert (public.full_name, public.spec) == (private.full_name, private.spec) == ('w', private.spec)
        assert private.spec in ('4 2 0,2:0,2', '4 2 2,2:0,2')


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='compares with the private APIs')
def test_the_public_checkpoint_state_file_is_the_private_ones(tmp_path):
    contents = []
    for writer in (tf_internals.write_relative_checkpoint_state, tf_internals._public_write_relative_checkpoint_state):
        directory = tmp_path / writer.__name__
        directory.mkdir()
        writer(str(directory), [str(directory / 'model.ckpt-1'), str(directory / 'model.ckpt-2')])
        contents.append((directory / 'checkpoint').read_text())
    assert contents[0] == contents[1]
    assert 'model_checkpoint_path: "model.ckpt-2"' in contents[0]


@pytest.mark.skipif(not tf_internals.PRIVATE_TF, reason='compares with the private APIs')
def test_the_public_callback_override_test_is_the_private_one():
    class Logs(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            del batch, logs

    for callback in (tf.keras.callbacks.Callback(), Logs(), tf.keras.callbacks.TerminateOnNaN()):
        for method in ('on_train_batch_end', 'on_epoch_end', 'on_train_begin'):
            public = tf_internals._public_overrides_callback_method(callback, method)
            assert public == tf_internals.overrides_callback_method(callback, method), (callback, method)


def test_a_checkpoint_attribute_kept_untracked_is_no_dependency():
    checkpoint = tf.train.Checkpoint()
    checkpoint.entries = tf_internals.untracked([object(), object()])
    assert len(list(checkpoint.entries)) == 2
    assert not [name for name, _ in checkpoint._trackable_children().items() if name == 'entries']


# What is refused without the private APIs.


@pytest.mark.skipif(tf_internals.PRIVATE_TF, reason='checks the fallbacks, under COMPAT_MTS_NO_PRIVATE_TF=1')
def test_without_the_coordination_service_a_multi_worker_session_is_refused():
    from compat_mts.deploy import distribute

    assert not tf_internals.HAS_COORDINATION_SERVICE
    with pytest.raises(RuntimeError, match=r'coordination service.*COMPAT_MTS_NO_PRIVATE_TF'):
        distribute.Cluster(tf.distribute.get_strategy())


@pytest.mark.skipif(tf_internals.PRIVATE_TF, reason='checks the fallbacks, under COMPAT_MTS_NO_PRIVATE_TF=1')
def test_without_their_private_arguments_v1_hooks_of_a_model_fn_are_refused_naming_their_twins():
    from compat_mts.core import validation
    from compat_mts.estimator import _hooks

    hook = tf.compat.v1.train.StopAtStepHook(last_step=3)
    assert _hooks.as_compat_hook(hook) is hook
    with pytest.raises(TypeError, match=r'Use compat_mts.StopAtStepHook instead'):
        validation.check_hook(hook)
    assert type(_hooks.as_compat_hook(tf.compat.v1.train.FeedFnHook(dict))).__module__ == 'compat_mts.hooks.feed_fn'
