"""OpenTelemetry tracing and metrics of sends and consumptions (``pip install 'rocketmq-py[otel]'``).

:class:`OpenTelemetryMetrics` records RocketMQ's client metrics (``rocketmq_send_cost_time``,
``rocketmq_process_time``, ``rocketmq_await_time``, the consumer's cache and lag gauges) with an
OpenTelemetry meter provider; the rest of this page is about tracing.

:class:`OpenTelemetryHook` is a :class:`~rocketmq_py.hooks.Hook`: give the same instance to
producers and consumers::

    hook = OpenTelemetryHook()  # the global tracer provider, or tracer_provider=...
    producer = Producer("group", hooks=[hook])
    consumer = PushConsumer("group", hooks=[hook])

Each send attempt is a PRODUCER span ``send <topic>``; its W3C trace context is written into the
message's properties (``traceparent``, ``tracestate``, by the propagator: the global one unless
``propagator=`` is given) before the request is encoded, so it reaches the broker and every
consumer. Each consumed message is a CONSUMER span, ``process <topic>`` for a push consumer's
listener call (the span is current while the listener runs, when a call gets one message) or
``receive <topic>`` for a lite pull consumer's poll, whose parent is the context extracted from
the message's properties: producer and consumer spans share one trace. A failed attempt or
listener call sets the span's status to ERROR (the exception, if any, is recorded).

Attributes follow the OpenTelemetry messaging semantic conventions: ``messaging.system``
(``rocketmq``), ``messaging.destination.name``, ``messaging.operation.type`` and
``messaging.operation.name``, ``messaging.message.id``, ``messaging.message.body.size``,
``messaging.rocketmq.client_group``, ``messaging.rocketmq.message.tag``,
``messaging.rocketmq.message.keys``, ``messaging.rocketmq.message.type``,
``messaging.consumer.group.name``, ``messaging.destination.partition.id`` (the queue id),
``server.address`` / ``server.port`` (the broker) and ``error.type``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import SpanKind, Status, StatusCode

from rocketmq_py._otel_metrics import OpenTelemetryMetrics
from rocketmq_py.hooks import ConsumeContext, Hook, SendContext
from rocketmq_py.protocol import ConsumeType, Message, MessageQueue

__all__ = ["OpenTelemetryHook", "OpenTelemetryMetrics"]

#: The instrumentation scope's name (the tracer's).
INSTRUMENTATION_NAME: Final = "rocketmq_py"

# Attribute names of the messaging semantic conventions (kept here: the extra needs only the API).
MESSAGING_SYSTEM: Final = "messaging.system"
MESSAGING_DESTINATION_NAME: Final = "messaging.destination.name"
MESSAGING_DESTINATION_PARTITION_ID: Final = "messaging.destination.partition.id"
MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
MESSAGING_OPERATION_NAME: Final = "messaging.operation.name"
MESSAGING_MESSAGE_ID: Final = "messaging.message.id"
MESSAGING_MESSAGE_BODY_SIZE: Final = "messaging.message.body.size"
MESSAGING_BATCH_MESSAGE_COUNT: Final = "messaging.batch.message_count"
MESSAGING_CONSUMER_GROUP_NAME: Final = "messaging.consumer.group.name"
MESSAGING_ROCKETMQ_CLIENT_GROUP: Final = "messaging.rocketmq.client_group"
MESSAGING_ROCKETMQ_MESSAGE_TAG: Final = "messaging.rocketmq.message.tag"
MESSAGING_ROCKETMQ_MESSAGE_KEYS: Final = "messaging.rocketmq.message.keys"
MESSAGING_ROCKETMQ_MESSAGE_TYPE: Final = "messaging.rocketmq.message.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"


def _message_attributes(message: Message, mq: MessageQueue) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        MESSAGING_SYSTEM: "rocketmq",
        MESSAGING_DESTINATION_NAME: message.topic,
        MESSAGING_DESTINATION_PARTITION_ID: str(mq.queue_id),
        MESSAGING_MESSAGE_BODY_SIZE: len(message.body),
    }
    tags = message.tags
    if tags:
        attributes[MESSAGING_ROCKETMQ_MESSAGE_TAG] = tags
    keys = message.keys
    if keys:
        attributes[MESSAGING_ROCKETMQ_MESSAGE_KEYS] = list(keys)
    return attributes


def _server(attributes: dict[str, Any], address: str | None) -> None:
    if address:
        host, _, port = address.rpartition(":")
        attributes[SERVER_ADDRESS] = host or address
        if port.isdigit():
            attributes[SERVER_PORT] = int(port)


def _fail(span: trace.Span, exception: BaseException | None, description: str) -> None:
    if exception is not None:
        span.record_exception(exception)
        span.set_attribute(ERROR_TYPE, type(exception).__qualname__)
        span.set_status(Status(StatusCode.ERROR, str(exception) or description))
    else:
        span.set_attribute(ERROR_TYPE, description)
        span.set_status(Status(StatusCode.ERROR, description))


class OpenTelemetryHook(Hook):
    """Traces sends and consumptions with OpenTelemetry spans (see the module docstring).

    Args:
        tracer_provider: where the spans go (default: the global tracer provider).
        propagator: writes and reads the trace context in message properties (default: the
            global propagator, W3C trace context and baggage unless configured otherwise).
    """

    name = "OpenTelemetryHook"

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        propagator: TextMapPropagator | None = None,
    ) -> None:
        from rocketmq_py import __version__

        self._tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider)
        self._propagator = propagator
        # The key of this hook's entries in the contexts' scratch space.
        self._key = object()

    # --- sending -------------------------------------------------------------------------------------

    def before_send(self, ctx: SendContext) -> None:
        """Start the PRODUCER span and write its trace context into the message's properties."""
        message = ctx.message
        attributes = _message_attributes(message, ctx.queue)
        attributes[MESSAGING_OPERATION_TYPE] = "send"
        attributes[MESSAGING_OPERATION_NAME] = "send"
        attributes[MESSAGING_ROCKETMQ_CLIENT_GROUP] = ctx.producer_group
        attributes[MESSAGING_ROCKETMQ_MESSAGE_TYPE] = (
            "transaction" if ctx.transactional else "delay" if ctx.delayed else "normal"
        )
        msg_id = message.properties.get("UNIQ_KEY")
        if msg_id and not ctx.batch:
            attributes[MESSAGING_MESSAGE_ID] = msg_id
        _server(attributes, ctx.broker_address)
        span = self._tracer.start_span(f"send {message.topic}", kind=SpanKind.PRODUCER, attributes=attributes)
        ctx.state[self._key] = span
        carrier = trace.set_span_in_context(span)
        if self._propagator is None:
            propagate.inject(message.properties, context=carrier)
        else:
            self._propagator.inject(message.properties, context=carrier)

    def after_send(self, ctx: SendContext) -> None:
        """End the PRODUCER span: the message id, or the error."""
        span: trace.Span | None = ctx.state.pop(self._key, None)
        if span is None:
            return
        result = ctx.result
        if result is not None:
            span.set_attribute(MESSAGING_MESSAGE_ID, result.msg_id)
            if result.status.name != "SEND_OK":
                span.set_attribute("messaging.rocketmq.send_status", result.status.name)
        if not ctx.success:
            _fail(span, ctx.exception, "send failed")
        span.end()

    # --- consuming -----------------------------------------------------------------------------------

    def before_consume(self, ctx: ConsumeContext) -> None:
        """Start a CONSUMER span per message, each a child of the context its properties carry."""
        receive = ctx.consume_type is ConsumeType.CONSUME_ACTIVELY
        operation = "receive" if receive else "process"
        spans: list[trace.Span] = []
        for msg in ctx.messages:
            if self._propagator is None:
                parent = propagate.extract(msg.properties)
            else:
                parent = self._propagator.extract(msg.properties)
            attributes = _message_attributes(msg, ctx.queue)
            attributes[MESSAGING_OPERATION_TYPE] = operation
            attributes[MESSAGING_OPERATION_NAME] = operation
            attributes[MESSAGING_MESSAGE_ID] = msg.msg_id
            attributes[MESSAGING_CONSUMER_GROUP_NAME] = ctx.consumer_group
            attributes[MESSAGING_ROCKETMQ_CLIENT_GROUP] = ctx.consumer_group
            attributes["messaging.rocketmq.message.reconsume_times"] = msg.reconsume_times
            _server(attributes, msg.store_host)
            spans.append(
                self._tracer.start_span(
                    f"{operation} {msg.topic}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
                )
            )
        token = None
        if len(spans) == 1 and not receive:
            # The listener runs next in this task: its own spans become children of this one.
            token = otel_context.attach(trace.set_span_in_context(spans[0]))
        ctx.state[self._key] = (spans, token)

    def after_consume(self, ctx: ConsumeContext) -> None:
        """End the CONSUMER spans: ERROR unless the listener succeeded."""
        entry: tuple[Sequence[trace.Span], object] | None = ctx.state.pop(self._key, None)
        if entry is None:
            return
        spans, token = entry
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]  # the Token attach returned
        for span in spans:
            if ctx.status is not None:
                span.set_attribute("messaging.rocketmq.consume_status", ctx.status)
            if not ctx.success:
                _fail(span, ctx.exception, ctx.return_type or "consume failed")
            span.end()
