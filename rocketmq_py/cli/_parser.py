"""Command-line parsing: argv -> one typed command value (no I/O besides ``--body-file``).

Commands: ``route``, ``topic create``, ``topic stats``, ``send``, ``group inspect``, ``group list``,
``group lag``, ``group reset-offsets``, ``message get``, ``consume``.

The options of every command (:mod:`._options`: ``-n/--namesrv``, ``--timeout``, ``--namespace``,
``--access-key``/``--secret-key``, ``--tls``, ``--tls-ca-file``, ``--tls-insecure``) are accepted
before the command and after it (``rocketmq-py -n h:9876 route T`` and ``rocketmq-py route T -n
h:9876``); the NameServer defaults to ``ROCKETMQ_NAMESRV``, the ACL keys to
``ROCKETMQ_ACCESS_KEY``/``ROCKETMQ_SECRET_KEY``. ``--namespace NS`` names topics and groups as a
client with that namespace does (Java ``setNamespace``): ``T`` is ``NS%T`` on the brokers; without
it, a hosted endpoint (``-n http://MQ_INST_<id>_<x>.<region>...:8080``) names the namespace, as it
does for a client. Every mistake raises :class:`UsageError` (exit code 2).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from rocketmq_py import __version__
from rocketmq_py.cli._options import (
    Common,
    UsageError,
    add_common_options,
    common_from_args,
    positive_seconds,
)

__all__ = [
    "CLI_PRODUCER_GROUP",
    "LATEST",
    "Command",
    "Common",
    "ConsumeCommand",
    "CreateTopicCommand",
    "GroupInspectCommand",
    "GroupLagCommand",
    "GroupListCommand",
    "MessageGetCommand",
    "ResetOffsetsCommand",
    "RouteCommand",
    "SendCommand",
    "TopicStatsCommand",
    "UsageError",
    "build_parser",
    "parse_command",
]

#: The producer group of ``send`` (shown by ``mqadmin producerConnection``).
CLI_PRODUCER_GROUP = "rocketmq-py-cli"
#: Seconds ``topic create`` waits for the NameServer route to show the new queues.
DEFAULT_ROUTE_WAIT = 30.0
PROG = "rocketmq-py"
_TRACE_HELP = (
    "write a message trace record of each {what} to RMQ_SYS_TRACE_TOPIC, as the Java client's "
    "enableMsgTrace (mqadmin queryMsgTraceById shows it)"
)


@dataclass(frozen=True, slots=True)
class RouteCommand:
    common: Common
    topic: str
    json: bool = False


@dataclass(frozen=True, slots=True)
class CreateTopicCommand:
    common: Common
    topic: str
    queues: int
    cluster: str | None = None
    order: bool = False
    wait: float = DEFAULT_ROUTE_WAIT


@dataclass(frozen=True, slots=True)
class SendCommand:
    common: Common
    topic: str
    body: bytes
    tags: str | None = None
    keys: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    count: int = 1
    group: str = CLI_PRODUCER_GROUP
    concurrency: int = 1
    quiet: bool = False
    trace: bool = False


@dataclass(frozen=True, slots=True)
class GroupInspectCommand:
    common: Common
    group: str
    topic: str | None = None
    json: bool = False


@dataclass(frozen=True, slots=True)
class TopicStatsCommand:
    common: Common
    topic: str
    json: bool = False


@dataclass(frozen=True, slots=True)
class GroupLagCommand:
    common: Common
    group: str
    topic: str | None = None
    json: bool = False
    #: Also name the member that owns each queue (each member asked, as ``consumerProgress -s true``).
    owners: bool = False


@dataclass(frozen=True, slots=True)
class GroupListCommand:
    """``group list``: the cluster's consumer groups (without ``all_groups``, not the system ones)."""

    common: Common
    all_groups: bool = False
    json: bool = False


@dataclass(frozen=True, slots=True)
class ResetOffsetsCommand:
    common: Common
    group: str
    topic: str
    #: Epoch ms: the first message stored at or after it (0 the earliest, LATEST the end).
    timestamp_ms: int
    force: bool = True


@dataclass(frozen=True, slots=True)
class MessageGetCommand:
    common: Common
    msg_id: str
    #: With a topic, ``msg_id`` is a unique key (UNIQ_KEY); without, an offset message id.
    topic: str | None = None
    json: bool = False


@dataclass(frozen=True, slots=True)
class ConsumeCommand:
    common: Common
    topic: str
    group: str
    from_beginning: bool = False
    count: int | None = None
    tag: str = "*"
    json: bool = False
    trace: bool = False


Command = (
    RouteCommand
    | CreateTopicCommand
    | TopicStatsCommand
    | SendCommand
    | GroupInspectCommand
    | GroupLagCommand
    | GroupListCommand
    | ResetOffsetsCommand
    | MessageGetCommand
    | ConsumeCommand
)

