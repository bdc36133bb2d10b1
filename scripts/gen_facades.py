#!/usr/bin/env python3
"""Write the asyncio and blocking clients from one description and the trio classes.

    python scripts/gen_facades.py           rewrite rocketmq_py/aio/_generated.py and rocketmq_py/sync/_generated.py
    python scripts/gen_facades.py --check   exit 1, with a diff, when either is stale (``make lint``)

:data:`CLIENTS` is the description: for each client, the trio class it wraps, its docstring in each
facade, the hand-written base it inherits there (``aio/_bases.py``, ``sync/_bases.py``: what is
truly special, such as listeners run on the user's asyncio loop), and for every public member of the
trio class how each facade bridges it (:class:`Bridge`). Everything else is read from the trio
classes, so that nothing is typed twice: parameter names, kinds and annotations from
:func:`inspect.signature`, each default's expression from the source (so that a named constant
stays named; its value is checked against the signature's), docstrings from :func:`inspect.getdoc`,
and every name those use is imported from where the trio module imports it. The text is sorted and
formatted by ruff, so it is stable. A member of the trio class the description does not name, or a
name it describes that the class lacks, stops the generator: a new trio method gets a decision.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import importlib
import inspect
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent

# --- the description ---------------------------------------------------------------------------------

#: How a member crosses into a facade (``Bridge.kind``), per facade:
#:
#: asyncio (the guest shares the loop's thread)
#:   ``await``       ``await self._call(self._client.m, ...)``: the trio coroutine runs in the guest
#:   ``direct``      ``self._client.m(...)``: reads or sets state, no await
#:   ``property``    ``self._client.p``
#: blocking (the trio client lives in a portal thread)
#:   ``call``        ``self._call(self._client.m, ...)``: the coroutine runs in the portal's loop
#:   ``call_sync``   ``self._call_sync(self._client.m, ...)``: in the loop thread; the client must run
#:   ``read``        ``self._read(self._client.m, ...)``: in the loop thread while it runs, else directly
#:   ``property``    ``self._client.p``
#:   ``read_property`` ``self._read(lambda: self._client.p)``
#: both
#:   ``auto``        async method: ``await`` / ``call``; property: ``property``; other: ``direct`` / ``read``
#:   ``hand``        written by hand in the facade's base class (the generator checks it is there)
#:   ``lifecycle``   the facade's own (``aclose``: :class:`AioClient`; ``close`` of :class:`SyncClient`)
#:   ``trio_only``   not in the facade (loop-bound internals; the surface tests name them too)
KINDS: Final = {
    "aio": {"auto", "await", "direct", "property", "hand", "lifecycle", "trio_only"},
    "sync": {
        "auto",
        "call",
        "call_sync",
        "read",
        "property",
        "read_property",
        "hand",
        "lifecycle",
        "trio_only",
    },
}
#: The trio class's dunders a facade has too (async iteration); the blocking name is in the base.
PROTOCOL_DUNDERS: Final = ("__aiter__", "__anext__")
SYNC_NAMES: Final = {"__aiter__": "__iter__", "__anext__": "__next__", "aclose": "close"}


@dataclass(frozen=True)
class Bridge:
    """How one facade bridges one member of the trio class.

    Args:
        kind: one of :data:`KINDS` for that facade.
        adapt: parameter -> a callable (``list``, or a method of the base: ``self._on_loop``) the
            argument goes through first; an argument whose default is ``None`` passes ``None`` as is.
        on_lost: (``await``) a base method given the result a cancelled caller never got.
        fast_path: (``await``) call with the positional arguments alone when every keyword-only
            argument is ``None`` (their defaults): a send costs a little less.
        note: a paragraph added to the trio docstring, where the facade behaves differently.
    """

    kind: str = "auto"
    adapt: Mapping[str, str] = field(default_factory=dict)
    on_lost: str | None = None
    fast_path: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Member:
    """One member of the trio class in both facades.

    Args:
        aio: the asyncio bridge.
        sync: the blocking bridge.
        result: a callable (a dotted name: ``dataclasses.replace``) applied to the trio method's
            result (``direct`` / ``read`` methods only).
        alias_of: the member is a deprecated alias of this one: the facade method warns
            (``DeprecationWarning`` at the caller's line, "<Class>.<old> is deprecated; use <new>",
            the trio alias's own message) and then bridges the new name, with the alias's
            signature and docstring, so the trio alias is not called and does not warn again.
        deprecated: the method is a deprecated alias: the facade warns with this message (a
            DeprecationWarning at its caller) and calls the trio class's ``_<name>``, the alias's
            implementation, which does not warn (methods only).
    """

    aio: Bridge = field(default_factory=Bridge)
    sync: Bridge = field(default_factory=Bridge)
    result: str | None = None
    alias_of: str | None = None
    deprecated: str | None = None


@dataclass(frozen=True)
class Client:
    """One client class, in both facades.

    Args:
        trio: ``module:Class`` of the trio class.
        aio_doc, sync_doc: the facade class's docstring (how it is used there).
        members: every public member of the trio class (and its async iteration), in the order the
            generated class lists them. With ``parent``: only those the trio class adds to its parent's.
        parent: the facade class this one extends (as the trio class extends the parent's trio class).
        aio_base, sync_base: the hand-written base class in ``aio/_bases.py`` / ``sync/_bases.py``.
        init_aio, init_sync: the constructor's argument adapters (as :attr:`Bridge.adapt`).
    """

    trio: str
    aio_doc: str
    sync_doc: str
    members: Mapping[str, Member]
    parent: str | None = None
    aio_base: str | None = None
    sync_base: str | None = None
    init_aio: Mapping[str, str] = field(default_factory=dict)
    init_sync: Mapping[str, str] = field(default_factory=dict)


AUTO: Final = Member()
LIFECYCLE: Final = Member(aio=Bridge("lifecycle"), sync=Bridge("lifecycle"))
TRIO_ONLY: Final = Member(aio=Bridge("trio_only"), sync=Bridge("trio_only"))
HAND: Final = Member(aio=Bridge("hand"), sync=Bridge("hand"))
#: Plain methods the blocking client runs in the loop thread, and only while it runs.
IN_LOOP: Final = Member(sync=Bridge("call_sync"))
#: An ``async def`` callback is an asyncio coroutine on the client's loop (``AioClient._on_loop``).
ON_LOOP_NOTE: Final = (
    "In :mod:`rocketmq_py.aio` an ``async def`` callback is an asyncio coroutine, run on the "
    "client's loop; a plain function is called as in the trio API."
)


def _handler_deprecated(cls: str, name: str, request: str) -> str:
    """The warning of a deprecated broker-request entry point (as the trio class words it)."""
    return (
        f"{cls}.{name}() is deprecated and will be removed: only the broker's {request} request "
        f"calls it (privately, as {cls}._{name})"
    )


def _rebalance_deprecated(cls: str) -> str:
    """The warning of a consumer's deprecated ``rebalance()`` (as the trio class words it)."""
    return (
        f"{cls}.rebalance() is deprecated and will be removed: the consumer rebalances on its own "
        "(every rebalance_interval seconds, and at once when the group's members change)"
    )


CLIENTS: Final[Mapping[str, Client]] = {
    "Producer": Client(
        trio="rocketmq_py.producer._producer:Producer",
        aio_doc="""\
Sends messages to RocketMQ topics from asyncio code (Java ``DefaultMQProducer``).

The same producer as :class:`rocketmq_py.Producer`, hosted on the running asyncio loop::

    async with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send(Message("orders", b"hello", tags="new"))

Any number of asyncio tasks may send at once; errors are those of the trio producer, unchanged.
Cancelling a task cancels its send (a message already written may still be stored).

Args: as :class:`rocketmq_py.Producer`.
""",
        sync_doc="""\
Sends messages to RocketMQ topics, blocking (Java ``DefaultMQProducer``).

The same producer as :class:`rocketmq_py.Producer`, run in a background trio thread::

    with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        result = producer.send(Message("orders", b"hello", tags="new"))

or ``producer = Producer(...).start()`` ... ``producer.shutdown()``. Every method may be called
from several threads at once; errors are those of the async producer, unchanged.

Args: as :class:`rocketmq_py.Producer`.
""",
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "register_hook": AUTO,
            "client_id": AUTO,
            "statistics": AUTO,  # a frozen snapshot, built at each call (in the loop thread when blocking)
            "send": Member(aio=Bridge(fast_path=True)),
            "send_oneway": AUTO,
            "send_batch": AUTO,
            "request": AUTO,
            "recall": AUTO,
        },
    ),
    "TransactionProducer": Client(
        trio="rocketmq_py.producer._transaction:TransactionProducer",
        parent="Producer",
        aio_doc="""\
Transactional messages from asyncio code (Java ``TransactionMQProducer``).

Callbacks may be ``async def`` (asyncio coroutines run on the producer's loop) or plain
functions (run in a worker thread).

Args: as :class:`rocketmq_py.TransactionProducer`.
""",
        sync_doc="""\
Transactional messages, blocking (Java ``TransactionMQProducer``).

Callbacks may be plain functions (run in a worker thread of the client's loop) or async
functions. They must not call this producer's blocking methods.

Args: as :class:`rocketmq_py.TransactionProducer`.
""",
        init_aio={
            "check_local_transaction": "self._on_loop",
            "execute_local_transaction": "self._on_loop",
        },
        members={
            "send_message_in_transaction": Member(
                aio=Bridge(adapt={"execute_local_transaction": "self._on_loop"}, note=ON_LOOP_NOTE)
            ),
        },
    ),
    "PushConsumer": Client(
        trio="rocketmq_py.consumer._push:PushConsumer",
        aio_base="PushConsumerBase",
        aio_doc="""\
Consumes topics with a listener, from asyncio code (Java ``DefaultMQPushConsumer``).

An ``async def`` listener is an asyncio coroutine run on the consumer's loop (it may use any
asyncio library); a plain function runs in a worker thread::

    async def handle(msgs: list[MessageExt]) -> None:
        await db.insert_many(msgs)

    consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
    consumer.subscribe("orders", "TagA || TagB")
    async with consumer:
        await stop.wait()

A consume timeout or a shutdown cancels a running listener task and waits for it to end.
``on_assigned`` / ``on_revoked`` of a rebalance listener may be ``async def`` too (asyncio).

Args: as :class:`rocketmq_py.PushConsumer`.
""",
        sync_doc="""\
Consumes topics with a listener, blocking API (Java ``DefaultMQPushConsumer``).

The listener runs in the consumer's trio thread (async) or a worker thread (plain function)::

    consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
    consumer.subscribe("orders", "TagA || TagB")
    consumer.start()
    ...
    consumer.shutdown()

Args: as :class:`rocketmq_py.PushConsumer`.
""",
        init_aio={"listener": "self._on_loop", "rebalance_listener": "self._rebalance_on_loop"},
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "offsets": TRIO_ONLY,
            "register_hook": AUTO,
            "subscribe": AUTO,
            "register_listener": Member(aio=Bridge(adapt={"listener": "self._on_loop"}, note=ON_LOOP_NOTE)),
            "client_id": Member(sync=Bridge("read_property")),
            "assignment": AUTO,
            "owned_queues": Member(
                deprecated="PushConsumer.owned_queues() is deprecated: use sorted(PushConsumer.assignment())"
            ),
            "statistics": IN_LOOP,
            "pop_statistics": IN_LOOP,
            "rebalance": Member(deprecated=_rebalance_deprecated("PushConsumer")),
            "broadcasting": AUTO,
            "consumed": AUTO,
            "failed": AUTO,
            "running_info": Member(
                sync=Bridge("call_sync"),
                deprecated=_handler_deprecated("PushConsumer", "running_info", "GET_CONSUMER_RUNNING_INFO"),
            ),
            "reset_offsets": Member(
                deprecated=_handler_deprecated(
                    "PushConsumer", "reset_offsets", "RESET_CONSUMER_CLIENT_OFFSET"
                )
            ),
            "consume_directly": Member(
                deprecated=_handler_deprecated("PushConsumer", "consume_directly", "CONSUME_MESSAGE_DIRECTLY")
            ),
        },
    ),
    "LitePullConsumer": Client(
        trio="rocketmq_py.consumer._lite_pull:LitePullConsumer",
        aio_base="LitePullConsumerBase",
        sync_base="LitePullConsumerBase",
        aio_doc="""\
Pulls topics on demand from asyncio code (Java ``DefaultLitePullConsumer``)::

    async with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("orders")
        async for msg in consumer:  # ends when the consumer is closed
            await handle(msg)

Cancelling a task waiting in ``poll`` or ``getmany`` cancels the wait; messages not yet
handed out stay buffered for the next call.

Args: as :class:`rocketmq_py.LitePullConsumer`.
""",
        sync_doc="""\
Pulls topics on demand, blocking API (Java ``DefaultLitePullConsumer``)::

    with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("orders")
        for msg in consumer:  # ends when the consumer is shut down
            handle(msg)

Args: as :class:`rocketmq_py.LitePullConsumer`.
""",
        members={
            "aclose": LIFECYCLE,
            "instance": TRIO_ONLY,
            "offsets": TRIO_ONLY,
            "register_hook": AUTO,
            "subscribe": AUTO,
            "assign": Member(aio=Bridge(adapt={"queues": "list"}), sync=Bridge(adapt={"queues": "list"})),
            "register_queue_change_listener": Member(
                aio=Bridge(
                    adapt={"listener": "self._on_loop"},
                    note=(
                        "In :mod:`rocketmq_py.aio` an ``async def`` listener is an asyncio coroutine "
                        "run on this loop; a plain function is called on the loop too (it should not "
                        "block), so either may call this consumer's methods, e.g. ``assign``."
                    ),
                ),
                sync=Bridge(
                    adapt={"listener": "self._in_worker_thread"},
                    note=(
                        "In :mod:`rocketmq_py.sync` a plain function runs in a worker thread, so it "
                        "may block and call this consumer's methods (``assign``); an ``async def`` "
                        "runs in the consumer's trio thread."
                    ),
                ),
            ),
            "client_id": Member(sync=Bridge("read_property")),
            "broadcasting": AUTO,
            "assignment": AUTO,
            # Deprecated (trio property warns; reading it is thread-safe: never in the loop thread).
            "pull_threshold_for_all": Member(sync=Bridge("property")),
            "fetch_message_queues": AUTO,
            "rebalance": Member(deprecated=_rebalance_deprecated("LitePullConsumer")),
            "poll": Member(aio=Bridge(on_lost="self._unpoll")),
            "getmany": Member(aio=Bridge(on_lost="self._ungetmany")),
            "__aiter__": HAND,
            "__anext__": HAND,
            "pause": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge("call_sync", adapt={"queues": "list"})
            ),
            "resume": Member(
                aio=Bridge(adapt={"queues": "list"}), sync=Bridge("call_sync", adapt={"queues": "list"})
            ),
            "paused": AUTO,
            "seek": IN_LOOP,
            "seek_to_beginning": AUTO,
            "seek_to_begin": Member(alias_of="seek_to_beginning"),
            "seek_to_end": AUTO,
            "seek_to_timestamp": AUTO,
            "offset_for_timestamp": AUTO,
            "running_info": Member(
                sync=Bridge("call_sync"),
                deprecated=_handler_deprecated(
                    "LitePullConsumer", "running_info", "GET_CONSUMER_RUNNING_INFO"
                ),
            ),
            "reset_offsets": Member(
                deprecated=_handler_deprecated(
                    "LitePullConsumer", "reset_offsets", "RESET_CONSUMER_CLIENT_OFFSET"
                )
            ),
            "committed": AUTO,
            "commit": AUTO,
        },
    ),
}


