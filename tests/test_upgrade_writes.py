"""`compat-mts upgrade` never loses a source file: what it writes, and what it refuses to write.

Each test runs the real command in a child process over real files: a full file system is a small tmpfs mounted
for the test (`tests/mounts.py`, skipped where the machine cannot mount) or a file-size limit
(`RLIMIT_FSIZE`) on the child; a read-only file is an immutable one (`chattr +i`, which refuses root too) or a
read-only bind mount; a signal is a real SIGKILL, SIGINT or SIGTERM sent to the command while it writes a tree of
200 files, after which every file is compared with its original and with its whole upgraded text.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from compat_mts.cli import upgrade
from tests import mounts, support

pytestmark = pytest.mark.slow

TEMPORARY = '.compat-mts-tmp'


def _script(index: int, padding: int = 0) -> str:
    """A small v1 script the upgrade changes (its session and hook names); `padding` comment lines make it
    bigger."""
    comments = ''.join(f'# padding line {line} of script {index}\n' for line in range(padding))
    return (
        f'"""Script {index}."""\n{comments}import tensorflow as tf\n\n\ndef main():\n'
        f'    hooks = [tf.compat.v1.train.StopAtStepHook(last_step={index + 1})]\n'
        '    with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks) as sess:\n'
        '        sess.run(tf.constant(1.0))\n'
    )


def _tree(root, count: int, padding: int = 0) -> dict[str, bytes]:
    """`count` scripts under `root` (in two subdirectories); their bytes by path."""
    files = {}
    for index in range(count):
        path = os.path.join(str(root), f'part{index % 2}', f'script_{index:03d}.py')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as file:
            file.write(_script(index, padding))
        files[path] = _script(index, padding).encode('utf-8')
    return files


def _upgraded(files: dict[str, bytes]) -> dict[str, bytes]:
    """Each file's whole upgraded text, made in this process."""
    return {result.path: result.upgraded.encode('utf-8') for result in upgrade.upgrade_files(list(files))}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=support.REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')


def _command(*args: str) -> list[str]:
    return [sys.executable, '-m', 'compat_mts', 'upgrade', *map(str, args)]


def _cli(*args, cwd, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(*args), cwd=str(cwd), env=_env(), capture_output=True, text=True, timeout=300, preexec_fn=preexec_fn
    )


def _read(path) -> bytes:
    with open(path, 'rb') as file:
        return file.read()


def _leftovers(root) -> list[str]:
    return [name for _, _, names in os.walk(str(root)) for name in names if name.endswith(TEMPORARY)]