#: ``--latest``: a time past every message (Java ``Long.MAX_VALUE``).
LATEST = 2**63 - 1


class _Parser(argparse.ArgumentParser):
    """Raises UsageError instead of printing and exiting (``--help`` still exits 0)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _timestamp_ms(text: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not epoch ms or an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the time zone (e.g. +00:00): {text!r}")
    return int(moment.timestamp() * 1000)


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``rocketmq-py`` and its commands."""
    parser = _Parser(prog=PROG, description="Apache RocketMQ from the command line (rocketmq-py).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_common_options(parser, suppress=False)
    common = _Parser(add_help=False)
    add_common_options(common, suppress=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    route = commands.add_parser(
        "route", parents=[common], help="show a topic's route: brokers, queues, permissions"
    )
    route.add_argument("topic", metavar="TOPIC")
    route.add_argument("--json", action="store_true", help="print the route as JSON")

    topic = commands.add_parser("topic", help="manage topics")
    topic_commands = topic.add_subparsers(
        dest="topic_command", metavar="ACTION", required=True, parser_class=_Parser
    )
    create = topic_commands.add_parser(
        "create", parents=[common], help="create or update a topic on every master of a cluster"
    )
    create.add_argument("topic", metavar="TOPIC")
    create.add_argument(
        "--queues", type=_positive_int, required=True, metavar="N", help="read and write queues per broker"
    )
    create.add_argument("--cluster", metavar="C", help="the cluster (default: the only one)")
    create.add_argument("--order", action="store_true", help="an order topic (orderTopicConf)")
    create.add_argument(
        "--wait",
        type=positive_seconds,
        default=DEFAULT_ROUTE_WAIT,
        metavar="SECONDS",
        help=f"wait this long for the route to show the queues (default {DEFAULT_ROUTE_WAIT:g})",
    )

    stats = topic_commands.add_parser(
        "stats",
        parents=[common],
        help="each queue's first and next offsets and last store time (topicStatus)",
    )
    stats.add_argument("topic", metavar="TOPIC")
    stats.add_argument("--json", action="store_true", help="print the queues as JSON")

    send = commands.add_parser("send", parents=[common], help="send messages")
    send.add_argument("topic", metavar="TOPIC")
    body = send.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", metavar="TEXT", help="the message body (UTF-8)")
    body.add_argument("--body-file", metavar="FILE", help="read the body from FILE ('-': stdin)")
    send.add_argument("--tags", metavar="TAG", help="the message tag")
    send.add_argument("--keys", metavar="K1,K2", help="message keys, comma-separated")
    send.add_argument(
        "--property",
        dest="properties",
        type=_property,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a user property (repeatable)",
    )
    send.add_argument("--count", type=_positive_int, default=1, metavar="N", help="messages to send")
    send.add_argument(
        "--group",
        default=CLI_PRODUCER_GROUP,
        metavar="G",
        help=f"producer group (default {CLI_PRODUCER_GROUP})",
    )
    send.add_argument(
        "--concurrency", type=_positive_int, default=1, metavar="C", help="sends in flight at once"
    )
    send.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    send.add_argument("--trace", action="store_true", help=_TRACE_HELP.format(what="send"))

    group = commands.add_parser("group", help="inspect consumer groups")
    group_commands = group.add_subparsers(
        dest="group_command", metavar="ACTION", required=True, parser_class=_Parser
    )
    inspect = group_commands.add_parser(
        "inspect",
        parents=[common],
        help="each member's strategy and queues against the allocation its strategy computes",
    )
    inspect.add_argument("group", metavar="GROUP")
    inspect.add_argument(
        "topic", metavar="TOPIC", nargs="?", help="only this topic (default: every subscribed one)"
    )
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    group_list = group_commands.add_parser(
        "list",
        parents=[common],
        help="the cluster's consumer groups, named as the brokers store them (with --namespace NS: "
        "that namespace's groups only, NS prefix shown)",
    )
    group_list.add_argument(
        "--all",
        action="store_true",
        help="the system groups too (CID_RMQ_SYS_*, TOOLS_CONSUMER, ...: hidden as mqadmin hides them)",
    )
    group_list.add_argument("--json", action="store_true", help="print the names as a JSON array")
    lag = group_commands.add_parser(
        "lag", parents=[common], help="the group's committed offset and lag on each queue (consumerProgress)"
    )
    lag.add_argument("group", metavar="GROUP")
    lag.add_argument("topic", metavar="TOPIC", nargs="?", help="only this topic (default: every one)")
    lag.add_argument("--json", action="store_true", help="print the queues as JSON")
    lag.add_argument(
        "--owners",
        action="store_true",
        help="also show the member that owns each queue (asks each member, as consumerProgress -s true)",
    )
    reset = group_commands.add_parser(
        "reset-offsets",
        parents=[common],
        help="move the group's offsets on a topic to a time, online or not (resetOffsetByTime)",
    )
    reset.add_argument("group", metavar="GROUP")
    reset.add_argument("topic", metavar="TOPIC")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to-time",
        type=_timestamp_ms,
        metavar="TIME",
        help="epoch ms, or ISO 8601 (2026-12-01T10:00:00+00:00)",
    )
    to.add_argument("--earliest", action="store_true", help="to each queue's first message")
    to.add_argument("--latest", action="store_true", help="past each queue's last message")
    reset.add_argument("--forward-only", action="store_true", help="move no offset back")

    message = commands.add_parser("message", help="look messages up")
    message_commands = message.add_subparsers(
        dest="message_command", metavar="ACTION", required=True, parser_class=_Parser
    )
    get = message_commands.add_parser(
        "get", parents=[common], help="a message by its offset id, or by its unique key with --topic"
    )
    get.add_argument("msg_id", metavar="MSG_ID")
    get.add_argument("--topic", metavar="TOPIC", help="MSG_ID is the UNIQ_KEY of a message of TOPIC")
    get.add_argument("--json", action="store_true", help="print the message as JSON")

    consume = commands.add_parser(
        "consume", parents=[common], help="print messages as a consumer group reads them"
    )
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument("-g", "--group", required=True, metavar="GROUP", help="the consumer group")
    consume.add_argument(
        "--from-beginning",
        action="store_true",
        help="a group without committed offsets starts at the oldest message (default: new messages only)",
    )
    consume.add_argument("--count", type=_positive_int, metavar="N", help="stop after N messages")
    consume.add_argument("--tag", default="*", metavar="EXPR", help="tag expression, e.g. 'TagA || TagB'")
    consume.add_argument("--json", action="store_true", help="one JSON object per message")
    consume.add_argument("--trace", action="store_true", help=_TRACE_HELP.format(what="consumption"))
    return parser


def _read_body(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise UsageError(f"cannot read --body-file {path}: {exc.strerror or exc}") from None


def parse_command(argv: Sequence[str], environ: Mapping[str, str]) -> Command:
    """Parse a command line (without the program name).

    Args:
        environ: where ``ROCKETMQ_NAMESRV``, ``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY``
            are looked up.

    Raises:
        UsageError: a wrong command line, no NameServer, one ACL key without the other, an
            unreadable ``--tls-ca-file`` or ``--body-file``.
        SystemExit: ``--help`` or ``--version`` (after printing; code 0).
    """
    parser = build_parser()
    args = parser.parse_args(list(argv))
    try:
        return _command(args, environ)
    except UsageError as exc:
        exc.usage = exc.usage or parser.format_usage()
        raise


def _command(args: argparse.Namespace, environ: Mapping[str, str]) -> Command:
    common = common_from_args(args, environ)
    if args.command == "route":
        return RouteCommand(common, args.topic, json=args.json)
    if args.command == "topic":
        if args.topic_command == "stats":
            return TopicStatsCommand(common, args.topic, json=args.json)
        return CreateTopicCommand(
            common, args.topic, args.queues, cluster=args.cluster, order=args.order, wait=args.wait
        )
    if args.command == "group":
        if args.group_command == "list":
            return GroupListCommand(common, all_groups=args.all, json=args.json)
        if args.group_command == "lag":
            return GroupLagCommand(common, args.group, args.topic, json=args.json, owners=args.owners)
        if args.group_command == "reset-offsets":
            timestamp = 0 if args.earliest else LATEST if args.latest else args.to_time
            return ResetOffsetsCommand(common, args.group, args.topic, timestamp, force=not args.forward_only)
        return GroupInspectCommand(common, args.group, args.topic, json=args.json)
    if args.command == "message":
        return MessageGetCommand(common, args.msg_id, args.topic, json=args.json)
    if args.command == "consume":
        return ConsumeCommand(
            common,
            args.topic,
            args.group,
            from_beginning=args.from_beginning,
            count=args.count,
            tag=args.tag,
            json=args.json,
            trace=args.trace,
        )
    assert args.command == "send"
    body = args.body.encode() if args.body is not None else _read_body(args.body_file)
    keys = tuple(k.strip() for k in (args.keys or "").split(",") if k.strip())
    return SendCommand(
        common,
        args.topic,
        body,
        tags=args.tags,
        keys=keys,
        properties=dict(args.properties),
        count=args.count,
        group=args.group,
        concurrency=args.concurrency,
        quiet=args.quiet,
        trace=args.trace,
    )
