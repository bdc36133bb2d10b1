"""``rocketmq-py consume``: parsing, the message line and JSON, and a run against a FakeBroker."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator

import pytest
import trio

from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from rocketmq_py.cli._format import body_text, message_json, message_line
from rocketmq_py.cli._parser import ConsumeCommand, parse_command
from rocketmq_py.protocol import Message, MessageExt
from rocketmq_py.testing import FakeBroker

ENV = {"ROCKETMQ_NAMESRV": "127.0.0.1:9876"}


def test_parse_consume() -> None:
    command = parse_command(
        ["consume", "T", "-g", "G", "--from-beginning", "--count", "5", "--tag", "A || B", "--json"], ENV
    )
    assert isinstance(command, ConsumeCommand)
    assert (
        command.topic,
        command.group,
        command.from_beginning,
        command.count,
        command.tag,
        command.json,
    ) == (
        "T",
        "G",
        True,
        5,
        "A || B",
        True,
    )
    plain = parse_command(["consume", "T", "--group", "G"], ENV)
    assert plain == ConsumeCommand(plain.common, "T", "G")
    assert (plain.from_beginning, plain.count, plain.tag, plain.json) == (False, None, "*", False)


@pytest.mark.parametrize(
    "argv", [["consume", "T"], ["consume", "-g", "G"], ["consume", "T", "-g", "G", "--count", "0"]]
)
def test_consume_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-n", "127.0.0.1:9876", *argv]) == EXIT_USAGE
    assert "rocketmq-py: error:" in capsys.readouterr().err


def stored(body: bytes, **kw: object) -> MessageExt:
    return MessageExt(
        "T",
        body,
        tags="TagA",
        keys=("k1", "k2"),
        queue_id=2,
        queue_offset=7,
        store_host="127.0.0.1:10911",
        properties={"UNIQ_KEY": "ABC", "color": "red"},
        **kw,  # type: ignore[arg-type]
    )


def test_body_text() -> None:
    assert body_text("héllo".encode()) == ("héllo", "utf-8")
    assert body_text(b"\xff\x00") == (base64.b64encode(b"\xff\x00").decode(), "base64")


def test_message_line() -> None:
    assert message_line(stored(b"hello"), "broker-a") == (
        "broker-a:2 offset=7 msgId=ABC tags=TagA keys=k1,k2 body=hello"
    )
    assert message_line(stored(b"two\nlines")).endswith('body="two\\nlines"')
    assert message_line(stored(b"two\nlines")).startswith("127.0.0.1:10911:2 offset=7 ")
    assert message_line(stored(b"\xff\xfe")).endswith("body(base64)=//4=")
    no_tags = MessageExt("T", b"x", queue_offset=1)
    assert "tags=- keys=- body=x" in message_line(no_tags)


def test_message_json() -> None:
    data = message_json(stored(b"\xff"), "broker-a")
    assert json.loads(json.dumps(data)) == data
    assert data["body"] == "/w=="
    assert data["bodyEncoding"] == "base64"
    assert (data["brokerName"], data["queueId"], data["queueOffset"], data["msgId"]) == (
        "broker-a",
        2,
        7,
        "ABC",
    )
    assert data["keys"] == ["k1", "k2"]
    assert data["properties"] == {"color": "red"}  # system properties left out


@pytest.fixture
async def fake() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        fb.add_topic("C1", queues=1)
        fb.put_messages(0, [Message("C1", f"m{i}".encode(), tags="TagA", keys=[f"k{i}"]) for i in range(4)])
        fb.put_messages(0, [Message("C1", b"\x00\xff binary", tags="TagB")])
        yield fb


async def run(*argv: str) -> int:
    return await trio.to_thread.run_sync(main, list(argv))


async def test_consume_count_then_resume_from_the_committed_offset(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["-n", fake.address, "consume", "C1", "-g", "cg1", "--from-beginning"]
    assert await run(*argv, "--count", "3") == EXIT_OK
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split()[:2] for line in lines] == [["broker-a:0", f"offset={i}"] for i in range(3)]
    assert [line.split("body=")[1] for line in lines] == ["m0", "m1", "m2"]
    assert all(" tags=TagA keys=k" in line for line in lines)
    assert err == "consumed 3 message(s) from C1 as cg1; offsets persisted\n"
    assert fake.consumer_offsets[("cg1", "C1", 0)] == 3

    assert await run(*argv, "--count", "2", "--json") == EXIT_OK
    out, _ = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["queueOffset"], r["tags"]) for r in records] == [(3, "TagA"), (4, "TagB")]
    assert records[0]["body"] == "m3"
    assert base64.b64decode(records[1]["body"]) == b"\x00\xff binary"
    assert records[1]["bodyEncoding"] == "base64"
    assert fake.consumer_offsets[("cg1", "C1", 0)] == 5


async def test_consume_with_a_tag_filter(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "-n",
        fake.address,
        "consume",
        "C1",
        "-g",
        "cg2",
        "--from-beginning",
        "--tag",
        "TagB",
        "--count",
        "1",
    ]
    assert await run(*argv) == EXIT_OK
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("broker-a:0 offset=4 ")
    assert line.endswith("body(base64)=" + base64.b64encode(b"\x00\xff binary").decode())


async def test_consume_unknown_topic(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run("-n", fake.address, "consume", "Nope", "-g", "cg3") == EXIT_ERROR
    assert "no route info for topic 'Nope'" in capsys.readouterr().err
