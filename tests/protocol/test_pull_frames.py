"""PullFrames: binary PULL_MESSAGE frames carrying exactly the typed header's extFields."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.protocol import (
    MessageQueue,
    PullFrames,
    PullMessageRequestHeader,
    RequestCode,
    SerializeType,
    decode_command,
    pull_request_header,
    to_ext_fields,
)
from rocketmq_py.protocol._pull_request import PULL_HEAD_CACHE_LIMIT

names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(
    group=names,
    topic=names,
    broker=names,
    queue_id=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
    commit=st.integers(-5, 2**63 - 1),
    max_msgs=st.integers(1, 1024),
    sub_version=st.integers(0, 2**63 - 1),
    subscription=st.none() | names,
    suspend_ms=st.sampled_from([0, 15_000]),
    opaque=st.integers(0, 2**31 - 1),
)
def test_a_frame_decodes_to_the_typed_headers_fields(
    group: str,
    topic: str,
    broker: str,
    queue_id: int,
    offset: int,
    commit: int,
    max_msgs: int,
    sub_version: int,
    subscription: str | None,
    suspend_ms: int,
    opaque: int,
) -> None:
    header = pull_request_header(
        group,
        MessageQueue(topic, broker, queue_id),
        offset=offset,
        max_msgs=max_msgs,
        expression_type="TAG",
        sub_version=sub_version,
        subscription=subscription,
        commit_offset=commit,
        suspend_ms=suspend_ms,
    )
    frames = PullFrames()
    for _ in range(2):  # the second from the cached head
        frame = frames.frame(opaque, header)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        command = decode_command(frame[4:])
        assert command.code == RequestCode.PULL_MESSAGE
        assert command.opaque == opaque
        assert command.serialize_type == SerializeType.ROCKETMQ
        assert command.flag == 0
        assert dict(command.ext_fields) == to_ext_fields(header)
        assert command.body == b""


def test_offsets_vary_without_a_new_head_and_the_cache_is_bounded() -> None:
    frames = PullFrames()

    def header(offset: int, queue_id: int = 0) -> PullMessageRequestHeader:
        return pull_request_header(
            "g", MessageQueue("T", "broker-a", queue_id), offset=offset, max_msgs=32, expression_type="TAG"
        )

    first = decode_command(frames.frame(1, header(10))[4:])
    second = decode_command(frames.frame(2, header(42))[4:])
    assert (first.ext_fields["queueOffset"], second.ext_fields["queueOffset"]) == ("10", "42")
    assert len(frames._heads) == 1
    for queue_id in range(PULL_HEAD_CACHE_LIMIT + 5):
        frames.frame(3, header(0, queue_id))
    assert len(frames._heads) <= PULL_HEAD_CACHE_LIMIT