@dataclass(frozen=True)
class Facade:
    """One facade package: where its generated module goes and what it builds on."""

    key: str  # "aio" or "sync"
    package: str
    root: str  # the base class every client has (its module: root_module)
    root_module: str
    docstring: str

    @property
    def out(self) -> Path:
        """The generated module, relative to the repository."""
        return Path(self.package.replace(".", "/")) / "_generated.py"

    @property
    def bases_module(self) -> str:
        """The module of the hand-written bases."""
        return f"{self.package}._bases"


FACADES: Final = (
    Facade(
        key="aio",
        package="rocketmq_py.aio",
        root="AioClient",
        root_module="rocketmq_py.aio._client",
        docstring=(
            "The asyncio clients: each hosts the trio client of the same name on the running loop\n"
            "(:class:`~rocketmq_py.aio._client.AioClient`); hand-written parts in ``_bases.py``.\n"
        ),
    ),
    Facade(
        key="sync",
        package="rocketmq_py.sync",
        root="SyncClient",
        root_module="rocketmq_py.sync._facade",
        docstring=(
            "The blocking clients: each runs the trio client of the same name in a portal thread\n"
            "(:class:`~rocketmq_py.sync._facade.SyncClient`); hand-written parts in ``_bases.py``.\n"
        ),
    ),
)

