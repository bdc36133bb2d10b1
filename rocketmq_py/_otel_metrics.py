"""OpenTelemetry metrics of sends and consumptions under RocketMQ's client metric names (the ``otel``
extra); :class:`OpenTelemetryMetrics` is re-exported from :mod:`rocketmq_py.otel`.

The names, units, labels and buckets are those of RocketMQ's metrics page (rocketmq-site,
``observability/01metrics``), which its 5.x clients export and its dashboards read:

======================================  =========  ==================================================
``rocketmq_send_cost_time``             histogram  ms per send attempt; topic, client_id, invocation_status
``rocketmq_process_time``               histogram  ms the listener took, per message; topic,
                                                   consumer_group, client_id, invocation_status
``rocketmq_await_time``                 histogram  ms a message waited in the local cache before its
                                                   listener call; topic, consumer_group, client_id
``rocketmq_consumer_cached_messages``   gauge      messages in the local cache; topic, consumer_group,
                                                   client_id
``rocketmq_consumer_cached_bytes``      gauge      their body bytes; same labels
======================================  =========  ==================================================

and, for the lag a client can see of itself, gauges under the broker's lag metric names (same
labels as the cache's): ``rocketmq_consumer_ready_messages`` (stored past the next pull offset, as of
the last pull answer), ``rocketmq_consumer_inflight_messages`` (pulled, not committed yet) and
``rocketmq_consumer_lag_latency`` (ms since the oldest message pulled and not consumed was stored).
Their sum of the first two is the messages behind; :meth:`PushConsumer.lag` asks the brokers.

``invocation_status`` is ``success`` or ``failure``. The gauges cover push consumers that pull
(concurrent and orderly); a lite pull consumer has no listener and records nothing here, and a POP
group records its histograms only (the broker holds its offsets).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import trio
from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from rocketmq_py.errors import StateError
from rocketmq_py.hooks import ConsumeContext, Hook, SendContext
from rocketmq_py.protocol import ConsumeType, unwrap_name

if TYPE_CHECKING:
    from rocketmq_py.consumer._gauges import TopicGauges

__all__ = ["OpenTelemetryMetrics"]

log = logging.getLogger("rocketmq_py.otel")

#: The instrumentation scope's name (the meter's), as the tracer's.
INSTRUMENTATION_NAME: Final = "rocketmq_py"

SEND_COST_TIME: Final = "rocketmq_send_cost_time"
PROCESS_TIME: Final = "rocketmq_process_time"
AWAIT_TIME: Final = "rocketmq_await_time"
CACHED_MESSAGES: Final = "rocketmq_consumer_cached_messages"
CACHED_BYTES: Final = "rocketmq_consumer_cached_bytes"
READY_MESSAGES: Final = "rocketmq_consumer_ready_messages"
INFLIGHT_MESSAGES: Final = "rocketmq_consumer_inflight_messages"
LAG_LATENCY: Final = "rocketmq_consumer_lag_latency"

#: Bucket bounds in ms, as RocketMQ's metrics page gives them (le_1_ms, le_5_ms, ...).
SEND_COST_TIME_BUCKETS: Final = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
PROCESS_TIME_BUCKETS: Final = (1.0, 5.0, 10.0, 100.0, 10000.0, 60000.0)
AWAIT_TIME_BUCKETS: Final = (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)

#: Seconds a collection waits for a consumer's trio thread to read its gauges; a consumer that does
#: not answer in time is left out of that collection.
GAUGE_READ_TIMEOUT: Final = 1.0
#: Seconds one reading of the gauges may serve the gauge callbacks of a collection at most.
_READING_REUSE: Final = 1.0

_SUCCESS: Final = "success"
_FAILURE: Final = "failure"


def _read_in_trio(
    token: trio.lowlevel.TrioToken, read: Callable[[], list[TopicGauges]]
) -> list[TopicGauges] | None:
    """``read()`` in the trio thread of ``token``: directly when this is that thread, else handed to
    it and waited for (at most :data:`GAUGE_READ_TIMEOUT`); ``None`` when it could not run."""
    try:
        here = trio.lowlevel.current_trio_token()
    except RuntimeError:
        here = None
    if here is token:
        return read()
    done = threading.Event()
    box: list[list[TopicGauges]] = []

    def call() -> None:
        try:
            box.append(read())
        except Exception:
            log.exception("reading a consumer's gauges failed")
        finally:
            done.set()

    try:
        token.run_sync_soon(call)
    except trio.RunFinishedError:
        return None
    if not done.wait(GAUGE_READ_TIMEOUT):
        return None
    return box[0] if box else None


class OpenTelemetryMetrics(Hook):
    """Records RocketMQ's client metrics with OpenTelemetry (see :mod:`rocketmq_py._otel_metrics`).

    Give the same instance to every producer and consumer whose figures it should record::

        metrics = OpenTelemetryMetrics()  # the global meter provider, or meter_provider=...
        producer = Producer("group", hooks=[metrics])
        consumer = PushConsumer("group", listener=on_messages, hooks=[metrics])

    The histograms are recorded in the clients' tasks as sends and listener calls end; the gauges
    are read when the meter provider's reader collects (a Prometheus scrape, a periodic export),
    each consumer's in its own trio thread.

    Args:
        meter_provider: where the instruments are created (default: the global meter provider).
    """

    name = "OpenTelemetryMetrics"

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        from rocketmq_py import __version__

        meter = metrics.get_meter(INSTRUMENTATION_NAME, __version__, meter_provider=meter_provider)
        self._send = meter.create_histogram(
            SEND_COST_TIME,
            unit="ms",
            description="The time of a send attempt, from its request to its answer.",
            explicit_bucket_boundaries_advisory=SEND_COST_TIME_BUCKETS,
        )
        self._process = meter.create_histogram(
            PROCESS_TIME,
            unit="ms",
            description="The time the listener took on a message.",
            explicit_bucket_boundaries_advisory=PROCESS_TIME_BUCKETS,
        )
        self._await = meter.create_histogram(
            AWAIT_TIME,
            unit="ms",
            description="The time a message waited in the consumer's local cache before its listener call.",
            explicit_bucket_boundaries_advisory=AWAIT_TIME_BUCKETS,
        )
        gauges: Sequence[tuple[str, str, str, Callable[[TopicGauges], float]]] = (
            (
                CACHED_MESSAGES,
                "{message}",
                "Messages in the consumer's local cache.",
                lambda g: g.cached_messages,
            ),
            (CACHED_BYTES, "By", "Body bytes of the messages in the local cache.", lambda g: g.cached_bytes),
            (
                READY_MESSAGES,
                "{message}",
                "Messages stored past the next pull offset, as of the last pull answer.",
                lambda g: g.ready_messages,
            ),
            (
                INFLIGHT_MESSAGES,
                "{message}",
                "Messages pulled and not committed yet.",
                lambda g: g.inflight_messages,
            ),
            (
                LAG_LATENCY,
                "ms",
                "The time since the oldest message pulled and not consumed was stored.",
                lambda g: g.lag_latency_ms,
            ),
        )
        for name, unit, description, pick in gauges:
            meter.create_observable_gauge(
                name, callbacks=[self._gauge_callback(name, pick)], unit=unit, description=description
            )
        self._consumers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        # The last reading of the consumers' figures, when it was taken, and the gauges that used it.
        self._reading: tuple[float, list[tuple[dict[str, str], TopicGauges]]] = (-1.0, [])
        self._reading_used: set[str] = set()
        # Attribute dicts by their values, per instrument: one dict for every record of a label set.
        self._send_labels: dict[tuple[str, str, str], dict[str, str]] = {}
        self._process_labels: dict[tuple[str, str, str, str], dict[str, str]] = {}
        self._await_labels: dict[tuple[str, str, str], dict[str, str]] = {}

    # --- the clients ---------------------------------------------------------------------------------

    def bind(self, client: Any) -> None:
        """Keep ``client`` (weakly) if it is a push consumer (it has a gauge reader): its cache and
        lag are gauged."""
        if callable(getattr(client, "_gauge_reader", None)):
            with self._lock:
                self._consumers.add(client)

    def after_send(self, ctx: SendContext) -> None:
        """Record the attempt's time (a oneway send has no answer to time: not recorded)."""
        if ctx.oneway or ctx.elapsed is None:
            return
        topic = unwrap_name(ctx.namespace or None, ctx.message.topic)
        status = _SUCCESS if ctx.success else _FAILURE
        key = (topic, ctx.client_id, status)
        labels = self._send_labels.get(key)
        if labels is None:
            labels = self._send_labels[key] = {
                "topic": topic,
                "client_id": ctx.client_id,
                "invocation_status": status,
            }
        self._send.record(ctx.elapsed * 1000.0, labels)

    def after_consume(self, ctx: ConsumeContext) -> None:
        """Record, per message, the listener's time and the time it waited in the local cache."""
        if ctx.consume_type is ConsumeType.CONSUME_ACTIVELY or ctx.elapsed is None:
            return  # a lite pull consumer: no listener, no cache wait measured
        status = _SUCCESS if ctx.success else _FAILURE
        elapsed = ctx.elapsed * 1000.0
        waited = None if ctx.await_time is None else ctx.await_time * 1000.0
        group, client_id = ctx.consumer_group, ctx.client_id
        process_labels, await_labels = self._process_labels, self._await_labels
        for msg in ctx.messages:
            topic = msg.topic
            labels = process_labels.get((topic, group, client_id, status))
            if labels is None:
                labels = process_labels[(topic, group, client_id, status)] = {
                    "topic": topic,
                    "consumer_group": group,
                    "client_id": client_id,
                    "invocation_status": status,
                }
            self._process.record(elapsed, labels)
            if waited is not None:
                labels = await_labels.get((topic, group, client_id))
                if labels is None:
                    labels = await_labels[(topic, group, client_id)] = {
                        "topic": topic,
                        "consumer_group": group,
                        "client_id": client_id,
                    }
                self._await.record(waited, labels)

    # --- gauges ------------------------------------------------------------------------------------

    def _gauge_callback(
        self, name: str, pick: Callable[[TopicGauges], float]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(pick(gauges), labels) for labels, gauges in self._read_all(name)]

        return observe

    def _read_all(self, gauge: str) -> list[tuple[dict[str, str], TopicGauges]]:
        """Every running consumer's figures. One reading serves each gauge once (the callbacks of
        one collection), for at most :data:`_READING_REUSE` s."""
        with self._lock:
            at, reading = self._reading
            if gauge not in self._reading_used and time.monotonic() - at < _READING_REUSE:
                self._reading_used.add(gauge)
                return reading
            self._reading_used = {gauge}
            consumers = list(self._consumers)
            reading = []
            for consumer in consumers:
                reader = consumer._gauge_reader()
                if reader is None:
                    continue  # not started
                token, read = reader
                found = _read_in_trio(token, read)
                if found is None:
                    continue
                try:
                    client_id = consumer.client_id
                except StateError:
                    continue  # closed meanwhile
                for gauges in found:
                    labels = {"topic": gauges.topic, "consumer_group": consumer.group, "client_id": client_id}
                    reading.append((labels, gauges))
            self._reading = (time.monotonic(), reading)
            return reading
