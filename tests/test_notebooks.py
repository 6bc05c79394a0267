"""Every notebooks/*.ipynb executes top to bottom in a fresh `python3` kernel without an error.

The notebooks check their own claims in their last cells (e.g. that the second run resumed where the first
stopped); this test runs them in an empty temporary directory against this checkout.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

REPO = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / 'notebooks').glob('*.ipynb'))
KERNEL_NAME = 'python3'
CELL_TIMEOUT_SECS = 300
NOTEBOOKS_WITH_HOOK_LINES = {'01_quickstart.ipynb'}


@pytest.fixture(scope='module')
def python3_kernel():
    """Makes sure a `python3` kernel spec exists, installing this interpreter's ipykernel as one if not."""
    if KERNEL_NAME not in KernelSpecManager().find_kernel_specs():
        subprocess.run([sys.executable, '-m', 'ipykernel', 'install', '--user', '--name', KERNEL_NAME],
                       check=True, capture_output=True)
    return KERNEL_NAME


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_without_errors(path, python3_kernel, tmp_path, monkeypatch):
    # The kernel inherits this environment: this checkout first on its path, TensorFlow's C++ logs off.
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '2')
    monkeypatch.setenv('MPLBACKEND', 'Agg')
    notebook = nbformat.read(path, as_version=4)
    assert not any(cell.get('outputs') for cell in notebook.cells if cell.cell_type == 'code'), (
            f'{path.name} is committed with outputs; clear them.')

    client = nbclient.NotebookClient(notebook, kernel_name=python3_kernel, timeout=CELL_TIMEOUT_SECS,
                                     resources={'metadata': {'path': str(tmp_path)}})
    client.execute()

    code_cells = [cell for cell in notebook.cells if cell.cell_type == 'code']
    errors = [output for cell in code_cells for output in cell.outputs if output.output_type == 'error']
    assert not errors, errors
    printed = ''.join(output.get('text', '') for cell in code_cells for output in cell.outputs
                      if output.output_type == 'stream')
    assert printed.strip(), f'{path.name} printed nothing.'
    if path.name in NOTEBOOKS_WITH_HOOK_LINES:  # v1's hook lines show where a v1 user looks for them.
        assert re.search(r'^INFO:tensorflow:loss = [\d.e+-]+, step = \d+', printed, re.MULTILINE), printed[-3000:]