HEADER: Final = """\
# Generated by scripts/gen_facades.py from its description and the trio classes: do not edit.
# Change the trio class or the description and run `python scripts/gen_facades.py`;
# `make lint` runs it with --check, which fails while this file is stale.
"""
#: The trio API's ``timeout`` parameters keep their names in the asyncio methods.
AIO_NOQA: Final = "# ruff: noqa: ASYNC109\n"


#: The docstring sections a facade's note goes before.
SECTIONS: Final = ("Args:", "Returns:", "Raises:", "Yields:", "Example:", "Examples:")


class DescriptionError(Exception):
    """The description and the trio classes disagree, or the generator cannot render something."""


# --- reading the trio classes ---------------------------------------------------------------------


def _load(qualified: str) -> type[Any]:
    module, _, name = qualified.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type)
    return cls


def _owner(cls: type[Any], name: str) -> type[Any]:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def _members_of(client: Client, trio_cls: type[Any]) -> list[str]:
    """The trio class's members the description must name (see :attr:`Client.members`)."""
    names = {n for n in dir(trio_cls) if not n.startswith("_")} | {
        n for n in PROTOCOL_DUNDERS if hasattr(trio_cls, n)
    }
    if client.parent is not None:
        parent_trio = _load(CLIENTS[client.parent].trio)
        names = {n for n in names if _owner(trio_cls, n) not in parent_trio.__mro__}
    return sorted(names)


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


