"""Whether `compat-mts check` and `upgrade -o` are linear in their input and within issue 34's goal: 100 files,
and one file of 120,000 lines, each in under 10 s.

The input is the suite's v1 scripts (`benchmarks/upgrade_speed.py`'s `SOURCES`): 100 of them copied round-robin
under new names, and the same scripts concatenated, round-robin, into one file of 12,000 lines and one of
120,000 (a TensorFlow 1.x program, so `upgrade` makes `tf_upgrade_v2`'s renames too). Each command runs once, in
a fresh process, timed by the wall clock and the child's CPU time; the ratio of the 120,000-line time to the
12,000-line one is 10 for a linear command. The exit status is 1 when a goal row takes 10 s or more (or hits
`--timeout`).

`PYTHONPATH=. python benchmarks/check_upgrade_scaling.py [--goal-s 10] [--timeout 600] [--out results.json]`
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import upgrade_speed, workload  # noqa: E402


def _timed(command: list[str], env: dict, timeout: float) -> dict:
    """Wall and CPU seconds of `command`; `timed_out` when it ran `timeout` seconds and was killed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'wall_s': round(time.perf_counter() - start, 2), 'cpu_s': None, 'timed_out': True}
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):  # check exits 1 when it finds constructs.
        raise RuntimeError(f'{" ".join(command[:5])}... exited {result.returncode}: {result.stderr[-2000:]}')
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {'wall_s': round(wall, 2), 'cpu_s': round(cpu, 2), 'timed_out': False}


def _one_file(path: str, lines: int) -> None:
    """The suite's scripts, one after another (round-robin), up to `lines` lines, in one file at `path`."""
    texts = [open(source, encoding='utf-8').read() for source in upgrade_speed.SOURCES]
    written, index = 0, 0
    with open(path, 'w', encoding='utf-8') as file:
        while written < lines:
            text = texts[index % len(texts)]
            file.write(text if text.endswith('\n') else text + '\n')
            written += text.count('\n') + (not text.endswith('\n'))
            index += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--goal-s', type=float, default=10.0, help='the goal, in wall seconds (default 10)')
    parser.add_argument('--timeout', type=float, default=600.0, help='seconds after which a command is killed')
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONPATH=REPO)
    command = [sys.executable, '-m', 'compat_mts']
    rows = {}
    with tempfile.TemporaryDirectory(prefix='check-upgrade-scaling-') as scratch:
        files_dir = os.path.join(scratch, 'files')
        os.makedirs(files_dir)
        for index in range(100):
            source = upgrade_speed.SOURCES[index % len(upgrade_speed.SOURCES)]
            shutil.copyfile(source, os.path.join(files_dir, f'{index:03d}_{os.path.basename(source)}'))
        for lines in (12_000, 120_000):
            _one_file(os.path.join(scratch, f'lines_{lines}.py'), lines)
        small, large = os.path.join(scratch, 'lines_12000.py'), os.path.join(scratch, 'lines_120000.py')
        plan = [
            ('check, 100 files', [*command, 'check', files_dir], True),
            ('upgrade -o, 100 files', [*command, 'upgrade', files_dir, '-o', os.path.join(scratch, 'o1')], True),
            ('check, 12,000 lines', [*command, 'check', small], False),
            ('check, 120,000 lines', [*command, 'check', large], True),
            ('upgrade -o, 12,000 lines', [*command, 'upgrade', small, '-o', os.path.join(scratch, 'o2')], False),
            ('upgrade -o, 120,000 lines', [*command, 'upgrade', large, '-o', os.path.join(scratch, 'o3')], True),
        ]
        for name, argv_, goal in plan:
            rows[name] = dict(_timed(argv_, env, args.timeout), goal=goal)
            print(f'{name}: {rows[name]}', file=sys.stderr, flush=True)
    for kind in ('check', 'upgrade -o'):
        small_row, large_row = rows[f'{kind}, 12,000 lines'], rows[f'{kind}, 120,000 lines']
        rows[f'{kind}, 120,000 / 12,000 lines (10 = linear)'] = {
            'ratio': None if large_row['timed_out'] else round(large_row['wall_s'] / small_row['wall_s'], 1)
        }
    failed = [
        name for name, row in rows.items() if row.get('goal') and (row['timed_out'] or row['wall_s'] >= args.goal_s)
    ]

    def cell(row: dict, key: str) -> str:
        if 'ratio' in row:
            return '' if key != 'wall_s' else ('killed' if row['ratio'] is None else f'ratio {row["ratio"]}')
        if row['timed_out']:
            return f'> {args.timeout:.0f} (killed)' if key == 'wall_s' else ''
        return f'{row[key]:.2f}'

    table = '\n'.join(
        ['| command | wall s | CPU s | goal |', '|---|---:|---:|---|']
        + [
            f'| {name} | {cell(row, "wall_s")} | {cell(row, "cpu_s")} | '
            + ('' if not row.get('goal') else ('**missed**' if name in failed else f'< {args.goal_s:.0f} s'))
            + ' |'
            for name, row in rows.items()
        ]
    )
    heading = [f'load {os.getloadavg()[0]:.2f}; goal: each goal row under {args.goal_s:.0f} s of wall time']
    workload.publish({'rows': rows, 'failed': failed}, heading, table, args.out)
    if failed:
        print(f'goal missed: {", ".join(failed)}', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
