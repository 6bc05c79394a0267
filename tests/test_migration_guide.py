"""Every ```python block of migration_guide/*.md and README.md runs, as written, in a process of its own.

A block is a whole program: it starts in an empty temporary directory, and passes when it exits with status 0
(the blocks assert what the text around them claims). The blocks are independent programs, so they run two at
a time (the machines have two cores), once per test session; each test reads its block's result.

Importing TensorFlow is most of a short program's CPU time, so each block runs in a process forked from a
server that imported compat_mts and TensorFlow once (`tests/script_fork_server.py`): its own process, runtime,
directory and streams, but TensorFlow already imported. A block that sets environment variables (which
TensorFlow or Keras may read when imported) runs in a fresh interpreter, with nothing imported.
"""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

import pytest

from tests import support

pytestmark = pytest.mark.slow  # The guide's programs run in processes.

REPO = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / 'README.md', *sorted((REPO / 'migration_guide').glob('*.md'))]
BLOCK_TIMEOUT_SECS = 180
PARALLEL_BLOCKS = 2
# A v1 reader expects the hooks' lines where v1 printed them: the `tensorflow` logger, at INFO.
EXPECTED_LOG_LINES = {'README.md': re.compile(r'^INFO:tensorflow:loss = [\d.e+-]+, step = \d+', re.MULTILINE)}

_FENCE = re.compile(r'^(\s*)(`{3,}|~{3,})\s*([\w+-]*)')


def python_blocks(path: pathlib.Path) -> list[tuple[int, str]]:
    """The (first code line number, source) of each ```python block of the Markdown file `path`."""
    blocks = []
    fence = language = None
    start, lines = 0, []
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), start=1):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence, language = match.group(2), match.group(3).lower()
                start, lines = number + 1, []
        elif match and match.group(2).startswith(fence) and not match.group(3) and not line[match.end() :].strip():
            if language in ('python', 'py'):
                blocks.append((start, '\n'.join(lines) + '\n'))
            fence = None
        else:
            lines.append(line)
    if fence is not None:
        raise ValueError(f'{path}: the code block opened at line {start - 1} is never closed.')
    return blocks


def _blocks() -> dict[str, tuple[str, re.Pattern | None]]:
    """Each block's id (`document:line`) -> its source and the log line its output must show, if any."""
    blocks = {}
    for path in DOCUMENTS:
        if path.exists():
            for line, source in python_blocks(path):
                relative = path.relative_to(REPO).as_posix()
                blocks[f'{relative}:{line}'] = (source, EXPECTED_LOG_LINES.get(relative))
    return blocks


BLOCKS = _blocks()


def subprocess_env() -> dict[str, str]:
    """The environment of a block: this checkout first on the path, TensorFlow's C++ chatter off."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    env['MPLBACKEND'] = 'Agg'
    return env


def test_python_blocks_parse_with_their_line_numbers(tmp_path):
    document = tmp_path / 'doc.md'
    document.write_text('text\n```python\nx = 1\n```\n```bash\nls\n```\n~~~python\ny = 2\n~~~\n')
    assert python_blocks(document) == [(3, 'x = 1\n'), (9, 'y = 2\n')]


def needs_a_fresh_interpreter(source: str) -> bool:
    """Whether the block sets environment variables, which TensorFlow or Keras may read when first imported."""
    return 'os.environ' in source


def _run_block(source: str, directory: pathlib.Path) -> subprocess.CompletedProcess:
    """The block in a process of its own: forked from a server that imported compat_mts first, as the blocks import
    it, then TensorFlow; in a fresh interpreter when it sets environment variables."""
    script = directory / 'block.py'
    script.write_text(source, encoding='utf-8')
    work = directory / 'work'
    work.mkdir()
    command = [sys.executable, str(script)]
    options = dict(cwd=work, env=subprocess_env(), capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECS)
    if needs_a_fresh_interpreter(source):
        return subprocess.run(command, **options)
    return support.run(command, modules=('compat_mts', 'tensorflow'), **options)


@pytest.fixture(scope='module')
def block_results(request, tmp_path_factory):
    """The result of every selected block, run two at a time."""
    selected = [
        item.callspec.params['block']
        for item in request.session.items
        if item.module is request.module and hasattr(item, 'callspec')
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL_BLOCKS) as pool:
        futures = {
            block: pool.submit(_run_block, BLOCKS[block][0], tmp_path_factory.mktemp('block')) for block in selected
        }
    return {block: future.result() for block, future in futures.items()}


def test_a_forked_block_is_a_process_of_its_own_with_the_exit_status_and_streams_of_its_program(tmp_path):
    """A block's exit status, streams, `__main__`, directory and threads, as `python block.py` has them."""
    failing = tmp_path / 'failing'
    failing.mkdir()
    result = _run_block('import sys\nprint("out")\nraise ValueError("the claim is wrong")\n', failing)
    assert (result.returncode, result.stdout) == (1, 'out\n')
    assert 'ValueError: the claim is wrong' in result.stderr

    exiting = tmp_path / 'exiting'
    exiting.mkdir()
    assert _run_block('import sys\nsys.exit(3)\n', exiting).returncode == 3

    passing = tmp_path / 'passing'
    passing.mkdir()
    source = (
        'import os, sys, threading, time\n'
        'import tensorflow as tf\n'
        'assert __name__ == "__main__"\n'
        'assert os.path.basename(os.getcwd()) == "work" and os.listdir(".") == [], os.getcwd()\n'
        'assert os.path.realpath(sys.argv[0]) == os.path.realpath("../block.py"), sys.argv\n'
        'print(int(tf.reduce_sum(tf.constant([1, 2]))))\n'
        'threading.Thread(target=lambda: (time.sleep(0.2), print("thread done", flush=True))).start()\n'
        'tf.get_logger().warning("on stderr")\n'
    )
    result = _run_block(source, passing)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '3\nthread done\n'
    assert 'on stderr' in result.stderr


@pytest.mark.parametrize('block', list(BLOCKS))
def test_python_block_runs(block, block_results):
    expected_log_line = BLOCKS[block][1]
    result = block_results[block]
    assert result.returncode == 0, (
        f'exit status {result.returncode}\n--- stdout ---\n{result.stdout[-4000:]}'
        f'\n--- stderr ---\n{result.stderr[-8000:]}'
    )
    if expected_log_line is not None:
        assert expected_log_line.search(result.stderr), result.stderr[-4000:]
