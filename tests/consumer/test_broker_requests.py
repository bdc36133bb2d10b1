"""The handlers that answer the broker's consumer commands, driven with RemotingCommands (no broker)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from rocketmq_py._transport import RequestHandler
from rocketmq_py.consumer._broker_requests import (
    command_handlers,
    install_command_handlers,
    not_this_group_remark,
    task_dump,
)
from rocketmq_py.errors import BrokerError
from rocketmq_py.protocol import (
    PROP_CONSUME_TYPE,
    ConsumeMessageDirectlyResult,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumeResult,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    MessageExt,
    MessageQueue,
    ProcessQueueInfo,
    RemotingCommand,
    RequestCode,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
    ResponseCode,
    build_subscription_data,
    decode_command,
    encode_body,
    encode_stored_message,
    to_ext_fields,
)

GROUP = "g1"
MQ = MessageQueue("T", "broker-a", 1)


@dataclass
class Target:
    group: str = GROUP
    resets: list[tuple[str, dict[MessageQueue, int]]] = field(default_factory=list)
    consumed: list[tuple[MessageExt, str | None]] = field(default_factory=list)
    fail_reset: bool = False
    fail_consume: bool = False
    rebalances: int = 0

    def request_rebalance(self) -> None:
        self.rebalances += 1

    def running_info(self) -> ConsumerRunningInfo:
        return ConsumerRunningInfo(
            {PROP_CONSUME_TYPE: "CONSUME_PASSIVELY"},
            (build_subscription_data("T", "*", sub_version=1),),
            {MQ: ProcessQueueInfo(commit_offset=42)},
            {},
        )

    async def reset_offsets(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        if self.fail_reset:
            raise BrokerError("offset store unavailable")
        self.resets.append((topic, dict(offsets)))

    async def consume_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        if self.fail_consume:
            raise ValueError("listener exploded")
        self.consumed.append((msg, broker_name))
        return ConsumeMessageDirectlyResult(False, True, ConsumeResult.CR_LATER, "RECONSUME_LATER", 3)


def handler(target: Target, code: int, *, consume_directly: bool = True) -> RequestHandler:
    return command_handlers(target, consume_directly=consume_directly)[code]


def running_info_request(group: str = GROUP, *, jstack: bool = False) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id="c1", jstack_enable=jstack)
    return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, to_ext_fields(header)).with_opaque(
        9
    )


def reset_request(group: str = GROUP, *, oneway: bool = True, body: bool = True) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic="T", group=group, timestamp=1000, is_force=True)
    payload = encode_body(ResetOffsetBody(offset_table={MQ: 7, MessageQueue("T", "broker-b", 0): 3}))
    return RemotingCommand.request(
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        to_ext_fields(header),
        payload if body else b"",
        oneway=oneway,
    ).with_opaque(10)


def directly_request(group: str = GROUP, body: bytes | None = None) -> RemotingCommand:
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=group,
        client_id="c1",
        msg_id="7F00000100002A9F0000000000000000",
        broker_name="broker-a",
    )
    if body is None:
        msg = MessageExt("T", b"hello", tags="TagA", queue_id=1, queue_offset=5, store_host="127.0.0.1:10911")
        body = encode_stored_message(msg)
    return RemotingCommand.request(
        RequestCode.CONSUME_MESSAGE_DIRECTLY, to_ext_fields(header), body
    ).with_opaque(11)


class Registry:
    def __init__(self) -> None:
        self.handlers: dict[int, RequestHandler] = {}

    def register_handler(self, code: int, handler: RequestHandler) -> None:
        self.handlers[code] = handler


def test_install_registers_the_four_codes() -> None:
    registry = Registry()
    install_command_handlers(registry, Target())
    assert set(registry.handlers) == {40, 307, 220, 309}


async def test_members_changed_asks_for_a_rebalance_and_answers_nothing() -> None:
    target = Target()
    request = RemotingCommand.request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": GROUP}, oneway=True
    )
    assert await handler(target, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)(request) is None
    assert target.rebalances == 1


# --- GET_CONSUMER_RUNNING_INFO -------------------------------------------------------------------


async def test_running_info_answers_with_the_targets_info() -> None:
    request = running_info_request()
    reply = await handler(Target(), RequestCode.GET_CONSUMER_RUNNING_INFO)(request)
    assert reply is not None
    assert (reply.code, reply.opaque, reply.is_response) == (ResponseCode.SUCCESS, 9, True)
    info = ConsumerRunningInfo.decode(reply.body)
    assert info == Target().running_info()
    assert info.jstack is None


async def test_running_info_with_jstack_dumps_trio_tasks_and_threads() -> None:
    reply = await handler(Target(), RequestCode.GET_CONSUMER_RUNNING_INFO)(running_info_request(jstack=True))
    assert reply is not None
    info = ConsumerRunningInfo.decode(reply.body)
    assert info.jstack is not None
    assert info.jstack.startswith("trio tasks:\n")
    assert "test_running_info_with_jstack_dumps_trio_tasks_and_threads" in info.jstack
    assert '"MainThread"' in info.jstack
    assert info.mq_table == {MQ: ProcessQueueInfo(commit_offset=42)}


async def test_task_dump_shows_nested_tasks_and_where_they_wait() -> None:
    async def sleeper_task() -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sleeper_task, name="the-sleeper")
        await trio.testing.wait_all_tasks_blocked()
        dump = task_dump()
        nursery.cancel_scope.cancel()
    lines = dump.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "the-sleeper")
    line = lines[at]
    assert lines[at + 1].strip().startswith("at sleeper_task (")
    assert any(ln.strip().startswith("at sleep_forever (") for ln in lines[at + 1 : at + 4])
    # Indented one level deeper than this test's task.
    this = next(
        ln for ln in lines if ln.strip().endswith("test_task_dump_shows_nested_tasks_and_where_they_wait")
    )
    assert len(line) - len(line.lstrip()) > len(this) - len(this.lstrip())


async def test_running_info_for_another_group_is_a_system_error() -> None:
    reply = await handler(Target(), RequestCode.GET_CONSUMER_RUNNING_INFO)(running_info_request("other"))
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert (
        reply.remark
        == not_this_group_remark("other")
        == "The Consumer Group <other> not exist in this consumer"
    )


# --- RESET_CONSUMER_CLIENT_OFFSET ----------------------------------------------------------------


async def test_oneway_reset_calls_the_target_and_sends_nothing() -> None:
    target = Target()
    reply = await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request())
    assert reply is None
    assert target.resets == [("T", {MQ: 7, MessageQueue("T", "broker-b", 0): 3})]


async def test_two_way_reset_is_answered() -> None:
    target = Target()
    reply = await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request(oneway=False))
    assert reply is not None
    assert (reply.code, reply.opaque) == (ResponseCode.SUCCESS, 10)
    assert len(target.resets) == 1


async def test_reset_without_body_passes_no_offsets() -> None:
    target = Target()
    await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request(body=False))
    assert target.resets == [("T", {})]


async def test_reset_for_another_group_is_ignored() -> None:
    target = Target()
    assert await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request("other")) is None
    reply = await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(
        reset_request("other", oneway=False)
    )
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert target.resets == []


async def test_failed_reset_is_a_system_error_when_answered() -> None:
    target = Target(fail_reset=True)
    assert await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request()) is None
    reply = await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(reset_request(oneway=False))
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None
    assert "offset store unavailable" in reply.remark


# --- CONSUME_MESSAGE_DIRECTLY --------------------------------------------------------------------


async def test_consume_directly_decodes_the_message_and_returns_the_result() -> None:
    target = Target()
    reply = await handler(target, RequestCode.CONSUME_MESSAGE_DIRECTLY)(directly_request())
    assert reply is not None
    assert (reply.code, reply.opaque) == (ResponseCode.SUCCESS, 11)
    result = ConsumeMessageDirectlyResult.decode(reply.body)
    assert result == ConsumeMessageDirectlyResult(False, True, ConsumeResult.CR_LATER, "RECONSUME_LATER", 3)
    ((msg, broker),) = target.consumed
    assert (msg.topic, msg.body, msg.tags, msg.queue_id, msg.queue_offset) == ("T", b"hello", "TagA", 1, 5)
    assert broker == "broker-a"
    assert msg.broker_name == "broker-a"  # from the header, as Java's consumeMessageDirectly sets it


async def test_consume_directly_disabled() -> None:
    target = Target()
    reply = await handler(target, RequestCode.CONSUME_MESSAGE_DIRECTLY, consume_directly=False)(
        directly_request()
    )
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None
    assert "disabled" in reply.remark
    assert target.consumed == []


@pytest.mark.parametrize(
    ("body", "remark"),
    [(b"\x00\x00\x00\x10garbage", "cannot decode"), (b"", "expected one message")],
)
async def test_consume_directly_with_a_bad_body(body: bytes, remark: str) -> None:
    reply = await handler(Target(), RequestCode.CONSUME_MESSAGE_DIRECTLY)(directly_request(body=body))
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None
    assert remark in reply.remark


async def test_consume_directly_listener_error_is_a_system_error() -> None:
    reply = await handler(Target(fail_consume=True), RequestCode.CONSUME_MESSAGE_DIRECTLY)(directly_request())
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark == "ValueError: listener exploded"


async def test_consume_directly_for_another_group() -> None:
    target = Target()
    reply = await handler(target, RequestCode.CONSUME_MESSAGE_DIRECTLY)(directly_request("other"))
    assert reply is not None
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark == not_this_group_remark("other")
    assert target.consumed == []


# --- requests a real 5.3.3 broker sent (protocol/vectors/running_info) ---------------------------

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "running_info"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))


def broker_frame(name: str) -> RemotingCommand:
    return decode_command((VECTORS / name).read_bytes()[4:])


async def test_real_broker_reset_request_reaches_the_target() -> None:
    request = broker_frame("reset-offset-broker-request.bin")
    assert request.is_oneway
    target = Target(group=MANIFEST["raw_group"])
    assert await handler(target, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)(request) is None
    topic = MANIFEST["raw_topic"]
    assert target.resets == [
        (topic, {MessageQueue(topic, "broker-a", 0): 0, MessageQueue(topic, "broker-a", 1): 0})
    ]


async def test_real_broker_forwarded_running_info_request_is_answered() -> None:
    request = broker_frame("running-info-broker-request.bin")
    reply = await handler(Target(group=MANIFEST["raw_group"]), RequestCode.GET_CONSUMER_RUNNING_INFO)(request)
    assert reply is not None
    assert (reply.code, reply.opaque, reply.is_response) == (ResponseCode.SUCCESS, request.opaque, True)
    assert ConsumerRunningInfo.decode(reply.body) == Target().running_info()
