"""The CLI's ACL and TLS options and ``group list``, without a real broker.

Parsing: ``--access-key``/``--secret-key`` (defaults ``ROCKETMQ_ACCESS_KEY``/``ROCKETMQ_SECRET_KEY``,
both or neither), ``--security-token`` (default ``ROCKETMQ_SECURITY_TOKEN``, only with the keys), ``--tls``, ``--tls-ca-file``, ``--tls-insecure``, before and after the command.
End to end against a FakeBroker (NameServer and broker in one): every command signs its requests,
speaks TLS to a fake that only speaks TLS (a CA made for the test), and ``group list`` hides the
system groups and keeps to the namespace. The real clusters: ``integration/test_cli_security.py``.
"""

from __future__ import annotations

import json
import shutil
import ssl
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
import trio

from rocketmq_py._transport._hooks import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, acl_signature
from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from rocketmq_py.cli._admin_commands import is_system_group
from rocketmq_py.cli._parser import Common, GroupListCommand, RouteCommand, UsageError, parse_command
from rocketmq_py.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_py.testing import FakeBroker
from rocketmq_py.testing._tls import TlsFiles, make_tls_files

NS = "127.0.0.1:9876"
ENV = {"ROCKETMQ_NAMESRV": NS}
AK, SK = "cli-ak-1", "cli-secret-1"
TOKEN = "cli-sts-token-1"
CLUSTER_INFO = (
    '{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"ADDRESS"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)
GROUPS = [
    "orders",
    "ns1%billing",
    "ns2%billing",
    "TOOLS_CONSUMER",
    "CID_RMQ_SYS_TRANS",
    "CID_RMQ_SYS_other",
    "SELF_TEST_C_GROUP",
    "CID_ONSAPI_PULL",
    "__MONITOR_CONSUMER",
]


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCKETMQ_NAMESRV", "ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY", "ROCKETMQ_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command line tool to make a CA")
    return make_tls_files(tmp_path_factory.mktemp("tls"))


# --- ACL keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--access-key", AK, "--secret-key", SK, "route", "T"],
        ["route", "T", "--access-key", AK, "--secret-key", SK],
        ["--access-key", AK, "route", "T", "--secret-key", SK],
    ],
)
def test_keys_before_or_after_the_command(argv: list[str]) -> None:
    common = parse_command(argv, ENV).common
    assert (common.access_key, common.secret_key, common.ssl_context) == (AK, SK, None)


def test_keys_default_to_the_environment_and_an_option_wins() -> None:
    env = {**ENV, "ROCKETMQ_ACCESS_KEY": AK, "ROCKETMQ_SECRET_KEY": SK}
    common = parse_command(["route", "T"], env).common
    assert (common.access_key, common.secret_key) == (AK, SK)
    common = parse_command(["route", "T", "--secret-key", "other"], env).common
    assert (common.access_key, common.secret_key) == (AK, "other")


