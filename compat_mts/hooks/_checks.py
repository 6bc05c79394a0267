"""Argument checks shared by the hooks' constructors."""

from __future__ import annotations

import numbers
from typing import Any


def check_optional_int(value: Any, argument: str) -> None:
    """`value` must be None or an integer (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
        raise TypeError(f'`{argument}` must be None or an integer, got {value!r} ({type(value).__name__}).')


def check_optional_number(value: Any, argument: str) -> None:
    """`value` must be None or a real number (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f'`{argument}` must be None or a number, got {value!r} ({type(value).__name__}).')


def check_optional_path(value: Any, argument: str) -> None:
    """`value` must be None or a path (str or os.PathLike)."""
    if value is not None and not isinstance(value, (str, bytes)) and not hasattr(value, '__fspath__'):
        raise TypeError(f'`{argument}` must be None or a directory path, got {type(value).__name__}.')
