"""Read the trio classes for the facade generator: signatures, defaults and docstrings as source text.

Parameter names, kinds and annotations come from :func:`inspect.signature`, each default's
expression from the source (so that a named constant stays named; its value is checked against
the signature's), docstrings from :func:`inspect.getdoc`; :class:`Imports` finds where the trio
module imports every name those use, so that the generated module imports it from there too.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

#: The docstring sections a facade's note goes before.
SECTIONS: Final = ("Args:", "Returns:", "Raises:", "Yields:", "Example:", "Examples:")


class DescriptionError(Exception):
    """The description and the trio classes disagree, or the generator cannot render something."""


def load_class(qualified: str) -> type[Any]:
    """The class ``module:Class`` names."""
    module, _, name = qualified.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type)
    return cls


class Imports:
    """The names the generated module uses, each imported from where the trio module imports it."""

    def __init__(self, reserved: set[str]) -> None:
        self.reserved = reserved
        self.names: dict[str, tuple[str, str | None, object]] = {}  # local -> (module, name or None, value)
        self._tables: dict[str, dict[str, tuple[str, str | None]]] = {}

    def table(self, module_name: str) -> dict[str, tuple[str, str | None]]:
        """Local name -> (module, imported name; ``None``: the module itself) in ``module_name``."""
        if module_name not in self._tables:
            tree = ast.parse(inspect.getsource(sys.modules[module_name]))
            found: dict[str, tuple[str, str | None]] = {}
            for node in tree.body:
                if isinstance(node, ast.ImportFrom):
                    if node.level or node.module is None:
                        raise DescriptionError(f"{module_name}: relative imports are not supported")
                    for alias in node.names:
                        found[alias.asname or alias.name] = (node.module, alias.name)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname is None and "." not in alias.name:
                            found[alias.name] = (alias.name, None)
                elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    found[node.name] = (module_name, node.name)
                elif isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            found[target.id] = (module_name, target.id)
            # (names imported under `if TYPE_CHECKING:` are left out: the facade would need them at run time)
            self._tables[module_name] = found
        return self._tables[module_name]

    def use(self, source: str, module_name: str) -> None:
        """Import every name ``source`` (an expression) uses, as module ``module_name`` resolves it."""
        for node in ast.walk(ast.parse(source, mode="eval")):
            if isinstance(node, ast.Name):
                self.add(node.id, module_name)

    def add(self, name: str, module_name: str) -> None:
        """Import ``name`` as ``module_name`` has it."""
        if name in self.reserved:
            raise DescriptionError(f"{module_name} uses {name!r}, a name the generated module defines")
        origin = self.table(module_name).get(name)
        if origin is None:
            if hasattr(builtins, name):
                return
            raise DescriptionError(f"{module_name}: cannot tell where {name!r} comes from")
        value = sys.modules[module_name].__dict__.get(name)
        known = self.names.get(name)
        if known is not None and known[:2] != origin and known[2] is not value:
            raise DescriptionError(f"{name!r} means two things: {known[:2]} and {origin}")
        self.names.setdefault(name, (*origin, value))

    def lines(self) -> list[str]:
        """The import statements (ruff sorts them)."""
        out = []
        for local, (module, name, _) in sorted(self.names.items()):
            if name is None:
                out.append(f"import {module}")
            elif name == local:
                out.append(f"from {module} import {name}")
            else:
                out.append(f"from {module} import {name} as {local}")
        return out


def _defaults(fn: Callable[..., Any]) -> dict[str, str]:
    """Parameter -> the source of its default, as the function's ``def`` spells it."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise DescriptionError(f"{fn.__qualname__}: not a function definition")
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    out = {
        a.arg: ast.unparse(d)
        for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    }
    out.update(
        {
            a.arg: ast.unparse(d)
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is not None
        }
    )
    return out


@dataclass(frozen=True)
class Signature:
    """A trio function's parameters as source text."""

    params: list[inspect.Parameter]  # without self
    text: str  # "self, a: int, *, b: str = B" (annotations and defaults as in the trio source)
    returns: str

    def argument(self, param: inspect.Parameter, adapt: Mapping[str, str]) -> str:
        """How the facade passes ``param`` on (adapted when ``adapt`` names it)."""
        value = param.name
        adapter = adapt.get(param.name)
        if adapter is not None:
            value = f"{adapter}({value})"
            if param.default is None:
                value = f"(None if {param.name} is None else {value})"
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return f"*{value}"
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            return f"**{value}"
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            return f"{param.name}={value}"
        return value

    def arguments(self, adapt: Mapping[str, str], *, positional_only: bool = False) -> list[str]:
        """The call's arguments (``positional_only``: leave the keyword-only ones out)."""
        unknown = set(adapt) - {p.name for p in self.params}
        if unknown:
            raise DescriptionError(f"adapters for parameters that do not exist: {sorted(unknown)}")
        return [
            self.argument(p, adapt)
            for p in self.params
            if not (positional_only and p.kind is inspect.Parameter.KEYWORD_ONLY)
        ]


def signature_of(fn: Callable[..., Any], imports: Imports) -> Signature:
    """The method ``fn``'s parameters as its source spells them; ``imports`` gets every name they use."""
    sig = inspect.signature(fn)
    module_name = fn.__module__
    defaults = _defaults(fn)
    namespace = vars(sys.modules[module_name])
    parts: list[str] = []
    params = list(sig.parameters.values())
    if not params or params[0].name != "self":
        raise DescriptionError(f"{fn.__qualname__}: not a method")
    star_done = False
    for i, p in enumerate(params):
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            star_done = True
        text = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(p.kind.name, "") + p.name
        if p.annotation is not inspect.Parameter.empty:
            if not isinstance(p.annotation, str):
                raise DescriptionError(f"{fn.__qualname__}: annotations must be strings (postponed)")
            imports.use(p.annotation, module_name)
            text += f": {p.annotation}"
        if p.default is not inspect.Parameter.empty:
            source = defaults[p.name]
            if eval(source, namespace) != p.default:
                raise DescriptionError(f"{fn.__qualname__}: the default of {p.name} is not {source}")
            imports.use(source, module_name)
            text += f" = {source}" if p.annotation is not inspect.Parameter.empty else f"={source}"
        parts.append(text)
        if p.kind is inspect.Parameter.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind is not inspect.Parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
    returns = sig.return_annotation
    if returns is inspect.Signature.empty or not isinstance(returns, str):
        raise DescriptionError(f"{fn.__qualname__}: needs a return annotation (postponed)")
    imports.use(returns, module_name)
    return Signature(params=params[1:], text=", ".join(parts), returns=returns)


def docstring_text(doc: str | None, note: str | None, where: str) -> str:
    """The docstring literal of a facade member: the trio one (``doc``), with ``note`` before its sections."""
    if not doc:
        raise DescriptionError(f"{where}: the trio member has no docstring")
    text = doc.strip()
    if note:
        # After the summary and prose, before the first section (Args:, Returns:, Raises:).
        lines = text.split("\n")
        at = next((i for i, line in enumerate(lines) if line in SECTIONS), len(lines))
        paragraph = textwrap.wrap(note, width=96)
        lines[at:at] = [*paragraph, ""] if at < len(lines) else ["", *paragraph]
        text = "\n".join(lines)
    if '"""' in text or "\\" in text:
        raise DescriptionError(f"{where}: the docstring needs escaping")
    if "\n" in text:
        text += "\n"
    return '"""' + text + '"""'
