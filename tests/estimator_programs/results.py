"""What the runners of `tests/estimator_programs` print for the tests: plain JSON values of their results.

The runners run under TF 2.15 (a child process) and under compat_mts, so their results cross a process as JSON.
"""

import numpy as np


def plain(value):
    """`value` with NumPy arrays and scalars, tuples and bytes made JSON lists, numbers and strings."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def error_of(call):
    """`[class name, message]` of what `call()` raises, or None: the runners compare which error each side raises."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - recorded, for the test to compare.
        return [type(error).__name__, str(error)]
    return None
