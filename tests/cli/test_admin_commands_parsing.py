"""Parsing of the commands over the Admin API: ``topic stats``, ``group lag``, ``group
reset-offsets``, ``message get`` (no broker)."""

from __future__ import annotations

import pytest

from rocketmq_py.cli._parser import (
    LATEST,
    Common,
    GroupLagCommand,
    MessageGetCommand,
    ResetOffsetsCommand,
    TopicStatsCommand,
    UsageError,
    parse_command,
)

NS = "127.0.0.1:9876"
ENV = {"ROCKETMQ_NAMESRV": NS}


def test_topic_stats_and_group_lag() -> None:
    assert parse_command(["topic", "stats", "T", "--json"], ENV) == TopicStatsCommand(
        Common((NS,)), "T", json=True
    )
    assert parse_command(["group", "lag", "G"], ENV) == GroupLagCommand(Common((NS,)), "G")
    assert parse_command(["group", "lag", "G", "T"], ENV) == GroupLagCommand(Common((NS,)), "G", "T")
    assert parse_command(["group", "lag", "G", "--owners"], ENV) == GroupLagCommand(
        Common((NS,)), "G", owners=True
    )


@pytest.mark.parametrize(
    ("to", "ms"),
    [
        (["--earliest"], 0),
        (["--latest"], LATEST),
        (["--to-time", "1764583200000"], 1764583200000),
        (["--to-time", "2025-12-01T10:00:00+00:00"], 1764583200000),
        (["--to-time", "2025-12-01T11:00:00+01:00"], 1764583200000),
    ],
)
def test_reset_offsets_to(to: list[str], ms: int) -> None:
    command = parse_command(["group", "reset-offsets", "G", "T", *to], ENV)
    assert command == ResetOffsetsCommand(Common((NS,)), "G", "T", ms)


def test_reset_offsets_forward_only() -> None:
    command = parse_command(["group", "reset-offsets", "G", "T", "--earliest", "--forward-only"], ENV)
    assert command == ResetOffsetsCommand(Common((NS,)), "G", "T", 0, force=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["group", "reset-offsets", "G", "T"],  # no time
        ["group", "reset-offsets", "G", "T", "--earliest", "--latest"],
        ["group", "reset-offsets", "G", "T", "--to-time", "yesterday"],
        ["group", "reset-offsets", "G", "T", "--to-time", "2025-12-01T10:00:00"],  # no time zone
    ],
)
def test_reset_offsets_refuses(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_command(argv, ENV)


def test_message_get() -> None:
    assert parse_command(["message", "get", "ABC"], ENV) == MessageGetCommand(Common((NS,)), "ABC")
    assert parse_command(["message", "get", "ABC", "--topic", "T", "--json"], ENV) == MessageGetCommand(
        Common((NS,)), "ABC", "T", json=True
    )
