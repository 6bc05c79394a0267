"""Executes the notebooks and saves them in place, with their outputs: `python tests/execute_notebooks.py`.

The notebooks are committed with their outputs, so that a reader on GitHub sees the logs, tables and plots
without running anything. `tests/test_notebooks.py` executes them again and fails when the committed outputs
are not what the notebooks print now. After changing a notebook, or anything that a notebook prints, run

    python tests/execute_notebooks.py                 # every notebook, two at a time
    python tests/execute_notebooks.py notebooks/03_hooks_inside_model_fit.ipynb

from the repository root and commit the notebooks it rewrote.

Each notebook runs top to bottom in a fresh `python3` kernel, in an empty temporary directory, with this
checkout first on the kernel's `PYTHONPATH`. What is saved is what the notebook printed, with two
differences that keep re-execution diffs small and free of machine specifics:

- consecutive stream outputs of a cell are merged (the kernel sends them in pieces, as they are flushed);
- execution timestamps and the interpreter's version are left out of the metadata.

What a notebook writes to its file descriptors is captured too, as `jupyter nbconvert --execute` captures it
(TensorFlow's C++ lines among it), with TensorFlow's C++ log level left as a user has it: the outputs are what
a reader running the notebook sees. The notebooks import compat_mts before TensorFlow, which keeps
TensorFlow's start-up lines out of them (README, "A quiet start").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from typing import Iterable

import nbclient
import nbformat
from jupyter_client.kernelspec import KernelSpecManager

REPO = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = REPO / 'notebooks'
KERNEL_NAME = 'python3'
CELL_TIMEOUT_SECS = 300
PARALLEL_NOTEBOOKS = 2  # The machines this runs on have two cores or more; each kernel is mostly one busy thread.
_KERNEL_ARGUMENTS = ['--IPKernelApp.capture_fd_output=True']  # ipykernel's default, said explicitly


def all_notebooks() -> list[pathlib.Path]:
    return sorted(NOTEBOOKS_DIR.glob('*.ipynb'))


def ensure_kernel() -> str:
    """Makes sure a `python3` kernel spec exists, installing this interpreter's ipykernel as one if not."""
    if KERNEL_NAME not in KernelSpecManager().find_kernel_specs():
        subprocess.run(
            [sys.executable, '-m', 'ipykernel', 'install', '--user', '--name', KERNEL_NAME],
            check=True,
            capture_output=True,
        )
    return KERNEL_NAME


def kernel_environment() -> dict[str, str]:
    """The kernel's environment: this checkout first on the path, TensorFlow's C++ log level as a user's
    (unset), no display."""
    environment = dict(os.environ)
    environment['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')]))
    environment.pop('TF_CPP_MIN_LOG_LEVEL', None)
    environment['MPLBACKEND'] = 'Agg'
    return environment


def execute(path: pathlib.Path, work_dir: str | None = None) -> nbformat.NotebookNode:
    """Executes the notebook at `path` in a fresh kernel, in `work_dir` (a new temporary directory if None).

    Returns:
      The executed notebook, cleaned as `clean` does. Not written anywhere.

    Raises:
      nbclient.exceptions.CellExecutionError: a cell raised; the message holds its traceback.
    """
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix='compat-mts-notebook-') as temporary:
        client = nbclient.NotebookClient(
            notebook,
            kernel_name=ensure_kernel(),
            timeout=CELL_TIMEOUT_SECS,
            extra_arguments=list(_KERNEL_ARGUMENTS),
            resources={'metadata': {'path': work_dir or temporary}},
        )
        client.execute(env=kernel_environment())
    return clean(notebook)


def clean(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Merges consecutive stream outputs and drops the metadata that changes on every execution."""
    notebook.metadata.pop('widgets', None)
    language = notebook.metadata.get('language_info')
    if language is not None:
        notebook.metadata['language_info'] = {'name': language.get('name', 'python')}
    for cell in notebook.cells:
        cell.metadata.pop('execution', None)
        if cell.cell_type == 'code':
            cell.outputs = _merged_streams(cell.outputs)
    return notebook


def _merged_streams(outputs: Iterable[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    merged: list[nbformat.NotebookNode] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == 'stream'
            and previous is not None
            and previous.output_type == 'stream'
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


# What legitimately differs between two executions, on this machine or another: numbers (losses, rates,
# times, dates, process ids), absolute paths (temporary directories, site-packages in warnings), the names
# of events files (they hold the time, the host name and the process id), object addresses, and the
# padding that numbers of other widths bring into printed tables.
_EVENTS_FILE = re.compile(r'events\.out\.tfevents\.[^\s\'",\]]+')
_ABSOLUTE_PATH = re.compile(r'(?<![\w.~/])/(?:[\w.+@~-]+/?)+')
_ADDRESS = re.compile(r'0x[0-9a-fA-F]+')
_NUMBER = re.compile(r'-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?')
_PADDING = re.compile(r'[ \t]+')


def masked(text: str) -> str:
    """`text` with what varies between executions replaced by placeholders."""
    text = _EVENTS_FILE.sub('<events file>', text)
    text = _ABSOLUTE_PATH.sub('<path>', text)
    text = _ADDRESS.sub('<address>', text)
    text = _NUMBER.sub('<n>', text)
    return _PADDING.sub(' ', text)


def comparable_outputs(notebook: nbformat.NotebookNode) -> list[dict]:
    """For each code cell, what must not change between executions.

    A cell's stdout and its stderr are compared separately (the kernel does not order one against the
    other), each masked; every other output by its type, its MIME types and its masked text (images by
    their presence: the pixels move with the numbers).
    """
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != 'code':
            continue
        streams: dict[str, str] = {}
        others = []
        for output in cell.get('outputs', []):
            if output.output_type == 'stream':
                streams[output.name] = streams.get(output.name, '') + output.text
            elif output.output_type == 'error':
                others.append({'error': output.ename, 'value': masked(output.evalue)})
            else:
                data = output.get('data', {})
                texts = {mime: masked(''.join(value)) for mime, value in data.items() if mime.startswith('text/')}
                others.append({'output_type': output.output_type, 'mime_types': sorted(data), 'texts': texts})
        cells.append(
            {
                'cell': cell.source.partition('\n')[0],  # its first line, to say which cell differs
                'streams': {name: masked(text) for name, text in streams.items()},
                'outputs': others,
            }
        )
    return cells


def _execute_and_save(path: pathlib.Path) -> pathlib.Path:
    nbformat.write(execute(path), path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        'notebooks',
        nargs='*',
        type=pathlib.Path,
        help='the notebooks to execute and save (default: every notebooks/*.ipynb)',
    )
    arguments = parser.parse_args(argv)
    paths = [path.resolve() for path in arguments.notebooks] or all_notebooks()
    failed = False
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_NOTEBOOKS) as pool:
        futures = {pool.submit(_execute_and_save, path): path for path in paths}
        for future in concurrent.futures.as_completed(futures):
            path = futures[future]
            try:
                future.result()
                print(f'saved {path.relative_to(REPO) if path.is_relative_to(REPO) else path}')
            except nbclient.exceptions.CellExecutionError as error:
                failed = True
                print(f'{path.name} failed; not saved:\n{error}', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
