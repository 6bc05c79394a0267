"""The benchmark scripts run end to end at tiny sizes, their v1 graph-mode children included. No timing is asserted."""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys

import pytest

from tests import support

pytestmark = pytest.mark.slow  # Every test runs a benchmark in a process of its own.

REPO = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = REPO / 'benchmarks' / 'session_overhead.py'
VARIANTS = ('bare_loop', 'bare_concrete', 'concrete_record_if', 'hand_written_tf2', 'compat_mts', 'v1_graph_mode')


def run_benchmark(script: pathlib.Path, cwd: pathlib.Path, *arguments: str, timeout: float = 170):
    """Runs a benchmark script with this repository on its path; returns the finished process."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    return support.run(
        [sys.executable, str(script), *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


TABLE_LABELS = (
    'bare loop',
    'bare loop, concrete function',
    'concrete function under record_if (the TF2 floor)',
    'hand-written TF2',
    'compat_mts (v1 default hooks)',
    'v1 graph mode (tf.compat.v1 MTS)',
)


def test_session_overhead_reports_every_variant_with_finite_numbers(tmp_path):
    out = tmp_path / 'results.json'
    result = run_benchmark(
        SCRIPT, tmp_path, '--steps', '20', '--repeats', '2', '--warmup', '3', '--count-steps', '5', '--out', str(out)
    )

    # Exit 1 is a missed goal (issue 34's ratios), which 20 steps on a shared machine say nothing about.
    missed = result.returncode == 1 and 'Goal missed (ratio of means)' in result.stderr
    assert result.returncode == 0 or missed, (
        f'exit status {result.returncode}\n{result.stdout}\n{result.stderr[-6000:]}'
    )
    table_rows = {line.split('|')[1].strip(): line for line in result.stdout.splitlines() if line.startswith('| ')}
    for label in TABLE_LABELS:
        assert label in table_rows, result.stdout
        cells = [cell.strip() for cell in table_rows[label].split('|')[2:-1]]
        numbers = [float(part) for cell in cells for part in cell.split('-')]
        assert numbers and all(math.isfinite(number) for number in numbers), table_rows[label]
    assert 'compat_mts / hand-written TF2:' in result.stdout
    assert 'compat_mts / v1 graph mode:' in result.stdout
    assert 'compat_mts / concrete under record_if:' in result.stdout

    report = json.loads(out.read_text())
    assert set(report['variants']) == set(VARIANTS)
    for name in VARIANTS:
        variant = report['variants'][name]
        assert len(variant['repeat_means_s']) == 2
        assert variant['steps_timed'] == 40
        values = {
            key: variant[key]
            for key in ('median_of_repeat_means_s', 'p50_step_s', 'p99_step_s', 'median_cpu_per_step_s')
        }
        values.update({f'ratio {kind}': ratio for kind, ratio in variant['ratios_to_bare_loop'].items()})
        for key, value in values.items():
            assert math.isfinite(value) and value > 0, (name, key, value)
    assert report['tensorflow_v1_child'] == report['tensorflow']
    executions = report['compat_mts_executions_per_run']
    assert sum(executions.values()) == 5 and all(int(count) >= 1 for count in executions)


TRAINERS_SCRIPT = REPO / 'benchmarks' / 'trainers_overhead.py'


def test_session_overhead_feed_dict_reports_the_fed_variants_with_finite_numbers(tmp_path):
    out = tmp_path / 'results.json'
    result = run_benchmark(
        SCRIPT, tmp_path, '--feed-dict', '--steps', '20', '--repeats', '2', '--warmup', '3', '--out', str(out)
    )

    assert result.returncode == 0, f'exit status {result.returncode}\n{result.stdout}\n{result.stderr[-6000:]}'
    assert 'compat_mts fed / bare loop fed:' in result.stdout
    report = json.loads(out.read_text())
    assert set(report['variants']) == {'bare_loop_fed', 'compat_mts_fed'}
    for name, variant in report['variants'].items():
        assert variant['steps_timed'] == 40
        for key in ('median_of_repeat_means_s', 'p50_step_s', 'p99_step_s', 'median_cpu_per_step_s'):
            assert math.isfinite(variant[key]) and variant[key] > 0, (name, key)
    assert all(math.isfinite(ratio) and ratio > 0 for ratio in report['compat_mts_fed_over_bare_loop_fed'].values())


def test_trainers_overhead_runs_a_trainer_on_both_sides_with_finite_numbers(tmp_path):
    """The CIFAR-10 trainer only: each side is a process of its own, and the MNIST one adds two more."""
    out = tmp_path / 'trainers.json'
    result = run_benchmark(
        TRAINERS_SCRIPT,
        tmp_path,
        '--steps',
        '3',
        '--warmup',
        '2',
        '--repeats',
        '1',
        '--trainers',
        'cifar10',
        '--variants',
        'default_frequencies',
        '--out',
        str(out),
    )

    assert result.returncode == 0, f'exit status {result.returncode}\n{result.stdout}\n{result.stderr[-6000:]}'
    rows = [line for line in result.stdout.splitlines() if line.startswith('| ') and 'trainer' in line.lower()]
    assert any('CIFAR-10' in row for row in rows), result.stdout
    report = json.loads(out.read_text())
    assert set(report['trainers']) == {'cifar10'}
    for trainer in report['trainers'].values():
        result_of_variant = trainer['variants']['default_frequencies']
        for side in ('v1', 'compat'):
            timing = result_of_variant['sides'][side]
            assert len(timing['repeat_means_s']) == 1
            assert all(
                math.isfinite(timing[key]) and timing[key] > 0
                for key in ('median_step_s', 'median_cpu_step_s', 'p50_step_s', 'median_program_s')
            )
        assert all(math.isfinite(result_of_variant[key]) for key in ('ratio_wall', 'ratio_cpu', 'ratio_p50'))


def test_restore_verification_reports_each_variant():
    script = REPO / 'benchmarks' / 'restore_verification.py'
    result = run_benchmark(script, REPO, '--units', '16', '--layers', '2', timeout=300)
    assert result.returncode == 0, result.stderr[-6000:]
    rows = {line.split('|')[1].strip(): line for line in result.stdout.splitlines() if line.startswith('| ')}
    for label in ('restore', 'restore + check', 'restore + check every value'):
        seconds = float(rows[label].split('|')[2])
        assert math.isfinite(seconds) and seconds > 0, result.stdout
