"""Spark's Kafka source and sink options: their spellings that have another name here fail naming
ours, and the guide's table "Coming from Spark's Kafka source" lists exactly the declared ones."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from spark_connector import SparkOptionError
from spark_connector._kafka import KAFKA_OPTIONS
from spark_connector._options import parse_read_options, parse_sink_options

ROOT = Path(__file__).resolve().parents[2]
READ = {"namesrv": "h:1", "topic": "t"}


@pytest.mark.parametrize(
    ("options", "option", "ours"),
    [
        ({"namesrv": "h:1", "subscribe": "t"}, "subscribe", "'topic'"),
        ({"namesrv": "h:1", "SubscribePattern": "t.*"}, "subscribePattern", "'topicPattern'"),
        ({**READ, "maxOffsetsPerTrigger": "10"}, "maxOffsetsPerTrigger", "'maxRecordsPerBatch'"),
        ({**READ, "kafkaConsumer.pollTimeoutMs": "10"}, "kafkaConsumer.pollTimeoutMs", "'pullTimeoutMs'"),
        ({"topic": "t", "kafka.bootstrap.servers": "h:9092"}, "kafka.bootstrap.servers", "'namesrv'"),
        ({**READ, "kafka.security.protocol": "SSL"}, "kafka.security.protocol", "tls"),
        ({**READ, "kafka.group.id": "g"}, "kafka.group.id", "client."),
    ],
)
def test_a_kafka_spelling_fails_naming_ours(options: dict[str, str], option: str, ours: str) -> None:
    with pytest.raises(SparkOptionError) as info:
        parse_read_options(options, streaming=True)
    assert info.value.option == option
    assert ours in str(info.value)


def test_the_sink_refuses_them_too() -> None:
    with pytest.raises(SparkOptionError, match="this source's is 'namesrv'") as info:
        parse_sink_options({"kafka.bootstrap.servers": "h:9092", "topic": "t"})
    assert info.value.option == "kafka.bootstrap.servers"
    with pytest.raises(SparkOptionError, match="Kafka client settings do not apply"):
        parse_sink_options({"namesrv": "h:1", "kafka.acks": "all"})


def test_kafka_names_kept_here_and_harmless_ones_pass() -> None:
    o = parse_read_options(
        {**READ, "minPartitions": "4", "includeHeaders": "true", "groupIdPrefix": "x"}, streaming=True
    )
    assert o.min_partitions == 4
    assert o.extra == {"includeheaders": "true", "groupidprefix": "x"}  # no counterpart: ignored


def test_every_refused_spelling_names_an_option_of_ours() -> None:
    hook = _docs_hook()
    reader = hook.options_read_by("parse_read_options")
    writer = hook.options_read_by("parse_sink_options")
    for option in KAFKA_OPTIONS:
        if option.ours and option.ours != "client.*":
            assert option.ours in (reader if option.side == "reader" else writer), option
        if option.refused:
            assert option.ours, option


def _docs_hook() -> ModuleType:
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location(
        "spark_options_hook", ROOT / "docs" / "hooks" / "spark_options.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guide_lists_the_kafka_options() -> None:
    hook = _docs_hook()
    guide = (ROOT / "docs" / "spark.md").read_text()
    hook.check_tables(guide, "docs/spark.md")
    declared = hook.kafka_options()
    assert declared == {
        side: {o.name: o.ours for o in KAFKA_OPTIONS if o.side == side} for side in ("reader", "writer")
    }
    for side in ("reader", "writer"):
        assert f"<!-- spark-kafka: {side} -->" in guide


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("| `maxOffsetsPerTrigger` | `maxRecordsPerBatch` |", "| `maxOffsetsPerTrigger` | |", "differing"),
        ("| `groupIdPrefix` | |", "| `groupIdPrefixes` | |", "missing: ['groupIdPrefix']"),
    ],
)
def test_the_check_fails_on_a_stale_kafka_table(old: str, new: str, complaint: str) -> None:
    hook = _docs_hook()
    guide = (ROOT / "docs" / "spark.md").read_text()
    assert old in guide
    with pytest.raises(hook.PluginError, match=re.escape(complaint)):
        hook.check_tables(guide.replace(old, new), "docs/spark.md")
