"""The `compat-mts` command line (`compat_mts.cli:main`), and what only it runs.

- `main`: the argparse front end, one subcommand per job (`compat_mts.cli.main`);
- `compat_mts.cli.check` (with its catalogue of v1 constructs, `check.catalogue`): `compat-mts check`, which reads
  scripts without TensorFlow and lists what they still have to migrate;
- `compat_mts.cli.demo`: `compat-mts demo`, a small training run that shows the session at work.

Importing the package imports no TensorFlow: the subcommands that need it import it when they run.
"""

from compat_mts.cli.main import main

__all__ = ['main']