def _signature(fn: Callable[..., Any], imports: Imports) -> Signature:
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


def _docstring(doc: str | None, note: str | None, where: str) -> str:
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


# --- writing one facade ---------------------------------------------------------------------------


def _call_expr(facade: Facade, kind: str, target: str, args: list[str]) -> str:
    joined = ", ".join([target, *args])
    return {
        "await": f"await self._call({joined})",
        "call": f"self._call({joined})",
        "call_sync": f"self._call_sync({joined})",
        "read": f"self._read({joined})",
    }[kind]


def _method(
    facade: Facade, client_name: str, name: str, trio_cls: type[Any], member: Member, imports: Imports
) -> str | None:
    bridge = member.aio if facade.key == "aio" else member.sync
    if bridge.kind in ("trio_only", "lifecycle", "hand"):
        return None
    raw = inspect.getattr_static(trio_cls, name)
    where = f"{trio_cls.__name__}.{name}"
    note = bridge.note
    if member.deprecated is not None and (isinstance(raw, property) or not hasattr(trio_cls, f"_{name}")):
        raise DescriptionError(f"{where}: a deprecated alias is a method with an implementation _{name}")
    if isinstance(raw, property):
        kind = bridge.kind if bridge.kind != "auto" else "property"
        if raw.fset is not None or raw.fget is None:
            raise DescriptionError(f"{where}: only read-only properties are bridged")
        sig = _signature(raw.fget, imports)
        body = {
            "property": f"return self._client.{name}",
            "read_property": f"return self._read(lambda: self._client.{name})",
        }.get(kind)
        if body is None:
            raise DescriptionError(f"{where}: a property cannot be bridged as {kind!r}")
        doc = _docstring(inspect.getdoc(raw), note, where)
        return f"@property\ndef {name}({sig.text}) -> {sig.returns}:\n    {doc}\n    {body}\n"
    fn = getattr(trio_cls, name)
    is_async = inspect.iscoroutinefunction(fn)
    kind = bridge.kind
    if kind == "auto":
        kind = (
            ("await" if facade.key == "aio" else "call")
            if is_async
            else ("direct" if facade.key == "aio" else "read")
        )
    if (
        kind not in KINDS[facade.key]
        or (kind in ("await", "call") and not is_async)
        or (kind not in ("await", "call") and is_async)
    ):
        raise DescriptionError(f"{where}: cannot be bridged as {kind!r} in {facade.package}")
    if (bridge.on_lost is not None or bridge.fast_path) and kind not in ("await", "call"):
        raise DescriptionError(f"{where}: on_lost and fast_path are for coroutines")
    if bridge.on_lost is not None and kind != "await":
        raise DescriptionError(f"{where}: on_lost is for the asyncio facade (a cancelled caller)")
    sig = _signature(fn, imports)
    target = f"self._client.{name}" if member.deprecated is None else f"self._client._{name}"
    args = sig.arguments(bridge.adapt)
    returns_none = sig.returns == "None"
    lead = "" if returns_none else "return "
    lines: list[str] = []
    if member.alias_of is not None:
        new = getattr(trio_cls, member.alias_of, None)
        if new is None or inspect.signature(new) != inspect.signature(fn):
            raise DescriptionError(f"{where}: an alias of {member.alias_of}, which has another signature")
        if inspect.iscoroutinefunction(new) != is_async:
            raise DescriptionError(f"{where}: an alias of {member.alias_of}, which is not as async")
        imports.names.setdefault("warnings", ("warnings", None, None))
        message = f"{client_name}.{name} is deprecated; use {member.alias_of}"
        lines.append(f"warnings.warn({message!r}, DeprecationWarning, stacklevel=2)")
        target = f"self._client.{member.alias_of}"
    if member.deprecated is not None:
        imports.names.setdefault("warnings", ("warnings", None, None))
        lines.append(f"warnings.warn({member.deprecated!r}, DeprecationWarning, stacklevel=2)")
    if member.result is not None:
        if kind not in ("direct", "read"):
            raise DescriptionError(f"{where}: a result adapter needs a direct or read bridge")
        head = member.result.split(".")[0]
        if "." in member.result:
            imports.names.setdefault(head, (head, None, None))
        inner = f"{member.result}({target}({', '.join(args)}))"
        lines.append(f"{lead}{inner}" if kind == "direct" else f"{lead}self._read(lambda: {inner})")
    elif kind == "direct":
        lines.append(f"{lead}{target}({', '.join(args)})")
    elif kind == "await" and bridge.on_lost is not None:
        lines.append(f"{lead}await self._call_keeping({', '.join([bridge.on_lost, target, *args])})")
    else:
        if bridge.fast_path:
            keywords = [p for p in sig.params if p.kind is inspect.Parameter.KEYWORD_ONLY]
            if not keywords or any(p.default is not None or p.name in bridge.adapt for p in keywords):
                raise DescriptionError(
                    f"{where}: the fast path needs keyword-only arguments defaulting to None"
                )
            condition = " and ".join(f"{p.name} is None" for p in keywords)
            short = _call_expr(facade, kind, target, sig.arguments(bridge.adapt, positional_only=True))
            lines.append("# Nothing to pass on but the positional arguments: a call costs a little less.")
            lines.append(f"if {condition}:")
            lines.append(f"    {lead}{short}" if not returns_none else f"    {short}\n    return")
        lines.append(lead + _call_expr(facade, kind, target, args))
    doc = _docstring(inspect.getdoc(fn), note, where)
    prefix = "async def" if kind == "await" else "def"
    body = "\n".join("    " + line for line in "\n".join(lines).split("\n"))
    return f"{prefix} {name}({sig.text}) -> {sig.returns}:\n    {doc}\n{body}\n"


