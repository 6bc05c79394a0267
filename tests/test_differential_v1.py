"""compat_mts against the real thing: each scenario runs in TF1 graph mode and through compat_mts, and must agree.

The scenarios are written once (`differential_scenarios.py`). `v1_reference.py` runs all of them with the real
`tf.compat.v1.train.MonitoredTrainingSession` under `disable_eager_execution()`, `compat_reference.py` runs all
of them eagerly through compat_mts; each prints one JSON object (returned values, hook calls, errors, log
lines, and what is on disk afterwards). The two processes run once per module, side by side.

Compared: the values `run` returned, the hook protocol (order, fetched results, `stop_requested`), errors,
the final global step, the checkpoint steps on disk and in the `checkpoint` state file, event tags and steps
(and the loss values), the files written, and the key log lines. Where compat_mts differs from v1 on purpose
(migration_guide/ says where), the test asserts compat_mts's documented behaviour instead, and says so.

Events are compared as v1 eventually writes them: v1 leaves a writer's events buffered when no
`SummarySaverHook.end()` flushes it (no summaries, or an exception skipped `end()`), so the v1 side closes its
writers after each scenario. The compat side is read right after `close()`, by which compat_mts has flushed
everything written.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import re

import pytest

from tests import differential_scenarios
from tests import support

pytestmark = pytest.mark.slow  # Every test reads the runs of v1 graph mode and of compat_mts, each in a process.

SCENARIOS = list(differential_scenarios.SCENARIOS)
TOLERANCE = 1e-5


def _run_side(script: str) -> dict:
    process = support.run_python(os.path.join(support.TESTS_DIR, script), timeout=300)
    try:
        results = support.last_json_line(process.stdout)
    except ValueError as error:
        pytest.fail(
            f'{script} exited with {process.returncode} without a JSON result ({error}).\n'
            f'stderr:\n{process.stderr[-6000:]}'
        )
    if process.returncode != 0:
        pytest.fail(f'{script} exited with {process.returncode}.\nstderr:\n{process.stderr[-6000:]}')
    return results


@pytest.fixture(scope='module')
def side_processes():
    """Starts both scenario scripts side by side (2 cores); yields `{'v1': future, 'compat': future}`."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        yield {side: pool.submit(_run_side, f'{side}_reference.py') for side in ('v1', 'compat')}


@pytest.fixture(scope='module')
def v1_runs(side_processes) -> dict:
    """`{scenario: result}` of real v1 graph mode."""
    return side_processes['v1'].result()


@pytest.fixture(scope='module')
def runs(side_processes) -> dict:
    """`{'v1': {scenario: result}, 'compat': {scenario: result}}`."""
    return {side: future.result() for side, future in side_processes.items()}


def _pair(runs: dict, name: str) -> tuple[dict, dict]:
    return runs['v1'][name], runs['compat'][name]


def _context(compat: dict) -> str:
    """The compat side's unexpected error, if any, to explain a mismatch further down."""
    error = compat.get('error')
    return f'\ncompat_mts raised:\n{error["traceback"]}' if error else ''


