"""The CLI commands end to end against a FakeBroker playing NameServer and broker ``broker-a``.

``main()`` runs ``trio.run`` itself, so it is called from a worker thread while the fake serves
in the test's loop. What the CLI sent is read back from the fake's request log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from rocketmq_py.admin import _calls as admin_module
from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, main
from rocketmq_py.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_py.testing import FakeBroker

CLUSTER_INFO = (
    '{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"ADDRESS"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:

        async def cluster_info(request: RemotingCommand) -> RemotingCommand:
            body = CLUSTER_INFO.replace("ADDRESS", fb.address)
            return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body.encode())

        async def create_topic(request: RemotingCommand) -> RemotingCommand:
            fields = request.ext_fields
            fb.add_topic(fields["topic"], queues=int(fields["writeQueueNums"]), perm=int(fields["perm"]))
            return RemotingCommand.response(request, ResponseCode.SUCCESS)

        async def put_kv(request: RemotingCommand) -> RemotingCommand:
            return RemotingCommand.response(request, ResponseCode.SUCCESS)

        fb.on(RequestCode.GET_BROKER_CLUSTER_INFO, cluster_info)
        fb.on(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic)
        fb.on(RequestCode.PUT_KV_CONFIG, put_kv)
        yield fb


async def run(*argv: str) -> int:
    return await trio.to_thread.run_sync(main, list(argv))


async def test_topic_create_makes_a_broker_the_route_shows_stale_register_again(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NameServer left with the old queue count (see ``reregistering_headers``) takes the update
    only when the broker's topic config changed: the CLI sends another filter type, then the one asked."""
    monkeypatch.setattr(admin_module, "ROUTE_REREGISTER_AFTER", 0.3)
    fake.add_topic("T2", queues=2)
    filters: list[str] = []

    async def stale_until_changed(request: RemotingCommand) -> RemotingCommand:
        fields = request.ext_fields
        filters.append(fields["topicFilterType"])
        if len(filters) > 1 and filters[-2] != filters[-1]:  # a real change registers the topic again
            fake.add_topic("T2", queues=int(fields["writeQueueNums"]), perm=int(fields["perm"]))
        return RemotingCommand.response(request, ResponseCode.SUCCESS)

    fake.on(RequestCode.UPDATE_AND_CREATE_TOPIC, stale_until_changed)
    assert await run("-n", fake.address, "topic", "create", "T2", "--queues", "5", "--wait", "30") == EXIT_OK
    assert "1 broker(s), 5 read / 5 write queues" in capsys.readouterr().out
    assert filters == ["SINGLE_TAG", "MULTI_TAG", "SINGLE_TAG"]  # the ask, then the two re-registering ones