def test_no_keys_and_empty_keys_are_none() -> None:
    assert parse_command(["route", "T"], ENV) == RouteCommand(Common((NS,)), "T")
    empty = {**ENV, "ROCKETMQ_ACCESS_KEY": "", "ROCKETMQ_SECRET_KEY": ""}
    assert parse_command(["route", "T"], empty).common == Common((NS,))


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--access-key", AK], {}, "an access key without a secret key: set ROCKETMQ_SECRET_KEY or pass"),
        ([], {"ROCKETMQ_ACCESS_KEY": AK}, "an access key without a secret key"),
        (["--secret-key", SK], {}, "a secret key without an access key: pass --access-key AK or set"),
        ([], {"ROCKETMQ_SECRET_KEY": SK}, "a secret key without an access key"),
    ],
)
def test_one_key_without_the_other_is_a_usage_error(
    argv: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        parse_command([*argv, "route", "T"], {**ENV, **env})


def test_the_secret_stays_out_of_reprs(capsys: pytest.CaptureFixture[str]) -> None:
    command = parse_command(["--access-key", AK, "--secret-key", SK, "route", "T"], ENV)
    assert SK not in repr(command)
    assert AK in repr(command)
    with pytest.raises(SystemExit):
        parse_command(["route", "--help"], {**ENV, "ROCKETMQ_SECRET_KEY": SK})
    shown = capsys.readouterr().out
    assert "$ROCKETMQ_SECRET_KEY" in shown
    assert SK not in shown


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--security-token", TOKEN, "route", "T"], {}),
        (["route", "T", "--security-token", TOKEN], {}),
        (["route", "T"], {"ROCKETMQ_SECURITY_TOKEN": TOKEN}),
    ],
)
def test_a_security_token_before_or_after_the_command_or_from_the_environment(
    argv: list[str], env: dict[str, str]
) -> None:
    keys = {"ROCKETMQ_ACCESS_KEY": AK, "ROCKETMQ_SECRET_KEY": SK}
    common = parse_command(argv, {**ENV, **keys, **env}).common
    assert (common.access_key, common.secret_key, common.security_token) == (AK, SK, TOKEN)
    assert common.connection_options() == {
        "access_key": AK,
        "secret_key": SK,
        "security_token": TOKEN,
        "ssl_context": None,
    }
    assert TOKEN not in repr(common)


@pytest.mark.parametrize(
    "env", [{}, {"ROCKETMQ_ACCESS_KEY": AK, "ROCKETMQ_SECRET_KEY": ""}, {"ROCKETMQ_SECURITY_TOKEN": TOKEN}]
)
def test_a_security_token_without_the_keys_is_a_usage_error(env: dict[str, str]) -> None:
    """The token only rides on signed requests (Java ``AclClientRPCHook``): alone it would be dropped
    without a word. (With the access key but no secret, that error comes first.)"""
    argv = ["route", "T"] if "ROCKETMQ_SECURITY_TOKEN" in env else ["--security-token", TOKEN, "route", "T"]
    with pytest.raises(UsageError, match=r"security token without ACL keys|without a secret key"):
        parse_command(argv, {**ENV, **env})


def test_the_security_token_stays_out_of_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_command(["route", "--help"], {**ENV, "ROCKETMQ_SECURITY_TOKEN": TOKEN})
    shown = capsys.readouterr().out
    assert "$ROCKETMQ_SECURITY_TOKEN" in shown
    assert TOKEN not in shown


def test_main_exits_2_on_a_lone_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-n", NS, "--access-key", AK, "group", "list"]) == EXIT_USAGE
    assert capsys.readouterr().err.endswith(
        "rocketmq-py: error: an access key without a secret key: set ROCKETMQ_SECRET_KEY or pass "
        "--secret-key SK\n"
    )


# --- TLS ------------------------------------------------------------------------------------------


def test_no_tls_by_default() -> None:
    assert parse_command(["route", "T"], ENV).common.ssl_context is None


@pytest.mark.parametrize("argv", [["--tls", "route", "T"], ["route", "T", "--tls"]])
def test_tls_verifies_with_the_system_cas(argv: list[str]) -> None:
    context = parse_command(argv, ENV).common.ssl_context
    assert isinstance(context, ssl.SSLContext)
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)


@pytest.mark.parametrize("before", [True, False])
def test_a_ca_file_implies_tls_and_is_trusted(tls_files: TlsFiles, before: bool) -> None:
    option = ["--tls-ca-file", str(tls_files.ca_cert)]
    argv = [*option, "route", "T"] if before else ["route", "T", *option]
    context = parse_command(argv, ENV).common.ssl_context
    assert context is not None
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "rocketmq-py test CA"),),)]


@pytest.mark.parametrize(
    "argv", [["--tls-insecure", "route", "T"], ["--tls", "route", "T", "--tls-insecure"]]
)
def test_insecure_implies_tls_and_checks_nothing(argv: list[str]) -> None:
    context = parse_command(argv, ENV).common.ssl_context
    assert context is not None
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)


def test_a_missing_ca_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "ca.pem"
    with pytest.raises(UsageError, match=f"cannot read --tls-ca-file {missing}: No such file or directory"):
        parse_command(["route", "T", "--tls-ca-file", str(missing)], ENV)


