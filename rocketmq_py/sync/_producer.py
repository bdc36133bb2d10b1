"""The blocking :class:`Producer`: :class:`rocketmq_py.Producer` in a trio thread."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._client._route import DEFAULT_TOPIC_QUEUE_NUMS
from rocketmq_py.hooks import Hook
from rocketmq_py.producer._fault import FaultConfig
from rocketmq_py.producer._producer import (
    DEFAULT_ATTEMPT_TIMEOUT,
    DEFAULT_RETRY_TIMES,
    DEFAULT_SEND_TIMEOUT,
    ProducerStatistics,
)
from rocketmq_py.producer._producer import Producer as AsyncProducer
from rocketmq_py.producer._selectors import SelectQueue
from rocketmq_py.producer._types import SendResult
from rocketmq_py.producer._validation import DEFAULT_PRODUCER_GROUP, MAX_MESSAGE_SIZE
from rocketmq_py.protocol import CompressionType, Message, MessageExt, MessageQueue
from rocketmq_py.protocol._compression import COMPRESS_OVER_BYTES, DEFAULT_COMPRESS_LEVEL
from rocketmq_py.sync._facade import SyncClient

__all__ = ["Producer"]


class Producer(SyncClient[AsyncProducer]):
    """Sends messages to RocketMQ topics, blocking (Java ``DefaultMQProducer``).

    The same producer as :class:`rocketmq_py.Producer`, run in a background trio thread::

        with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
            result = producer.send(Message("orders", b"hello", tags="new"))

    or ``producer = Producer(...).start()`` ... ``producer.shutdown()``. Every method may be called
    from several threads at once; errors are those of the async producer, unchanged.

    Args: as :class:`rocketmq_py.Producer`.
    """

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        namesrv: str | None = None,
        namespace: str | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        attempt_timeout: float | None = DEFAULT_ATTEMPT_TIMEOUT,
        retry_times: int = DEFAULT_RETRY_TIMES,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = MAX_MESSAGE_SIZE,
        compress_over: int = COMPRESS_OVER_BYTES,
        compress_type: CompressionType = CompressionType.ZLIB,
        compress_level: int = DEFAULT_COMPRESS_LEVEL,
        fault: FaultConfig | None = None,
        auto_create_topic: bool = True,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        hooks: Iterable[Hook] = (),
        enable_trace: bool = False,
        trace_topic: str | None = None,
        config: ClientConfig | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(
            AsyncProducer(
                group,
                namesrv=namesrv,
                namespace=namespace,
                send_timeout=send_timeout,
                attempt_timeout=attempt_timeout,
                retry_times=retry_times,
                retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
                max_message_size=max_message_size,
                compress_over=compress_over,
                compress_type=compress_type,
                compress_level=compress_level,
                fault=fault,
                auto_create_topic=auto_create_topic,
                default_topic_queue_nums=default_topic_queue_nums,
                hooks=hooks,
                enable_trace=enable_trace,
                trace_topic=trace_topic,
                config=config,
                **client_options,
            )
        )

    def register_hook(self, hook: Hook) -> None:
        """Call ``hook`` around every send attempt from now on (as the trio class's ``register_hook``)."""
        self._read(self._client.register_hook, hook)

    @property
    def client_id(self) -> str:
        """``ip@instance``, as brokers see this client (raises StateError before ``start()``)."""
        return self._client.client_id

    def statistics(self) -> ProducerStatistics:
        """A snapshot of the counters and the fault table (also after ``shutdown()``)."""
        return self._read(lambda: dataclasses.replace(self._client.statistics()))

    def send(
        self,
        message: Message,
        *,
        selector: SelectQueue | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send one message and wait for the broker to store it.

        Args, Returns, Raises: as :meth:`rocketmq_py.Producer.send`.
        """
        return self._call(
            self._client.send, message, selector=selector, arg=arg, queue=queue, timeout=timeout
        )

    def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Send without waiting for the broker's answer (as :meth:`rocketmq_py.Producer.send_oneway`)."""
        self._call(self._client.send_oneway, message, queue=queue)

    def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send messages of one topic as one batch (as :meth:`rocketmq_py.Producer.send_batch`)."""
        return self._call(self._client.send_batch, messages, queue=queue, timeout=timeout)

    def request(
        self,
        message: Message,
        *,
        timeout: float | None = None,
        selector: SelectQueue | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> MessageExt:
        """Send a request and wait for its reply (as :meth:`rocketmq_py.Producer.request`)."""
        return self._call(
            self._client.request, message, timeout=timeout, selector=selector, arg=arg, queue=queue
        )

    def recall(self, topic: str, recall_handle: str, *, timeout: float | None = None) -> str:
        """Take back a message with a delivery time before it is delivered (as :meth:`rocketmq_py.Producer.recall`)."""
        return self._call(self._client.recall, topic, recall_handle, timeout=timeout)
