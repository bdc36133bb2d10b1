"""The deprecated public names of a consumer-group member, kept for one release and removed together.

Each warns (:func:`~rocketmq_py._deprecation.warn_deprecated`, at the user's line) and then does
what its replacement does; the asyncio and blocking facades warn with the same words
(``scripts/facade_description.py``). :class:`DeprecatedMemberNames` is a base of
:class:`~rocketmq_py.consumer._member.GroupMember`: a public method can leave the member's module
only as a base class (the API reference and the facades read it from the consumer classes). What
the names forward to, the member provides: its client instance and offset store, and the private
entry points of the broker's requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.consumer._offset_store_api import OffsetStore
from rocketmq_py.protocol import ConsumerRunningInfo, MessageQueue

__all__ = ["DeprecatedMemberNames", "handler_message"]


def handler_message(cls: str, name: str, request: str) -> str:
    """The warning of the deprecated public name of a broker-request entry point (``name``: its method)."""
    return (
        f"{cls}.{name}() is deprecated and will be removed: only the broker's {request} request "
        f"calls it (privately, as {cls}._{name})"
    )


class DeprecatedMemberNames:
    """The deprecated public names of a group member (see the module docstring)."""

    # --- what the names forward to (GroupMember's, and its subclasses') --------------------------

    @property
    def _client_instance(self) -> ClientInstance:
        raise NotImplementedError

    @property
    def _offset_store(self) -> OffsetStore:
        raise NotImplementedError

    def _running_info(self) -> ConsumerRunningInfo:
        raise NotImplementedError

    async def _reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        raise NotImplementedError

    async def _rebalance(self) -> None:
        raise NotImplementedError

    # --- the deprecated names --------------------------------------------------------------------

    @property
    def instance(self) -> Any:
        """Deprecated: the client instance is internal (its type is not part of the API).

        Use :attr:`client_id` for how the brokers know this member.

        Raises:
            StateError: the consumer is not started.
        """
        warn_deprecated(
            f"{type(self).__name__}.instance is deprecated: the client instance is internal "
            f"(use {type(self).__name__}.client_id for the client id)"
        )
        return self._client_instance

    @property
    def offsets(self) -> Any:
        """Deprecated: the offset store is internal (its type is not part of the API).

        Committed offsets: ``statistics()`` (``committed_offset``) of a push consumer,
        ``committed()`` of a lite pull consumer.

        Raises:
            StateError: the consumer is not started.
        """
        warn_deprecated(
            f"{type(self).__name__}.offsets is deprecated: the offset store is internal (committed "
            "offsets: PushConsumer.statistics(), LitePullConsumer.committed())"
        )
        return self._offset_store

    def running_info(self) -> ConsumerRunningInfo:
        """Deprecated: what GET_CONSUMER_RUNNING_INFO answers (the broker's request calls it).

        ``mqadmin consumerStatus`` and ``rocketmq-py group inspect`` ask for it; in a program,
        ``assignment()`` shows the queues.
        """
        warn_deprecated(handler_message(type(self).__name__, "running_info", "GET_CONSUMER_RUNNING_INFO"))
        return self._running_info()

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Deprecated: answers RESET_CONSUMER_CLIENT_OFFSET (the broker's request calls it).

        ``mqadmin resetOffsetByTime`` sends the request to every member of the group.
        """
        warn_deprecated(handler_message(type(self).__name__, "reset_offsets", "RESET_CONSUMER_CLIENT_OFFSET"))
        await self._reset_offsets(topic, offsets)

    async def rebalance(self) -> None:
        """Deprecated: rebalance every subscribed topic now (the rebalance loop does, on its own and
        at once when a broker says the group's members changed)."""
        warn_deprecated(
            f"{type(self).__name__}.rebalance() is deprecated and will be removed: the consumer "
            "rebalances on its own (every rebalance_interval seconds, and at once when the group's "
            "members change)"
        )
        await self._rebalance()
