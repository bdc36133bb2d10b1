"""Connection: each call's deadline kept by the connection's timer task (no scope per call)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from rocketmq_py._transport import open_connection
from rocketmq_py.errors import ClientError, RequestTimeout
from rocketmq_py.protocol._codes import SerializeType
from rocketmq_py.protocol._command import RemotingCommand, decode_command
from rocketmq_py.protocol._template import RequestTemplate
from rocketmq_py.testing._fake_broker import FakeBroker

ECHO = 9001  # the fake_broker fixture echoes this code


async def test_a_short_deadline_after_a_long_one_fires_on_time(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.delay(ECHO, 100)
    failed_at: dict[str, float] = {}
    async with open_connection(fake_broker.address, close_on_timeout=False) as conn:
        start = trio.current_time()

        async def call(name: str, seconds: float) -> None:
            with pytest.raises(RequestTimeout):
                await conn.request(RemotingCommand.request(ECHO, {"n": name}), timeout=seconds)
            failed_at[name] = trio.current_time() - start

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "long", 30)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(call, "short", 2)
            nursery.start_soon(call, "middle", 7.5)
    assert failed_at == {"short": pytest.approx(2), "middle": pytest.approx(7.5), "long": pytest.approx(30)}


async def test_answered_calls_leave_no_timer_behind(fake_broker: FakeBroker, autojump_clock: object) -> None:
    async with open_connection(fake_broker.address) as conn:
        for n in range(50):
            await conn.request(RemotingCommand.request(ECHO, {"n": str(n)}), timeout=3)
        # The deadlines of answered calls pass: the timer drops them and never fails anything.
        await trio.sleep(10)
        response = await conn.request(RemotingCommand.request(ECHO, {"n": "last"}), timeout=3)
        assert response.ext_fields["n"] == "last"
        assert conn.statistics().pending_requests == 0
        assert not conn.is_closed


async def test_a_cancelled_call_is_forgotten_and_its_late_answer_dropped(
    fake_broker: FakeBroker, autojump_clock: object
) -> None:
    fake_broker.delay(ECHO, 5)
    async with open_connection(fake_broker.address, close_on_timeout=False) as conn:
        with trio.move_on_after(1) as scope:
            await conn.request(RemotingCommand.request(ECHO, {"n": "gone"}), timeout=60)
        assert scope.cancelled_caught
        assert conn.statistics().pending_requests == 0
        await trio.sleep(10)  # the answer comes at t=5, to nobody
        fake_broker.clear_faults()
        response = await conn.request(RemotingCommand.request(ECHO, {"n": "next"}), timeout=1)
        assert response.ext_fields["n"] == "next"


async def test_request_frame_sends_the_callers_frame_with_a_fresh_opaque(fake_broker: FakeBroker) -> None:
    template = RequestTemplate(ECHO, {"a": "group"})
    async with open_connection(fake_broker.address) as conn:
        first = await conn.request_frame(
            lambda opaque: template.frame(opaque, [("b", "x")], [("g", "1")], b"body"), code=ECHO, timeout=3
        )
        second = await conn.request_frame(
            lambda opaque: template.frame(opaque, [("b", "y")], [], b""), code=ECHO, timeout=3
        )
    assert dict(first.ext_fields) == {"a": "group", "b": "x", "g": "1"}
    assert first.body == b"body"
    assert dict(second.ext_fields) == {"a": "group", "b": "y"}
    received = fake_broker.received
    assert [cmd.serialize_type for cmd in received] == [SerializeType.ROCKETMQ] * 2
    assert received[0].opaque != received[1].opaque


async def test_request_frame_times_out_like_request(fake_broker: FakeBroker, autojump_clock: object) -> None:
    fake_broker.delay(ECHO, 5)
    template = RequestTemplate(ECHO, {})
    async with open_connection(fake_broker.address, close_on_timeout=False) as conn:
        with pytest.raises(RequestTimeout, match=r"within 1\.5 s"):
            await conn.request_frame(
                lambda opaque: template.frame(opaque, [], [], b""), code=ECHO, timeout=1.5
            )


class _Seen:
    def before_request(self, request: RemotingCommand) -> RemotingCommand:
        return request

    def after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        pass


async def test_request_frame_refuses_a_connection_with_hooks(fake_broker: FakeBroker) -> None:
    async with open_connection(fake_broker.address, hooks=[_Seen()]) as conn:
        assert conn.has_hooks
        with pytest.raises(ClientError, match="hooks"):
            await conn.request_frame(lambda opaque: b"", code=ECHO, timeout=1)


def test_the_frame_decodes_to_the_command_it_stands_for() -> None:
    template = RequestTemplate(ECHO, {"a": "g"})
    frame = template.frame(7, [("b", "t")], [("i", "p")], b"xyz")
    decoded = decode_command(frame[4:])
    assert decoded.code == ECHO
    assert decoded.opaque == 7
    assert dict(decoded.ext_fields) == {"a": "g", "b": "t", "i": "p"}
