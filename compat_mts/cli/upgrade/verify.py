"""`compat-mts upgrade --verify N`: the original in v1 graph mode beside the upgraded script, N steps each.

Each side runs in a fresh process through `probe.py` (which records the loss of every training step), in
a fresh directory of its own: `{dir}` in the script's arguments stands for it, and it is the working directory,
so relative paths land there too. Compared: the loss of every step, the variables of the last checkpoint
(names, shapes, values) and the summary tags, of every checkpoint and events directory under the run's
directory. When a side failed or recorded no loss there is nothing to compare, and the report says so first
(`verdict: not compared`, why, and what to pass) instead of a verdict. A program of several files (a directory
or a package given to `upgrade`) is verified as a whole: its upgraded side runs in a copy of its tree with every
file upgraded (`Tree`). The report leads with the verdict and the first differing step; the loss of every step
goes to `losses.txt` in the report directory, and both loss curves to `loss.png` when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Sequence

import numpy as np

from compat_mts import _quiet_start
from compat_mts.cli.upgrade import edits as upgrade_edits

RTOL, ATOL = 1e-5, 1e-6
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'probe.py')


@dataclasses.dataclass
class Side:
    """What one run left: its losses per step (and the calls they were recorded from), last checkpoints'
    variables, summary tags, and how it ended."""

    name: str
    losses: list[float]
    variables: dict[str, np.ndarray]
    tags: set[str]
    returncode: int
    error: str | None
    log: str
    paths: list[str] = dataclasses.field(default_factory=list)
    log_path: str | None = None
    unupgraded_modules: list[str] = dataclasses.field(default_factory=list)

    @property
    def title(self) -> str:
        return 'v1 graph mode' if self.name == 'v1' else self.name


@dataclasses.dataclass
class Tree:
    """A program of several files, upgraded as a whole: the directory given to the upgrade (`root`) and the
    upgraded text of each of its Python files, by path relative to it. Its upgraded side runs in a copy of
    `root` (data files included) with those texts written in."""

    root: str
    texts: dict[str, str]


_RECORDED_PATHS = 'Optimizer.compute_gradients, tf.gradients or tf.GradientTape'


@dataclasses.dataclass
class Comparison:
    """The two sides of a `--verify` run, whether they could be compared, and whether they agree."""

    v1: Side
    upgraded: Side

    @property
    def compared(self) -> bool:
        """Whether both sides ran to their end and recorded losses: else there is nothing to compare."""
        return all(side.returncode == 0 and side.losses for side in (self.v1, self.upgraded))

    @property
    def losses_equal(self) -> bool:
        a, b = self.v1.losses, self.upgraded.losses
        return bool(a) and len(a) == len(b) and np.allclose(a, b, rtol=RTOL, atol=ATOL)

    @property
    def first_difference(self) -> int | None:
        """The index of the first step whose losses differ (or that one side lacks), None when none does."""
        a, b = self.v1.losses, self.upgraded.losses
        for index in range(max(len(a), len(b))):
            if index >= len(a) or index >= len(b) or not np.isclose(a[index], b[index], rtol=RTOL, atol=ATOL):
                return index
        return None

    @property
    def variables_equal(self) -> bool:
        a, b = self.v1.variables, self.upgraded.variables
        return sorted(a) == sorted(b) and all(
            np.shape(a[name]) == np.shape(b[name]) and np.allclose(a[name], b[name], rtol=RTOL, atol=ATOL) for name in a
        )

    @property
    def trained(self) -> bool:
        """Whether the loss changed on either side: losses that stay at one value on both show no training (an
        optimizer that updates nothing in v1 graph mode, such as tf-keras' non-legacy ones), only that neither
        side trained."""
        return any(len(set(side.losses)) > 1 for side in (self.v1, self.upgraded)) or all(
            len(side.losses) < 2 for side in (self.v1, self.upgraded)
        )

    @property
    def equal(self) -> bool:
        return (
            self.compared
            and self.trained
            and self.losses_equal
            and self.variables_equal
            and self.v1.tags == self.upgraded.tags
        )

    @property
    def verdict(self) -> str:
        if not self.compared:
            return 'not compared'
        if self.equal:
            return 'the same training'
        if not self.trained and self.losses_equal:
            return 'NOT shown: nothing trained on either side'
        return 'NOT the same training'

    def format(self, table: str | None = None) -> str:
        """The report: the verdict first, then why not compared (and what to pass), or the first differing
        step and the checkpoints and summaries compared; `table` is where the step-by-step table was written."""
        lines = ['verdict: ' + self.verdict]
        if not self.compared:
            lines.extend(self._not_compared())
            return '\n'.join(lines) + '\n'
        first = self.first_difference
        if first is not None:
            values = [side.losses[first] if first < len(side.losses) else None for side in (self.v1, self.upgraded)]
            cells = ['no step' if value is None else f'{value:.8g}' for value in values]
            lines.append(f'first differing step: {first + 1} (v1 graph mode {cells[0]}, upgraded {cells[1]})')
        lines.append(
            'losses: '
            + ('equal at every step' if self.losses_equal else 'DIFFER')
            + f' (rtol {RTOL}; {len(self.v1.losses)} steps in v1 graph mode, {len(self.upgraded.losses)} upgraded;'
            + f' recorded from {", ".join(self.v1.paths)} and {", ".join(self.upgraded.paths)})'
        )
        if not self.trained:
            lines.append(
                'losses: one value at every step on both sides: nothing trained, so equal losses show nothing '
                "(does the optimizer update the variables in v1 graph mode? tf-keras' optimizers need "
                'tf.keras.optimizers.legacy there)'
            )
        lines.extend(self._variables_lines())
        only_v1, only_upgraded = self.v1.tags - self.upgraded.tags, self.upgraded.tags - self.v1.tags
        lines.append(
            f'summary tags: {len(self.v1.tags & self.upgraded.tags)} in both'
            + (f'; only in v1: {sorted(only_v1)}' if only_v1 else '')
            + (f'; only upgraded: {sorted(only_upgraded)}' if only_upgraded else '')
        )
        if table:
            lines.append(f'the loss of every step: {table}')
        return '\n'.join(lines) + '\n'

    def _not_compared(self) -> list[str]:
        """Why the sides cannot be compared, side by side, each with what to pass."""
        lines = []
        for side in (self.v1, self.upgraded):
            log = f' (its log: {side.log_path})' if side.log_path else ''
            if side.returncode != 0:
                lines.append(f'why: the {side.title} run failed (exit status {side.returncode}): {side.error or ""}')
                lines.append('pass: ' + self._fix(side) + log)
                lines.extend('    ' + line for line in side.log.strip().splitlines()[-15:])
            elif not side.losses:
                lines.append(
                    f'why: the {side.title} run ended but recorded no loss: no session of it ran a loss '
                    f'differentiated by {_RECORDED_PATHS} (a bare tf.Session, or a loss differentiated inside a '
                    'tf.function, is not recorded)'
                )
                lines.append(
                    'pass: --args with what makes the script train at least one step (its steps, its data), or run '
                    'its training through MonitoredTrainingSession or an Estimator' + log
                )
        return lines

    def _fix(self, side: Side) -> str:
        error = side.error or ''
        if side.name == 'v1' and "has no attribute 'estimator'" in error:
            return (
                '--v1-python PYTHON of an environment with tf.estimator, which left TensorFlow in 2.16: '
                "'tensorflow==2.15.*' and 'tensorflow-estimator==2.15.*' (migration_guide/upgrade.md)"
            )
        if side.name == 'upgraded' and side.unupgraded_modules:
            return (
                'the directory of the program (upgrade DIR --verify N --main FILE), so its modules are upgraded too: '
                f'the error is in {", ".join(side.unupgraded_modules)}, which ran as it was'
            )
        if error.startswith(('IndexError', 'SystemExit')):
            return '--args with the arguments the script needs ("{dir}" stands for a fresh directory per run)'
        return 'what the error above asks for; the run is the script as given, with --args'

    def table(self) -> str:
        """The loss of every step on both sides, and their difference, one step a line."""
        lines = [f'{"step":>6}  {"v1 graph mode":>16}  {"upgraded":>16}  {"difference":>12}']
        for index in range(max(len(self.v1.losses), len(self.upgraded.losses))):
            values = [side.losses[index] if index < len(side.losses) else None for side in (self.v1, self.upgraded)]
            cells = [f'{value:>16.8g}' if value is not None else f'{"-":>16}' for value in values]
            difference = f'{abs(values[0] - values[1]):>12.3g}' if None not in values else f'{"-":>12}'
            lines.append(f'{index + 1:>6}  {cells[0]}  {cells[1]}  {difference}')
        return '\n'.join(lines) + '\n'

    def _variables_lines(self) -> list[str]:
        a, b = self.v1.variables, self.upgraded.variables
        common = sorted(set(a) & set(b))
        lines = [f'checkpoint variables: {len(common)} in both']
        differing = [
            name
            for name in common
            if np.shape(a[name]) != np.shape(b[name]) or not np.allclose(a[name], b[name], rtol=RTOL, atol=ATOL)
        ]
        if differing:
            lines.append(f'    values differ: {differing}')
        elif common:
            lines[0] += ', same shapes and values'
        if set(a) - set(b):
            lines.append(f'    only in v1: {sorted(set(a) - set(b))}')
        if set(b) - set(a):
            lines.append(f'    only upgraded: {sorted(set(b) - set(a))}')
        return lines

    def plot(self, path: str) -> str | None:
        """Writes both loss curves to `path` (PNG); the reason when it cannot (matplotlib missing)."""
        try:
            import matplotlib

            matplotlib.use('Agg')
            from matplotlib import pyplot
        except ImportError:
            return 'no plot: matplotlib is not installed (pip install matplotlib)'
        figure, axes = pyplot.subplots(figsize=(7, 4))
        axes.plot(range(1, len(self.v1.losses) + 1), self.v1.losses, label='v1 graph mode', linewidth=3, alpha=0.5)
        axes.plot(range(1, len(self.upgraded.losses) + 1), self.upgraded.losses, label='upgraded', linestyle='--')
        axes.set_xlabel('step')
        axes.set_ylabel('loss')
        axes.legend()
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
        return None


def _checkpoint_variables(run_dir: str) -> dict[str, np.ndarray]:
    import tensorflow as tf

    variables = {}
    for directory, _, files in sorted(os.walk(run_dir)):
        if 'checkpoint' not in files:
            continue
        latest = tf.train.latest_checkpoint(directory)
        if latest is None:
            continue
        prefix = os.path.relpath(directory, run_dir)
        for name, _ in tf.train.list_variables(latest):
            key = name if prefix == '.' else f'{prefix}/{name}'
            variables[key] = np.asarray(tf.train.load_variable(latest, name))
    return variables


def _summary_tags(run_dir: str) -> set[str]:
    import tensorflow as tf

    tags = set()
    for directory, _, files in os.walk(run_dir):
        prefix = os.path.relpath(directory, run_dir)
        for file in files:
            if 'tfevents' not in file:
                continue
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, file)):
                for value in event.summary.value:
                    tags.add(value.tag if prefix == '.' else f'{prefix}: {value.tag}')
    return tags


def _env(python: str, tf1: bool, legacy_keras: bool) -> dict:
    # The v1 side imports the program's own modules from the user's tree: it writes no __pycache__ there.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONDONTWRITEBYTECODE='1')
    # oneDNN's kernels round differently from one TensorFlow release to the next (TF 2.15's v1 side against TF
    # 2.21's): without them both sides run the same arithmetic, and what is compared is the program.
    env.setdefault('TF_ENABLE_ONEDNN_OPTS', '0')
    if os.path.abspath(python) != os.path.abspath(sys.executable):
        for name in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV'):
            env.pop(name, None)  # Another installation's interpreter: its own packages only.
    elif legacy_keras:
        env['TF_USE_LEGACY_KERAS'] = '1'  # As the upgraded script sets it, before TensorFlow is imported.
    if tf1:
        env['COMPAT_MTS_PROBE_TF1'] = '1'
    return env


def _upgraded_script(original: str, upgraded_text: str, report_dir: str, tree: Tree | None) -> tuple[str, str]:
    """Writes the upgraded side's program into `report_dir`; returns its script and the directory first on its
    `sys.path`. One file: `upgraded_FILE`, beside the original's modules; a `Tree`: a copy of the tree (less its
    caches and the report directory) with every upgraded file written in, the script at its own place in it."""
    if tree is None:
        path = os.path.join(report_dir, 'upgraded_' + os.path.basename(original))
        with open(path, 'w', encoding='utf-8') as file:
            file.write(upgraded_text)
        return path, os.path.dirname(os.path.abspath(original))
    copy = os.path.join(report_dir, 'upgraded_tree')
    shutil.rmtree(copy, ignore_errors=True)
    report = os.path.realpath(report_dir)

    def ignored(directory: str, names: list[str]) -> set[str]:
        return {
            name for name in names if name == '__pycache__' or os.path.realpath(os.path.join(directory, name)) == report
        }

    shutil.copytree(tree.root, copy, symlinks=True, ignore=ignored)
    for relative, text in tree.texts.items():
        target = os.path.join(copy, relative)
        if os.path.islink(target):
            os.remove(target)  # The copy's own file, not the one the link points at.
        with open(target, 'w', encoding='utf-8') as file:
            file.write(text)
    path = os.path.join(copy, os.path.relpath(os.path.abspath(original), os.path.abspath(tree.root)))
    return path, os.path.dirname(path)


def verify(
    original: str,
    upgraded_text: str,
    steps: int,
    script_args: Sequence[str] = (),
    *,
    v1_python: str = sys.executable,
    report_dir: str | None = None,
    tf1: bool = False,
    tree: Tree | None = None,
    timeout: float = 3600,
) -> Comparison:
    """Runs `original` in v1 graph mode and `upgraded_text` eagerly, `steps` steps each, and compares them.

    Args:
      original: the path of the v1 script.
      upgraded_text: the upgraded script.
      steps: training steps per side (each side also stops where the script itself stops).
      script_args: the script's arguments; `{dir}` in one stands for the side's own fresh directory.
      v1_python: the interpreter of the v1 side (one with `tf.estimator` for an Estimator script).
      report_dir: where each side's directory (`v1/`, `upgraded/`, emptied first), the upgraded script and the
        logs go (default: a new temporary directory, kept).
      tf1: the original is written for TensorFlow 1.x (`import tensorflow` means `tf.compat.v1` there).
      tree: the program's other files, upgraded, when `original` is one file of a program of several: the
        upgraded side runs in a copy of the tree with all of them (else beside the original's own modules).
      timeout: seconds each side may take.

    Returns:
      The `Comparison`.
    """
    report_dir = os.path.abspath(report_dir or tempfile.mkdtemp(prefix='compat-mts-verify-'))
    os.makedirs(report_dir, exist_ok=True)
    upgraded_path, upgraded_dir = _upgraded_script(original, upgraded_text, report_dir, tree)
    legacy_keras = upgrade_edits.sets_legacy_keras(upgraded_text)
    runs = {}
    for name, python, script, script_dir in (
        ('v1', v1_python, os.path.abspath(original), os.path.dirname(os.path.abspath(original))),
        ('upgraded', sys.executable, upgraded_path, upgraded_dir),
    ):
        run_dir = os.path.join(report_dir, name)
        shutil.rmtree(run_dir, ignore_errors=True)  # A fresh directory per run: nothing to resume from.
        os.makedirs(run_dir)
        out = os.path.join(report_dir, f'{name}.json')
        if os.path.exists(out):
            os.remove(out)
        args = [arg.replace('{dir}', run_dir) for arg in script_args]
        log = open(os.path.join(report_dir, f'{name}.log'), 'w', encoding='utf-8')  # noqa: SIM115
        process = subprocess.Popen(
            [python, PROBE, name, out, str(steps), script_dir, script, *args],
            cwd=run_dir,
            env=_env(python, tf1 and name == 'v1', legacy_keras),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        runs[name] = (process, log, out, run_dir)
    sides = {}
    for name, (process, log, out, run_dir) in runs.items():
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        log.close()
        record = {'losses': [], 'error': f'no record (exit status {returncode})'}
        if os.path.exists(out):
            with open(out, encoding='utf-8') as file:
                record = json.load(file)
        with open(log.name, encoding='utf-8', errors='replace') as file:
            text = file.read()
        sides[name] = Side(
            name,
            record['losses'],
            _checkpoint_variables(run_dir),
            _summary_tags(run_dir),
            returncode,
            record.get('error'),
            text,
            record.get('paths', []),
            log.name,
        )
    if tree is None and sides['upgraded'].returncode != 0:
        sides['upgraded'].unupgraded_modules = _modules_in_traceback(sides['upgraded'].log, original)
    return Comparison(sides['v1'], sides['upgraded'])


def _modules_in_traceback(log: str, original: str) -> list[str]:
    """The modules beside `original` (not upgraded: only the script was) that the traceback in `log` passes
    through."""
    directory = os.path.dirname(os.path.abspath(original))
    files = re.findall(r'^\s*File "([^"]+)", line \d+', log, flags=re.MULTILINE)
    beside = [path for path in files if os.path.dirname(path) == directory and path != os.path.abspath(original)]
    return sorted(set(beside))


def verify_command(upgrade, args: argparse.Namespace, *, tf1: bool, tree: Tree | None = None) -> int:
    """`--verify N` of `compat-mts upgrade` for the `Upgrade` of the script to run: prints the comparison, and
    writes its step table; 0 when both sides agree, 1 when not (or when they could not be compared).

    Args:
      upgrade: the script's `Upgrade`.
      args: the command's arguments (`verify`, `args`, `v1_python`, `report_dir`).
      tf1: the script is written for TensorFlow 1.x.
      tree: the program's files, when it has several (see `verify`).
    """
    with _quiet_start.quiet_tensorflow_import():
        import tensorflow as tf  # Read the checkpoints and events here, without TensorFlow's start-up lines.
    tf.get_logger().setLevel('ERROR')
    report_dir = os.path.abspath(args.report_dir or tempfile.mkdtemp(prefix='compat-mts-verify-'))
    print(f'\nverifying {args.verify} steps: v1 graph mode ({args.v1_python}) beside the upgraded script')
    comparison = verify(
        upgrade.path,
        upgrade.upgraded,
        args.verify,
        shlex.split(args.args),
        v1_python=args.v1_python,
        report_dir=report_dir,
        tf1=tf1,
        tree=tree,
    )
    table = os.path.join(report_dir, 'losses.txt')
    with open(table, 'w', encoding='utf-8') as file:
        file.write(comparison.table())
    sys.stdout.write(comparison.format(table))
    if comparison.compared:
        plot = os.path.join(report_dir, 'loss.png')
        problem = comparison.plot(plot)
        print(problem or f'plot: {plot}')
    print(f'runs, logs and checkpoints: {report_dir}')
    return 0 if comparison.equal else 1
