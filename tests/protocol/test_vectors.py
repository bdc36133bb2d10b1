"""Golden vectors: frames the Java client 5.3.3 and the 5.3.3 NameServer/broker really exchanged.

``protocol/vectors/`` holds one ``.bin`` file per frame (length prefix included) and
``manifest.json`` describing each (see ``protocol/vectors/README.md``; regenerate with
``python -m rocketmq_py.testing record-vectors --out protocol/vectors``). Every vector is parsed
whole, one byte at a time and followed by trailing bytes; checked against the manifest;
re-encoded (binary headers byte for byte, JSON headers field by field because Java writes
``extFields`` in HashMap order and an empty ``extFields`` as ``{}``); and its headers and body are
decoded into our typed values.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rocketmq_py.protocol._admin_headers import GetRouteInfoRequestHeader
from rocketmq_py.protocol._batch import decode_batch
from rocketmq_py.protocol._bodies import (
    ConsumeFromWhere,
    ConsumerListBody,
    ConsumeType,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    TopicRouteData,
    UnlockBatchRequestBody,
)
from rocketmq_py.protocol._codes import FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, RequestCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand, decode_command
from rocketmq_py.protocol._ext_fields import from_ext_fields, to_ext_fields
from rocketmq_py.protocol._frame import FrameBuffer
from rocketmq_py.protocol._group_headers import (
    GetConsumerListByGroupRequestHeader,
    HeartbeatRequestHeader,
    LockBatchMqRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnlockBatchMqRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_py.protocol._headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_py.protocol._ids import decode_offset_msg_id
from rocketmq_py.protocol._json_body import decode_body, encode_body
from rocketmq_py.protocol._message import SysFlag
from rocketmq_py.protocol._properties import decode_properties
from rocketmq_py.protocol._stored import decode_messages

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors"
MANIFEST: dict[str, Any] = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))
ENTRIES: list[dict[str, Any]] = MANIFEST["vectors"]
BY_KEY: dict[str, dict[str, Any]] = {entry["key"]: entry for entry in ENTRIES}
SENT: dict[str, dict[str, Any]] = {message["name"]: message for message in MANIFEST["sent"]}
BROKER_NAME: str = MANIFEST["broker"]["name"]
BROKER_ADDRESS: str = MANIFEST["broker"]["address"]
TOPIC: str = MANIFEST["topic"]

#: Everything the issue asks for, by (request code, kind, serialize type of the frame).
REQUIRED = [
    (RequestCode.GET_ROUTEINFO_BY_TOPIC, "request", "JSON"),
    (RequestCode.GET_ROUTEINFO_BY_TOPIC, "response", "JSON"),
    (RequestCode.SEND_MESSAGE_V2, "request", "JSON"),
    (RequestCode.SEND_MESSAGE_V2, "response", "JSON"),
    (RequestCode.SEND_MESSAGE_V2, "request", "ROCKETMQ"),
    (RequestCode.SEND_BATCH_MESSAGE, "request", "JSON"),
    (RequestCode.SEND_BATCH_MESSAGE, "response", "JSON"),
    (RequestCode.HEART_BEAT, "request", "JSON"),
    (RequestCode.HEART_BEAT, "response", "JSON"),
    (RequestCode.PULL_MESSAGE, "request", "JSON"),
    (RequestCode.PULL_MESSAGE, "response", "JSON"),
    (RequestCode.QUERY_CONSUMER_OFFSET, "request", "JSON"),
    (RequestCode.QUERY_CONSUMER_OFFSET, "response", "JSON"),
    (RequestCode.UPDATE_CONSUMER_OFFSET, "request", "JSON"),
    (RequestCode.UPDATE_CONSUMER_OFFSET, "response", "JSON"),
    (RequestCode.GET_CONSUMER_LIST_BY_GROUP, "request", "JSON"),
    (RequestCode.GET_CONSUMER_LIST_BY_GROUP, "response", "JSON"),
    (RequestCode.LOCK_BATCH_MQ, "request", "JSON"),
    (RequestCode.LOCK_BATCH_MQ, "response", "JSON"),
    (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, "request", "JSON"),
]

#: The typed header of each request code, and of each (request code) SUCCESS response.
REQUEST_HEADERS: dict[int, type[Any]] = {
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RequestCode.HEART_BEAT: HeartbeatRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RequestCode.LOCK_BATCH_MQ: LockBatchMqRequestHeader,
    RequestCode.UNLOCK_BATCH_MQ: UnlockBatchMqRequestHeader,
}
RESPONSE_HEADERS: dict[int, type[Any]] = {
    RequestCode.SEND_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    RequestCode.PULL_MESSAGE: PullMessageResponseHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
}


def raw(key_or_entry: str | Mapping[str, Any]) -> bytes:
    entry = BY_KEY[key_or_entry] if isinstance(key_or_entry, str) else key_or_entry
    file: str = entry["file"]
    return (VECTORS / file).read_bytes()


def command(key_or_entry: str | Mapping[str, Any]) -> RemotingCommand:
    return decode_command(raw(key_or_entry)[4:])


def header_json(frame: bytes) -> Any:
    """The parsed JSON header of a whole frame."""
    (word,) = struct.unpack_from(">I", frame, 4)
    return json.loads(frame[8 : 8 + (word & 0xFFFFFF)].decode("utf-8"))


def each_vector() -> pytest.MarkDecorator:
    return pytest.mark.parametrize("entry", ENTRIES, ids=[entry["file"] for entry in ENTRIES])


# --- the set of vectors --------------------------------------------------------------------------


def test_vectors_cover_what_the_issue_lists() -> None:
    have = {(e["request_code"], e["kind"], e["serialize_type"]) for e in ENTRIES}
    missing = [item for item in REQUIRED if (int(item[0]), item[1], item[2]) not in have]
    assert not missing
    files = sorted(p.name for p in VECTORS.glob("*.bin"))
    assert files == sorted(e["file"] for e in ENTRIES)


def test_vectors_directory_stays_small() -> None:
    total = sum(p.stat().st_size for p in VECTORS.iterdir() if p.is_file())
    assert total < 300_000


def test_requests_and_responses_are_paired_by_opaque() -> None:
    by_file = {e["file"]: e for e in ENTRIES}
    for entry in ENTRIES:
        if entry["pair"] is None:
            continue
        other = by_file[entry["pair"]]
        assert other["pair"] == entry["file"]
        assert other["opaque"] == entry["opaque"]
        assert other["connection"] == entry["connection"]
        assert {entry["kind"], other["kind"]} == {"request", "response"}
        assert entry["request_code"] == other["request_code"]


# --- framing: whole, byte by byte, with trailing bytes -------------------------------------------


@each_vector()
def test_file_is_one_length_prefixed_frame(entry: dict[str, Any]) -> None:
    data = raw(entry)
    assert len(data) == entry["length"]
    (total, word) = struct.unpack_from(">iI", data)
    assert total == len(data) - 4
    # The serialize type is the high byte of the header-length word.
    assert SerializeType(word >> 24).name == entry["serialize_type"]
    assert total - 4 - (word & 0xFFFFFF) == entry["body_length"]
    direction, peer = entry["file"].split("-")[1:3]
    assert (direction, peer) == (entry["direction"], entry["peer"])


@each_vector()
def test_parse_whole(entry: dict[str, Any]) -> None:
    buffer = FrameBuffer()
    commands = buffer.feed(raw(entry))
    assert commands == [command(entry)]
    assert buffer.pending_bytes == 0
    buffer.eof()


@each_vector()
def test_parse_one_byte_at_a_time(entry: dict[str, Any]) -> None:
    data = raw(entry)
    buffer = FrameBuffer()
    for i in range(len(data) - 1):
        assert buffer.feed(data[i : i + 1]) == []
        assert buffer.pending_bytes == i + 1
    assert buffer.feed(data[-1:]) == [command(entry)]
    assert buffer.pending_bytes == 0


@each_vector()
def test_parse_with_trailing_bytes(entry: dict[str, Any]) -> None:
    data = raw(entry)
    following = raw(ENTRIES[(ENTRIES.index(entry) + 1) % len(ENTRIES)])
    for cut in (1, 3, 4, 9, len(following) - 1):
        buffer = FrameBuffer()
        assert buffer.feed(data + following[:cut]) == [command(entry)]
        assert buffer.pending_bytes == cut  # the trailing part stays pending
        assert buffer.feed(following[cut:]) == [decode_command(following[4:])]
        assert buffer.pending_bytes == 0


def test_parse_all_vectors_as_one_stream() -> None:
    stream = b"".join(raw(entry) for entry in ENTRIES)
    buffer = FrameBuffer()
    commands = []
    for start in range(0, len(stream), 97):  # chunks that cut frames anywhere
        commands += buffer.feed(stream[start : start + 97])
    assert commands == [command(entry) for entry in ENTRIES]


# --- header fields against the manifest ---------------------------------------------------------


@each_vector()
def test_decoded_fields_match_the_manifest(entry: dict[str, Any]) -> None:
    cmd = command(entry)
    assert cmd.code == entry["code"]
    assert cmd.opaque == entry["opaque"]
    assert cmd.flag == entry["flag"]
    assert SerializeType(cmd.serialize_type).name == entry["serialize_type"]
    assert len(cmd.body) == entry["body_length"]
    # Every frame came from Java: the client and both servers announce JAVA and V5_3_3.
    assert cmd.language == LanguageCode.JAVA
    assert cmd.version == 479
    assert cmd.is_response == (entry["kind"] == "response")
    if entry["kind"] == "request":
        assert cmd.code == entry["request_code"]


@each_vector()
def test_direction_and_flags(entry: dict[str, Any]) -> None:
    cmd = command(entry)
    server_request = entry["request_code"] == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    if entry["kind"] == "request":
        assert entry["direction"] == ("s2c" if server_request else "c2s")
    else:
        assert entry["direction"] == "s2c"
        assert cmd.flag & FLAG_RESPONSE
    if entry["key"] in ("notify-ids-changed/request", "update-offset-oneway/request"):
        assert cmd.flag == FLAG_ONEWAY
        assert entry["pair"] is None


def test_servers_answer_binary_requests_in_json() -> None:
    binary = [e for e in ENTRIES if e["serialize_type"] == "ROCKETMQ"]
    assert {e["request_code"] for e in binary} >= {
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.HEART_BEAT,
    }
    for entry in binary:
        assert entry["kind"] == "request"
        assert BY_KEY[entry["key"].replace("/request", "/response")]["serialize_type"] == "JSON"


# --- re-encoding ---------------------------------------------------------------------------------


def _without_empty_ext_fields(header: dict[str, Any]) -> dict[str, Any]:
    # Java writes an empty map as "extFields":{} and null as no key; we leave an empty map out.
    return {k: v for k, v in header.items() if not (k == "extFields" and v == {})}


@each_vector()
def test_reencode(entry: dict[str, Any]) -> None:
    data = raw(entry)
    cmd = command(entry)
    encoded = cmd.encode()
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        assert encoded == data  # binary headers are deterministic: byte for byte
        return
    assert _without_empty_ext_fields(header_json(encoded)) == _without_empty_ext_fields(header_json(data))
    assert encoded.endswith(cmd.body)
    assert data.endswith(cmd.body)
    java_header = data[8 : len(data) - len(cmd.body)]
    canonical = json.dumps(
        _without_empty_ext_fields(header_json(data)),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    if canonical == java_header:
        # Java's HashMap happened to iterate in sorted order: then the bytes are the same too.
        assert encoded == data


def test_json_reencoding_is_byte_exact_when_java_keys_are_sorted() -> None:
    # One-key extFields, and headers without extFields (the NameServer's replies).
    for key in ("route/request", "route/response", "route-missing/response", "lock-batch/response"):
        assert command(key).encode() == raw(key), key


def test_java_writes_ext_fields_in_hashmap_order_not_sorted() -> None:
    keys = list(header_json(raw("pull-found/request"))["extFields"])
    assert keys != sorted(keys)
    assert set(keys) >= {"consumerGroup", "topic", "queueId", "queueOffset", "bname", "maxMsgBytes"}
    top = list(header_json(raw("pull-found/request")))
    assert top == sorted(top)  # the top-level fields are alphabetical


def test_java_json_escapes_control_characters_but_not_unicode() -> None:
    data = raw("send-unicode/request")
    assert b"\\u0001" in data
    assert b"\\u0002" in data
    assert "名前".encode() in data
    assert "🚀".encode() in data


# --- typed headers -------------------------------------------------------------------------------


@each_vector()
def test_typed_header_round_trip(entry: dict[str, Any]) -> None:
    cmd = command(entry)
    if entry["kind"] == "request":
        cls = REQUEST_HEADERS[entry["request_code"]]
    elif cmd.code == 0 and entry["request_code"] in RESPONSE_HEADERS:
        cls = RESPONSE_HEADERS[entry["request_code"]]
    else:
        assert entry["kind"] == "response"
        return
    header = from_ext_fields(cls, cmd.ext_fields)
    assert to_ext_fields(header) == dict(cmd.ext_fields)


def test_send_request_header_v2() -> None:
    for key, queue_id, sys_flag in (
        ("send-small/request", 0, 0),
        ("send-compressed/request", 0, SysFlag.COMPRESSED | SysFlag.COMPRESSION_ZLIB),
        ("send-unicode/request", 0, 0),
        ("send-batch/request", 1, 0),
        ("send-binary/request", 1, 0),
    ):
        header = from_ext_fields(SendMessageRequestHeaderV2, command(key).ext_fields)
        assert header.a.startswith("vectors-producer")
        assert header.b == TOPIC
        assert header.c == "TBW102"
        assert header.d == 4
        assert header.e == queue_id
        assert header.f == sys_flag
        assert header.g > 1_600_000_000_000
        assert header.h == 0
        assert header.j == 0
        assert header.k is False
        assert header.m is (key == "send-batch/request")
        assert header.n == BROKER_NAME  # Java 5.3.3 sends the broker name as "n", not "bname"
        assert header.extra == {}
        assert header.i is not None
        properties = decode_properties(header.i)
        assert properties["WAIT"] == "true"
        assert len(properties["UNIQ_KEY"]) in (32, 56)  # IPv4 or IPv6 client address


def test_send_unicode_properties_in_json_and_binary_headers() -> None:
    for key in ("send-unicode/request", "send-binary/request"):
        header = from_ext_fields(SendMessageRequestHeaderV2, command(key).ext_fields)
        assert header.i is not None
        properties = decode_properties(header.i)
        assert properties["名前"] == "値 ü"
        assert properties["emoji"] == "🚀 rocket"
        assert properties["TAGS"] == "タグC"
        assert properties["KEYS"] == "鍵-3 key-3"


def test_send_responses_carry_offset_msg_ids_of_the_advertised_broker() -> None:
    host, port = BROKER_ADDRESS.rsplit(":", 1)
    for key, message in (
        ("send-small/response", "small"),
        ("send-compressed/response", "compressed"),
        ("send-unicode/response", "unicode"),
        ("send-binary/response", "binary"),
    ):
        header = from_ext_fields(SendMessageResponseHeader, command(key).ext_fields)
        assert header.queue_id == SENT[message]["queue"]
        assert header.queue_offset == SENT[message]["offset"]
        assert header.transaction_id == SENT[message]["msgId"]  # the UNIQ_KEY
        assert decode_offset_msg_id(header.msg_id)[:2] == (host, int(port))
        assert header.extra == {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    batch = from_ext_fields(SendMessageResponseHeader, command("send-batch/response").ext_fields)
    assert len(batch.msg_id.split(",")) == 3
    assert batch.queue_offset == SENT["batch-0"]["offset"]


def test_offset_headers() -> None:
    query = from_ext_fields(QueryConsumerOffsetRequestHeader, command("query-offset/request").ext_fields)
    assert query.consumer_group == "vectors-consumer"
    assert query.broker_name == BROKER_NAME
    answer = from_ext_fields(QueryConsumerOffsetResponseHeader, command("query-offset/response").ext_fields)
    assert answer.offset >= 0
    missing = command("query-offset-missing/response")
    assert missing.code == 22  # QUERY_NOT_FOUND
    assert missing.remark
    sync = from_ext_fields(
        UpdateConsumerOffsetRequestHeader, command("update-offset-sync/request").ext_fields
    )
    assert (sync.topic, sync.queue_id, sync.commit_offset) == (TOPIC, 0, 3)
    assert command("update-offset-sync/response").code == 0
    oneway = from_ext_fields(
        UpdateConsumerOffsetRequestHeader, command("update-offset-oneway/request").ext_fields
    )
    assert oneway.consumer_group == "vectors-consumer"


def test_notify_consumer_ids_changed_header() -> None:
    cmd = command("notify-ids-changed/request")
    header = from_ext_fields(NotifyConsumerIdsChangedRequestHeader, cmd.ext_fields)
    assert header.consumer_group == "vectors-consumer"
    assert cmd.body == b""


# --- bodies --------------------------------------------------------------------------------------


def test_route_replies_decode_to_the_broker() -> None:
    for key in ("route/response", "route-binary/response"):
        body = command(key).body
        route = decode_body(TopicRouteData, body)
        assert [b.broker_name for b in route.broker_datas] == [BROKER_NAME]
        assert route.broker_datas[0].broker_addrs == {0: BROKER_ADDRESS}
        assert route.broker_datas[0].cluster == "DefaultCluster"
        (queues,) = route.queue_datas
        assert (queues.broker_name, queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (
            BROKER_NAME,
            2,
            2,
            6,
        )
        # Version 479 >= 401: standard JSON (quoted "0" key), which we write back byte for byte.
        assert b'"brokerAddrs":{"0":' in body
        assert encode_body(route) == body
    missing = command("route-missing/response")
    assert missing.code == 17  # TOPIC_NOT_EXIST
    assert missing.remark is not None
    assert "%RETRY%" in missing.remark


def test_heartbeats_decode_and_reencode_byte_for_byte() -> None:
    producer = decode_body(HeartbeatData, command("heartbeat-producer/request").body)
    assert producer.client_id == "127.0.0.1@vectors-producer"
    assert {p.group_name for p in producer.producer_data_set} == {"vectors-producer", "CLIENT_INNER_PRODUCER"}
    assert producer.consumer_data_set == ()
    assert (producer.heartbeat_fingerprint, producer.without_sub) == (0, False)

    consumer = decode_body(HeartbeatData, command("heartbeat-consumer/request").body)
    (data,) = consumer.consumer_data_set
    assert data.group_name == "vectors-consumer"
    assert data.consume_type == ConsumeType.CONSUME_PASSIVELY
    assert data.message_model == MessageModel.CLUSTERING
    assert data.consume_from_where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert {s.topic for s in data.subscription_data_set} == {TOPIC, "%RETRY%vectors-consumer"}
    assert all(s.sub_string == "*" and not s.tags_set for s in data.subscription_data_set)

    binary = decode_body(HeartbeatData, command("heartbeat-binary/request").body)
    assert binary.client_id == "127.0.0.1@vectors-producer-binary"
    for key in ("heartbeat-producer/request", "heartbeat-consumer/request", "heartbeat-binary/request"):
        body = command(key).body
        assert encode_body(decode_body(HeartbeatData, body)) == body
    reply = command("heartbeat-consumer/response")
    assert reply.ext_fields["IS_SUPPORT_HEART_BEAT_V2"] == "true"


def test_consumer_list_has_both_members() -> None:
    body = command("consumer-list/response").body
    members = decode_body(ConsumerListBody, body)
    assert sorted(members.consumer_id_list) == [
        "127.0.0.1@vectors-consumer-1",
        "127.0.0.1@vectors-consumer-2",
    ]
    assert encode_body(members) == body
    header = from_ext_fields(GetConsumerListByGroupRequestHeader, command("consumer-list/request").ext_fields)
    assert header.consumer_group == "vectors-consumer"


def test_lock_and_unlock_batch_bodies() -> None:
    lock = decode_body(LockBatchRequestBody, command("lock-batch/request").body)
    assert lock.consumer_group == "vectors-orderly"
    assert lock.client_id == "127.0.0.1@vectors-orderly"
    assert lock.only_this_broker is False
    assert lock.mq_set
    assert all(mq.topic == TOPIC and mq.broker_name == BROKER_NAME for mq in lock.mq_set)
    locked = decode_body(LockBatchResponseBody, command("lock-batch/response").body)
    assert locked.lock_ok_mq_set == lock.mq_set
    unlock = decode_body(UnlockBatchRequestBody, command("unlock-batch/request").body)
    assert unlock.mq_set == {MessageQueue(TOPIC, BROKER_NAME, 0), MessageQueue(TOPIC, BROKER_NAME, 1)}
    assert command("unlock-batch/response").code == 0


def test_batch_request_body() -> None:
    messages = decode_batch(command("send-batch/request").body, TOPIC)
    assert [m.body for m in messages] == [f"batch message {i}".encode() for i in range(3)]
    assert [m.keys for m in messages] == [(f"batch-{i}",) for i in range(3)]
    assert [m.tags for m in messages] == ["TagD"] * 3
    assert [m.uniq_key for m in messages] == [SENT[f"batch-{i}"]["msgId"] for i in range(3)]
    for i, message in enumerate(messages):
        assert hashlib.sha256(message.body).hexdigest() == SENT[f"batch-{i}"]["sha256"]


def test_pull_found_reply_holds_plain_compressed_and_unicode_messages() -> None:
    reply = command("pull-found/response")
    header = from_ext_fields(PullMessageResponseHeader, reply.ext_fields)
    assert (header.suggest_which_broker_id, header.min_offset, header.next_begin_offset) == (0, 0, 3)
    assert header.max_offset == 3

    stored = decode_messages(reply.body, decompress=False)
    messages = decode_messages(reply.body)
    assert len(messages) >= 3
    assert [m.queue_offset for m in messages[:3]] == [0, 1, 2]
    assert all(m.topic == TOPIC and m.queue_id == 0 for m in messages)
    assert all(m.store_host == BROKER_ADDRESS for m in messages)

    small, large, unicode = messages[:3]
    assert small.body == b"hello, golden vectors"
    assert small.tags == "TagA"

    # Stored compressed, as the producer sent it: ZLIB bits + COMPRESSED; inflated by the decoder.
    assert stored[1].sys_flag & SysFlag.COMPRESSED
    assert stored[1].sys_flag & SysFlag.COMPRESSION_MASK == SysFlag.COMPRESSION_ZLIB
    assert stored[1].body == command("send-compressed/request").body
    assert not large.sys_flag & SysFlag.COMPRESSED
    assert len(large.body) > 4096
    assert len(large.body) == SENT["compressed"]["length"]
    assert hashlib.sha256(large.body).hexdigest() == SENT["compressed"]["sha256"]
    assert large.body == zlib.decompress(command("send-compressed/request").body)
    assert large.body.startswith(b"golden vector line 000: the quick brown fox")

    assert unicode.properties["名前"] == "値 ü"
    assert unicode.properties["emoji"] == "🚀 rocket"
    assert unicode.tags == "タグC"
    assert unicode.keys == ("鍵-3", "key-3")
    assert unicode.body == "本文 — ünïcödé body".encode()
    for name, message in zip(("small", "compressed", "unicode"), messages, strict=False):
        assert message.uniq_key == SENT[name]["msgId"]
        assert message.msg_id == SENT[name]["msgId"]
        assert message.properties["CLUSTER"] == "DefaultCluster"


def test_pull_of_a_batch_shows_the_wrapper_uniq_key_appended_by_the_broker() -> None:
    reply = command("pull-found-batch/response")
    messages = decode_messages(reply.body)
    assert [m.body for m in messages[:3]] == [f"batch message {i}".encode() for i in range(3)]
    wrapper = from_ext_fields(SendMessageRequestHeaderV2, command("send-batch/request").ext_fields)
    assert wrapper.i is not None
    wrapper_key = decode_properties(wrapper.i)["UNIQ_KEY"]
    # The broker appends the batch's own properties (header "i") to each entry's, so UNIQ_KEY
    # appears twice in the stored string; Java's parser keeps the last, and so do we.
    for i, message in enumerate(messages[:3]):
        start = reply.body.index(f"KEYS\x01batch-{i}\x02".encode())
        stored_properties = reply.body[start : reply.body.index(b"\x02TRACE_ON", start)]
        assert stored_properties.count(b"UNIQ_KEY\x01") == 2
        assert stored_properties.count(b"WAIT\x01true") == 2
        assert message.uniq_key == wrapper_key != SENT[f"batch-{i}"]["msgId"]


def test_pull_request_header() -> None:
    header = from_ext_fields(PullMessageRequestHeader, command("pull-found/request").ext_fields)
    assert header.consumer_group == "vectors-consumer"
    assert (header.topic, header.queue_id, header.queue_offset) == (TOPIC, 0, 0)
    assert header.max_msg_nums == 32
    assert header.suspend_timeout_millis == 15000
    assert header.max_msg_bytes == 262144
    assert header.expression_type == "TAG"
    assert header.broker_name == BROKER_NAME
    assert header.subscription is None  # postSubscriptionWhenPull is off
