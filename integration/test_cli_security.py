"""The ``rocketmq-py`` CLI against a cluster with ACL on and one that enforces TLS.

Two single-broker clusters of the run's version for this module (started as ``test_acl.py`` and
``test_tls.py`` start theirs): ACL (5.x: ACL 2.0, the launcher's account a SUPER user; no address
white-listed, so a request the broker accepts was signed), and TLS in ``enforcing`` mode with a
certificate for 127.0.0.1 from a CA made for the cluster (``<workdir>/tls/ca.pem``).

``main()`` runs in-process (its own ``trio.run``), as in ``test_cli.py``; stdout and stderr are
captured. A refused command must end with exit code 1 and one ``rocketmq-py: error:`` line, no
traceback (and never show the secret).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from integration._shapes import new_topic, shape_cluster, stored_messages, version_under_test, wait_stored
from rocketmq_py.cli import EXIT_ERROR, EXIT_OK, main
from rocketmq_py.testing import LocalCluster


@pytest.fixture(scope="module")
def acl_cluster() -> Iterator[LocalCluster]:
    with shape_cluster(1, version=version_under_test(), acl=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[LocalCluster]:
    with shape_cluster(1, version=version_under_test(), tls=True) as cluster:
        yield cluster


def _group(prefix: str) -> str:
    return f"cli-sec-{prefix}-{uuid.uuid4().hex[:8]}"


def _assert_one_error_line(err: str, *, secret: str | None = None) -> None:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("rocketmq-py: error: ")]
    assert len(errors) == 1, err
    if secret is not None:
        assert secret not in err


# --- ACL --------------------------------------------------------------------------------------------


def test_acl_send_consume_stats_and_group_list_with_the_keys(
    acl_cluster: LocalCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = acl_cluster
    creds = cluster.credentials
    assert creds is not None
    topic = new_topic(cluster, 2, prefix="cli-acl")
    group = _group("acl")
    keys = ["--access-key", creds.access_key, "--secret-key", creds.secret_key]
    base = ["-n", cluster.namesrv_addr]

    # The keys on the command line, before or after the command.
    assert main([*base, *keys, "send", topic, "--body", "signed", "--count", "3"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert "sent 3 of 3 message(s)" in out, err
    assert wait_stored(cluster, topic, 3) == 3

    assert main([*base, "topic", "stats", topic, *keys]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == f"{topic}: 2 queues, 3 messages", err

    # The keys from the environment, as a script passes them: the secret is not in argv.
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", creds.access_key)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", creds.secret_key)
    assert main([*base, "consume", topic, "-g", group, "--from-beginning", "--count", "3"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert [line.rsplit(" ", 1)[-1] for line in out.splitlines()] == ["body=signed"] * 3, out + err

    assert main([*base, "group", "list"]) == EXIT_OK
    listed = capsys.readouterr().out.splitlines()
    assert group in listed
    assert "TOOLS_CONSUMER" not in listed
    assert not [g for g in listed if g.startswith("CID_RMQ_SYS_")]
    assert main([*base, "group", "list", "--all"]) == EXIT_OK
    everything = capsys.readouterr().out.splitlines()
    assert set(listed) < set(everything)
    assert "TOOLS_CONSUMER" in everything


@pytest.mark.parametrize(
    "argv", [["topic", "stats", "{topic}"], ["group", "list"], ["send", "{topic}", "--body", "x"]]
)
def test_acl_a_wrong_secret_fails_with_one_clear_line(
    acl_cluster: LocalCluster, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    cluster = acl_cluster
    creds = cluster.credentials
    assert creds is not None
    topic = new_topic(cluster, 1, prefix="cli-acl-bad")
    wrong = f"wrong-{uuid.uuid4().hex}"
    command = [part.format(topic=topic) for part in argv]
    keys = ["--access-key", creds.access_key, "--secret-key", wrong]
    assert main(["-n", cluster.namesrv_addr, *keys, *command]) == EXIT_ERROR
    err = capsys.readouterr().err
    _assert_one_error_line(err, secret=wrong)
    assert "AuthenticationFailed" in err, err
    if command[0] == "send":
        assert stored_messages(cluster, topic) == 0


def test_acl_without_keys_fails_with_one_clear_line(
    acl_cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-n", acl_cluster.namesrv_addr, "group", "list"]) == EXIT_ERROR
    err = capsys.readouterr().err
    _assert_one_error_line(err)
    assert "AuthenticationFailed" in err, err


# --- TLS --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tls", ["ca-file", "insecure"])
def test_tls_send_and_topic_stats(
    tls_cluster: LocalCluster, capsys: pytest.CaptureFixture[str], tls: str
) -> None:
    """With the cluster's CA (its certificate names 127.0.0.1, so the host name checks too), or
    checking nothing, as Java's client does by default."""
    cluster = tls_cluster
    topic = new_topic(cluster, 2, prefix=f"cli-tls-{tls}")
    options = (
        ["--tls-ca-file", str(cluster.workdir / "tls" / "ca.pem")] if tls == "ca-file" else ["--tls-insecure"]
    )
    base = ["-n", cluster.namesrv_addr, *options]
    assert main([*base, "send", topic, "--body", "over tls", "--count", "4"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert "sent 4 of 4 message(s)" in out, err
    assert main(["topic", "stats", topic, *base]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == f"{topic}: 2 queues, 4 messages", err


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ([], "does the server require TLS?"),
        (["--tls"], "certificate verify failed"),  # the system's CAs do not know the cluster's
    ],
)
@pytest.mark.parametrize("command", [["topic", "stats", "{topic}"], ["send", "{topic}", "--body", "x"]])
def test_tls_without_the_cluster_ca_fails_with_one_clear_line(
    tls_cluster: LocalCluster,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    reason: str,
    command: list[str],
) -> None:
    cluster = tls_cluster
    topic = new_topic(cluster, 1, prefix="cli-tls-bad")
    argv = ["-n", cluster.namesrv_addr, "--timeout", "5", *options, *(p.format(topic=topic) for p in command)]
    assert main(argv) == EXIT_ERROR
    err = capsys.readouterr().err
    _assert_one_error_line(err)
    assert reason in err, err
    if command[0] == "send":
        assert stored_messages(cluster, topic) == 0
