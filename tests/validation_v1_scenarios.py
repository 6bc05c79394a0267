"""Inputs v1 accepts that look like mistakes (`''` directories, `max_wait_secs=None`), played on v1 and compat_mts.

`python tests/validation_v1_scenarios.py` runs every scenario with the real `tf.compat.v1.train` under
`tf.compat.v1.disable_eager_execution()`, each in a fresh graph and working directory, and prints
`{name: result}` as one JSON line. `test_validation.py` runs the same functions eagerly through compat_mts
(`EagerSide` there) and compares: which hooks the session got, what it returned, what it wrote, and how a
non-chief waits. A scenario is `fn(side, directory) -> result`; `side.train` is `tf.compat.v1.train` or
`compat_mts`, `side.program()` builds a global step and a step that increments it.
"""

import contextlib
import json
import math
import os
import sys
import tempfile
import time

import tensorflow as tf

FAKE_SECS_PER_SLEEP = 1000.0
SLEEPS_BEFORE_GIVING_UP = 20


class StillWaiting(Exception):
    """Raised by the fake `time.sleep` once the session has waited `SLEEPS_BEFORE_GIVING_UP` times."""


@contextlib.contextmanager
def fake_clock(record):
    """`time.time`/`time.sleep` where each sleep moves the clock by 1000 s; the 20th sleep raises StillWaiting."""
    real_time, real_sleep = time.time, time.sleep
    clock = {'now': 1.0e6}

    def fake_sleep(seconds):
        del seconds
        record['sleeps'] += 1
        clock['now'] += FAKE_SECS_PER_SLEEP
        if record['sleeps'] >= SLEEPS_BEFORE_GIVING_UP:
            raise StillWaiting()

    time.time, time.sleep = (lambda: clock['now']), fake_sleep
    try:
        yield
    finally:
        time.time, time.sleep = real_time, real_sleep


def _files(directory):
    return sorted(
        'events.out.tfevents' if name.startswith('events.out.tfevents') else name for name in os.listdir(directory)
    )


def _hook_names(session):
    return sorted(type(hook).__name__ for hook in session._hooks)


def empty_directories_are_none(side, directory):
    step = side.program()
    with side.train.MonitoredTrainingSession(checkpoint_dir='', summary_dir='') as session:
        hooks = _hook_names(session)
        returned = [side.run(session, step) for _ in range(2)]
    return {'hooks': hooks, 'returned': returned, 'files': _files(directory)}


def empty_summary_dir_falls_back_to_checkpoint_dir(side, directory):
    step = side.program()
    checkpoints = os.path.join(directory, 'checkpoints')
    with side.train.MonitoredTrainingSession(checkpoint_dir=checkpoints, summary_dir='') as session:
        hooks = _hook_names(session)
        side.run(session, step)
    return {
        'hooks': hooks,
        'events_in_checkpoint_dir': 'events.out.tfevents' in _files(checkpoints),
        'files': _files(directory),
    }


def singular_session_with_an_empty_checkpoint_dir(side, directory):
    step = side.program()
    with side.train.SingularMonitoredSession(checkpoint_dir='') as session:
        returned = side.run(session, step)
    return {'returned': returned, 'files': _files(directory)}


def chief_creator_with_empty_paths(side, directory):
    step = side.program()
    creator = side.train.ChiefSessionCreator(checkpoint_dir='', checkpoint_filename_with_path='')
    with side.train.MonitoredSession(session_creator=creator) as session:
        returned = side.run(session, step)
    return {'returned': returned, 'files': _files(directory)}


def checkpoint_saver_hook_in_the_working_directory(side, directory):
    step = side.program()
    hook = side.train.CheckpointSaverHook('', save_steps=2)
    with side.train.MonitoredSession(hooks=[hook]) as session:
        returned = [side.run(session, step) for _ in range(3)]
    state = tf.train.get_checkpoint_state(directory)
    indexes = [name for name in _files(directory) if name.endswith('.index')]
    return {
        'returned': returned,
        'checkpoint_indexes': indexes,
        'latest': os.path.basename(state.model_checkpoint_path),
    }


def _non_chief_waits(side, directory, max_wait_secs):
    """A non-chief whose chief never makes the session ready; `max_wait_secs=USE_DEFAULT` leaves v1's 7200."""
    side.program()
    kwargs = {} if max_wait_secs == 'default' else {'max_wait_secs': max_wait_secs}
    record = {'sleeps': 0}
    outcome = None
    with fake_clock(record):
        try:
            side.train.MonitoredTrainingSession(is_chief=False, checkpoint_dir=directory, **kwargs)
            outcome = 'created'
        except StillWaiting:
            outcome = f'still waiting after {SLEEPS_BEFORE_GIVING_UP * FAKE_SECS_PER_SLEEP:g} fake seconds'
        except tf.errors.DeadlineExceededError as error:
            outcome = f'DeadlineExceededError: {error.message}'
    return {
        'outcome': outcome,
        'gave_up_by_itself': 0 < record['sleeps'] < SLEEPS_BEFORE_GIVING_UP,
        'files': _files(directory),
    }


def non_chief_max_wait_secs_none_waits_forever(side, directory):
    return _non_chief_waits(side, directory, None)


def non_chief_max_wait_secs_inf_waits_forever(side, directory):
    return _non_chief_waits(side, directory, math.inf)


def non_chief_default_max_wait_secs_gives_up(side, directory):
    return _non_chief_waits(side, directory, 'default')


SCENARIOS = {
    fn.__name__: fn
    for fn in [
        empty_directories_are_none,
        empty_summary_dir_falls_back_to_checkpoint_dir,
        singular_session_with_an_empty_checkpoint_dir,
        chief_creator_with_empty_paths,
        checkpoint_saver_hook_in_the_working_directory,
        non_chief_max_wait_secs_none_waits_forever,
        non_chief_max_wait_secs_inf_waits_forever,
        non_chief_default_max_wait_secs_gives_up,
    ]
}


def run_all(side, names=None):
    """Runs the scenarios with `side`, each in a fresh working directory; returns `{name: result}`."""
    results = {}
    previous_directory = os.getcwd()
    with tempfile.TemporaryDirectory(prefix='compat_mts_validation_') as root:
        for name in names or list(SCENARIOS):
            directory = os.path.join(root, name)
            os.makedirs(directory)
            os.chdir(directory)
            try:
                with side.prepare():
                    results[name] = SCENARIOS[name](side, directory)
            except Exception as error:  # Recorded and compared: raising is part of the behaviour.
                results[name] = {'error': f'{type(error).__name__}: {error}'}
            finally:
                os.chdir(previous_directory)
    return results


class GraphSide:
    """The v1 side: `tf.compat.v1.train`, each scenario in a fresh graph."""

    train = tf.compat.v1.train

    @staticmethod
    def prepare():
        return tf.Graph().as_default()

    @staticmethod
    def program():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        return global_step.assign_add(1)

    @staticmethod
    def run(session, step):
        return int(session.run(step))


if __name__ == '__main__':
    tf.compat.v1.disable_eager_execution()
    sys.stdout.write(json.dumps(run_all(GraphSide, sys.argv[1:])) + '\n')
