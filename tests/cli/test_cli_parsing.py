"""The CLI without a broker: parsing, the NameServer default, exit codes and error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from rocketmq_py.cli._parser import (
    CLI_PRODUCER_GROUP,
    Common,
    CreateTopicCommand,
    RouteCommand,
    SendCommand,
    UsageError,
    parse_command,
)

NS = "127.0.0.1:9876"
ENV = {"ROCKETMQ_NAMESRV": NS}


@pytest.fixture(autouse=True)
def _no_namesrv_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_NAMESRV", raising=False)


# --- parse_command ------------------------------------------------------------------------------


def test_route() -> None:
    assert parse_command(["route", "T"], ENV) == RouteCommand(Common((NS,)), "T")
    assert parse_command(["route", "T", "--json"], ENV) == RouteCommand(Common((NS,)), "T", json=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "h1:1;h2:2", "route", "T"],
        ["route", "T", "-n", "h1:1;h2:2"],
        ["--namesrv", "h1:1; h2:2", "route", "T"],
        ["-n", "other:1", "route", "T", "--namesrv", "h1:1;h2:2"],  # the later one wins
    ],
)
def test_namesrv_before_or_after_the_command(argv: list[str]) -> None:
    assert parse_command(argv, ENV).common.namesrv == ("h1:1", "h2:2")


def test_namesrv_defaults_to_the_environment() -> None:
    assert parse_command(["route", "T"], {"ROCKETMQ_NAMESRV": "a:1;b:2"}).common.namesrv == ("a:1", "b:2")


@pytest.mark.parametrize("env", [{}, {"ROCKETMQ_NAMESRV": ""}, {"ROCKETMQ_NAMESRV": " ; "}])
def test_no_namesrv_is_a_usage_error(env: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="no NameServer: pass -n HOST:PORT or set ROCKETMQ_NAMESRV"):
        parse_command(["route", "T"], env)


def test_timeout_before_or_after() -> None:
    assert parse_command(["--timeout", "7", "route", "T"], ENV).common.timeout == 7.0
    assert parse_command(["route", "T", "--timeout", "0.5"], ENV).common.timeout == 0.5
    assert parse_command(["route", "T"], ENV).common.timeout == 3.0


@pytest.mark.parametrize(
    "argv",
    [["--namespace", "ns-1", "route", "T"], ["route", "T", "--namespace", "ns-1"]],
)
def test_namespace_before_or_after_the_command(argv: list[str]) -> None:
    common = parse_command(argv, ENV).common
    assert (common.namespace, common.wire("T"), common.wire("%RETRY%g"), common.wire("TBW102")) == (
        "ns-1",
        "ns-1%T",
        "%RETRY%ns-1%g",
        "TBW102",
    )
    plain = parse_command(["route", "T"], ENV).common
    assert (plain.namespace, plain.wire("T")) == (None, "T")
    assert parse_command(["--namespace", "", "route", "T"], ENV).common.namespace is None


def test_trace_flag_of_send_and_consume() -> None:
    send = parse_command(["send", "T", "--body", "b", "--trace"], ENV)
    assert isinstance(send, SendCommand)
    assert send.trace is True
    consume = parse_command(["consume", "T", "-g", "g", "--trace"], ENV)
    assert getattr(consume, "trace", None) is True
    plain = parse_command(["send", "T", "--body", "b"], ENV)
    assert isinstance(plain, SendCommand)
    assert plain.trace is False


def test_topic_create() -> None:
    assert parse_command(["topic", "create", "T", "--queues", "8"], ENV) == CreateTopicCommand(
        Common((NS,)), "T", 8
    )
    cmd = parse_command(
        ["topic", "create", "T", "--queues", "2", "--cluster", "C", "--order", "--wait", "5", "-n", "x:1"], {}
    )
    assert cmd == CreateTopicCommand(Common(("x:1",)), "T", 2, cluster="C", order=True, wait=5.0)


def test_send_with_everything() -> None:
    cmd = parse_command(
        [
            "send",
            "T",
            "--body",
            "héllo",
            "--tags",
            "TagA",
            "--keys",
            "k1, k2,,",
            "--property",
            "a=1",
            "--property",
            "b=x=y",
            "--property",
            "empty=",
            "--count",
            "20",
            "--group",
            "G",
            "--concurrency",
            "4",
            "-q",
        ],
        ENV,
    )
    assert cmd == SendCommand(
        Common((NS,)),
        "T",
        "héllo".encode(),
        tags="TagA",
        keys=("k1", "k2"),
        properties={"a": "1", "b": "x=y", "empty": ""},
        count=20,
        group="G",
        concurrency=4,
        quiet=True,
    )


def test_send_defaults_and_body_file(tmp_path: Path) -> None:
    path = tmp_path / "body.bin"
    path.write_bytes(b"\x00\xffbinary")
    cmd = parse_command(["send", "T", "--body-file", str(path)], ENV)
    assert isinstance(cmd, SendCommand)
    assert cmd.body == b"\x00\xffbinary"
    assert (cmd.count, cmd.group, cmd.concurrency, cmd.tags, cmd.keys, cmd.quiet) == (
        1,
        CLI_PRODUCER_GROUP,
        1,
        None,
        (),
        False,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "required: COMMAND"),
        (["nope"], "invalid choice: 'nope'"),
        (["route"], "required: TOPIC"),
        (["topic", "create", "T"], "required: --queues"),
        (["topic", "create", "T", "--queues", "0"], "must be at least 1, not 0"),
        (["topic", "create", "T", "--queues", "x"], "not a whole number"),
        (["send", "T"], "one of the arguments --body --body-file is required"),
        (["send", "T", "--body", "a", "--body-file", "f"], "not allowed with argument"),
        (["send", "T", "--body", "a", "--property", "novalue"], "expected KEY=VALUE"),
        (["send", "T", "--body", "a", "--property", "=v"], "expected KEY=VALUE"),
        (["send", "T", "--body", "a", "--count", "-1"], "must be at least 1"),
        (["route", "T", "--timeout", "0"], "must be more than 0"),
        (
            ["-n", "nohostport", "route", "T"],
            "-n/--namesrv: NameServer address 'nohostport' is not host:port",
        ),
        (["send", "T", "--body-file", "/no/such/file"], "cannot read --body-file /no/such/file"),
        (["route", "T", "--namespace", "a%b"], "--namespace: namespace 'a%b' may hold only letters"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")) as caught:
        parse_command(argv, ENV)
    assert caught.value.usage.startswith("usage: rocketmq-py")


# --- main: exit codes and messages -----------------------------------------------------------


def test_main_usage_error_exits_2_with_usage_and_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["route", "T"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: rocketmq-py")
    assert err.endswith("rocketmq-py: error: no NameServer: pass -n HOST:PORT or set ROCKETMQ_NAMESRV\n")


def test_main_uses_the_environment(
    monkeypatch: pytest.MonkeyPatch, refused_address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROCKETMQ_NAMESRV", refused_address)
    assert main(["route", "T"]) == EXIT_ERROR
    assert f"no NameServer answered ({refused_address})" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["route", "T"],
        ["topic", "create", "T", "--queues", "2"],
    ],
)
def test_main_unreachable_namesrv_exits_1_with_one_line(
    argv: list[str], refused_address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-n", refused_address, *argv]) == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"rocketmq-py: error: no NameServer answered ({refused_address})")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_main_send_to_unreachable_namesrv_counts_failures(
    refused_address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["-n", refused_address, "send", "T", "--body", "x", "--count", "2", "--timeout", "1"])
        == EXIT_ERROR
    )
    out, err = capsys.readouterr()
    assert out.startswith("sent 0 of 2 message(s) to T")
    assert "#1 failed:" in err
    assert "#2 failed:" in err
    assert "rocketmq-py: error: 2 send(s) failed; last error:" in err
    assert "Traceback" not in err


def test_main_invalid_message_stops_at_once(refused_address: str, capsys: pytest.CaptureFixture[str]) -> None:
    # validation happens before any I/O: the unreachable NameServer is never asked
    assert main(["-n", refused_address, "send", "bad topic!", "--body", "x", "--count", "50"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == (
        "rocketmq-py: error: invalid topic 'bad topic!': contains illegal characters, "
        "allowing only ^[%|a-zA-Z0-9_-]+$\n"
    )


def test_main_invalid_topic_name_for_create(refused_address: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-n", refused_address, "topic", "create", "a/b", "--queues", "1"]) == EXIT_ERROR
    assert "invalid topic 'a/b'" in capsys.readouterr().err


def test_main_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    assert "route" in capsys.readouterr().out
    assert main(["send", "--help"]) == EXIT_OK
    assert "--body-file" in capsys.readouterr().out
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("rocketmq-py ")
