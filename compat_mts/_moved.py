"""The modules that moved into the concept folders, under their old paths for one release.

`import compat_mts.fetches` (or `from compat_mts import checkpoints`) still works: it returns the module at its
new path, `compat_mts.core.fetch`, the same object under both names (so patching an attribute through either name
patches the one module), and warns once, with a `DeprecationWarning` that names the new path. No file is left at
an old path: a finder on `sys.meta_path`, consulted after the package's own directories, answers for the names of
`MOVED`. The package's `__init__.py` installs it.

`compat_mts.distribute` is a public name of the package (the module of `mts.distribute`), so its path is not
deprecated: `import compat_mts.distribute` gives `compat_mts.deploy.distribute` without a warning (`PUBLIC`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

# Old module path -> new module path.
MOVED = {
    'compat_mts.monitored_session': 'compat_mts.session.monitored_session',
    'compat_mts.training_session': 'compat_mts.session.training_session',
    'compat_mts.session_creators': 'compat_mts.session.session_creators',
    'compat_mts.steps': 'compat_mts.session.steps',
    'compat_mts.scaffold': 'compat_mts.session.scaffold',
    'compat_mts.session_run_hook': 'compat_mts.session.session_run_hook',
    'compat_mts.hook_driver': 'compat_mts.session.hook_driver',
    'compat_mts.fetches': 'compat_mts.core.fetch',
    'compat_mts.global_step': 'compat_mts.core.global_step',
    'compat_mts.validation': 'compat_mts.core.validation',
    'compat_mts.program': 'compat_mts.core.program',
    'compat_mts.progress': 'compat_mts.core.progress',
    'compat_mts.checkpoints': 'compat_mts.checkpoint_dir.checkpoints',
    'compat_mts.directory_lock': 'compat_mts.checkpoint_dir.directory_lock',
    'compat_mts.deployment': 'compat_mts.deploy.deployment',
    'compat_mts.parameter_server': 'compat_mts.deploy.parameter_server',
    'compat_mts.preemption': 'compat_mts.deploy.preemption',
    'compat_mts.estimator.exporter': 'compat_mts.estimator.export.exporter',
    'compat_mts.estimator._saved_model': 'compat_mts.estimator.export._saved_model',
    'compat_mts.cli.check_catalogue': 'compat_mts.cli.check.catalogue',
    'compat_mts.cli.check_checker': 'compat_mts.cli.check.checker',
    'compat_mts.cli.check_names': 'compat_mts.cli.check.names',
    'compat_mts.cli.check_report': 'compat_mts.cli.check.report',
    'compat_mts.cli.upgrade_edits': 'compat_mts.cli.upgrade.edits',
    'compat_mts.cli.upgrade_probe': 'compat_mts.cli.upgrade.probe',
    'compat_mts.cli.upgrade_verify': 'compat_mts.cli.upgrade.verify',
    'compat_mts.cli.upgrade_write': 'compat_mts.cli.upgrade.write',
}

# Public path -> the module's path: the same module under both, without a warning.
PUBLIC = {'compat_mts.distribute': 'compat_mts.deploy.distribute'}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of `MOVED` and loads it as the module at its new path."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}  # Old path -> the new module's own spec.

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an old path of `MOVED` or a path of `PUBLIC`, None for every other name."""
        if fullname not in MOVED and fullname not in PUBLIC:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """The module at the new path, imported if it was not; warns that an old path of `MOVED` is deprecated."""
        new = PUBLIC.get(spec.name)
        if new is None:
            new = MOVED[spec.name]
            warnings.warn(
                f'{spec.name} moved to {new}; import it from there ({spec.name} goes in a future release)',
                DeprecationWarning,
                stacklevel=2,  # The importing line: `warnings` skips the import machinery's frames.
            )
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module ran under its new name. Gives it back its own `__spec__`, which the import
        system set to the old name's."""
        module.__spec__ = self._specs.pop(module.__spec__.name)


def install() -> None:
    """Puts the finder on `sys.meta_path`, after the finders of files (once per process)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
