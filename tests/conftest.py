"""Shared fixtures: a fresh global step per test, and capture of what compat_mts logs."""

from __future__ import annotations

import gc
import logging
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import pytest  # noqa: E402

import compat_mts  # noqa: E402
from compat_mts import summary as summary_lib  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_program():
    """Every test starts without a registered global step or wrapped graph, as a new v1 process would."""
    compat_mts.reset()
    yield
    # What a closed (or failed) session must not leave behind: its summary writers as the process's defaults. A
    # later test, in whatever order the tests run, would record into them or read their condition in a graph.
    active = [recorder for recorder in summary_lib._recorders.values() if recorder.active]
    compat_mts.reset()
    assert not active, f'summary recording is still active for {[r.writer for r in active]} after the test'


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)

    def messages(self, level: int | None = None) -> list[str]:
        return [r.getMessage() for r in self.records if level is None or r.levelno == level]


@pytest.fixture
def tf_logs():
    """Collects what compat_mts logs through the `tensorflow` logger, with v1's verbosity set to INFO.

    That is `tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)`, as v1 programs set it.
    """
    import tensorflow as tf

    handler = _Records()
    logger = logging.getLogger('tensorflow')
    previous = tf.compat.v1.logging.get_verbosity()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    tf.compat.v1.logging.set_verbosity(previous)


# Slowness is marked per test: `@pytest.mark.slow` on each test that starts processes (v1 graph mode beside
# compat_mts, clusters, the guide's and the notebooks' programs) or takes more than a few seconds, and a module's
# `pytestmark = pytest.mark.slow` where every test of it does. `-m "not slow"` leaves the fast subset for the
# edit-test loop; CI runs all. A test that starts a process without the mark fails (`_processes_need_the_slow_mark`),
# so that the fast loop stays fast as tests are added.
_PROCESS_EVENTS = frozenset(
    {'subprocess.Popen', 'os.posix_spawn', 'os.fork', 'os.forkpty', 'os.system', 'os.exec', 'tests.support.fork'}
)
_started: list[str] = []  # What the running test started, while it is not marked slow.
_watching = False


_PROBES = frozenset({'uname'})  # `platform.processor()`'s, run once by importing TensorFlow: not a program.


def _audit(event, arguments):
    if _watching and event in _PROCESS_EVENTS:
        if event == 'subprocess.Popen' and os.path.basename(str(arguments[0])) in _PROBES:
            return
        _started.append(f'{event} {arguments[:2]!r}'[:300])


sys.addaudithook(_audit)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Watches for processes from before the test's fixtures (module-scoped ones included) are set up."""
    global _watching
    _started.clear()
    _watching = item.get_closest_marker('slow') is None


@pytest.fixture(autouse=True)
def _processes_need_the_slow_mark(request):
    """Fails a test not marked `slow` that starts a process: `-m "not slow"` must not start any."""
    global _watching
    yield
    _watching = False
    if _started:
        started, _started[:] = list(_started), []
        pytest.fail(
            f'{request.node.nodeid} starts processes but is not marked slow: add @pytest.mark.slow. '
            f'Started: {started[:3]}',
            pytrace=False,
        )


# The suite runs on every core (`-n auto --dist loadfile` in pyproject.toml's addopts, pytest-xdist): each module
# on one worker, so that its module-scoped fixtures (a TF 2.15 child, a fork server, the guide's blocks) run once.
# Modules are handed out in collection order, so the longest go first (`_LONGEST_FIRST`, from `.ci/run`'s
# durations) and the short ones fill in around them; the order changes nothing else.
_LONGEST_FIRST = (
    'test_estimator_cluster.py',
    'test_estimator_serving.py',
    'test_estimator_experimental.py',
    'test_estimator_multi_worker.py',
    'test_migration_guide.py',
    'test_parameter_server_cluster.py',
    'test_upgrade_programs.py',
    'test_estimator_premade.py',
    'test_notebooks.py',
    'test_distribute.py',
    'test_estimator_distribute.py',
    'test_distribute_cluster.py',
    'test_benchmarks_smoke.py',
    'test_cli.py',
    'test_check.py',
    'test_estimator_tpu.py',
    'test_estimator_fidelity.py',
    'test_upgrade_writes.py',
)


def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto`: one per core, at least two; none when tests are chosen by id (`file::test`).

    `PYTEST_XDIST_AUTO_NUM_WORKERS` overrides, as with pytest-xdist's own rule. A run of a few chosen tests would
    spend more on starting workers (each imports TensorFlow) than it saves.
    """
    if 'PYTEST_XDIST_AUTO_NUM_WORKERS' in os.environ:
        return int(os.environ['PYTEST_XDIST_AUTO_NUM_WORKERS'])
    if any('::' in str(argument) for argument in config.args):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1
    return max(2, cores)


def pytest_collection_modifyitems(items):
    rank = {name: position for position, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # Stable: each module keeps its order.


def pytest_sessionstart(session):
    # TensorFlow's and Keras's import-time objects never become garbage: out of the collector's way for the run.
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Collects the garbage of a module's tests when the module is done.

    A worker that ran hundreds of tests holds the garbage of their models, graphs and traced functions; left to
    the collector's own schedule, one collection in a later test freed it all at once, for tens of seconds. What
    survives that collection is frozen too, so that later collections do not walk it again.
    """
    yield
    if nextitem is None or nextitem.module is not item.module:
        gc.collect()
        gc.freeze()  # What outlived the module (TensorFlow's caches, this process's fork servers...) stays.
