"""Answering what brokers ask a consumer: rebalance now, running info, offset reset, direct consumption.

A broker tells every member of a group, with a oneway NOTIFY_CONSUMER_IDS_CHANGED (40), that a
member joined or left: the member rebalances at once instead of at its next periodic round.

Admin tools (``mqadmin consumerStatus``, ``consumerProgress``, ``resetOffsetByTime``,
``queryMsgById -g ... -d``) ask a broker, which forwards the request to the consumer's connection:

    code                               header                                   answer
    GET_CONSUMER_RUNNING_INFO (307)    consumerGroup, clientId, jstackEnable    SUCCESS + ConsumerRunningInfo
    RESET_CONSUMER_CLIENT_OFFSET (220) topic, group, timestamp, isForce         none when oneway (the
                                       body: ResetOffsetBody                    broker sends it so), else SUCCESS
    CONSUME_MESSAGE_DIRECTLY (309)     consumerGroup, clientId, msgId,          SUCCESS +
                                       brokerName; body: one stored message     ConsumeMessageDirectlyResult

A request for a group this consumer is not gets SYSTEM_ERROR with Java's remark
``The Consumer Group <g> not exist in this consumer`` (a oneway reset is only logged, as Java
ignores it). ``jstackEnable`` asks for a thread dump: we put a dump of the trio task tree (task
names and where each one waits) followed by the Python threads' stacks in ``jstack``.

The handlers only decode, check the group and call the :class:`CommandTarget` (the consumer): what
running info holds and how a reset or a direct consumption happens is the consumer's business.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import trio

from rocketmq_py._transport import RequestHandler
from rocketmq_py.errors import RocketMQError
from rocketmq_py.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageExt,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    decode_body,
    decode_messages,
    from_ext_fields,
)

__all__ = [
    "CommandCallbacks",
    "CommandTarget",
    "HandlerRegistry",
    "command_handlers",
    "install_command_handlers",
    "not_this_group_remark",
    "task_dump",
]

log = logging.getLogger("rocketmq_py.consumer")


class CommandTarget(Protocol):
    """What a consumer provides to answer the broker's commands."""

    @property
    def group(self) -> str: ...

    def request_rebalance(self) -> None:
        """Rebalance soon: the group's members changed."""
        ...

    def running_info(self) -> ConsumerRunningInfo:
        """Properties, subscriptions, owned queues and rates, now."""
        ...

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Move the owned queues of ``topic`` among ``offsets`` to those offsets."""
        ...

    async def consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Run the listener on ``msg`` once (no retry, no offset change) and say how it went."""
        ...


@dataclass(frozen=True, slots=True)
class CommandCallbacks:
    """A :class:`CommandTarget` made of the member's callables (the handlers never see the member)."""

    group: str
    request_rebalance: Callable[[], None]
    running_info: Callable[[], ConsumerRunningInfo]
    reset_offsets: Callable[[str, Mapping[MessageQueue, int]], Coroutine[Any, Any, None]]
    consume_directly: Callable[[MessageExt, str | None], Coroutine[Any, Any, ConsumeMessageDirectlyResult]]


class HandlerRegistry(Protocol):
    """Where handlers go: a :class:`~rocketmq_py._client._instance.ClientInstance`."""

    def register_handler(self, code: int, handler: RequestHandler) -> None: ...


def not_this_group_remark(group: str) -> str:
    """Java's remark when a command names a group this client does not host."""
    return f"The Consumer Group <{group}> not exist in this consumer"


def install_command_handlers(
    instance: HandlerRegistry, target: CommandTarget, *, consume_directly: bool = True
) -> None:
    """Answer NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, RESET_CONSUMER_CLIENT_OFFSET
    and CONSUME_MESSAGE_DIRECTLY.

    Args:
        instance: the client instance whose connections receive the broker's requests.
        target: the consumer.
        consume_directly: when ``False``, CONSUME_MESSAGE_DIRECTLY gets SYSTEM_ERROR.
    """
    for code, handler in command_handlers(target, consume_directly=consume_directly).items():
        instance.register_handler(code, handler)


