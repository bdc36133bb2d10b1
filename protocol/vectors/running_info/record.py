"""Record a Java consumer's diagnostics replies, and the requests a broker sends a consumer.

Usage: ``ROCKETMQ_NAMESRV=host:port python protocol/vectors/running_info/record.py OUT_DIR``
(needs Java; the benchmark jars are resolved like ``python -m rocketmq_py.testing java-bench``).

1. :func:`record_java_replies`: the benchmark Consumer answers GET_CONSUMER_RUNNING_INFO and
   CONSUME_MESSAGE_DIRECTLY, which we send to broker-a for its client id.
2. :func:`record_broker_requests`: a raw socket registers a consumer on broker-a by heartbeat and
   commits offsets; then ``mqadmin resetOffsetByTime`` makes the broker send it
   RESET_CONSUMER_CLIENT_OFFSET, and a GET_CONSUMER_RUNNING_INFO for its id makes the broker
   forward that request to it. Both frames are kept as received. A 5.x broker only sends the
   reset with ``useServerSideResetOffset=false`` (its default, true, moves the group's offsets on
   the broker and lets the next pulls answer from there), so ``--broker-requests-only`` starts its
   own one-broker cluster configured so.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from rocketmq_py.protocol import (
    ConsumeFromWhere,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerData,
    ConsumerListBody,
    ConsumerRunningInfo,
    ConsumeType,
    CustomHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    HeartbeatData,
    HeartbeatRequestHeader,
    MessageModel,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    UpdateConsumerOffsetRequestHeader,
    build_subscription_data,
    decode_body,
    decode_command,
    encode_body,
    to_ext_fields,
)
from rocketmq_py.testing import LocalCluster, cluster_info, resolve_bench, run_java_bench, run_mqadmin
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._processes import JvmProcess, wait_for_line
from rocketmq_py.testing._tools import BENCH_MAIN_CLASSES

GROUP = "h3-vec-group"
RAW_GROUP = "h3-vec-raw-group"
RAW_CLIENT_ID = "127.0.0.1@h3-vec-raw"
MESSAGES = 20


def read_frame(sock: socket.socket) -> bytes:
    """One whole frame, length prefix included."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        need = 4 - len(data) if len(data) < 4 else 4 + struct.unpack(">i", data[:4])[0] - len(data)
        chunk = sock.recv(need)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


