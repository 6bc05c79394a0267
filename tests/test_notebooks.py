"""Every notebooks/*.ipynb executes without an error, and its committed outputs are what it prints now.

The notebooks are committed with their outputs, so that a reader on GitHub sees them. This test executes each
one in a fresh `python3` kernel (two at a time), in an empty temporary directory, against this checkout, and
compares the outputs cell by cell with the committed ones: the same cells with outputs, the same output types
(stream names, MIME types: a plot stays a plot), and the same text once what legitimately varies between
machines and runs is masked (numbers, absolute paths, events file names; `execute_notebooks.masked`). So a
notebook committed without outputs fails, and so does one whose committed outputs are stale: a message that
changed, a cell that prints something else or nothing. What the kernel's file descriptors receive is part of
the outputs, as in `jupyter nbconvert --execute`, so TensorFlow's C++ lines would show: the notebooks import
compat_mts first, which keeps TensorFlow's start-up lines out, and this test fails if one shows. The notebooks
also check their own claims in their last cells (e.g. that the second run resumed where the first stopped).

To re-execute every notebook and save it in place with its outputs, from the repository root:

    python tests/execute_notebooks.py
"""

from __future__ import annotations

import concurrent.futures
import difflib
import json
import re

import nbformat
import pytest

from tests import execute_notebooks

pytestmark = pytest.mark.slow  # The notebooks run in kernels of their own.

NOTEBOOKS = execute_notebooks.all_notebooks()
NOTEBOOKS_WITH_HOOK_LINES = {
    '01_quickstart.ipynb',
    '02_legacy_script_stage_by_stage.ipynb',
    '03_hooks_inside_model_fit.ipynb',
}
RE_EXECUTE = 'python tests/execute_notebooks.py'


@pytest.fixture(scope='module')
def executions(request):
    """The notebooks this run selected, executed two at a time; each test waits for its own."""
    selected = [
        item.callspec.params['path']
        for item in request.session.items
        if item.module.__name__ == __name__ and hasattr(item, 'callspec')
    ]
    execute_notebooks.ensure_kernel()
    with concurrent.futures.ThreadPoolExecutor(execute_notebooks.PARALLEL_NOTEBOOKS) as pool:
        yield {path: pool.submit(execute_notebooks.execute, path) for path in dict.fromkeys(selected)}


def _described(cells: list[dict]) -> list[str]:
    return json.dumps(cells, indent=1).splitlines()


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_and_its_committed_outputs_are_current(path, executions):
    committed = nbformat.read(path, as_version=4)
    assert any(cell.get('outputs') for cell in committed.cells if cell.cell_type == 'code'), (
        f'{path.name} is committed without outputs; run `{RE_EXECUTE} {path.relative_to(path.parents[1])}`.'
    )

    executed = executions[path].result()

    code_cells = [cell for cell in executed.cells if cell.cell_type == 'code']
    printed = ''.join(
        output.get('text', '') for cell in code_cells for output in cell.outputs if output.output_type == 'stream'
    )
    assert printed.strip(), f'{path.name} printed nothing.'
    assert any('image/png' in output.get('data', {}) for cell in code_cells for output in cell.outputs), (
        f'{path.name} shows no plot.'
    )
    streams = ''.join(output.get('text', '') for cell in code_cells for output in cell.outputs)
    assert not re.search(r'absl::InitializeLog|cudart_stub\.cc|cpu_feature_guard\.cc|cuInit', streams), (
        f'{path.name} shows TensorFlow start-up lines.'
    )
    if path.name in NOTEBOOKS_WITH_HOOK_LINES:  # v1's hook lines show where a v1 user looks for them.
        assert re.search(r'^INFO:tensorflow:loss = [\d.e+-]+', printed, re.MULTILINE), printed[-3000:]

    expected = execute_notebooks.comparable_outputs(execute_notebooks.clean(committed))
    actual = execute_notebooks.comparable_outputs(executed)
    if actual != expected:
        difference = '\n'.join(
            difflib.unified_diff(
                _described(expected), _described(actual), 'committed', 'executed now', lineterm='', n=2
            )
        )
        pytest.fail(
            f'The committed outputs of {path.name} are stale; run `{RE_EXECUTE} '
            f'{path.relative_to(path.parents[1])}` and commit the result.\n{difference[:6000]}'
        )


def test_notebooks_run_as_nbconvert_runs_them_with_file_descriptor_output_and_the_users_log_level():
    assert '--IPKernelApp.capture_fd_output=True' in execute_notebooks._KERNEL_ARGUMENTS
    assert 'TF_CPP_MIN_LOG_LEVEL' not in execute_notebooks.kernel_environment()
