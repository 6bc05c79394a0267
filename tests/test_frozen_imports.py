"""TensorFlow's import-time objects are frozen out of the cyclic collector, in either import order, and nothing a
program makes afterwards is: a file it leaves open in a reference cycle is still written at the exit. A
`tf.distribute.Server` made before `import compat_mts` (so frozen) is still found as the session's own.

Each case is a fresh interpreter: what is frozen depends on what the process imported before.
"""

from __future__ import annotations

import pytest

from compat_mts import _frozen_imports
from tests.support import run_python, run_pythons

pytestmark = pytest.mark.slow

_COMPAT_MTS_FIRST = """
import gc, sys
import compat_mts
before = gc.get_freeze_count()
import tensorflow as tf
print(before, gc.get_freeze_count() > 100000)
class Holder:
    pass
holder = Holder()
holder.itself = holder
holder.file = open(sys.argv[1], 'w')
holder.file.write('written at the exit\\n')
"""
_TENSORFLOW_FIRST = """
import gc
import tensorflow as tf
server = tf.distribute.Server.create_local_server()
import compat_mts
from compat_mts.deploy import distribute
print(gc.get_freeze_count() > 100000, distribute._own_server(server.target) is server)
"""


def test_the_import_time_objects_are_frozen_and_the_programs_are_still_collected_at_the_exit(tmp_path):
    written = tmp_path / 'left_open.txt'
    mts_first, tf_first = run_pythons((_COMPAT_MTS_FIRST, str(written)), (_TENSORFLOW_FIRST,), fresh=True)
    opted_out = run_python(
        'import gc, compat_mts, tensorflow; print(gc.get_freeze_count())',
        env={_frozen_imports.OPT_OUT_VARIABLE: '1'},
        fresh=True,
    )
    for result in (mts_first, tf_first, opted_out):
        assert result.returncode == 0, result.stderr[-3000:]
    assert mts_first.stdout.split() == ['0', 'True']
    assert written.read_text() == 'written at the exit\n'
    assert tf_first.stdout.split() == ['True', 'True']
    assert opted_out.stdout.split() == ['0']
