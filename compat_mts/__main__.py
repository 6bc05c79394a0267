"""`python -m compat_mts`: the `compat-mts` command."""

import sys

from compat_mts.cli import main

sys.exit(main())