async def test_topic_create_then_route(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run("-n", fake.address, "topic", "create", "T1", "--queues", "3", "--order") == EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    assert (
        out.splitlines()[0] == f"created T1 on broker-a ({fake.address}): 3 read / 3 write queues, perm RW-"
    )
    assert "order conf broker-a:3 stored on the NameServer" in out
    assert f"broker-a  DefaultCluster  {fake.address}  -       3     3      RW- (6)" in out

    [create] = fake.requests(RequestCode.UPDATE_AND_CREATE_TOPIC)
    assert {
        k: create.ext_fields[k] for k in ("topic", "readQueueNums", "writeQueueNums", "perm", "order")
    } == {
        "topic": "T1",
        "readQueueNums": "3",
        "writeQueueNums": "3",
        "perm": "6",
        "order": "true",
    }
    [kv] = fake.requests(RequestCode.PUT_KV_CONFIG)
    assert dict(kv.ext_fields) == {"namespace": "ORDER_TOPIC_CONFIG", "key": "T1", "value": "broker-a:3"}

    assert await run("route", "T1", "-n", fake.address) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == [
        "topic T1",
        "BROKER    CLUSTER         MASTER" + " " * (len(fake.address) - 4) + "SLAVES  READ  WRITE  PERM",
        f"broker-a  DefaultCluster  {fake.address}  -       3     3      RW- (6)",
        "1 broker(s), 3 read / 3 write queues",
    ]


async def test_topic_create_in_an_unknown_cluster(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await run("-n", fake.address, "topic", "create", "T2", "--queues", "1", "--cluster", "Other")
    assert code == EXIT_ERROR
    assert (
        capsys.readouterr().err == "rocketmq-py: error: no cluster named 'Other' (clusters: DefaultCluster)\n"
    )
    assert fake.requests(RequestCode.UPDATE_AND_CREATE_TOPIC) == []


@pytest.mark.parametrize(
    ("refused", "options", "needed_by"),
    [
        (RequestCode.GET_BROKER_CLUSTER_INFO, [], "`topic create` and `group inspect` list the brokers"),
        (RequestCode.UPDATE_AND_CREATE_TOPIC, [], "`topic create` creates the topic on each broker"),
        (
            RequestCode.PUT_KV_CONFIG,
            ["--order"],
            "`topic create --order` stores the order conf on the NameServer",
        ),
    ],
)
async def test_topic_create_through_a_proxy_names_the_limitation(
    fake: FakeBroker,
    capsys: pytest.CaptureFixture[str],
    refused: RequestCode,
    options: list[str],
    needed_by: str,
) -> None:
    """A 5.x Proxy registers none of the three (rocketmq-proxy ``RemotingProtocolServer``
    ``registerRemotingServer``) and answers REQUEST_CODE_NOT_SUPPORTED: the command names the call,
    what needs it and to give the NameServer, not "request type 106 not supported". Through a real
    Proxy: ``integration/test_proxy.py``."""
    fake.refuse(refused)
    code = await run("-n", fake.address, "topic", "create", "T2", "--queues", "1", *options)
    assert code == EXIT_ERROR
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("rocketmq-py: error: broker answered code 3 (UnsupportedByProxy): ")
    assert line.endswith(
        f"{fake.address} does not serve {refused.name} (request code {int(refused)}), as a 5.x Proxy "
        f"does not: {needed_by} with it; give the NameServer (-n HOST:PORT, port 9876 by default) "
        "instead of the Proxy"
    )


async def test_route_of_an_unknown_topic(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run("-n", fake.address, "route", "Nope") == EXIT_ERROR
    assert capsys.readouterr().err == (
        f"rocketmq-py: error: no route info for topic 'Nope' (name servers: {fake.address})\n"
    )


async def test_send_few_prints_each_result(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    fake.add_topic("S1", queues=2)
    argv = ["-n", fake.address, "send", "S1", "--body", "hi", "--tags", "TA", "--keys", "a,b"]
    assert await run(*argv, "--property", "p=1", "--count", "3") == EXIT_OK
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["SEND_OK"] * 3
    assert lines[3].startswith("sent 3 of 3 message(s) to S1 in ")
    assert lines[3].endswith(", 0 failed")
    assert err == ""
    stored = fake.messages("S1", 0) + fake.messages("S1", 1)
    assert len(stored) == 3
    assert {(m.body, m.tags, m.keys, m.properties["p"]) for m in stored} == {(b"hi", "TA", ("a", "b"), "1")}


async def test_namespace_wraps_the_names_on_the_wire(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--namespace ns1``: admin commands work on ``ns1%T`` and show it; send and consume use
    ``T`` as a client of the namespace does, and put ``ns1%`` on the topic and groups on the wire."""
    base = ["-n", fake.address, "--namespace", "ns1"]
    assert await run(*base, "topic", "create", "T", "--queues", "1") == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("created ns1%T on broker-a")
    assert "topic ns1%T" in out
    [create] = fake.requests(RequestCode.UPDATE_AND_CREATE_TOPIC)
    assert create.ext_fields["topic"] == "ns1%T"

    assert await run(*base, "route", "T") == EXIT_OK
    assert capsys.readouterr().out.startswith("topic ns1%T\n")

    assert await run(*base, "send", "T", "--body", "hi") == EXIT_OK
    out = capsys.readouterr().out
    assert "sent 1 of 1 message(s) to T" in out
    [stored] = fake.messages("ns1%T", 0)
    assert stored.body == b"hi"
    [send] = fake.requests(RequestCode.SEND_MESSAGE_V2)
    assert (send.ext_fields["a"], send.ext_fields["b"]) == ("ns1%rocketmq-py-cli", "ns1%T")  # group, topic

    code = await run(*base, "consume", "T", "-g", "cg", "--from-beginning", "--count", "1")
    out, err = capsys.readouterr()
    assert (code, out.split("body=")[-1]) == (EXIT_OK, "hi\n")
    assert err == "consumed 1 message(s) from T as cg; offsets persisted\n"
    assert fake.consumer_offsets[("ns1%cg", "ns1%T", 0)] == 1


async def test_send_many_shows_progress_not_results(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.add_topic("S2", queues=2)
    assert (
        await run("-n", fake.address, "send", "S2", "--body", "x", "--count", "25", "--concurrency", "4") == 0
    )
    out, err = capsys.readouterr()
    assert out.count("\n") == 1
    assert out.startswith("sent 25 of 25 message(s) to S2")
    assert err.splitlines()[-1].startswith("sent 25/25 (100%)  failed 0  ")  # the final progress line
    assert len(fake.messages("S2", 0) + fake.messages("S2", 1)) == 25
    assert await run("-n", fake.address, "send", "S2", "--body", "x", "--count", "11", "-q") == 0
    out, err = capsys.readouterr()
    assert err == ""


async def test_send_failures_are_counted(fake: FakeBroker, capsys: pytest.CaptureFixture[str]) -> None:
    fake.add_topic("S3", queues=1)

    async def refuse(request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(request, 13, "refused for the test")  # MESSAGE_ILLEGAL

    fake.on(RequestCode.SEND_MESSAGE_V2, refuse)
    assert await run("-n", fake.address, "send", "S3", "--body", "x", "--count", "2") == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out.startswith("sent 0 of 2 message(s) to S3")
    assert err.splitlines() == [
        "#1 failed: broker answered code 13 (MessageIllegal): refused for the test",
        "#2 failed: broker answered code 13 (MessageIllegal): refused for the test",
        "rocketmq-py: error: 2 send(s) failed; last error: broker answered code 13 (MessageIllegal): "
        "refused for the test",
    ]


async def test_a_slow_reply_is_waited_for_not_sent_again(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broker that answers a send after 1.5 s (a loaded machine, a cold TLS connection) within the
    command's ``--timeout``: the CLI waits for the answer, as mqadmin ``sendMessage`` does, instead of
    abandoning the attempt after the producer's default ``attempt_timeout`` (1 s) and storing the
    message twice (integration/test_cli_security.py saw 5 stored of 4 sent, ci11). Real time: ``main()``
    runs its own trio loop."""
    fake.add_topic("S4", queues=2)
    fake.delay(RequestCode.SEND_MESSAGE_V2, 1.5)
    assert await run("-n", fake.address, "--timeout", "5", "send", "S4", "--body", "x") == EXIT_OK
    out, err = capsys.readouterr()
    assert "sent 1 of 1 message(s) to S4" in out, err
    assert len(fake.requests(RequestCode.SEND_MESSAGE_V2)) == 1
    assert len(fake.messages("S4", 0) + fake.messages("S4", 1)) == 1