def test_a_ca_file_without_a_certificate_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(UsageError, match=f"--tls-ca-file {garbage}: no CA certificate in it"):
        parse_command(["--tls-ca-file", str(garbage), "route", "T"], ENV)


def test_a_ca_file_and_insecure_exclude_each_other(tls_files: TlsFiles) -> None:
    with pytest.raises(UsageError, match="--tls-ca-file and --tls-insecure exclude each other"):
        parse_command(["--tls-insecure", "route", "T", "--tls-ca-file", str(tls_files.ca_cert)], ENV)


def test_main_exits_2_on_a_missing_ca_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "ca.pem"
    assert main(["-n", NS, "topic", "stats", "T", "--tls-ca-file", str(missing)]) == EXIT_USAGE
    assert f"rocketmq-py: error: cannot read --tls-ca-file {missing}" in capsys.readouterr().err


# --- group list: parsing and the system groups -----------------------------------------------------


def test_group_list_parsing() -> None:
    assert parse_command(["group", "list"], ENV) == GroupListCommand(Common((NS,)))
    assert parse_command(["group", "list", "--all", "--json"], ENV) == GroupListCommand(
        Common((NS,)), all_groups=True, json=True
    )
    command = parse_command(
        ["group", "list", "--namespace", "ns1", "--access-key", AK, "--secret-key", SK], ENV
    )
    assert command == GroupListCommand(Common((NS,), namespace="ns1", access_key=AK, secret_key=SK))


def test_group_list_takes_no_group() -> None:
    with pytest.raises(UsageError, match="unrecognized arguments: G"):
        parse_command(["group", "list", "G"], ENV)


@pytest.mark.parametrize(
    ("group", "system"),
    [
        ("CID_RMQ_SYS_TRANS", True),
        ("CID_RMQ_SYS_anything", True),
        ("TOOLS_CONSUMER", True),
        ("FILTERSRV_CONSUMER", True),
        ("__MONITOR_CONSUMER", True),
        ("CLIENT_INNER_PRODUCER", True),
        ("SELF_TEST_C_GROUP", True),
        ("CID_ONS-HTTP-PROXY", True),
        ("CID_ONSAPI_PERMISSION", True),
        ("CID_ONSAPI_OWNER", True),
        ("CID_ONSAPI_PULL", True),
        ("DEFAULT_CONSUMER", True),
        ("orders", False),
        ("ns%TOOLS_CONSUMER", False),
        ("tools_consumer", False),
        ("CID_orders", False),
    ],
)
def test_system_groups_as_mqadmin_hides_them(group: str, system: bool) -> None:
    assert is_system_group(group) is system


# --- against a FakeBroker ---------------------------------------------------------------------------


def _serve_cluster(fb: FakeBroker, groups: Iterable[str]) -> None:
    async def cluster_info(request: RemotingCommand) -> RemotingCommand:
        body = CLUSTER_INFO.replace("ADDRESS", fb.address)
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body.encode())

    async def subscription_groups(request: RemotingCommand) -> RemotingCommand:
        table = {name: {"groupName": name} for name in groups}
        body = json.dumps({"subscriptionGroupTable": table}).encode()
        return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body)

    async def create_topic(request: RemotingCommand) -> RemotingCommand:
        fb.add_topic(request.ext_fields["topic"], queues=int(request.ext_fields["writeQueueNums"]))
        return RemotingCommand.response(request, ResponseCode.SUCCESS)

    fb.on(RequestCode.GET_BROKER_CLUSTER_INFO, cluster_info)
    fb.on(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic)
    fb.on(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, subscription_groups)
    fb.add_topic("T", queues=2)


@pytest.fixture
async def fake() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(broker_name="broker-a") as fb:
        _serve_cluster(fb, GROUPS)
        yield fb


