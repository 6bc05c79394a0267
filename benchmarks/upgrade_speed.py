"""How long `compat-mts upgrade` takes on 100 scripts, beside TensorFlow's `tf_upgrade_v2` on the same files.

The 100 files are the suite's v1 scripts (`tests/upgrade_samples`, `tests/v1_programs/*_v1.py`,
`tests/check_samples`), copied round-robin under new names into a temporary directory. Three timings, each a
fresh process, wall clock and the child's CPU time:

- `compat-mts upgrade -o OUT FILE...`: the whole command, the TensorFlow 1.x scripts' `tf_upgrade_v2` renames
  included (made in the command's processes, TensorFlow's tools loaded without TensorFlow: `compat_mts._tf_tools`;
  one process per core over the files);
- `compat-mts upgrade --no-renames -o OUT FILE...`: the stage-1 edits alone;
- `tf_upgrade_v2 --intree IN --outtree OUT`: TensorFlow's renames alone, over the same 100 files;
- `tf_upgrade_v2 --infile F --outfile G`: the same on one file, as it is usually run.

`PYTHONPATH=. python benchmarks/upgrade_speed.py [--files 100] [--out results.json]`
"""

from __future__ import annotations

import argparse
import glob
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

from benchmarks import workload  # noqa: E402

SOURCES = sorted(
    path
    for pattern in ('tests/upgrade_samples/*.py', 'tests/v1_programs/*_v1.py', 'tests/check_samples/*.py')
    for path in glob.glob(os.path.join(REPO, pattern))
    if not path.endswith('__init__.py')
)


def _timed(command: list[str], env: dict) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f'{" ".join(command[:4])}... exited {result.returncode}: {result.stderr[-2000:]}')
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {'wall_s': round(wall, 2), 'cpu_s': round(cpu, 2)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=100)
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONPATH=REPO)
    with tempfile.TemporaryDirectory(prefix='upgrade-speed-') as scratch:
        source_dir = os.path.join(scratch, 'in')
        os.makedirs(source_dir)
        files = []
        for index in range(args.files):
            source = SOURCES[index % len(SOURCES)]
            target = os.path.join(source_dir, f'{index:03d}_{os.path.basename(source)}')
            shutil.copyfile(source, target)
            files.append(target)
        lines = sum(1 for path in files for _ in open(path, encoding='utf-8'))
        command = [sys.executable, '-m', 'compat_mts', 'upgrade']
        rows = {
            'compat-mts upgrade (with tf_upgrade_v2 renames)': _timed(
                [*command, '-o', os.path.join(scratch, 'out_all'), *files], env
            ),
            'compat-mts upgrade --no-renames': _timed(
                [*command, '--no-renames', '-o', os.path.join(scratch, 'out_edits'), *files], env
            ),
            'tf_upgrade_v2 --intree': _timed(
                [
                    sys.executable,
                    '-m',
                    'tensorflow.tools.compatibility.tf_upgrade_v2_main',
                    '--intree',
                    source_dir,
                    '--outtree',
                    os.path.join(scratch, 'out_tf'),
                    '--reportfile',
                    os.path.join(scratch, 'report.txt'),
                ],
                env,
            ),
            'tf_upgrade_v2 --infile (one file)': _timed(
                [
                    sys.executable,
                    '-m',
                    'tensorflow.tools.compatibility.tf_upgrade_v2_main',
                    '--infile',
                    files[0],
                    '--outfile',
                    os.path.join(scratch, 'one.py'),
                    '--reportfile',
                    os.path.join(scratch, 'report_one.txt'),
                ],
                env,
            ),
        }
    table = '\n'.join(
        ['| command | wall s | CPU s |', '|---|---:|---:|']
        + [f'| {name} | {row["wall_s"]:.2f} | {row["cpu_s"]:.2f} |' for name, row in rows.items()]
    )
    heading = [f'{args.files} files, {lines} lines, from {len(SOURCES)} v1 scripts; load {os.getloadavg()[0]:.2f}']
    report = {'files': args.files, 'lines': lines, 'rows': rows}
    workload.publish(report, heading, table, args.out)
    return report


if __name__ == '__main__':
    main()