def command_handlers(target: CommandTarget, *, consume_directly: bool = True) -> dict[int, RequestHandler]:
    """The handlers :func:`install_command_handlers` registers, by request code."""

    async def on_running_info(request: RemotingCommand) -> RemotingCommand:
        header = from_ext_fields(GetConsumerRunningInfoRequestHeader, request.ext_fields)
        if header.consumer_group != target.group:
            return _error(request, not_this_group_remark(header.consumer_group))
        info = target.running_info()
        if header.jstack_enable:
            info = replace(info, jstack=task_dump())
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=info.encode())

    async def on_reset_offset(request: RemotingCommand) -> RemotingCommand | None:
        header = from_ext_fields(ResetOffsetRequestHeader, request.ext_fields)
        if header.group != target.group:
            log.info("reset offset for group %s ignored: this consumer is %s", header.group, target.group)
            return None if request.is_oneway else _error(request, not_this_group_remark(header.group))
        offsets = decode_body(ResetOffsetBody, request.body).offset_table if request.body else {}
        log.info(
            "the broker resets %s of group %s to timestamp %d (%d queues)",
            header.topic,
            header.group,
            header.timestamp,
            len(offsets),
        )
        try:
            await target.reset_offsets(header.topic, offsets)
        except RocketMQError as exc:
            log.warning("reset offset of %s for %s failed: %s", header.topic, header.group, exc)
            return None if request.is_oneway else _error(request, f"reset offset failed: {exc}")
        return None if request.is_oneway else RemotingCommand.response(request, ResponseCode.SUCCESS)

    async def on_consume_directly(request: RemotingCommand) -> RemotingCommand:
        header = from_ext_fields(ConsumeMessageDirectlyResultRequestHeader, request.ext_fields)
        if header.consumer_group != target.group:
            return _error(request, not_this_group_remark(header.consumer_group))
        if not consume_directly:
            return _error(request, f"consuming directly is disabled in this consumer of {target.group}")
        try:
            # The broker names itself in the header; Java's consumeMessageDirectly sets it on the message.
            messages = decode_messages(request.body, broker_name=header.broker_name or "")
        except RocketMQError as exc:
            return _error(request, f"cannot decode the message: {exc}")
        if len(messages) != 1:
            return _error(request, f"expected one message in the body, got {len(messages)}")
        try:
            result = await target.consume_directly(messages[0], header.broker_name)
        except Exception as exc:  # the listener's failure is the answer, not a crash of the connection
            log.warning("consuming %s directly failed", header.msg_id, exc_info=True)
            return _error(request, f"{type(exc).__name__}: {exc}")
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=result.encode())

    async def on_ids_changed(request: RemotingCommand) -> RemotingCommand | None:
        target.request_rebalance()
        return None  # oneway

    return {
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: on_ids_changed,
        RequestCode.GET_CONSUMER_RUNNING_INFO: on_running_info,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET: on_reset_offset,
        RequestCode.CONSUME_MESSAGE_DIRECTLY: on_consume_directly,
    }


def _error(request: RemotingCommand, remark: str) -> RemotingCommand:
    return RemotingCommand.response(request, ResponseCode.SYSTEM_ERROR, remark=remark)


# --- the "jstack" of a trio program --------------------------------------------------------------


def task_dump() -> str:
    """The trio task tree (each task's name and the frames it awaits in), then every thread's stack.

    Must be called from inside a trio run.
    """
    lines = ["trio tasks:"]
    _dump_task(trio.lowlevel.current_root_task(), 1, lines)
    frames = sys._current_frames()
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        lines.append(f'\n"{thread.name}" daemon={thread.daemon} ident={thread.ident}')
        frame = frames.get(thread.ident)
        if frame is not None:
            lines.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
    return "\n".join(lines) + "\n"


def _dump_task(task: trio.lowlevel.Task | None, depth: int, lines: list[str]) -> None:
    if task is None:
        return
    indent = "  " * depth
    lines.append(f"{indent}{task.name}")
    for frame, lineno in task.iter_await_frames():  # outermost first, like a stack read bottom up
        lines.append(f"{indent}    at {frame.f_code.co_name} ({frame.f_code.co_filename}:{lineno})")
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            _dump_task(child, depth + 1, lines)
