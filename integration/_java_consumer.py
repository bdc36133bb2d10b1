"""Starting the official benchmark Consumer in the tests, past the one request its start cannot lose.

``DefaultMQPushConsumer.start`` asks the NameServer for the topic's route once
(``DefaultMQPushConsumerImpl.updateTopicSubscribeInfoWhenSubscriptionChanged`` ->
``MQClientInstance.updateTopicRouteInfoFromNameServer``, which rethrows a ``RemotingException`` as an
``IllegalStateException``), and the benchmark's ``main`` does not catch it: one lost request and the
JVM exits before ``Consumer Started.``. CI saw it once in the main suite (test_cli_group.py,
``RemotingSendRequestException: send request to </127.0.0.1:...> failed`` with no cause: the Java
client's channel to the NameServer closed while the request was in flight, ``NettyRemotingAbstract``
``failFast`` on the channel's close). Nothing was consumed then, so :func:`start_java_consumer`
starts the JVM again, as a supervisor would, and prints what the Java client logged about its
channels (``logs/rocketmqlogs/*.log`` under its ``user.home``), so the next such
failure names the side that closed. Any other exit, or a timeout, is the test's failure.
"""

from __future__ import annotations

from pathlib import Path

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._processes import JvmProcess, wait_for_line

__all__ = ["ATTEMPTS", "REMOTING_AT_START", "channel_log", "start_java_consumer"]

#: Starts of one consumer at most.
ATTEMPTS = 3
#: The Java client's exceptions of a lost request, as its start prints them before exiting.
REMOTING_AT_START = ("RemotingSendRequestException", "RemotingConnectException", "RemotingTimeoutException")
#: What the Java client logs about a channel's life (NettyRemotingClient, NettyRemotingAbstract).
_CHANNEL_WORDS = (
    "NETTY CLIENT PIPELINE",
    "closeChannel",
    "createChannel",
    "send a request command",
    "invokeSync",
)
READY = "Consumer Started."


def channel_log(user_home: Path, lines: int = 30) -> str:
    """The Java client's log lines about its channels, under ``user_home`` (its ``-Duser.home``):
    ``logs/rocketmqlogs/*.log`` (the benchmark tools log the client to ``tools_default.log``)."""
    found: list[str] = []
    for log in sorted((user_home / "logs" / "rocketmqlogs").glob("*.log")):
        text = log.read_text(errors="replace")
        found += [f"{log.name}: {ln}" for ln in text.splitlines() if any(w in ln for w in _CHANNEL_WORDS)]
    return "\n".join(found[-lines:]) or "(nothing about channels in the client's logs)"


def _lost_a_request(java: JvmProcess) -> bool:
    out = java.output_since_start()
    return java.returncode() is not None and READY not in out and any(n in out for n in REMOTING_AT_START)


def start_java_consumer(java: JvmProcess, user_home: Path, timeout: float = 60.0) -> str:
    """Start ``java`` (a benchmark Consumer) and wait for its ``Consumer Started.`` line, which is
    returned; start it again (at most :data:`ATTEMPTS` starts) while it exits because a request of
    its start was lost (see the module docstring). Blocking: call it in a thread from trio.

    Raises:
        ClusterError: it exited otherwise, or did not start within ``timeout``; with its channels' log.
    """
    for attempt in range(1, ATTEMPTS + 1):
        java.start()
        try:
            return wait_for_line(java, READY, timeout, "Java consumer")
        except ClusterError as exc:
            if attempt == ATTEMPTS or not _lost_a_request(java):
                raise ClusterError(f"{exc}\nthe Java client's channels:\n{channel_log(user_home)}") from exc
            print(
                f"the Java consumer lost a request of its start ({java.tail(3)!r}); the Java client's"
                f" channels:\n{channel_log(user_home)}\nstart {attempt + 1}"
            )
    raise AssertionError("unreachable")
