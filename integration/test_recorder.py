"""The recording proxy in front of the real NameServer, with the official mqadmin as the client."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rocketmq_py.protocol._codes import RequestCode, ResponseCode
from rocketmq_py.protocol._fastjson import parse_fastjson
from rocketmq_py.testing import Cluster
from rocketmq_py.testing._local import pick_port_block
from rocketmq_py.testing._recorder import ProxyRoute, Recorder, parse_address
from rocketmq_py.testing._recording import describe_frames, write_recording


def test_recorder_captures_mqadmin_topic_list(
    cluster: Cluster, create_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = create_topic(2)
    port = pick_port_block([0], set())
    route = ProxyRoute(("127.0.0.1", port), parse_address(cluster.namesrv_addr), "namesrv")
    with Recorder([route]) as recorder:
        result = cluster.mqadmin("topicList", "-n", recorder.listen_addresses[0]).check()
        frames = recorder.frames()
        stats = recorder.statistics()
    assert topic in result.output  # the proxy forwarded the conversation intact
    assert stats["connections"] >= 1
    assert stats["unsplittable_streams"] == 0
    assert stats["errors"] == []

    infos = describe_frames(frames)
    request = next(
        i
        for i in infos
        if i.frame.direction == "c2s" and i.command.code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
    )
    reply = next(
        i
        for i in infos
        if i.frame.direction == "s2c"
        and i.is_response
        and i.command.opaque == request.command.opaque
        and i.frame.connection == request.frame.connection
    )
    assert reply.request_code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
    assert reply.command.code == ResponseCode.SUCCESS
    body = parse_fastjson(reply.command.body)
    assert topic in body["topicList"]

    files = write_recording(tmp_path / "rec", frames, label="mqadmin topicList")
    names = [f.name for f in files]
    assert any(n.endswith("-c2s-namesrv-GET_ALL_TOPIC_LIST_FROM_NAMESERVER-json.bin") for n in names)
    assert any(n.endswith("-s2c-namesrv-GET_ALL_TOPIC_LIST_FROM_NAMESERVER-SUCCESS-json.bin") for n in names)
    assert b"".join(f.data for f in frames) == b"".join(f.read_bytes() for f in files[:-1])