async def run(*argv: str) -> int:
    return await trio.to_thread.run_sync(main, list(argv))


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ([], ["ns1%billing", "ns2%billing", "orders"]),
        (["--namespace", "ns1"], ["ns1%billing"]),
        (["--all"], sorted(GROUPS)),
        (["--all", "--namespace", "ns2"], ["ns2%billing"]),  # no system group is in a namespace
    ],
)
async def test_group_list_hides_system_groups_and_keeps_to_the_namespace(
    fake: FakeBroker, capsys: pytest.CaptureFixture[str], options: list[str], shown: list[str]
) -> None:
    assert await run("-n", fake.address, "group", "list", *options) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == shown
    assert await run("-n", fake.address, "group", "list", "--json", *options) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == shown


def _assert_signed(requests: list[RemotingCommand], token: str | None = None) -> None:
    assert requests
    for request in requests:
        fields = dict(request.ext_fields)
        assert fields.get(ACCESS_KEY) == AK, request
        assert fields.get(SECURITY_TOKEN) == token, request
        assert fields.pop(SIGNATURE) == acl_signature(SK, fields, request.body)


@pytest.mark.parametrize("token", [None, TOKEN])
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["route", "T"], RequestCode.GET_ROUTEINFO_BY_TOPIC),
        (["topic", "stats", "T"], RequestCode.GET_TOPIC_STATS_INFO),
        (["group", "list"], RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
        (["group", "inspect", "G", "T"], RequestCode.GET_CONSUMER_LIST_BY_GROUP),
        (["topic", "create", "T2", "--queues", "1"], RequestCode.UPDATE_AND_CREATE_TOPIC),
        (["send", "T", "--body", "hi"], RequestCode.SEND_MESSAGE_V2),
        (["consume", "T", "-g", "G", "--from-beginning", "--count", "1"], RequestCode.PULL_MESSAGE),
    ],
)
async def test_every_command_signs_its_requests(
    fake: FakeBroker,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    code: RequestCode,
    token: str | None,
) -> None:
    """The keys from the environment, as a script would pass them; every request the fake saw
    (NameServer and broker ones) carries the access key, the security token when one is given,
    and a signature made with the secret over them all."""
    from rocketmq_py.protocol import Message

    fake.put_messages(0, [Message("T", b"first")])
    fake.on(
        RequestCode.GET_TOPIC_STATS_INFO,
        lambda request: _answer(request, b'{"offsetTable":{}}'),
    )
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", AK)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", SK)
    if token is not None:
        monkeypatch.setenv("ROCKETMQ_SECURITY_TOKEN", token)
    with trio.fail_after(30):
        assert await run("-n", fake.address, *argv) == EXIT_OK, capsys.readouterr().err
    assert fake.requests(code)
    _assert_signed(fake.requests(), token)


async def _answer(request: RemotingCommand, body: bytes) -> RemotingCommand:
    return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body)


def _server_context(files: TlsFiles) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.server_cert, files.server_key)
    return context


async def test_tls_with_the_ca_file_or_insecure_and_plain_tcp_fails(
    tls_files: TlsFiles, capsys: pytest.CaptureFixture[str]
) -> None:
    async with FakeBroker(broker_name="broker-a", ssl_context=_server_context(tls_files)) as fb:
        _serve_cluster(fb, ["orders"])
        for tls in (["--tls-ca-file", str(tls_files.ca_cert)], ["--tls-insecure"]):
            assert await run("-n", fb.address, *tls, "group", "list") == EXIT_OK
            assert capsys.readouterr().out == "orders\n"
            assert await run("-n", fb.address, *tls, "send", "T", "--body", "over tls") == EXIT_OK
            assert "sent 1 of 1 message(s) to T" in capsys.readouterr().out
        # The system's CAs do not know the test CA: the handshake fails, one line, exit 1.
        assert await run("-n", fb.address, "--tls", "--timeout", "5", "route", "T") == EXIT_ERROR
        err = capsys.readouterr().err
        assert err.startswith("rocketmq-py: error: ")
        assert "Traceback" not in err
        assert await run("-n", fb.address, "--timeout", "5", "route", "T") == EXIT_ERROR
        err = capsys.readouterr().err
        assert err.startswith("rocketmq-py: error: ")
        assert "Traceback" not in err
