"""v1's names: `SessionCreator`, the classes that subclass their `tf.compat.v1.train` namesakes, `compat_mts.hooks`."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import compat_mts as mts
import compat_mts.hooks
from tests.support import checkpoint_steps, run_python

V1_HOOK_FAMILY = [
    'CheckpointSaverHook',
    'CheckpointSaverListener',
    'FeedFnHook',
    'FinalOpsHook',
    'GlobalStepWaiterHook',
    'LoggingTensorHook',
    'NanLossDuringTrainingError',
    'NanTensorHook',
    'ProfilerHook',
    'SecondOrStepTimer',
    'StepCounterHook',
    'StopAtStepHook',
    'SummarySaverHook',
]


def counting_step():
    global_step = mts.get_or_create_global_step()
    return tf.function(lambda: global_step.assign_add(1))


def test_compat_mts_hooks_holds_every_v1_hook_name_as_compat_mts_does():
    assert compat_mts.hooks.__all__ == V1_HOOK_FAMILY
    for name in V1_HOOK_FAMILY:
        assert hasattr(tf.compat.v1.train, name)
        assert getattr(compat_mts.hooks, name) is getattr(mts, name)
    assert set(V1_HOOK_FAMILY) <= set(dir(compat_mts.hooks))
    with pytest.raises(AttributeError, match="module 'compat_mts.hooks' has no attribute 'NoSuchHook'"):
        compat_mts.hooks.NoSuchHook


def test_new_public_names_are_listed():
    assert {'SessionCreator', 'hooks'} <= set(mts.__all__)
    assert mts.hooks is compat_mts.hooks


@pytest.mark.slow
def test_compat_mts_hooks_imports_nothing_until_a_name_is_used():
    result = run_python(
        'import sys, compat_mts.hooks\n'
        'assert "tensorflow" not in sys.modules, "imported at once"\n'
        'compat_mts.hooks.StopAtStepHook\n'
        'assert "compat_mts.hooks.stop" in sys.modules\n',
        fresh=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.parametrize(
    'name', ['NanLossDuringTrainingError', 'CheckpointSaverListener', 'SecondOrStepTimer', 'SessionCreator']
)
def test_classes_subclass_their_v1_namesakes(name):
    assert issubclass(getattr(mts, name), getattr(tf.compat.v1.train, name))


def test_a_v1_except_clause_catches_the_nan_loss_error():
    global_step = mts.get_or_create_global_step()

    @tf.function
    def diverging_step():
        global_step.assign_add(1)
        return {'loss': tf.constant(np.nan)}

    with pytest.raises(tf.compat.v1.train.NanLossDuringTrainingError, match=r'^NaN loss during training\.$'):
        with mts.MonitoredSession(hooks=[mts.NanTensorHook('loss')]) as session:
            session.run(diverging_step)
    assert isinstance(mts.NanLossDuringTrainingError(), RuntimeError)


def test_listeners_of_either_base_class_are_called(tmp_path):
    calls = []

    class Ours(mts.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            calls.append(('ours', global_step_value))

    class V1s(tf.compat.v1.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            calls.append(('v1', global_step_value))

    step = counting_step()
    hook = mts.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Ours(), V1s()])
    with mts.MonitoredSession(hooks=[hook]) as session:
        for _ in range(2):
            session.run(step)
    assert calls == [('ours', 0), ('v1', 0), ('ours', 2), ('v1', 2)]
    mts.CheckpointSaverListener().begin()  # v1's no-op methods are inherited.


def test_the_timer_keeps_its_arithmetic_as_a_v1_timer():
    timer = mts.SecondOrStepTimer(every_steps=2)
    assert isinstance(timer, tf.compat.v1.train.SecondOrStepTimer)
    assert timer.should_trigger_for_step(0) and timer.update_last_triggered_step(0) == (None, None)
    assert [step for step in range(5) if timer.should_trigger_for_step(step)] == [2, 3, 4]


def test_session_creator_is_abstract_as_in_v1():
    with pytest.raises(TypeError, match='abstract'):
        mts.SessionCreator()
    for creator in (mts.ChiefSessionCreator, mts.WorkerSessionCreator):
        assert issubclass(creator, mts.SessionCreator)
        assert issubclass(creator, tf.compat.v1.train.SessionCreator)


@pytest.mark.parametrize('base', [mts.SessionCreator, tf.compat.v1.train.SessionCreator], ids=['compat_mts', 'v1'])
def test_a_session_creator_of_the_users_own_is_accepted(tmp_path, base):
    created = []

    class Announcing(base):
        def __init__(self, **kwargs):
            self._chief = mts.ChiefSessionCreator(**kwargs)

        def create_session(self):
            created.append(True)
            return self._chief.create_session()

    step = counting_step()
    with mts.MonitoredSession(
        session_creator=Announcing(checkpoint_dir=str(tmp_path)),
        hooks=[mts.CheckpointSaverHook(str(tmp_path), save_steps=1)],
    ) as session:
        assert [int(session.run(step)) for _ in range(2)] == [1, 2]
    with mts.MonitoredSession(session_creator=Announcing(checkpoint_dir=str(tmp_path))) as session:
        assert int(session.run(step)) == 3  # Restored by the wrapped chief creator.
    assert created == [True, True] and checkpoint_steps(str(tmp_path)) == [0, 1, 2]


def test_a_creator_returning_a_graph_session_is_named():
    class GraphSessions(tf.compat.v1.train.SessionCreator):
        def create_session(self):
            return tf.compat.v1.Session(graph=tf.Graph())

    counting_step()
    with pytest.raises(TypeError, match=r'^GraphSessions.create_session\(\) returned a tf.compat.v1.Session'):
        mts.MonitoredSession(session_creator=GraphSessions())


def test_v1s_own_creator_is_named_with_its_replacement():
    with tf.Graph().as_default():
        creator = tf.compat.v1.train.ChiefSessionCreator()
    with pytest.raises(
        TypeError,
        match=r'^`session_creator` is a tf.compat.v1.train.ChiefSessionCreator.*'
        r'Use compat_mts.ChiefSessionCreator instead',
    ):
        mts.MonitoredSession(session_creator=creator)


def test_type_checkers_see_every_lazy_name_where_it_is_imported_from():
    """The `if TYPE_CHECKING:` imports in compat_mts/__init__.py are what IDEs complete; they must name each lazy
    export from the module `__getattr__` imports it from, and every submodule, so the two lists cannot drift."""
    import ast
    import compat_mts as package

    tree = ast.parse(open(package.__file__, encoding='utf-8').read())
    block = next(
        node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, 'id', '') == 'TYPE_CHECKING'
    )
    seen = {}
    for statement in block.body:
        for alias in statement.names:
            module = f'{statement.module}.{alias.name}' if alias.name in package._SUBMODULES else statement.module
            seen[alias.name] = module
    expected = dict(package._EXPORTS) | dict(package._SUBMODULES)
    assert seen == expected


def test_the_installed_package_carries_the_license_and_the_typed_marker():
    """What `pip install` put in place (CI installs the package itself, not in editable mode)."""
    import importlib.metadata
    import importlib.resources

    distribution = importlib.metadata.distribution('compat-mts')
    assert distribution.metadata['License-Expression'] == 'Apache-2.0'
    assert 'Programming Language :: Python :: 3.12' in distribution.metadata.get_all('Classifier')
    (license_file,) = [path for path in distribution.files if path.name == 'LICENSE']
    assert 'Apache License' in license_file.read_text()
    assert importlib.resources.files('compat_mts').joinpath('py.typed').is_file()