def _hand_written(facade: Facade) -> dict[str, set[str]]:
    """Class -> the names it defines, in the facade's hand-written bases module."""
    path = ROOT / (facade.bases_module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    return {
        node.name: {
            item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _class(facade: Facade, name: str, client: Client, imports: Imports, bases: dict[str, set[str]]) -> str:
    trio_cls = _load(client.trio)
    trio_alias = f"Trio{name}"
    module_name, _, trio_name = client.trio.partition(":")
    imports.names[trio_alias] = (module_name, trio_name, trio_cls)
    described = list(client.members)
    expected = _members_of(client, trio_cls)
    missing, extra = sorted(set(expected) - set(described)), sorted(set(described) - set(expected))
    if missing or extra:
        raise DescriptionError(
            f"{name}: the description misses {missing} and names {extra}, which the trio class lacks"
        )
    base_name = client.aio_base if facade.key == "aio" else client.sync_base
    if client.parent is not None:
        base = client.parent
        init_call = f"{facade.root}.__init__(self, {trio_alias}(%s))"
        imports.names[facade.root] = (facade.root_module, facade.root, None)
    elif base_name is not None:
        base = base_name
        imports.names[base_name] = (facade.bases_module, base_name, None)
        init_call = f"super().__init__({trio_alias}(%s))"
    else:
        base = f"{facade.root}[{trio_alias}]"
        imports.names[facade.root] = (facade.root_module, facade.root, None)
        init_call = f"super().__init__({trio_alias}(%s))"
    hand = bases.get(base_name or "", set())
    for member_name, member in client.members.items():
        bridge = member.aio if facade.key == "aio" else member.sync
        own = member_name if facade.key == "aio" else SYNC_NAMES.get(member_name, member_name)
        if bridge.kind == "hand" and own not in hand:
            raise DescriptionError(f"{name}.{own}: described as hand-written, but {base_name} lacks it")
    doc = client.aio_doc if facade.key == "aio" else client.sync_doc
    out = [f"class {name}({base}):", textwrap.indent(f'"""{doc}"""', "    "), ""]
    if client.parent is not None:
        out += [f"    _client: {trio_alias}", ""]
    init = _signature(trio_cls.__init__, imports)
    adapt = client.init_aio if facade.key == "aio" else client.init_sync
    call = init_call % ", ".join(init.arguments(adapt))
    out.append(textwrap.indent(f"def __init__({init.text}) -> None:\n    {call}\n", "    "))
    for member_name, member in client.members.items():
        text = _method(facade, name, member_name, trio_cls, member, imports)
        if text is not None:
            out.append(textwrap.indent(text, "    "))
    return "\n".join(out) + "\n"


def render(facade: Facade) -> str:
    """The generated module of ``facade``, formatted."""
    bases = _hand_written(facade)
    # The names the generated module defines or imports for itself: the trio modules' may not clash.
    imports = Imports({*CLIENTS, *(f"Trio{n}" for n in CLIENTS), facade.root, *bases})
    classes = [_class(facade, name, client, imports, bases) for name, client in CLIENTS.items()]
    all_names = ", ".join(f'"{n}"' for n in sorted(CLIENTS))
    text = "\n".join(
        [
            HEADER + (AIO_NOQA if facade.key == "aio" else ""),
            f'"""{facade.docstring}"""',
            "",
            "from __future__ import annotations",
            "",
            *imports.lines(),
            "",
            f"__all__ = [{all_names}]",
            "",
            *classes,
        ]
    )
    return _ruff(text, facade.out)


def _ruff(text: str, path: Path) -> str:
    """``text`` with its imports sorted and formatted by ruff, as the project configures it."""
    for args in (["check", "--select", "I", "--fix", "--quiet", "--exit-zero"], ["format"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        if done.returncode != 0:
            raise DescriptionError(f"ruff {args[0]} failed on the generated {path.name}:\n{done.stderr}")
        text = done.stdout
    return text


def stale(root: Path = ROOT, facades: Sequence[Facade] = FACADES) -> dict[Path, str]:
    """The generated files under ``root`` that differ from what the description gives.

    Returns:
        Each stale file's path (relative to ``root``) -> a unified diff from it to what it should be.
    """
    diffs: dict[Path, str] = {}
    for facade in facades:
        want = render(facade)
        path = root / facade.out
        have = path.read_text() if path.exists() else ""
        if want != have:
            diffs[facade.out] = "".join(
                difflib.unified_diff(
                    have.splitlines(keepends=True),
                    want.splitlines(keepends=True),
                    f"{facade.out} (on disk)",
                    f"{facade.out} (generated)",
                )
            )
    return diffs


def main(argv: Sequence[str] | None = None) -> int:
    """Write the generated modules, or (``--check``) report those that are stale."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when stale")
    options = parser.parse_args(argv)
    if options.check:
        diffs = stale()
        for diff in diffs.values():
            sys.stdout.write(diff)
        if diffs:
            names = ", ".join(map(str, diffs))
            print(f"stale: {names}; run `python scripts/gen_facades.py`", file=sys.stderr)
            return 1
        return 0
    for facade in FACADES:
        text = render(facade)
        path = ROOT / facade.out
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {facade.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the trio classes, from this checkout
    sys.exit(main())