def _differences(v1, compat, path: str = '') -> list[str]:
    """The places where two JSON structures differ; floats within TOLERANCE (and NaN with NaN) are equal."""
    if isinstance(v1, float) or isinstance(compat, float):
        if isinstance(v1, (int, float)) and isinstance(compat, (int, float)) and not isinstance(compat, bool):
            if math.isnan(v1) and math.isnan(compat):
                return []
            if math.isclose(v1, compat, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
                return []
        return [f'{path or "value"}: v1 {v1!r}, compat {compat!r}']
    if isinstance(v1, dict) and isinstance(compat, dict):
        if set(v1) != set(compat):
            return [f'{path or "value"}: v1 keys {sorted(v1)}, compat keys {sorted(compat)}']
        return [diff for key in v1 for diff in _differences(v1[key], compat[key], f'{path}[{key!r}]')]
    if isinstance(v1, list) and isinstance(compat, list):
        if len(v1) != len(compat):
            return [f'{path or "value"}: v1 {v1!r}, compat {compat!r}']
        return [diff for index, (a, b) in enumerate(zip(v1, compat)) for diff in _differences(a, b, f'{path}[{index}]')]
    return [] if v1 == compat else [f'{path or "value"}: v1 {v1!r}, compat {compat!r}']


def _assert_same(v1, compat, what: str, compat_result: dict) -> None:
    differences = _differences(v1, compat)
    assert not differences, f'{what} differ:\n  ' + '\n  '.join(differences) + _context(compat_result)


def _error(result: dict) -> tuple[str, str] | None:
    error = result['error']
    return None if error is None else (error['type'], error['message'])


def _event_steps(result: dict) -> dict[str, list[int]]:
    return {tag: [step for step, _ in pairs] for tag, pairs in result['events'].items()}


def _key_log_lines(result: dict) -> dict:
    """What the log must say the same on both sides: the checkpoint steps, the step-rate lines, and a few markers."""
    lines = result['log_lines']

    def steps(pattern):
        return [int(match.group(1)) for match in map(re.compile(pattern).match, lines) if match]

    saving = [
        match.groups() for match in map(re.compile(r'Saving checkpoints for (\d+) into (.*)\.$').match, lines) if match
    ]
    return {
        # The step, and the checkpoint prefix without the (per-side temporary) directory.
        'saving checkpoints for': [[int(step), os.path.basename(prefix)] for step, prefix in saving],
        'listeners before saving': steps(r'Calling checkpoint listeners before saving checkpoint (\d+)\.\.\.$'),
        'listeners after saving': steps(r'Calling checkpoint listeners after saving checkpoint (\d+)\.\.\.$'),
        'global_step/sec lines': sum(bool(re.match(r'global_step/sec: [0-9.e+-]+$', line)) for line in lines),
        'Create CheckpointSaverHook.': lines.count('Create CheckpointSaverHook.'),
        'Model diverged with loss = NaN.': lines.count('Model diverged with loss = NaN.'),
    }


def _comparable_files(result: dict, drop_meta: bool) -> list[str]:
    """The files written, events files under one name (their names hold a timestamp and the host).

    v1's FileWriterCache kept one events file per directory open for the whole process; compat_mts writes one
    per session that uses the directory, and closes it with the session. So they count once. The writer's lock
    file (`compat_mts.lock`), which a session that ended in an error leaves until its process exits, is
    compat_mts's own.
    """
    names = {
        re.sub(r'^events\.out\.tfevents\..*$', 'events.out.tfevents.*', name)
        for name in result['files']
        if name != 'compat_mts.lock'
    }
    return sorted(name for name in names if not (drop_meta and name.endswith('.meta')))


# The scenarios whose session gets a checkpoint_dir, with checkpoints enabled and save_graph_def left True.
CHECKPOINT_SCENARIOS = [
    'default_hooks',
    'resume_num_steps',
    'exit_out_of_range',
    'exit_value_error',
    'use_default_checkpoint_secs',
    'checkpoint_steps_only',
    'checkpoint_retention',
]


def test_both_sides_ran_every_scenario(runs):
    assert sorted(runs['v1']) == sorted(SCENARIOS)
    assert sorted(runs['compat']) == sorted(SCENARIOS)


def test_v1_reference_behaves_as_the_spec_says(v1_runs):
    """The reference itself, checked against v1's documented steps and tags, so a broken reference hides nothing."""
    v1 = v1_runs
    assert v1['default_hooks']['checkpoint_steps'] == [0, 3, 6, 7]
    assert _event_steps(v1['default_hooks']) == {'loss': [1, 3, 5, 7], 'global_step/sec': [3, 5, 7]}
    assert v1['default_hooks']['final_global_step'] == 7
    assert v1['resume_num_steps']['checkpoint_steps'] == [0, 5, 10]
    assert [call[2] for call in v1['resume_num_steps']['hook_calls'] if call[1] == 'end'] == [5, 10]
    assert v1['hook_protocol']['run_after_stop_error']['message'] == 'Run called even after should_stop requested.'
    assert v1['exit_out_of_range']['error'] is None
    assert ['user', 'end', 3] in v1['exit_out_of_range']['hook_calls']
    assert not any(call[1] == 'end' for call in v1['exit_value_error']['hook_calls'])
    assert v1['no_dirs']['files'] == []
    assert v1['summary_dir_only']['checkpoint_steps'] == []
    assert v1['use_default_checkpoint_secs']['checkpoint_steps'] == [0, 4]
    assert v1['checkpoint_retention']['state_file_steps'] == [3, 4, 5, 6, 7]
    assert not any(name == 'graph.pbtxt' or name.endswith('.meta') for name in v1['no_graph_def']['files'])
    assert v1['no_graph_def']['has_graph_event']
    assert _error(v1['both_checkpoint_secs_and_steps']) == (
        'ValueError',
        'Can not provide both every_secs and every_steps.',
    )


# Errors whose message is v1's followed by what names the user's own arguments (v1 named its hooks' `every_secs`
# and `every_steps`, which a MonitoredTrainingSession caller never wrote).
EXTENDED_ERRORS = {
    'both_checkpoint_secs_and_steps': (
        ' MonitoredTrainingSession got save_checkpoint_secs=10 and save_checkpoint_steps=2'
    ),
    'both_summaries_secs_and_steps': ' MonitoredTrainingSession got save_summaries_secs=10 and save_summaries_steps=2',
}


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_error(runs, name):
    v1, compat = _pair(runs, name)
    if name not in EXTENDED_ERRORS:
        assert _error(compat) == _error(v1), _context(compat)
        return
    (kind, message), (v1_kind, v1_message) = _error(compat), _error(v1)
    assert kind == v1_kind, _context(compat)
    assert message.startswith(v1_message + EXTENDED_ERRORS[name]), _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_values_returned_by_run(runs, name):
    v1, compat = _pair(runs, name)
    _assert_same(v1['returned'], compat['returned'], 'The values returned by run', compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_hook_calls_and_hook_results(runs, name):
    v1, compat = _pair(runs, name)
    _assert_same(v1['hook_calls'], compat['hook_calls'], 'The hook calls', compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_final_global_step(runs, name):
    v1, compat = _pair(runs, name)
    assert compat.get('final_global_step') == v1.get('final_global_step'), _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_checkpoint_steps_on_disk_and_in_the_state_file(runs, name):
    v1, compat = _pair(runs, name)
    assert compat['checkpoint_steps'] == v1['checkpoint_steps'], _context(compat)
    # compat_mts's state file holds relative paths, v1's absolute ones (documented): the steps must agree.
    assert compat['state_file_steps'] == v1['state_file_steps'], _context(compat)
    assert compat['latest_checkpoint_step'] == v1['latest_checkpoint_step'], _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_event_tags_and_steps(runs, name):
    v1, compat = _pair(runs, name)
    assert _event_steps(compat) == _event_steps(v1), _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_loss_summary_values(runs, name):
    v1, compat = _pair(runs, name)
    _assert_same(v1['events'].get('loss', []), compat['events'].get('loss', []), 'The loss summaries', compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_global_step_per_sec_is_a_simple_value_on_both_sides(runs, name):
    v1, compat = _pair(runs, name)
    if 'global_step/sec' not in v1['value_kinds']:
        assert 'global_step/sec' not in compat['value_kinds']
        return
    assert v1['value_kinds']['global_step/sec'] == ['simple_value']
    assert compat['value_kinds'].get('global_step/sec') == ['simple_value'], _context(compat)


@pytest.mark.parametrize('name', ['default_hooks', 'summary_dir_only'])
def test_user_scalars_are_tensor_summaries_in_compat(runs, name):
    # Documented difference: the user's tf.summary.scalar writes a `tensor` value, v1's summary.scalar a
    # `simple_value`; TensorBoard shows both as the same scalar.
    v1, compat = _pair(runs, name)
    assert v1['value_kinds']['loss'] == ['simple_value']
    assert compat['value_kinds'].get('loss') == ['tensor'], _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_key_log_lines(runs, name):
    v1, compat = _pair(runs, name)
    expected, actual = _key_log_lines(v1), _key_log_lines(compat)
    if v1['error'] is not None:
        # v1 logs 'Create CheckpointSaverHook.' before its arguments fail; compat_mts validates every argument
        # before it creates anything (ARCHITECTURE.md, "Validation and failures"): logging that line is its choice.
        del expected['Create CheckpointSaverHook.'], actual['Create CheckpointSaverHook.']
    assert actual == expected, _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_files_written_except_meta_graphs(runs, name):
    # Documented difference: compat_mts writes no `model.ckpt-N.meta` (there is no MetaGraph eagerly).
    v1, compat = _pair(runs, name)
    assert _comparable_files(compat, drop_meta=False) == _comparable_files(v1, drop_meta=True), _context(compat)


@pytest.mark.parametrize('name', SCENARIOS)
def test_same_graph_event(runs, name):
    # v1 writes a graph_def event into every events file it creates (FileWriterCache passes the default graph),
    # and CheckpointSaverHook adds one in after_create_session whatever save_graph_def says. compat_mts writes
    # the traced step's graph with save_graph_def=True; in the other cases v1's behaviour is the reference.
    v1, compat = _pair(runs, name)
    assert compat['has_graph_event'] == v1['has_graph_event'], _context(compat)


@pytest.mark.parametrize('name', CHECKPOINT_SCENARIOS)
def test_checkpointing_session_writes_graph_pbtxt_but_no_meta_graphs(runs, name):
    # Documented difference: no `model.ckpt-N.meta` eagerly; `graph.pbtxt` holds the traced step's graph.
    v1, compat = _pair(runs, name)
    assert 'graph.pbtxt' in v1['files']
    assert any(file.endswith('.meta') for file in v1['files'])
    assert 'graph.pbtxt' in compat['files'], _context(compat)
    assert not any(file.endswith('.meta') for file in compat['files'])


def test_run_after_should_stop_raises_the_same_error(runs):
    v1, compat = _pair(runs, 'hook_protocol')
    assert compat.get('run_after_stop_error') == v1['run_after_stop_error'], _context(compat)


def test_step_fn_request_stop_leaves_should_stop_false(runs):
    v1, compat = _pair(runs, 'run_step_fn')
    assert v1['should_stop_before_request'] is False
    assert compat.get('should_stop_before_request') is False, _context(compat)


def _tensor_log_lines(result: dict) -> list[list]:
    """LoggingTensorHook's `loss = <value>` lines: the value, and whether the `(<secs> sec)` suffix is there."""
    pattern = re.compile(r'loss = (\S+)( \(\d+\.\d{3} sec\))?$')
    return [
        [float(match.group(1)), match.group(2) is not None]
        for match in map(pattern.match, result['log_lines'])
        if match
    ]


def test_logging_tensor_hook_logs_the_same_lines(runs):
    v1, compat = _pair(runs, 'logging_tensor_hook')
    expected = _tensor_log_lines(v1)
    assert [has_secs for _, has_secs in expected] == [False, True, True]
    _assert_same(expected, _tensor_log_lines(compat), 'The LoggingTensorHook lines', compat)
