"""An in-process fake broker (and NameServer) for deterministic transport and service tests.

:class:`FakeBroker` is a trio TCP server on ``127.0.0.1`` (a random port) that speaks the
remoting protocol through our own codec, never through the client's transport::

    async with FakeBroker() as fb:
        fb.on(RequestCode.HEART_BEAT, answer_success)
        async with open_connection(fb.address) as conn:
            ...
        assert fb.received[0].code == RequestCode.HEART_BEAT

What it offers:

- **handlers** per request code (:meth:`FakeBroker.on`); a handler returns the response, or
  ``None`` for none, or raises :class:`~rocketmq_py.errors.BrokerError` to answer with that
  error's code and remark. Other exceptions are bugs in the test and crash the ``async with``.
  A code with no handler is answered ``REQUEST_CODE_NOT_SUPPORTED``, as a real server does;
- **a record** of every frame clients sent (:attr:`FakeBroker.received`), with waiting helpers;
- **broker -> client requests** (:meth:`FakeBroker.send_to_client`);
- **fault injection**: delayed replies, requests never answered, connections dropped after N
  frames or when a given code arrives, raw garbage bytes, dropping every client now;
- **default handlers** answering enough of the real protocol for service tests (details in
  ``_fake_store`` and the handler modules it names): ``GET_ROUTEINFO_BY_TOPIC`` from in-memory routes (:meth:`FakeBroker.add_topic`,
  :meth:`FakeBroker.set_route`), ``SEND_MESSAGE``/``SEND_MESSAGE_V2``/``SEND_BATCH_MESSAGE``
  storing messages per (topic, queue), ``PULL_MESSAGE`` answering ``FOUND`` with stored-message
  records or ``PULL_NOT_FOUND`` (with long polling), consumer offsets, queue bounds and search
  by time, ``HEART_BEAT`` and ``UNREGISTER_CLIENT`` (keeping each consumer group's members),
  ``GET_CONSUMER_LIST_BY_GROUP`` and ``CONSUMER_SEND_MSG_BACK`` (into the group's retry topic).

Replies, delays and drops run in tasks of the broker's nursery, so they follow trio's clock:
under ``autojump_clock`` a ten-second delay takes no real time.
"""

from __future__ import annotations

import dataclasses
import functools
import ssl
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Final, Self

import trio

from rocketmq_py._transport._nursery import open_service_nursery
from rocketmq_py.errors import BrokerError, ConnectionFailed, ProtocolError, RequestTimeout, StateError
from rocketmq_py.protocol._bodies import TopicRouteData
from rocketmq_py.protocol._codes import DEFAULT_VERSION, FLAG_RESPONSE, ResponseCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._frame import DEFAULT_MAX_FRAME_SIZE, FrameBuffer
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.testing._fake_client import FakeClient, PendingReply
from rocketmq_py.testing._fake_groups import GroupHandlers
from rocketmq_py.testing._fake_handlers import BrokerHandler
from rocketmq_py.testing._fake_messages import MessageHandlers
from rocketmq_py.testing._fake_pop import FakePop
from rocketmq_py.testing._fake_store import DEFAULT_PERM, FakeStore

__all__ = ["DEFAULT_GARBAGE", "BrokerHandler", "FakeBroker", "FakeClient"]

#: What :meth:`FakeBroker.send_garbage` sends by default: a frame length of -1, which no
#: decoder may accept.
DEFAULT_GARBAGE: Final = b"\xff\xff\xff\xffnot a remoting frame"

_RECEIVE_CHUNK: Final = 64 * 1024


