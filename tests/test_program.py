"""`compat_mts.core.program`: every process-wide table in one `Program`; `reset()` clears the program's, keeps the
process's.

Each table is filled by the code that fills it in a program (a session, `wrap_graph`, a hook's writer), then
`reset()` runs and each table is checked: empty if it is a program table, as filled if it is a process table.
The list of tables is ARCHITECTURE.md's ("Process-wide tables"), so a new registry must be written down there.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re

import pytest
import tensorflow as tf

import compat_mts as mts
from compat_mts.checkpoint_dir import checkpoints
from compat_mts.deploy import distribute
from compat_mts.core import program as program_lib
from compat_mts import summary as summary_lib
from compat_mts.estimator import _evaluation

REPO = pathlib.Path(__file__).resolve().parent.parent
# Every module that registers a table, imported so that all are registered.
REGISTERING = (
    '_tf_tools',
    'core.global_step',
    'core.fetch',
    'session.scaffold',
    'summary',
    'checkpoint_dir.checkpoints',
    'deploy.distribute',
    'deploy.parameter_server',
    'legacy.horovod',
    'estimator.canned',
    'keras.hooks_callback',
    'cli.upgrade.edits',
)
for _name in REGISTERING:
    importlib.import_module(f'compat_mts.{_name}')


def documented_tables() -> dict[str, str]:
    """Table name -> kind, from ARCHITECTURE.md's "Process-wide tables"."""
    text = (REPO / 'ARCHITECTURE.md').read_text(encoding='utf-8')
    section = text.split('\n## Process-wide tables', 1)[1].split('\n## ', 1)[0]
    return dict(re.findall(r'^\| `([\w.]+)` \| (program|process) \|', section, re.M))


def sizes() -> dict[str, int]:
    return {table.name: table.size() for table in program_lib.PROGRAM.tables()}


def test_the_tables_are_those_architecture_md_lists():
    registered = {table.name: table.kind for table in program_lib.PROGRAM.tables()}
    assert registered == documented_tables()
    assert len(registered) > 20, 'the scan finds the tables of ARCHITECTURE.md and of the package'
    assert all(table.holds for table in program_lib.PROGRAM.tables())


def test_every_cache_of_the_package_is_a_registered_table():
    """A `functools.cache` outlives sessions as any module-level table does: it must be registered too (a
    `functools.cached_property` lives and goes with its instance)."""
    registered = {table.name.rsplit('.', 1)[-1].lstrip('_') for table in program_lib.PROGRAM.tables()}
    cached = []
    for path in sorted((REPO / 'compat_mts').rglob('*.py')):
        source = path.read_text(encoding='utf-8')
        decorated = re.findall(r'@functools\.(?:cache|lru_cache)\b(?:\(.*\))?\s+def (\w+)', source)
        cached += [(path.name, name) for name in decorated]
    assert cached, 'the scan finds the caches'
    assert [(module, name) for module, name in cached if name.lstrip('_') not in registered] == []


def _build_graph():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    x = tf.compat.v1.placeholder(tf.float32, [], name='x')
    doubled = tf.identity(2.0 * x, name='doubled')
    return {'x': x, 'doubled': doubled, 'train_op': tf.compat.v1.assign_add(global_step, 1)}


def _fill_program_tables(tmp_path, monkeypatch, tf_logs):
    # The global step and a tf.function step that runs twice (its direct call is cached from the second run).
    global_step = mts.get_or_create_global_step()
    step = tf.function(lambda: global_step.assign_add(1))

    # A step fed by `feed_dict` (the keyword arguments it takes are cached).
    def fed_step(x):
        return {'x': x}

    with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / 'run')) as session:
        session.run(step)
        session.run(step)
        assert session.run(fed_step, feed_dict={'x': 1.0})['x'] == 1.0
    assert any('checkpoints hold the global step only' in m for m in tf_logs.messages())
    # A wrap_graph graph, run with graph fetches alone (a prepared plan). The session above is closed: its
    # writers and lock are released.
    mts.reset_global_step()
    graph = mts.wrap_graph(_build_graph)
    with mts.SingularMonitoredSession() as session:
        assert session.run(graph.outputs['doubled'], feed_dict={graph.outputs['x']: 3.0}) == 6.0
        assert session.run(graph.outputs['doubled'], feed_dict={graph.outputs['x']: 4.0}) == 8.0
    # A cluster of two workers in TF_CONFIG, outside any strategy scope: warned about once.
    cluster = {'worker': ['localhost:1', 'localhost:2']}
    monkeypatch.setenv('TF_CONFIG', json.dumps({'cluster': cluster, 'task': {'type': 'worker', 'index': 0}}))
    assert distribute.current_cluster() is None
    # An evaluation writes its graph into the directory's events once.
    evaluation = summary_lib.SessionSummaries()
    with evaluation.collecting():
        _evaluation._writer(str(tmp_path / 'eval'), tf.compat.v1.GraphDef)
    evaluation.release()
    # The caller holds the steps until the tables are measured: their cached direct caller and arguments are
    # weakly keyed, so an entry goes whenever the garbage collector frees its step (at any moment once nothing
    # holds it).
    return step, fed_step


def test_reset_clears_every_program_table_and_keeps_the_process_tables(tmp_path, monkeypatch, tf_logs):
    mts.reset()
    steps = _fill_program_tables(tmp_path, monkeypatch, tf_logs)
    # Process tables: a writer a hook took outside any session, and a checkpoint directory's lock.
    profiler = mts.ProfilerHook(save_steps=1, output_dir=str(tmp_path / 'profile'))
    (tmp_path / 'locked').mkdir()
    checkpoints.lock_directory(str(tmp_path / 'locked'))

    filled = sizes()
    del steps
    kinds = {table.name: table.kind for table in program_lib.PROGRAM.tables()}
    empty_before = sorted(name for name, size in filled.items() if kinds[name] == 'program' and not size)
    assert not empty_before, f'not filled by the program: {empty_before}'
    for name in ('summary.writers', 'summary.users', 'summary.unclaimed_writers', 'checkpoints.held_locks'):
        assert filled[name] > 0, name

    mts.reset()

    after = sizes()
    assert {name: size for name, size in after.items() if kinds[name] == 'program' and size} == {}
    assert {name: after[name] for name in kinds if kinds[name] == 'process'} == {
        name: filled[name] for name in kinds if kinds[name] == 'process'
    }
    # What the program registered is gone: names no longer resolve, a new global step is made.
    assert mts.get_global_step() is None
    with mts.SingularMonitoredSession() as session:
        with pytest.raises(KeyError, match="'doubled:0'"):
            session.run('doubled:0')
        session.run(lambda: None)  # The next session claims the profiler's writer, which kept working.
    assert profiler is not None
    checkpoints.unlock_directory(str(tmp_path / 'locked'))
    assert not (tmp_path / 'locked' / checkpoints.LOCK_FILE).exists()


def test_after_reset_the_logged_once_messages_are_logged_again(tmp_path, tf_logs):
    for attempt in range(2):
        mts.reset()
        global_step = mts.get_or_create_global_step()
        with mts.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / str(attempt))) as session:
            session.run(tf.function(lambda: global_step.assign_add(1)))
    assert sum('checkpoints hold the global step only' in m for m in tf_logs.messages()) == 2


def test_a_table_kind_must_be_program_or_process():
    with pytest.raises(ValueError, match=r"`kind` must be one of \('program', 'process'\), got 'session'"):
        program_lib.Program().register('x.y', 'nothing', size=lambda: 0, clear=lambda: None, kind='session')
