"""The hooks that turn sends, listener calls and transaction ends into trace records.

What Java's ``SendMessageTraceHookImpl``, ``ConsumeMessageTraceHookImpl`` and
``EndTransactionTraceHookImpl`` record, on our :class:`~rocketmq_py.hooks.Hook` API:

- a send attempt that got the broker's answer: one ``Pub`` record (failed attempts and oneway
  sends have no answer and no record, as in Java; neither have sends to the trace topic, nor sends
  to a broker that answers ``TRACE_ON=false``);
- a listener call (a lite pull's returned messages): one ``SubBefore`` record per message before,
  one ``SubAfter`` per message after, sharing a request id and stamped with the call's end (Java:
  the after-context's creation); the cost is the call's time divided by its messages; a message whose ``TRACE_ON`` property is ``false`` is left out;
- a transaction's end: one ``EndTransaction`` record (:meth:`TraceHook.end_transaction`).

Groups and topics are recorded without the client's namespace, as Java does.

:func:`new_trace_hook` wires a hook to its dispatcher; the client passes the dispatcher's
:class:`~rocketmq_py._tracing._dispatcher.OpenTraceSender` (a producer imports this module, so
this module imports no producer).
"""

from __future__ import annotations

import dataclasses
import time
import uuid

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._tracing._dispatcher import OpenTraceSender, TraceDispatcher
from rocketmq_py.hooks import ConsumeContext, Hook, SendContext
from rocketmq_py.protocol import Message, PropertyKey, unwrap_name
from rocketmq_py.protocol._trace import (
    ConsumeReturnType,
    EndTransactionTrace,
    PubTrace,
    SubAfterTrace,
    SubBeforeTrace,
    TraceMessageType,
)

__all__ = ["DEFAULT_REGION", "TraceHook", "new_trace_hook"]

#: The region a record gets when the broker names none (Java ``MixAll.DEFAULT_TRACE_REGION_ID``).
DEFAULT_REGION = "DefaultRegion"


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class TraceHook(Hook):
    """Makes trace records of a client's sends and consumptions and hands them to ``dispatcher``.

    Args:
        dispatcher: where the records go.
        namespace: the client's namespace (stripped from recorded groups and topics).
    """

    name = "message trace"

    def __init__(self, dispatcher: TraceDispatcher, namespace: str | None = None) -> None:
        self.dispatcher = dispatcher
        self.namespace = namespace

    def _plain(self, name: str) -> str:
        return unwrap_name(self.namespace, name)

    def after_send(self, ctx: SendContext) -> None:
        """A ``Pub`` record for an attempt the broker answered, unless it turned traces off."""
        result = ctx.result
        message = ctx.message
        if result is None or not result.trace_on or message.topic.startswith(self.dispatcher.trace_topic):
            return
        if ctx.transactional:
            msg_type = TraceMessageType.TRANSACTION_HALF
        elif ctx.delayed:
            msg_type = TraceMessageType.DELAY
        else:
            msg_type = TraceMessageType.NORMAL
        self.dispatcher.append(
            PubTrace(
                timestamp=_ms(ctx.start_time),
                region_id=result.region_id or DEFAULT_REGION,
                group=self._plain(ctx.producer_group),
                topic=self._plain(message.topic),
                msg_id=result.msg_id,
                tags=message.tags or "",
                keys=message.properties.get(PropertyKey.KEYS, ""),
                store_host=ctx.broker_address or "",
                body_length=len(message.body),
                cost_ms=_ms(ctx.elapsed or 0.0),
                msg_type=msg_type,
                offset_msg_id=result.offset_msg_id,
                success=result.status.name == "SEND_OK",
            )
        )

    def before_consume(self, ctx: ConsumeContext) -> None:
        """A ``SubBefore`` record per traced message."""
        traced = [m for m in ctx.messages if m.properties.get(PropertyKey.TRACE_SWITCH) != "false"]
        if not traced:
            return
        request_id = uuid.uuid4().hex.upper()
        now = _ms(time.time())
        group = self._plain(ctx.consumer_group)
        ctx.state[self] = (request_id, traced, now, group)
        for message in traced:
            self.dispatcher.append(
                SubBeforeTrace(
                    timestamp=now,
                    region_id=message.properties.get(PropertyKey.MSG_REGION, DEFAULT_REGION),
                    group=group,
                    request_id=request_id,
                    msg_id=message.msg_id,
                    retry_times=message.reconsume_times,
                    keys=message.properties.get(PropertyKey.KEYS, ""),
                )
            )

    def after_consume(self, ctx: ConsumeContext) -> None:
        """A ``SubAfter`` record per message of the matching ``SubBefore``."""
        begun = ctx.state.get(self)
        if begun is None:
            return
        request_id, traced, started, group = begun
        ended = _ms(time.time())
        elapsed = _ms(ctx.elapsed) if ctx.elapsed is not None else ended - started
        cost = elapsed // max(len(ctx.messages), 1)
        code = ConsumeReturnType.__members__.get(ctx.return_type or "", ConsumeReturnType.SUCCESS)
        for message in traced:
            self.dispatcher.append(
                SubAfterTrace(
                    request_id=request_id,
                    msg_id=message.msg_id,
                    cost_ms=cost,
                    success=ctx.success,
                    keys=message.properties.get(PropertyKey.KEYS, ""),
                    context_code=code,
                    timestamp=ended,
                    group=group,
                )
            )

    def end_transaction(
        self,
        *,
        group: str,
        message: Message,
        msg_id: str,
        broker_address: str,
        transaction_id: str | None,
        state: str,
        from_check: bool,
    ) -> None:
        """An ``EndTransaction`` record (``state``: Java's name, ``COMMIT_MESSAGE`` / ``ROLLBACK_MESSAGE`` / ``UNKNOW``)."""
        if message.topic.startswith(self.dispatcher.trace_topic):
            return
        self.dispatcher.append(
            EndTransactionTrace(
                timestamp=_ms(time.time()),
                region_id=message.properties.get(PropertyKey.MSG_REGION) or DEFAULT_REGION,
                group=self._plain(group),
                topic=self._plain(message.topic),
                msg_id=msg_id,
                tags=message.tags or "",
                keys=message.properties.get(PropertyKey.KEYS, ""),
                store_host=broker_address,
                msg_type=TraceMessageType.TRANSACTION_COMMIT,
                transaction_id=transaction_id or "",
                state=state,
                from_check=from_check,
            )
        )


def new_trace_hook(
    group: str,
    config: ClientConfig,
    namespace: str | None,
    trace_topic: str | None,
    *,
    open_sender: OpenTraceSender,
) -> TraceHook:
    """The trace hook (and its dispatcher) of a client with ``enable_trace=True``.

    The dispatcher's sender (opened with ``open_sender``) has the client's settings without its
    namespace: the trace topic is the same for every namespace, as in Java.
    """
    settings = dataclasses.replace(config, namespace="")  # none, not even a hosted endpoint's
    dispatcher = TraceDispatcher(
        unwrap_name(namespace, group), settings, open_sender=open_sender, trace_topic=trace_topic
    )
    return TraceHook(dispatcher, namespace)
