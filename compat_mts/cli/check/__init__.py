"""`compat-mts check`: lists the v1 training-loop constructs of a script, with their replacement and migration stage.

`tf_upgrade_v2` rewrites names (`tf.train.Saver` → `tf.compat.v1.train.Saver`); this checker says how the
training loop migrates. It reads each file's syntax tree and never runs it, and imports neither TensorFlow
nor the rest of compat_mts (its catalogue of constructs is `catalogue.py`, beside it), so
`python compat_mts/cli/check FILE...` works on a machine without TensorFlow.

A finding is one construct on one line: a `MonitoredTrainingSession` call and each argument given to it,
a built-in hook or a user `SessionRunHook` subclass, `Scaffold`, the global-step helpers, `Saver` and its
`max_to_keep`, placeholders and `feed_dict`, `tf.compat.v1.summary`, `ConfigProto`, `Session` and `sess.run`,
`Server`/`ClusterSpec`, v1 optimizers and `minimize(global_step=...)`, `get_variable`/`variable_scope`,
`tf.compat.v1.data` iterators, `tf.Graph().as_default()`, `tf.estimator`, `tf.contrib`, `tf.compat.v1.layers`,
shape `.value` reads and device functions. The `compat_mts` names a half-migrated script uses are findings too, at the
stage that removes them, so a script is fully migrated when the checker finds nothing.

The stage of a finding is the stage (of the four in `migration_guide/stages.md`) at which that line has
to change; the note says what keeps working until then:

1. the script runs eagerly on compat_mts (`tf.compat.v1.train` → `compat_mts`, graph code in `wrap_graph`);
2. the model becomes Keras / a `tf.function` step, driven by the same session loop and hooks;
3. the loop becomes `model.fit`, the hooks run inside `compat_mts.keras.HooksCallback`;
4. the hooks become native Keras callbacks and compat_mts is no longer imported.

Some findings *block* stage 1: the line fails on TensorFlow 2.21 as written (`tf.contrib`, boosted trees,
`tf.compat.v1.layers` under Keras 3, `x.shape[i].value` on TF2 shapes, a parameter-server cluster, queue-runner
input, Horovod, a placeholder built outside a graph, the MNIST tutorial reader, `TPUEstimator(use_tpu=True)`), so
the script cannot run on compat_mts until it changes. Their replacement is the edit that makes the line run.

The text report explains each kind of finding once, at its first line, and lists its other lines after it.
Only regular files are read, up to `MAX_FILE_BYTES`, each walked once.

Exit status of the command: 0 when nothing was found, 1 when constructs were found (with `--fail-on
blocking`, only when one blocks stage 1; 0 with `--fail-on none`), 2 when a file could not be read or parsed
(or the command line was wrong).

The checker is four modules beside this one, all standard library only: `catalogue` (the constructs and
their replacements), `names` (what a script's names stand for), `checker` (the walk over the syntax
tree) and `report` (findings, text and JSON). This module is the command, and the public names.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Iterable, Sequence

if __package__:
    from compat_mts.cli.check import checker
    from compat_mts.cli.check import report
else:  # `python compat_mts/cli/check FILE...`: the directory of this file is first on sys.path.
    import checker as checker
    import report as report

STAGES = report.STAGES
Finding = report.Finding
CheckError = report.CheckError
check_source = checker.check_source
check_file = checker.check_file
read_source = checker.read_source
MAX_FILE_BYTES = checker.MAX_FILE_BYTES
format_text = report.format_text
format_json = report.format_json

__all__ = [
    'STAGES',
    'Finding',
    'CheckError',
    'check_source',
    'check_file',
    'read_source',
    'MAX_FILE_BYTES',
    'format_text',
    'format_json',
    'add_check_command',
    'run',
    'main',
]


def _python_files(paths: Iterable[str]) -> list[pathlib.Path]:
    files = []
    for path in map(pathlib.Path, paths):
        files.extend(sorted(path.rglob('*.py')) if path.is_dir() else [path])
    return files


_DESCRIPTION = (
    'List the v1 training-loop constructs of Python scripts (read, never run), with the compat_mts '
    'or TF2 replacement of each and the migration stage (1-4) that changes it; "blocks stage 1" marks '
    'what fails on TensorFlow 2.21 as written, with the edit that makes it run. Exit status: 0 '
    'nothing found, 1 constructs found, 2 a file could not be read or parsed.'
)


def _configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        'files', nargs='+', metavar='FILE', help='Python files to check (a directory means every *.py file below it)'
    )
    parser.add_argument('--json', action='store_true', help='print the findings as JSON, for tools')
    parser.add_argument(
        '--max-stage',
        type=int,
        choices=sorted(STAGES),
        default=4,
        metavar='N',
        help='list only what stages 1..N change (default: 4, everything); the stages: '
        + '; '.join(f'{stage} = {text}' for stage, text in STAGES.items()),
    )
    parser.add_argument(
        '--fail-on',
        choices=('any', 'blocking', 'none'),
        default='any',
        help='exit with status 1 when anything is found (any, the default), only when something '
        'blocks stage 1 (blocking), or never (none)',
    )
    parser.set_defaults(run=run)
    return parser


def add_check_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds `check` to the `add_subparsers()` object of the `compat-mts` parser; it dispatches on `args.run`."""
    return _configure_parser(
        subparsers.add_parser(
            'check',
            help='list the v1 constructs of scripts, their replacement and migration stage',
            description=_DESCRIPTION,
        )
    )


def run(args: argparse.Namespace) -> int:
    """Checks `args.files` and prints the findings; returns the exit status (0, 1 or 2)."""
    findings, errors = [], []
    files = _python_files(args.files)
    for path in files:
        try:
            findings.extend(f for f in check_file(path) if f.stage <= args.max_stage)
        except CheckError as error:
            errors.append(error)
    if args.json:
        sys.stdout.write(format_json(findings, errors))
    else:
        for error in errors:
            print(f'{error}', file=sys.stderr)
        sys.stdout.write(format_text(findings, files_checked=len(files) - len(errors), files_failed=len(errors)))
    if errors:
        return 2
    if args.fail_on == 'blocking':
        return 1 if any(finding.blocks for finding in findings) else 0
    return 1 if findings and args.fail_on == 'any' else 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m compat_mts.cli.check FILE...`: the `compat-mts check` command on its own."""
    parser = _configure_parser(argparse.ArgumentParser(prog='compat-mts check', description=_DESCRIPTION))
    args = parser.parse_args(argv)
    return args.run(args)