def update_manifest(out: Path, **fields: object) -> None:
    path = out / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest.update(fields)
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def call(address: str, code: int, header: CustomHeader) -> tuple[bytes, bytes]:
    """One request on a fresh socket: (request frame, reply frame), both with the length prefix."""
    request = RemotingCommand.request(code, to_ext_fields(header)).with_opaque(7).encode()
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while len(reply) < 4 or len(reply) < 4 + struct.unpack(">i", reply[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return request, reply


def record_java_replies(out: Path) -> None:
    namesrv = os.environ["ROCKETMQ_NAMESRV"]
    broker = cluster_info(namesrv)["broker-a"]
    topic = f"h3-vec-{uuid.uuid4().hex[:8]}"
    create = ["updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2"]
    run_mqadmin(create, namesrv=namesrv).check()
    home = Path(tempfile.mkdtemp(prefix="rec-running-info-"))
    write_home_conf(home)
    argv = [
        find_java(),
        *("-Xms64m", "-Xmx256m", f"-Duser.home={home}", f"-Drocketmq.home.dir={home}"),
        *("-cp", resolve_bench().classpath, BENCH_MAIN_CLASSES["consumer"]),
        *("-n", namesrv, "-t", topic, "-g", GROUP, "-p", "false", "-w", "4"),
    ]
    env = dict(os.environ, ROCKETMQ_HOME=str(home))
    proc = JvmProcess("java-consumer", argv, log_path=home / "c.log", env=env, cwd=home, die_with_parent=True)
    proc.start()
    try:
        wait_for_line(proc, "Consumer Started.", 90, "java consumer")
        send = ["-t", topic, "-w", "1", "-q", str(MESSAGES), "-k", "true", "-s", "32"]
        run_java_bench("producer", send, namesrv=namesrv, timeout=120).check()
        time.sleep(25)  # consumed, and offsets persisted (every 5 s)
        _, listed = call(
            broker,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            GetConsumerListByGroupRequestHeader(consumer_group=GROUP),
        )
        (client_id,) = decode_body(ConsumerListBody, decode_command(listed[4:]).body).consumer_id_list
        header = GetConsumerRunningInfoRequestHeader(consumer_group=GROUP, client_id=client_id)
        request, reply = call(broker, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        (out / "running-info-request.bin").write_bytes(request)
        (out / "running-info-response.bin").write_bytes(reply)
        query = ["queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "0", "-o", "0"]
        shown = run_mqadmin(query, namesrv=namesrv).check().output
        offset_id = next(line.split()[-1] for line in shown.splitlines() if line.startswith("OffsetID:"))
        direct = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=GROUP, client_id=client_id, msg_id=offset_id, broker_name="broker-a"
        )
        request, reply = call(broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, direct)
        (out / "consume-directly-request.bin").write_bytes(request)
        (out / "consume-directly-response.bin").write_bytes(reply)
        update_manifest(out, topic=topic, group=GROUP, client_id=client_id, messages=MESSAGES)
    finally:
        proc.terminate(timeout=10)


def record_broker_requests(out: Path) -> None:
    namesrv = os.environ["ROCKETMQ_NAMESRV"]
    broker = cluster_info(namesrv)["broker-a"]
    topic = f"h3-vec-raw-{uuid.uuid4().hex[:8]}"
    run_mqadmin(["updateTopic", "-b", broker, "-t", topic, "-r", "2", "-w", "2"], namesrv=namesrv).check()
    host, port = broker.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    opaque = iter(range(100, 1000))

    def rpc(code: int, header: CustomHeader, body: bytes = b"") -> RemotingCommand:
        command = RemotingCommand.request(code, to_ext_fields(header), body).with_opaque(next(opaque))
        sock.sendall(command.encode())
        while True:
            reply = decode_command(read_frame(sock)[4:])
            if reply.is_response and reply.opaque == command.opaque:
                return reply

    consumer = ConsumerData(
        group_name=RAW_GROUP,
        consume_type=ConsumeType.CONSUME_PASSIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        subscription_data_set=(build_subscription_data(topic, "*", sub_version=1),),
    )
    heartbeat = HeartbeatData(client_id=RAW_CLIENT_ID, consumer_data_set=(consumer,))
    rpc(RequestCode.HEART_BEAT, HeartbeatRequestHeader(), encode_body(heartbeat))
    for queue_id in (0, 1):
        commit = UpdateConsumerOffsetRequestHeader(
            consumer_group=RAW_GROUP, topic=topic, queue_id=queue_id, commit_offset=0
        )
        rpc(RequestCode.UPDATE_CONSUMER_OFFSET, commit)
    since = int(time.time() * 1000)
    reset = ["resetOffsetByTime", "-g", RAW_GROUP, "-t", topic, "-s", str(since)]
    run_mqadmin(reset, namesrv=namesrv).check()  # the broker sends the reset while mqadmin waits
    frame = read_frame(sock)
    assert decode_command(frame[4:]).code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET
    (out / "reset-offset-broker-request.bin").write_bytes(frame)

    # A second connection asks the broker for our running info; the broker forwards it to us.
    ask = GetConsumerRunningInfoRequestHeader(consumer_group=RAW_GROUP, client_id=RAW_CLIENT_ID)
    result: dict[str, bytes] = {}
    asker = threading.Thread(
        target=lambda: result.update(reply=call(broker, RequestCode.GET_CONSUMER_RUNNING_INFO, ask)[1])
    )
    asker.start()
    frame = read_frame(sock)
    forwarded = decode_command(frame[4:])
    assert forwarded.code == RequestCode.GET_CONSUMER_RUNNING_INFO
    (out / "running-info-broker-request.bin").write_bytes(frame)
    answer = ConsumerRunningInfo(
        {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"}, consumer.subscription_data_set, {}, {}
    )
    sock.sendall(RemotingCommand.response(forwarded, ResponseCode.SUCCESS, body=answer.encode()).encode())
    asker.join(30)
    sock.close()
    update_manifest(out, raw_topic=topic, raw_group=RAW_GROUP, raw_client_id=RAW_CLIENT_ID, reset_since=since)


def main(out: Path) -> None:
    record_java_replies(out)
    record_broker_requests_on_own_cluster(out)


def record_broker_requests_on_own_cluster(out: Path) -> None:
    with LocalCluster(1, broker_config={"useServerSideResetOffset": "false"}).start() as cluster:
        os.environ["ROCKETMQ_NAMESRV"] = cluster.namesrv_addr
        record_broker_requests(out)


if __name__ == "__main__":
    if sys.argv[2:] == ["--broker-requests-only"]:
        record_broker_requests_on_own_cluster(Path(sys.argv[1]))
    else:
        main(Path(sys.argv[1]))
