"""Message codec timings: send-side encoding and pull-body decoding (construct vs struct).

Run with ``.venv/bin/python benchmarks/codec.py``. Prints operations (or messages) per second on
one core. The decode goal is 300k messages/s for the default (struct) path; ``_stored`` uses the
struct path because it is much more than twice as fast as the compiled construct declaration.
"""

from __future__ import annotations

import functools
import timeit
from collections.abc import Callable

from rocketmq_py.protocol import _stored
from rocketmq_py.protocol._codes import RequestCode
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._ext_fields import to_ext_fields
from rocketmq_py.protocol._headers import SendMessageRequestHeaderV2
from rocketmq_py.protocol._ids import UniqKeyGenerator
from rocketmq_py.protocol._message import Message, MessageExt
from rocketmq_py.protocol._properties import PropertyKey, encode_properties
from rocketmq_py.protocol._stored import decode_messages_fast, encode_stored_message
from rocketmq_py.protocol._stored_construct import decode_messages_construct

MESSAGES_PER_PULL = 32
BODY_SIZE = 128


def _rate(func: Callable[[], object], seconds: float = 0.5) -> float:
    """Calls per second, from the best of five runs of about ``seconds`` each."""
    timer = timeit.Timer(func)
    number, elapsed = timer.autorange()
    number = max(1, int(number * seconds / max(elapsed, 1e-9)))
    return number / min(timer.repeat(repeat=5, number=number))


def stored_record(uniq: UniqKeyGenerator, i: int, *, tags: str, key: str) -> bytes:
    """Message ``i`` as a broker stores it: a 128-byte body, the properties a broker stores."""
    ext = MessageExt(
        "BenchmarkTopic",
        bytes((i + j) & 0xFF for j in range(BODY_SIZE)),
        tags=tags,
        keys=[key],
        properties={
            PropertyKey.UNIQ_KEY: uniq.next(),
            PropertyKey.WAIT_STORE_MSG_OK: "true",
            PropertyKey.CLUSTER: "DefaultCluster",
            PropertyKey.MIN_OFFSET: "0",
            PropertyKey.MAX_OFFSET: "1000032",
        },
        queue_id=3,
        queue_offset=1_000_000 + i,
        commit_log_offset=7_340_032 + 300 * i,
        born_timestamp=1_760_000_000_000 + i,
        born_host="192.168.1.20:53412",
        store_timestamp=1_760_000_000_004 + i,
        store_host="192.168.1.10:10911",
    )
    return encode_stored_message(ext)


def _pull_body(uniq: UniqKeyGenerator) -> bytes:
    """A PULL_MESSAGE reply body: 32 messages, 128-byte bodies, the properties a broker stores."""
    return b"".join(
        stored_record(uniq, i, tags="TagA", key=f"order-{100000 + i}") for i in range(MESSAGES_PER_PULL)
    )


def main() -> None:
    uniq = UniqKeyGenerator(ip="192.168.1.20", pid=4242, salt=0x1234ABCD)
    message = Message("BenchmarkTopic", b"x" * BODY_SIZE, tags="TagA", keys=["order-100000"])

    def encode_send() -> bytes:
        properties = dict(message.properties)
        properties[PropertyKey.UNIQ_KEY] = uniq.next()
        properties[PropertyKey.WAIT_STORE_MSG_OK] = "true"
        header = SendMessageRequestHeaderV2(
            a="BenchmarkGroup",
            b=message.topic,
            c="TBW102",
            d=4,
            e=3,
            f=0,
            g=1_760_000_000_000,
            h=message.flag,
            i=encode_properties(properties),
        )
        return RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, to_ext_fields(header), message.body
        ).encode()

    def encode_properties_only() -> str:
        properties = dict(message.properties)
        properties[PropertyKey.UNIQ_KEY] = uniq.next()
        properties[PropertyKey.WAIT_STORE_MSG_OK] = "true"
        return encode_properties(properties)

    body = _pull_body(uniq)
    assert decode_messages_fast(body) == decode_messages_construct(body)
    print(f"pull body: {MESSAGES_PER_PULL} messages of {BODY_SIZE} B, {len(body)} bytes in all")
    print(f"{'send: UNIQ_KEY + properties string':48s} {_rate(encode_properties_only):>12,.0f} /s")
    print(f"{'send: full SEND_MESSAGE_V2 frame (JSON header)':48s} {_rate(encode_send):>12,.0f} /s")
    rates = {}
    for name, decode in (
        ("construct (compiled)", decode_messages_construct),
        ("struct fast path", decode_messages_fast),
    ):
        rates[name] = _rate(functools.partial(decode, body)) * MESSAGES_PER_PULL
        print(f"{'pull decode, ' + name:48s} {rates[name]:>12,.0f} msgs/s")
    ratio = rates["struct fast path"] / rates["construct (compiled)"]
    default = "struct" if _stored._decode is decode_messages_fast else "construct"
    print(f"{'fast path / construct':48s} {ratio:>12.1f} x   (default: {default})")


if __name__ == "__main__":
    main()
