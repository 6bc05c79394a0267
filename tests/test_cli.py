"""`compat-mts demo`, run as a user runs it: a real process, twice on the same directory."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from compat_mts import cli
from compat_mts.checkpoint_dir.directory import EVENTS_NAME_BYTES
from tests import support

REPO = pathlib.Path(__file__).resolve().parent.parent


def checkout_env() -> dict[str, str]:
    """This process's environment with this checkout first on the path and TensorFlow's C++ logs off."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    return env


def run_command(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    """`python -m compat_mts ARGS`, forked from a server that imported TensorFlow (`tests/support.py`)."""
    return support.run(
        [sys.executable, '-m', 'compat_mts', *args],
        cwd=cwd,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _checked(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f'exit status {result.returncode}\n{result.stdout}\n{result.stderr[-6000:]}'
    return result.stdout


@pytest.mark.slow
def test_demo_resumes_from_the_step_the_previous_run_finished_at(tmp_path):
    demo_dir = tmp_path / 'compat-mts-demo'  # the default, relative to the working directory
    run_dir = demo_dir / 'train'  # TensorBoard's run for --logdir demo_dir, named (not `.`)

    first = _checked(run_command('demo', '--steps', '30', cwd=tmp_path))
    assert f'Writing checkpoints and TensorBoard events to {run_dir}' in first
    assert 'Started fresh at step 0' in first
    assert 'Finished at step 30,' in first
    # Not a terminal: one progress line at each quarter of the run, with the rate and what is left.
    progress_lines = [line for line in first.splitlines() if re.match(r'\d+/30 steps', line)]
    assert [line.split(' ')[0] for line in progress_lines] == ['8/30', '15/30', '23/30', '30/30'], first
    assert all(
        re.search(r' \(\d+%\), [\d.]+ steps/s, (ETA|took) [\dhms.]+, global step \d+, loss \d', line)
        for line in progress_lines
    ), progress_lines
    assert f"See the loss curve (the run 'train'): tensorboard --logdir {demo_dir}" in first

    second = _checked(run_command('demo', '--dir', str(demo_dir), '--steps', '20', cwd=tmp_path))
    assert re.search(r'^Resumed from step 30 \(.*model\.ckpt-30\)$', second, re.MULTILINE), second
    assert 'Finished at step 50,' in second

    assert sorted(path.name for path in demo_dir.iterdir()) == ['train']
    files = sorted(path.name for path in run_dir.iterdir())
    assert {'model.ckpt-0.index', 'model.ckpt-30.index', 'model.ckpt-50.index', 'checkpoint'} <= set(files), files
    events = [name for name in files if name.startswith('events.out.tfevents.')]
    assert events, files
    assert any(f'Event file: {run_dir / name}' in second for name in events), second


_DEMO_USAGE = 'usage: compat-mts demo [-h] [--dir DIR] [--steps STEPS] [--verbose]'


@pytest.mark.slow
def test_an_unrecognized_demo_argument_prints_demos_usage(tmp_path):
    result = run_command('demo', '--bogus', '5', cwd=tmp_path)
    assert result.returncode == 2
    assert command_errors(result) == [_DEMO_USAGE, 'compat-mts demo: error: unrecognized arguments: --bogus 5']
    assert list(tmp_path.iterdir()) == []


# TensorFlow's own C++ start-up lines on stderr, which the command does not control.
_TENSORFLOW_LOG_LINE = re.compile(r'^(WARNING: All log messages before absl::InitializeLog\(\)|[IWEF]\d{4} )')


def command_errors(result: subprocess.CompletedProcess) -> list[str]:
    """The lines the command itself wrote to stderr."""
    return [line for line in result.stderr.splitlines() if not _TENSORFLOW_LOG_LINE.match(line)]


_UNUSABLE_DEMO_DIRECTORY = {
    'a regular file': 'is a file, not a directory',
    'a path below a regular file': 'has a file where a parent directory should be',
}


@pytest.mark.slow
@pytest.mark.parametrize('where', [*_UNUSABLE_DEMO_DIRECTORY, 'too deep for its run'])
def test_demo_on_an_unusable_directory_is_an_error_naming_dir_after_demos_usage(where, tmp_path):
    regular_file = tmp_path / 'notes.txt'
    regular_file.write_text('not a directory\n')
    if where == 'too deep for its run':
        # Room for an events file in --dir itself, not in its run one level down (`train/`).
        length = os.pathconf(tmp_path, 'PC_PATH_MAX') - 2 - EVENTS_NAME_BYTES
        demo_dir = str(tmp_path / 'deep')
        while len(os.fsencode(demo_dir)) < length:
            demo_dir = os.path.join(demo_dir, 'd' * min(200, length - len(os.fsencode(demo_dir)) - 1))
        shown, problem = f'{demo_dir[:40]!r}...', f'is {length} bytes long: the files written in it would have paths'
    else:
        demo_dir = str(regular_file if where == 'a regular file' else regular_file / 'demo')
        shown, problem = repr(demo_dir), _UNUSABLE_DEMO_DIRECTORY[where]
    result = run_command('demo', '--dir', demo_dir, '--steps', '5', cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = command_errors(result)
    assert errors[0] == _DEMO_USAGE, errors
    assert errors[1].startswith(f'compat-mts demo: error: `--dir` {shown} {problem}'), errors
    assert len(errors) == 2, errors
    assert result.stdout == ''
    assert regular_file.read_text() == 'not a directory\n'
    assert sorted(path.name for path in tmp_path.iterdir()) == ['notes.txt']


def test_run_demo_refuses_an_unusable_directory_before_it_reports_or_builds_anything(tmp_path):
    from compat_mts.cli import demo

    regular_file = tmp_path / 'notes.txt'
    regular_file.write_text('')
    lines = []
    with pytest.raises(ValueError, match=rf"`directory` '{re.escape(str(regular_file))}' is a file, not a directory"):
        demo.run_demo(str(regular_file), 5, out=lines.append)
    assert lines == []


@pytest.mark.slow
def test_help_answers_without_importing_tensorflow(tmp_path):
    probe = (
        'import sys; from compat_mts import cli\n'
        'try:\n    cli.main(["demo", "--help"])\nexcept SystemExit:\n    pass\n'
        'assert "tensorflow" not in sys.modules, "compat-mts demo --help imported TensorFlow"'
    )
    result = subprocess.run(
        [sys.executable, '-c', probe], cwd=tmp_path, env=checkout_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert '--steps STEPS' in result.stdout


@pytest.mark.slow
def test_check_runs_without_importing_tensorflow(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text('import tensorflow.compat.v1 as tf\nsaver = tf.train.Saver()\n')
    probe = (
        'import sys; from compat_mts import cli\n'
        f'code = cli.main(["check", {str(script)!r}])\n'
        'assert "tensorflow" not in sys.modules, "compat-mts check imported TensorFlow"\n'
        'sys.exit(code)'
    )
    result = subprocess.run(
        [sys.executable, '-c', probe], cwd=tmp_path, env=checkout_env(), capture_output=True, text=True, timeout=60
    )
    assert 'imported TensorFlow' not in result.stderr, result.stderr
    assert 'train.py:2:9: stage 2: tf.compat.v1.train.Saver' in result.stdout, result.stdout


@pytest.mark.slow
def test_version_prints_the_versions_without_importing_tensorflow(tmp_path):
    from importlib import metadata

    import compat_mts

    probe = (
        'import sys; from compat_mts import cli\n'
        'try:\n    cli.main(["--version"])\nexcept SystemExit as exit:\n    assert exit.code == 0, exit.code\n'
        'assert "tensorflow" not in sys.modules, "compat-mts --version imported TensorFlow"'
    )
    result = subprocess.run(
        [sys.executable, '-c', probe], cwd=tmp_path, env=checkout_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    python = '.'.join(map(str, sys.version_info[:3]))
    assert result.stdout == (
        f'compat-mts {compat_mts.__version__} (TensorFlow {metadata.version("tensorflow")}, Python {python})\n'
    )
    console = run_command('--version', cwd=tmp_path)
    assert (console.returncode, console.stdout) == (0, result.stdout)


@pytest.mark.parametrize(
    'argv', [[], ['demo', '--steps', '0'], ['demo', '--steps', 'many'], ['demo', '--steps', str(10**30)], ['train']]
)
def test_bad_command_lines_exit_with_usage_status(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert 'usage: compat-mts' in error
    if '--steps' in argv:
        assert (
            f"--steps: must be a positive integer of at most 2**63 - 1 (the global step is an int64), got '{argv[-1]}'"
            in error
        )


@pytest.mark.slow
def test_demo_on_a_directory_of_another_program_is_a_one_line_error_and_writes_nothing_there(tmp_path):
    import tensorflow as tf

    other = tf.Variable(tf.zeros([2, 2]), name='other')
    run_dir = tmp_path / 'train'  # The demo's run in its --dir.
    tf.train.CheckpointManager(
        tf.train.Checkpoint(other=other), str(run_dir), max_to_keep=1, checkpoint_name='model.ckpt'
    ).save(checkpoint_number=7)
    before = sorted(path.name for path in run_dir.iterdir())
    result = run_command('demo', '--dir', str(tmp_path), '--steps', '5', cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [line for line in command_errors(result) if line.startswith('compat-mts demo:')]
    assert len(errors) == 1 and 'does not hold these variables of the program' in errors[0], result.stderr[-3000:]
    assert 'Traceback' not in result.stderr
    assert sorted(path.name for path in run_dir.iterdir() if path.name.startswith(('model.ckpt', 'checkpoint'))) == [
        name for name in before if name.startswith(('model.ckpt', 'checkpoint'))
    ]


@pytest.mark.slow
def test_demo_starts_quietly_and_verbose_shows_tensorflows_and_the_hooks_lines(tmp_path):
    env = {key: value for key, value in checkout_env().items() if key != 'TF_CPP_MIN_LOG_LEVEL'}  # A user's shell.
    command = [sys.executable, '-m', 'compat_mts', 'demo', '--dir', str(tmp_path / 'demo'), '--steps', '5']
    quiet = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert quiet.returncode == 0 and quiet.stderr == '', quiet.stderr[-3000:]
    assert 'Finished at step 5' in quiet.stdout
    verbose = subprocess.run(
        command + ['--verbose'], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    assert 'INFO:tensorflow:Saving checkpoints for 10 into' in verbose.stderr