def test_a_directory_is_upgraded_with_its_layout_and_a_package_of_several_init_files_works(tmp_path):
    package = tmp_path / 'trainer'
    for relative in ('__init__.py', 'model/__init__.py', 'data/__init__.py', 'model/train.py'):
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(_script(len(relative)))
    (package / 'README.txt').write_text('not Python')
    result = _cli('trainer', '-o', 'out', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = sorted(
        str(path.relative_to(tmp_path / 'out')) for path in (tmp_path / 'out').rglob('*') if path.is_file()
    )
    assert written == ['__init__.py', 'data/__init__.py', 'model/__init__.py', 'model/train.py']
    expected = _upgraded({str(package / name): b'' for name in written})
    for name in written:
        assert _read(tmp_path / 'out' / name) == expected[str(package / name)]
        assert f'written to out/{name}\n' in result.stdout
    # A second run into the same directory finds its own output there: nothing to refuse, nothing changes.
    again = _cli('trainer', '-o', 'out', cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    in_place = _cli('trainer', '--in-place', cwd=tmp_path)
    assert in_place.returncode == 0, in_place.stderr
    for name in written:
        assert _read(package / name) == expected[str(package / name)]


def test_in_place_keeps_each_original_and_its_mode_and_never_overwrites_a_backup(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(_script(1))
    os.chmod(script, 0o750)
    result = _cli('train.py', '--in-place', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert 'written to train.py (original kept as train.py.orig)' in result.stdout
    assert _read(tmp_path / 'train.py.orig') == _script(1).encode()
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750
    assert stat.S_IMODE(os.stat(tmp_path / 'train.py.orig').st_mode) == 0o750
    upgraded = _read(script)
    assert upgraded != _script(1).encode() and b'mts.MonitoredTrainingSession' in upgraded
    # Another v1 script under the same name: the first backup stays, the second goes beside it.
    script.write_text(_script(2))
    second = _cli('train.py', '--in-place', cwd=tmp_path)
    assert second.returncode == 0 and 'original kept as train.py.orig.1' in second.stdout
    assert _read(tmp_path / 'train.py.orig') == _script(1).encode()
    assert _read(tmp_path / 'train.py.orig.1') == _script(2).encode()
    script.write_text(_script(3))
    assert _cli('train.py', '--in-place', '--no-backup', cwd=tmp_path).returncode == 0
    assert not (tmp_path / 'train.py.orig.2').exists() and b'mts.' in _read(script)
    assert _leftovers(tmp_path) == []


def test_two_files_for_one_output_and_an_unrelated_existing_file_are_refused_before_anything_is_written(tmp_path):
    for directory in ('a', 'b'):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / 'train.py').write_text(_script(ord(directory)))
    both = _cli('-o', 'out', 'a/train.py', 'b/train.py', cwd=tmp_path)
    assert both.returncode == 2
    assert 'nothing written' in both.stderr
    assert 'out/train.py: both a/train.py and b/train.py would be written to it' in both.stderr
    assert not (tmp_path / 'out').exists()
    mine = b'# my own train.py, nothing to do with a/\n'
    (tmp_path / 'train.py').write_bytes(mine)
    over = _cli('-o', '.', 'a/train.py', cwd=tmp_path)
    assert (
        over.returncode == 2 and './train.py: exists, with other text' in over.stderr and '--overwrite' in over.stderr
    )
    assert _read(tmp_path / 'train.py') == mine
    told = _cli('-o', '.', 'a/train.py', '--overwrite', cwd=tmp_path)
    assert told.returncode == 0, told.stderr
    assert (
        _read(tmp_path / 'train.py') == _upgraded({str(tmp_path / 'a' / 'train.py'): b''})[str(tmp_path / 'a/train.py')]
    )
    assert _read(tmp_path / 'a' / 'train.py') == _script(ord('a')).encode()


def test_a_link_inside_the_tree_is_written_at_its_target_and_one_that_leaves_it_is_refused(tmp_path):
    tree, outside = tmp_path / 'tree', tmp_path / 'outside'
    tree.mkdir()
    outside.mkdir()
    (tree / 'real.py').write_text(_script(1))
    (tree / 'alias.py').symlink_to('real.py')
    (outside / 'elsewhere.py').write_text(_script(2))
    (tree / 'leaves.py').symlink_to(outside / 'elsewhere.py')
    refused = _cli('tree', '--in-place', cwd=tmp_path)
    assert refused.returncode == 2
    assert f'tree/leaves.py: a symbolic link to {outside / "elsewhere.py"}, outside tree' in refused.stderr
    assert _read(outside / 'elsewhere.py') == _script(2).encode() and _read(tree / 'real.py') == _script(1).encode()
    (tree / 'leaves.py').unlink()
    result = _cli('tree', '--in-place', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert os.readlink(tree / 'alias.py') == 'real.py' and b'mts.' in _read(tree / 'real.py')
    assert result.stdout.count('written to') == 1  # The link and its target are one file, written once.
    # -o never writes through a link: one in DIR is replaced (with --overwrite), its target left alone.
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'script.py').symlink_to(outside / 'elsewhere.py')
    (tmp_path / 'script.py').write_text(_script(3))
    assert _cli('script.py', '-o', 'out', cwd=tmp_path).returncode == 2
    assert _cli('script.py', '-o', 'out', '--overwrite', cwd=tmp_path).returncode == 0
    assert not (out / 'script.py').is_symlink() and _read(outside / 'elsewhere.py') == _script(2).encode()
    # Nor into a directory of DIR that leads out of it.
    (tmp_path / 'pkg' / 'sub').mkdir(parents=True)
    (tmp_path / 'pkg' / 'sub' / 'm.py').write_text(_script(4))
    (out / 'sub').symlink_to(outside)
    escape = _cli('pkg', '-o', 'out', cwd=tmp_path)
    assert escape.returncode == 2 and 'out/sub/m.py: its directory leads out of out' in escape.stderr
    assert sorted(os.listdir(outside)) == ['elsewhere.py']


def test_a_file_that_is_not_utf8_among_200_is_named_and_nothing_is_written(tmp_path):
    files = _tree(tmp_path / 'tree', 200)
    bad = sorted(files)[137]
    with open(bad, 'wb') as file:
        file.write(b'# caf\xe9: Latin-1\nimport tensorflow as tf\n')
    result = _cli('tree', '--in-place', cwd=tmp_path)
    assert result.returncode == 2
    relative = os.path.relpath(bad, tmp_path)
    assert f'{relative}: not UTF-8 (byte 0xe9 on line 1)' in result.stderr
    assert '1 file(s) not upgraded' in result.stderr
    assert all(_read(path) == text for path, text in files.items() if path != bad)


def _immutable(path) -> bool:
    return subprocess.run(['chattr', '+i', str(path)], capture_output=True, check=False).returncode == 0


def test_a_read_only_file_among_three_is_named_and_none_is_written(tmp_path):
    if shutil.which('chattr') is None:
        pytest.skip('no chattr on this machine: an immutable file is how root is refused a write')
    files = {tmp_path / f'{name}.py': _script(index) for index, name in enumerate(('first', 'locked', 'third'))}
    for path, text in files.items():
        path.write_text(text)
    if not _immutable(tmp_path / 'locked.py'):
        pytest.skip(f'the file system of {tmp_path} has no immutable files (chattr +i)')
    try:
        result = _cli('first.py', 'locked.py', 'third.py', '--in-place', cwd=tmp_path)
    finally:
        subprocess.run(['chattr', '-i', str(tmp_path / 'locked.py')], check=True)
    assert result.returncode == 2
    assert 'locked.py: is read-only: not written' in result.stderr and 'Traceback' not in result.stderr
    assert all(_read(path) == text.encode() for path, text in files.items())
    assert not list(tmp_path.glob('*.orig'))


def test_a_read_only_mount_refuses_in_place_and_output_writes_naming_the_file(tmp_path):
    source = tmp_path / 'source'
    files = _tree(source, 3)
    with mounts.read_only_view(str(source), str(tmp_path / 'view')):
        result = _cli('view', '--in-place', cwd=tmp_path)
        assert result.returncode == 2
        assert 'view/part0/script_000.py: its directory' in result.stderr and 'read-only' in result.stderr
        into = _cli('source', '-o', 'view/out', cwd=tmp_path)
        assert into.returncode == 2 and 'view/out/part0/script_000.py' in into.stderr
    assert all(_read(path) == text for path, text in files.items())
    assert not (source / 'out').exists()


def test_a_full_file_system_leaves_every_original_whole_and_no_temporary_file(tmp_path):
    # Three scripts of about 12 KiB in a 64 KiB tmpfs: their originals fit, their upgraded copies beside them
    # do not, so the disk fills while the new texts are staged.
    with mounts.small_file_system(str(tmp_path / 'small'), 64) as small:
        files = _tree(small, 3, padding=300)
        result = _cli('.', '--in-place', cwd=small)
        assert result.returncode == 2
        assert 'No space left on device' in result.stderr and 'script_' in result.stderr
        assert 'written (0, each whole)' in result.stderr
        assert all(_read(path) == text for path, text in files.items())
        assert _leftovers(small) == [] and not [name for name in os.listdir(small) if name.endswith('.orig')]


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


def test_a_write_over_the_file_size_limit_leaves_the_output_directory_without_a_partial_file(tmp_path):
    # The child may write no file over 8 KiB (RLIMIT_FSIZE; Python ignores SIGXFSZ, so the write fails with
    # EFBIG): the second script, of about 12 KiB, cannot be staged.
    (tmp_path / 'small.py').write_text(_script(1))
    (tmp_path / 'large.py').write_text(_script(2, padding=300))
    result = _cli('small.py', 'large.py', '-o', 'out', cwd=tmp_path, preexec_fn=_limit_file_size)
    assert result.returncode == 2
    assert 'out/large.py: File too large' in result.stderr
    assert not (tmp_path / 'out').exists()


@pytest.fixture(scope='module')
def upgraded_200(tmp_path_factory) -> dict[str, bytes]:
    """The whole upgraded text of each of the 200 scripts of `_tree`, by its path below the tree, made once."""
    root = tmp_path_factory.mktemp('upgraded_200')
    files = _tree(root, 200)
    return {os.path.relpath(path, root): text for path, text in _upgraded(files).items()}


def _interrupted(
    tmp_path, upgraded_200: dict, signal_number: int, when: str
) -> tuple[dict, dict, subprocess.CompletedProcess]:
    """Runs `upgrade tree --in-place` over 200 files and sends `signal_number` once `when` is seen: 'staging'
    (a temporary file exists) or 'renaming' (temporary files are going away: some are renamed already)."""
    files = _tree(tmp_path / 'tree', 200)
    upgraded = {path: upgraded_200[os.path.relpath(path, tmp_path / 'tree')] for path in files}
    directories = sorted({os.path.dirname(path) for path in files})
    # The command's output goes to files: a pipe nobody reads while the test watches would stop it when full.
    with open(tmp_path / 'stdout', 'w+') as stdout, open(tmp_path / 'stderr', 'w+') as stderr:
        process = subprocess.Popen(
            _command('tree', '--in-place'), cwd=str(tmp_path), env=_env(), stdout=stdout, stderr=stderr
        )
        most = 0
        while process.poll() is None:
            staged = sum(name.endswith(TEMPORARY) for directory in directories for name in os.listdir(directory))
            most = max(most, staged)
            # Staged texts only grow in number until the renames start (a backup adds one for a moment).
            if staged and (when == 'staging' or staged < most - 1 or most >= len(files) > staged):
                process.send_signal(signal_number)
                break
            time.sleep(0.002)  # Leave the command the cores; a look every 2 ms still finds it between two files.
        process.wait(timeout=120)
        stdout.seek(0)
        stderr.seek(0)
        stdout, stderr = stdout.read(), stderr.read()
    return files, upgraded, subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _assert_each_file_whole(files: dict, upgraded: dict) -> tuple[set, set]:
    originals, whole = set(), set()
    for path, text in files.items():
        now = _read(path)
        assert now in (text, upgraded[path]), f'{path} is neither its original nor its upgraded text'
        (originals if now == text else whole).add(path)
    return originals, whole


@pytest.mark.parametrize(
    ('signal_number', 'when'),
    [(signal.SIGKILL, 'renaming'), (signal.SIGINT, 'renaming'), (signal.SIGTERM, 'staging')],
    ids=['SIGKILL-renaming', 'SIGINT-renaming', 'SIGTERM-staging'],
)
def test_a_signal_while_200_files_are_written_leaves_each_original_or_whole_and_says_which(
    tmp_path, upgraded_200, signal_number, when
):
    files, upgraded, result = _interrupted(tmp_path, upgraded_200, signal_number, when)
    originals, whole = _assert_each_file_whole(files, upgraded)
    for path in whole:  # A replaced file's original was backed up first.
        assert _read(path + '.orig') == files[path]
    if signal_number == signal.SIGKILL or result.returncode == 0:
        return  # Killed: no report. Or the signal came after the last write: all written, and said so.
    assert result.returncode == 128 + signal_number, result.stderr
    if 'interrupted while reporting; all 200 files were written' in result.stderr:
        assert len(whole) == len(files)  # The signal came after the last write.
        return
    assert f'interrupted by {signal.Signals(signal_number).name}' in result.stderr
    written = result.stderr.split('  not written')[0] + '\n'
    for path in files:
        relative = os.path.relpath(path, tmp_path)
        assert (f'\n    {relative}\n' in written) == (path in whole), relative
    assert _leftovers(tmp_path) == []
    if not whole:
        assert not [name for name in os.listdir(tmp_path / 'tree' / 'part0') if name.endswith('.orig')]


def test_the_write_flags_without_the_mode_they_belong_to_are_refused(tmp_path):
    (tmp_path / 'train.py').write_text(_script(1))
    overwrite = _cli('train.py', '--overwrite', cwd=tmp_path)
    assert overwrite.returncode == 2 and '--overwrite goes with -o DIR' in overwrite.stderr
    no_backup = _cli('train.py', '-o', 'out', '--no-backup', cwd=tmp_path)
    assert no_backup.returncode == 2 and '--no-backup goes with --in-place' in no_backup.stderr
    assert not (tmp_path / 'out').exists() and _read(tmp_path / 'train.py') == _script(1).encode()


_WORKERS_WAIT = r"""
import os, sys, time
from compat_mts.cli.upgrade import forked

def wait(index):
    os.write(1, f'{os.getpid()}\n'.encode())  # One write: the two workers' lines do not interleave.
    time.sleep(600)

forked.forked_map(wait, [0, 1], 2)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as file:
            return file.read().split(')')[-1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='the workers ask Linux to end them with the parent')
def test_the_forked_workers_end_when_the_command_is_killed():
    """`kill -9` of `upgrade` (the OOM killer) while its forked processes work: none is left behind waiting."""
    env = dict(os.environ, PYTHONPATH=support.REPO_ROOT)
    parent = subprocess.Popen([sys.executable, '-c', _WORKERS_WAIT], env=env, stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(parent.stdout.readline()) for _ in range(2)]
        assert all(_alive(worker) for worker in workers)
    finally:
        parent.kill()
        parent.wait(timeout=60)
    deadline = time.monotonic() + 60
    while any(_alive(worker) for worker in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [worker for worker in workers if _alive(worker)]
