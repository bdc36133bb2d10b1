"""Fail the import of :mod:`spark_connector` with the install command when the ``spark`` extra is missing.

Without it the first ``import pyarrow`` deep inside the connector would end the import with a bare
``ModuleNotFoundError: No module named 'pyarrow'``, which does not say that rocketmq-py has an extra
for it.
"""

from __future__ import annotations

import importlib
from typing import Final

__all__ = ["INSTALL_HINT", "SPARK_EXTRA_MODULES", "require_spark_extra"]

#: The modules of the ``spark`` extra (and what it pulls in) that the connector imports.
SPARK_EXTRA_MODULES: Final = ("pyarrow", "pyspark", "numpy")
#: How to install them.
INSTALL_HINT: Final = "pip install 'rocketmq-py[spark]'"


def require_spark_extra() -> None:
    """Import each of :data:`SPARK_EXTRA_MODULES`.

    Raises:
        ImportError: one is missing (or blocked); the message names it and :data:`INSTALL_HINT`,
            ``name`` is the missing module and the original error is the ``__cause__``.
    """
    for module in SPARK_EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"spark_connector needs the 'spark' extra ({module} is not installed): {INSTALL_HINT}",
                name=module,
            ) from exc


require_spark_extra()
