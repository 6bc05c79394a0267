"""A quiet TensorFlow start for programs that import compat_mts: no C++ start-up block, no cuInit error.

On a machine without a GPU, TensorFlow 2.21 writes to file descriptor 2, whatever TF_CPP_MIN_LOG_LEVEL says
(its logging is not set up yet): that the log goes to stderr, that oneDNN is on, that no CUDA driver was
found, which CPU instructions the binary could use; and at the first device lookup, `E0000 ... failed call
to cuInit: ... UNKNOWN ERROR (303)`. None of it is about the program. Python cannot hide it afterwards, only
while it is written: so `import compat_mts` arranges for the first `import tensorflow` of the process to run
with descriptor 2 going to a temporary file, lists the devices then (the cuInit call), and writes back
everything it caught except those known start-up lines. A Python warning or any other line written then
still reaches stderr, after the import.

What is covered depends on the order of the imports:

- compat_mts imported before TensorFlow (`import compat_mts` first, or compat_mts alone): the start-up block
  and the cuInit error are both hidden.
- TensorFlow imported first: its start-up block is already on the terminal. If no device was looked up yet
  (no op run, no `tf.config` device call), importing compat_mts looks them up under the same filter, so the
  cuInit error is still hidden.

`COMPAT_MTS_SHOW_TF_STARTUP=1` in the environment turns this off (everything TensorFlow writes is shown).
The `compat-mts` commands import TensorFlow under `quiet_tensorflow_import`, the same filter with TensorFlow's
C++ log level raised too (`--verbose` shows it all).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile
from typing import Any, Callable, Iterator

OPT_OUT_VARIABLE = 'COMPAT_MTS_SHOW_TF_STARTUP'

# The lines TensorFlow writes when it starts on a machine without a GPU: absl's notice, oneDNN, the CUDA
# stubs and factories finding no driver, the CPU feature notice (two lines), and cuInit failing.
_START_UP_LINE = re.compile(
    r'WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR'
    r'|[IWE]\d{4} [\d:.]+\s+\d+ (?:port\.cc|cudart_stub\.cc|cpu_feature_guard\.cc|cuda_platform\.cc'
    r'|cuda_executor\.cc|cuda_dnn\.cc|cuda_fft\.cc|cuda_blas\.cc|computation_placer\.cc):\d+\] .*'
    r'|To enable the following instructions: .* in other operations, rebuild TensorFlow with the appropriate '
    r'compiler flags\.'
    r'|.*TF-TRT Warning: Could not find TensorRT'
)


def filter_start_up_lines(text: bytes) -> bytes:
    """`text` without TensorFlow's known start-up lines (see `_START_UP_LINE`); every other line is kept."""
    kept = [
        line
        for line in text.splitlines(keepends=True)
        if not _START_UP_LINE.fullmatch(line.decode('utf-8', 'replace').rstrip('\r\n'))
    ]
    return b''.join(kept)


@contextlib.contextmanager
def start_up_lines_filtered() -> Iterator[None]:
    """Sends file descriptor 2 to a temporary file for the duration, then writes back what was caught, less
    TensorFlow's start-up lines. Without a usable descriptor 2 (a daemon), it does nothing."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            rest = filter_start_up_lines(caught.read())
            if rest:
                os.write(2, rest)


@contextlib.contextmanager
def quiet_tensorflow_import(verbose: bool = False) -> Iterator[None]:
    """Keeps TensorFlow's start-up lines off the terminal while the block imports it, unless `verbose`.

    The `compat-mts` commands import TensorFlow in such a block: the C++ log level is raised to 3 (fatal only,
    unless TF_CPP_MIN_LOG_LEVEL is set) and the lines TensorFlow still writes are filtered
    (`start_up_lines_filtered`); any other line written then, a Python error's included, is shown after it.
    With `verbose`, nothing is hidden: not even by the quiet start `import compat_mts` set up.
    """
    if verbose:
        uninstall()
        yield
        return
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    with start_up_lines_filtered():
        yield


def _look_up_devices(tensorflow: Any) -> None:
    """Lists the physical devices, which is when TensorFlow calls cuInit; devices can still be configured."""
    tensorflow.config.list_physical_devices()


class _LoaderAround(importlib.abc.Loader):
    """A module's own loader, its module executed through `around(run, module)` (`run()` executes it)."""

    def __init__(self, loader: importlib.abc.Loader, around: Callable[[Callable[[], None], Any], None]):
        self._loader, self._around = loader, around

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._around(functools.partial(self._loader.exec_module, module), module)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class TensorFlowImportHook(importlib.abc.MetaPathFinder):
    """Finds `tensorflow`, once, through the finders after it (another hook's included, so hooks compose), and
    executes the module through its `around`; a subclass says what `around` does."""

    def around(self, run: Callable[[], None], module: Any) -> None:
        raise NotImplementedError

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != 'tensorflow':
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        for finder in list(sys.meta_path):
            find_spec = getattr(finder, 'find_spec', None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _LoaderAround(spec.loader, self.around)
                return spec
        return None


class _QuietTensorFlowImport(TensorFlowImportHook):
    """TensorFlow's import under `start_up_lines_filtered`, with the devices looked up at its end."""

    def around(self, run: Callable[[], None], module: Any) -> None:
        with start_up_lines_filtered():
            run()
            _look_up_devices(module)


def install() -> None:
    """Makes TensorFlow start quietly in this process, as far as it still can (see the module docstring)."""
    if os.environ.get(OPT_OUT_VARIABLE, '').strip().lower() in ('1', 'true', 'yes'):
        return
    tensorflow = sys.modules.get('tensorflow')
    if tensorflow is None:
        if not any(isinstance(finder, _QuietTensorFlowImport) for finder in sys.meta_path):
            sys.meta_path.insert(0, _QuietTensorFlowImport())
        return
    config = getattr(tensorflow, 'config', None)
    if config is not None:  # Imported already, and fully: only the first device lookup is left to quiet.
        with start_up_lines_filtered():
            _look_up_devices(tensorflow)


def uninstall() -> None:
    """Lets TensorFlow, if not imported yet, print its start-up lines after all (`compat-mts demo --verbose`)."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _QuietTensorFlowImport)]
