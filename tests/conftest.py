"""Shared fixtures: a fresh global step per test, and capture of what compat_mts logs."""

from __future__ import annotations

import logging
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import pytest  # noqa: E402

import compat_mts  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_program():
    """Every test starts without a registered global step or wrapped graph, as a new v1 process would."""
    compat_mts.reset()
    yield
    compat_mts.reset()


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


# Modules whose tests run whole programs in fresh processes (v1 graph mode beside compat_mts, clusters, the
# guide's and the notebooks' programs): `-m "not slow"` leaves a fast subset for the edit-test loop. CI runs all.
SLOW_MODULES = frozenset(
    {
        'test_benchmarks_smoke',
        'test_checkpoint_directories',
        'test_differential_v1',
        'test_distribute_cluster',
        'test_distribute_own_server',
        'test_estimator_v1',
        'test_hooks_differential_v1',
        'test_legacy_graph_context',
        'test_legacy_keras2',
        'test_legacy_v1_programs',
        'test_log_lines_v1',
        'test_migration_guide',
        'test_notebooks',
        'test_parameter_server_cluster',
        'test_soak',
        'test_validation',
    }
)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__.rsplit('.', 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
