"""`python -m compat_mts.cli.check FILE...`, and from a source tree `python compat_mts/cli/check FILE...`: the
`compat-mts check` command on its own."""

import sys

if __package__:
    from compat_mts.cli import check
else:  # `python compat_mts/cli/check FILE...`: the package is not importable; the command is read from its file.
    import importlib.util
    import pathlib

    _spec = importlib.util.spec_from_file_location('compat_mts_check', pathlib.Path(__file__).with_name('__init__.py'))
    check = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = check
    _spec.loader.exec_module(check)

sys.exit(check.main())
