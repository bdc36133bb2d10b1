"""Fast positional constructors for frozen, slotted dataclasses built on hot paths.

A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__`` (the class forbids
plain assignment), a Python-level call per field; building a reply command or a send result that
way costs several microseconds. :func:`slot_builder` makes a constructor that sets the fields
through the slots' own descriptors instead, without the keyword handling, defaults and
``__post_init__``: about a third of the cost. It is for values the library itself produces in
their final form (a read-only mapping, ``bytes``), never for user input that ``__post_init__``
would normalise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["slot_builder"]

_T = TypeVar("_T")


def slot_builder(cls: type[_T]) -> Callable[..., _T]:
    """A constructor taking every field of ``cls`` positionally, in declaration order.

    Raises:
        TypeError: ``cls`` is not a dataclass with ``slots=True``.
    """
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for name in names:
        descriptor = cls.__dict__.get(name)
        if descriptor is None or not hasattr(descriptor, "__set__"):
            raise TypeError(f"{cls.__name__}.{name} is not a slot")
        namespace[f"_set_{name}"] = descriptor.__set__
    body = "".join(f"    _set_{name}(obj, {name})\n" for name in names)
    source = f"def build({', '.join(names)}):\n    obj = _new(_cls)\n{body}    return obj\n"
    exec(source, namespace)  # as dataclasses builds __init__: one straight-line function
    build: Callable[..., _T] = namespace["build"]
    build.__qualname__ = f"{cls.__qualname__}.<slot builder>"
    return build
