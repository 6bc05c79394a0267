"""The `compat-mts` command line: one subcommand per job a migrating user does from a terminal.

Each subcommand is a `_run_<name>(args) -> int` function that calls into the library; parsing and
dispatch stay here, the work lives in the modules (`demo.py`, ...). A subcommand imports its module when
it runs, so TensorFlow is loaded only by the subcommands that need it and `--help` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from compat_mts import _quiet_start
from compat_mts.cli import check, upgrade

DEFAULT_DEMO_DIRECTORY = 'compat-mts-demo'
DEFAULT_DEMO_STEPS = 400


def _positive_int(text: str) -> int:
    """A positive number of steps: one the int64 global step can reach.

    The bound is `compat_mts.core.validation.INT64_MAX`, written out: importing that module imports TensorFlow, whose
    start-up lines the demo keeps quiet only once it runs.
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 2**63:
        raise argparse.ArgumentTypeError(
            f'must be a positive integer of at most 2**63 - 1 (the global step is an int64), got {text!r}'
        )
    return value


def _run_demo(args: argparse.Namespace) -> int:
    with _quiet_start.quiet_tensorflow_import(args.verbose):
        import tensorflow as tf

        from compat_mts.checkpoint_dir import checkpoints  # Import TensorFlow, which only this subcommand needs.
        from compat_mts.cli import demo

    try:
        demo.ensure_demo_directory(args.dir, '--dir')
    except (PermissionError, ValueError) as error:
        print(f'{args.usage()}compat-mts demo: error: {error}', file=sys.stderr, end='\n')
        return 2
    if args.verbose:
        tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    try:
        # On a terminal one progress line is redrawn in place; in a log, one line per quarter of the run. With
        # --verbose the hooks' lines interleave on stderr, so the progress stays in whole lines then too.
        live = sys.stdout if sys.stdout.isatty() and not args.verbose else None
        demo.run_demo(args.dir, args.steps, live=live)
    except (
        checkpoints.CheckpointMismatchError,
        checkpoints.DamagedCheckpointsError,
        checkpoints.CheckpointDirectoryInUseError,
    ) as error:  # --dir holds what the demo must not train over.
        print(f'compat-mts demo: --dir {args.dir}: {error}', file=sys.stderr)
        return 2
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    with _quiet_start.quiet_tensorflow_import(args.verbose):
        from compat_mts.checkpoint_dir import checkpoints  # Import TensorFlow, which only this subcommand needs.
        from compat_mts.legacy.convert import convert_checkpoint
    from compat_mts.core import progress

    # stdout lists the prefixes written, for scripts; the progress goes to stderr, as pip's and curl's does.
    report = None

    def on_progress(done: int, total: int, detail: str) -> None:
        nonlocal report
        if report is None:
            report = progress.Progress(
                total,
                unit='bytes',
                out=lambda line: print(line, file=sys.stderr),
                live=sys.stderr if sys.stderr.isatty() else None,
            )
        report.update(done, detail)

    try:
        written = convert_checkpoint(args.src_dir, args.dst_dir, to=args.to, on_progress=on_progress)
    except (ValueError, PermissionError, checkpoints.DamagedCheckpointsError) as error:
        if report is not None:
            report.finish()
        print(f'compat-mts convert: {error}', file=sys.stderr)
        return 2
    print('\n'.join(written))
    return 0


def _version() -> str:
    """`compat-mts 0.1.0 (TensorFlow 2.21.0, Python 3.11.7)`, read from the installed metadata: no import."""
    import platform
    from importlib import metadata

    import compat_mts

    try:
        tensorflow = f'TensorFlow {metadata.version("tensorflow")}'
    except metadata.PackageNotFoundError:
        tensorflow = 'TensorFlow not installed'
    return f'compat-mts {compat_mts.__version__} ({tensorflow}, Python {platform.python_version()})'


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='compat-mts',
        description='Run tf.compat.v1.train.MonitoredTrainingSession programs eagerly on TensorFlow 2.',
    )
    parser.add_argument('--version', action='version', version=_version())
    subcommands = parser.add_subparsers(dest='command', metavar='COMMAND')
    subcommands.required = True

    demo_parser = subcommands.add_parser(
        'demo',
        help='train a small model with a v1-style session loop, eagerly; run again to resume',
        description=(
            'Train a small Keras regression model on synthetic data with a v1-style '
            'MonitoredTrainingSession loop, run eagerly. Checkpoints (model.ckpt-<step>) and '
            'TensorBoard events go to DIR/train, the run TensorBoard shows for --logdir DIR. Each run trains '
            'STEPS more steps: a second run restores the latest checkpoint there and continues from its global step.'
        ),
    )
    demo_parser.add_argument(
        '--dir',
        default=DEFAULT_DEMO_DIRECTORY,
        help='TensorBoard log directory; the run is DIR/train (default: ./%(default)s)',
    )
    demo_parser.add_argument(
        '--steps',
        type=_positive_int,
        default=DEFAULT_DEMO_STEPS,
        help='steps to train in this run (default: %(default)s)',
    )
    demo_parser.add_argument(
        '--verbose',
        action='store_true',
        help="also show the hooks' v1-style log lines (loss = ..., global_step/sec: ...) and "
        "TensorFlow's start-up lines",
    )
    demo_parser.set_defaults(run=_run_demo, usage=demo_parser.format_usage)

    convert_parser = subcommands.add_parser(
        'convert',
        help='convert a checkpoint directory between v1 name-based and TF2 object-based files',
        description=(
            'Rewrite every checkpoint listed in SRC_DIR into DST_DIR (new or empty), keeping steps, '
            'names and values: --to object for tf.train.Checkpoint, --to name for '
            'tf.compat.v1.train.Saver and compat_mts.wrap_graph programs.'
        ),
    )
    convert_parser.add_argument('src_dir', help='directory with a `checkpoint` state file')
    convert_parser.add_argument('dst_dir', help='directory to write the converted checkpoints to')
    convert_parser.add_argument('--to', choices=('object', 'name'), required=True, help='the format to write')
    convert_parser.add_argument('--verbose', action='store_true', help="also show TensorFlow's start-up lines")
    convert_parser.set_defaults(run=_run_convert)
    check.add_check_command(subcommands)
    upgrade.add_upgrade_command(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `compat-mts` command with `argv` (default: `sys.argv[1:]`) and returns its exit status."""
    parser = _build_parser()
    args, unrecognized = parser.parse_known_args(argv)
    if unrecognized:  # Said with the subcommand's usage, not the top level's.
        subcommands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
        subcommands.choices[args.command].error(f'unrecognized arguments: {" ".join(unrecognized)}')
    return args.run(args)