class FakeBroker:
    """An in-process remoting server for tests; see the module docstring.

    Args:
        broker_name: the name the default handlers give this broker in routes.
        cluster_name: the cluster name in routes.
        ssl_context: a *server-side* context to speak TLS.
        serialize_type: header encoding of the broker's responses and requests.
        max_frame_size: the largest frame accepted from clients.
        defaults: install the default handlers (route, send, pull, offsets, heartbeat).
        auto_create_topics: a send to an unknown topic creates it (with the header's
            ``defaultTopicQueueNums`` queues) instead of failing TOPIC_NOT_EXIST.
        version: the ``MQVersion`` ordinal stamped on every response (default 5.3.3's); below
            5.1.1 the default SEARCH_OFFSET_BY_TIMESTAMP answers as 4.x does (the nearest message).
    """

    def __init__(
        self,
        *,
        broker_name: str = "broker-a",
        cluster_name: str = "DefaultCluster",
        ssl_context: ssl.SSLContext | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        defaults: bool = True,
        auto_create_topics: bool = False,
        version: int = DEFAULT_VERSION,
    ) -> None:
        self.broker_name = broker_name
        self.version = version
        self.cluster_name = cluster_name
        #: Every frame clients sent, requests and responses, in arrival order.
        self.received: list[RemotingCommand] = []
        #: Requests sent to clients by :meth:`send_to_client`, as sent (with their opaque).
        self.sent: list[RemotingCommand] = []
        #: Connections accepted so far.
        self.accepted = 0
        self._ssl_context = ssl_context
        self._serialize_type = serialize_type
        self._max_frame_size = max_frame_size
        self._handlers: dict[int, BrokerHandler] = {}
        self._clients: list[FakeClient] = []
        self._delays: dict[int, float] = {}
        self._never_reply: set[int] = set()
        self._drop_on: set[int] = set()
        self._drop_after: int | None = None
        self._next_opaque = 0
        self._changed = trio.Event()
        self._address: str | None = None
        self._nursery: trio.Nursery | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._store = FakeStore(self, auto_create_topics=auto_create_topics)
        # The default handlers, each on the store (kept as attributes: tests wrap a default one).
        self._messages = MessageHandlers(self._store)
        self._groups = GroupHandlers(self._store)
        self._pop = FakePop(self._store)
        self._defaults = defaults
        if defaults:
            self._messages.install(self._handlers)
            self._groups.install(self._handlers)
            self._pop.install(self._handlers)

    def __repr__(self) -> str:
        return f"<FakeBroker {self._address or 'not started'}, {len(self.received)} frames received>"

    # --- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._exit_stack is not None:
            raise StateError("a FakeBroker can be entered only once")
        stack = AsyncExitStack()
        nursery = await stack.enter_async_context(open_service_nursery())
        try:
            serve = functools.partial(trio.serve_tcp, self._serve_client, 0, host="127.0.0.1")
            listeners: list[trio.SocketListener] = await nursery.start(serve)
        except BaseException as exc:
            nursery.cancel_scope.cancel()
            await stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        host, port = listeners[0].socket.getsockname()[:2]
        self._address = f"{host}:{port}"
        if self._defaults:
            nursery.start_soon(self._pop.revive_loop)
        self._nursery = nursery
        self._exit_stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._exit_stack is not None
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        return await self._exit_stack.__aexit__(exc_type, exc, tb)

    @property
    def address(self) -> str:
        """``"127.0.0.1:<port>"``, once the broker is serving."""
        if self._address is None:
            raise StateError("the FakeBroker is not serving yet (use `async with FakeBroker()`)")
        return self._address

    @property
    def clients(self) -> list[FakeClient]:
        """The client connections still open, oldest first."""
        return [client for client in self._clients if client.is_open]

    # --- handlers ------------------------------------------------------------------------------

    def on(self, code: int, handler: BrokerHandler) -> None:
        """Answer requests with ``code`` by ``handler`` (replacing any earlier one or default).

        The handler also sees oneway requests, and must return ``None`` for them.
        """
        self._handlers[code] = handler

    def on_reply(
        self,
        code: int,
        response_code: int = ResponseCode.SUCCESS,
        *,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> None:
        """Answer every request with ``code`` by a fixed response."""

        async def reply(request: RemotingCommand) -> RemotingCommand | None:
            if request.is_oneway:
                return None
            return RemotingCommand.response(request, response_code, remark, ext_fields, body)

        self.on(code, reply)

    def refuse(self, code: int) -> None:
        """Answer requests with ``code`` REQUEST_CODE_NOT_SUPPORTED, as a server that does not know it
        (an older broker, or a 5.x Proxy for a code its ``RemotingProtocolServer`` does not register)."""
        self._handlers.pop(code, None)

    # --- faults ----------------------------------------------------------------------------------

    def delay(self, code: int, seconds: float) -> None:
        """Hold the response to requests with ``code`` for ``seconds`` (trio time)."""
        self._delays[code] = seconds

    def never_reply(self, code: int) -> None:
        """Run the handler for ``code`` but never send its response."""
        self._never_reply.add(code)

    def drop_on(self, code: int) -> None:
        """Close the connection, unanswered, when a request with ``code`` arrives."""
        self._drop_on.add(code)

    def drop_after(self, frames: int) -> None:
        """Close each connection, without answering, when it has brought ``frames`` frames.

        The ``frames``-th frame is recorded but not answered; requests before it are answered.
        """
        if frames < 1:
            raise ValueError("frames must be at least 1")
        self._drop_after = frames

    def clear_faults(self) -> None:
        """Forget every delay, never-reply and drop rule."""
        self._delays.clear()
        self._never_reply.clear()
        self._drop_on.clear()
        self._drop_after = None

    async def send_garbage(self, data: bytes = DEFAULT_GARBAGE) -> None:
        """Write ``data`` raw to every open client connection."""
        for client in self.clients:
            await client.send(data)

    async def drop_clients(self) -> None:
        """Close every client connection now."""
        for client in self.clients:
            await client.aclose()

    # --- broker -> client ------------------------------------------------------------------------

    async def send_to_client(
        self,
        command: RemotingCommand,
        *,
        expect_reply: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 (a test helper's safety net)
        client: FakeClient | None = None,
    ) -> RemotingCommand | None:
        """Send a request to a connected client, as a broker does (e.g. NOTIFY_CONSUMER_IDS_CHANGED).

        The command is sent as given (build oneway ones with ``oneway=True``) with a fresh opaque.

        Args:
            command: the request.
            expect_reply: wait for and return the client's response.
            timeout: how long to wait for the response.
            client: the connection to use; the most recent open one by default.

        Returns:
            The client's response, or ``None`` when ``expect_reply`` is false.

        Raises:
            StateError: no client is connected.
            RequestTimeout: no response within ``timeout``.
            ConnectionFailed: the client disconnected before responding.
        """
        if client is None:
            open_clients = self.clients
            if not open_clients:
                raise StateError("no client is connected to the FakeBroker")
            client = open_clients[-1]
        opaque = self._next_opaque
        self._next_opaque += 1
        command = dataclasses.replace(command, opaque=opaque, serialize_type=self._serialize_type)
        reply = PendingReply()
        if expect_reply:
            client._pending[opaque] = reply
        self.sent.append(command)
        try:
            await client.send(command.encode())
            if not expect_reply:
                return None
            with trio.move_on_after(timeout):
                await reply.done.wait()
            if reply.response is not None:
                return reply.response
            if not client.is_open:
                raise ConnectionFailed(f"{client} disconnected before answering opaque {opaque}")
            raise RequestTimeout(f"{client} did not answer opaque {opaque} within {timeout:g} s")
        finally:
            client._pending.pop(opaque, None)

    # --- waiting ---------------------------------------------------------------------------------

    async def wait_received(self, count: int, code: int | None = None) -> list[RemotingCommand]:
        """Wait until at least ``count`` frames (with request ``code``, if given) were received.

        Returns:
            The matching frames received so far.
        """
        while True:
            matching = [cmd for cmd in self.received if code is None or cmd.code == code]
            if len(matching) >= count:
                return matching
            await self._changed.wait()

    async def wait_accepted(self, count: int) -> None:
        """Wait until at least ``count`` connections have been accepted."""
        while self.accepted < count:
            await self._changed.wait()

    def requests(self, code: int | None = None) -> list[RemotingCommand]:
        """The requests received (responses left out), optionally only those with ``code``."""
        return [cmd for cmd in self.received if not cmd.is_response and (code is None or cmd.code == code)]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    # --- serving ---------------------------------------------------------------------------------

    async def _serve_client(self, stream: trio.SocketStream) -> None:
        transport: trio.abc.Stream = stream
        if self._ssl_context is not None:
            transport = trio.SSLStream(stream, self._ssl_context, server_side=True)
        client = FakeClient(self.accepted, transport)
        self._clients.append(client)
        self.accepted += 1
        self._notify()
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await self._read(client, nursery)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            await client.aclose()
            self._notify()

    async def _read(self, client: FakeClient, nursery: trio.Nursery) -> None:
        frames = FrameBuffer(max_frame_size=self._max_frame_size)
        while True:
            try:
                data = await client._stream.receive_some(_RECEIVE_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not data:
                return
            try:
                commands = frames.feed(data)
            except ProtocolError:
                return  # a real server closes the connection on a bad frame
            for command in commands:
                client.frames_received += 1
                self.received.append(command)
                self._notify()
                if command.is_response:
                    reply = client._pending.pop(command.opaque, None)
                    if reply is not None:
                        reply.response = command
                        reply.done.set()
                    continue
                if command.code in self._drop_on or (
                    self._drop_after is not None and client.frames_received >= self._drop_after
                ):
                    return
                nursery.start_soon(self._answer, client, command)

    async def _answer(self, client: FakeClient, request: RemotingCommand) -> None:
        handler = self._handlers.get(request.code)
        response: RemotingCommand | None
        if handler is None:
            response = _response(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f"request type {request.code} not supported",
            )
        else:
            try:
                response = await handler(request)
            except BrokerError as exc:
                response = _response(request, exc.code, exc.remark)
        if response is None or request.is_oneway or request.code in self._never_reply:
            return
        delay = self._delays.get(request.code)
        if delay:
            await trio.sleep(delay)
        if response.opaque != request.opaque or not response.is_response:
            response = dataclasses.replace(
                response, opaque=request.opaque, flag=response.flag | FLAG_RESPONSE
            )
        if response.serialize_type != self._serialize_type or response.version != self.version:
            response = dataclasses.replace(
                response, serialize_type=self._serialize_type, version=self.version
            )
        await client.send(response.encode())

    # --- in-memory broker state (for the default handlers) ---------------------------------------

    def add_topic(self, topic: str, *, queues: int = 4, perm: int = DEFAULT_PERM) -> None:
        """Make ``topic`` known to the default handlers, with ``queues`` read and write queues.

        Its route names this broker (``broker_name`` at :attr:`address`, as master).
        """
        self._store.add_topic(topic, queues=queues, perm=perm)

    def set_route(self, topic: str, route: TopicRouteData) -> None:
        """Answer GET_ROUTEINFO_BY_TOPIC for ``topic`` with ``route`` (e.g. several brokers)."""
        self._store.routes[topic] = route

    def messages(self, topic: str, queue_id: int) -> list[MessageExt]:
        """What the queue holds, in offset order (bodies as sent: compressed ones stay so)."""
        return list(self._store.queues.get((topic, queue_id), ()))

    def put_messages(
        self, queue_id: int, messages: Iterable[Message], *, store_timestamp: int | None = None
    ) -> list[MessageExt]:
        """Store messages in a queue of their topic directly, as if sent (e.g. before a pull test).

        Args:
            queue_id: the queue of the messages' topic.
            messages: what to store.
            store_timestamp: the stored time (epoch ms) to record; default the wall clock.

        Returns:
            The stored forms, with queue offsets and commit-log offsets.
        """
        return [self._store.append(m, queue_id, store_timestamp=store_timestamp) for m in messages]

    @property
    def consumers(self) -> dict[str, list[str]]:
        """Client ids per consumer group, registered by heartbeats; GET_CONSUMER_LIST_BY_GROUP
        answers from it. Tests may read and change it."""
        return self._store.consumers

    @property
    def pop(self) -> FakePop:
        """The POP side: acknowledged and re-timed messages, and the mode per (topic, group)."""
        return self._pop

    @property
    def first_in_memory(self) -> bool:
        """Whether each queue's first message is still in the broker's memory (default true, as on a
        young broker): then QUERY_CONSUMER_OFFSET answers 0 for a group with no offset on a queue
        that holds messages, and a new group starts at its beginning whatever its consume-from-where
        (``ConsumerManageProcessor.queryConsumerOffset``). Set false to model a broker whose first
        messages left memory: "not found", and the consumer's consume-from-where decides."""
        return self._store.first_in_memory

    @first_in_memory.setter
    def first_in_memory(self, value: bool) -> None:
        self._store.first_in_memory = value

    @property
    def trace_on(self) -> bool:
        """What send replies say in ``TRACE_ON`` (the broker's ``traceOn``, default true)."""
        return self._store.trace_on

    @trace_on.setter
    def trace_on(self, value: bool) -> None:
        self._store.trace_on = value

    @property
    def consumer_offsets(self) -> dict[tuple[str, str, int], int]:
        """Committed offsets by (group, topic, queue id); tests may read and change it."""
        return self._store.consumer_offsets


def _response(request: RemotingCommand, code: int, remark: str | None) -> RemotingCommand | None:
    if request.is_oneway:
        return None
    return RemotingCommand.response(request, code, remark)
