"""Deprecation warnings that point at the user's line, not at ours.

An old name keeps working for one release and warns with :class:`DeprecationWarning`. The warning
is attributed to the first frame outside :mod:`rocketmq_py` (and outside :mod:`dataclasses`, whose
``replace`` calls a constructor for the user), so it names the caller's file and line whether the
old name was reached directly, through a facade (``rocketmq_py.aio``, ``rocketmq_py.sync``) or
through a helper of ours.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from typing import Final

__all__ = ["warn_deprecated"]

#: Frames in these files are ours (or call us on the user's behalf): the warning skips them.
_SKIPPED: Final = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.abspath(dataclasses.__file__),
)


def warn_deprecated(message: str) -> None:
    """Warn ``message`` as a :class:`DeprecationWarning` at the first caller outside this package.

    Args:
        message: says what is deprecated and names its replacement.
    """
    level = 2  # the caller of warn_deprecated
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_SKIPPED):
        frame = frame.f_back
        level += 1
    warnings.warn(message, DeprecationWarning, stacklevel=level)
