"""LitePullConsumer's buffer limits: ``flow_limits=FlowLimits(...)`` as the push consumer's, the old
keywords deprecated, bad values InvalidOption; ``seek_to_begin`` a deprecated ``seek_to_beginning``.

Construction does no I/O, so most of this needs no broker; the facades are checked for the same
warnings at the caller's line (they build the trio consumer in the caller's thread).
"""

from __future__ import annotations

from typing import Any

import pytest

import rocketmq_py.aio
import rocketmq_py.sync
from rocketmq_py import FlowLimits, LitePullConsumer, MessageQueue
from rocketmq_py.errors import ClientError, InvalidOption, StateError

NAMESRV = "127.0.0.1:9876"
OLD_KEYWORDS = [
    ("pull_threshold_for_all", 35),
    ("pull_threshold_for_queue", 20),
    ("pull_threshold_size_for_queue_mib", 7),
    ("consume_max_span", 300),
]


def lite(**options: Any) -> LitePullConsumer:
    return LitePullConsumer("cg-lite-flow", namesrv=NAMESRV, **options)


def test_the_defaults_are_unchanged() -> None:
    consumer = lite()
    assert consumer.flow_limits == FlowLimits()
    limits = consumer.flow_limits
    assert (
        limits.pull_threshold_for_all,
        limits.pull_threshold_for_queue,
        limits.pull_threshold_size_for_queue_mib,
        limits.consume_max_span,
    ) == (10000, 1000, 100, 2000)  # Java DefaultLitePullConsumer's
    assert consumer._buffer.threshold_for_all == 10000
    assert consumer._buffer.limits is limits


def test_flow_limits_as_for_the_push_consumer() -> None:
    limits = FlowLimits(
        pull_threshold_for_all=35,
        pull_threshold_for_queue=20,
        pull_threshold_size_for_queue_mib=7,
        consume_max_span=300,
    )
    consumer = lite(flow_limits=limits)
    assert consumer.flow_limits is limits
    assert consumer._buffer.limits is limits
    assert consumer._buffer.threshold_for_all == 35


@pytest.mark.parametrize(("name", "value"), OLD_KEYWORDS)
def test_an_old_keyword_still_works_and_warns(name: str, value: int) -> None:
    with pytest.warns(DeprecationWarning, match=rf"LitePullConsumer\({name}=\.\.\.\).*flow_limits") as rec:
        consumer = lite(**{name: value})
    assert len(rec) == 1
    assert rec[0].filename == __file__  # the caller's line
    assert consumer.flow_limits == FlowLimits(**{name: value})
    assert consumer._buffer.threshold_for_all == (value if name == "pull_threshold_for_all" else 10000)


def test_old_keywords_together() -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated; use flow_limits") as rec:
        consumer = lite(pull_threshold_for_queue=20, pull_threshold_for_all=35)
    assert len(rec) == 2
    assert consumer.flow_limits == FlowLimits(pull_threshold_for_queue=20, pull_threshold_for_all=35)


@pytest.mark.parametrize(("name", "value"), OLD_KEYWORDS)
def test_flow_limits_and_an_old_keyword_is_refused(name: str, value: int) -> None:
    with pytest.raises(InvalidOption, match=f"give flow_limits or its fields \\['{name}'\\]"):
        lite(flow_limits=FlowLimits(), **{name: value})


@pytest.mark.parametrize(
    "topic_limit", [{"pull_threshold_for_topic": 100}, {"pull_threshold_size_for_topic_mib": 10}]
)
def test_the_push_consumers_topic_limits_are_refused(topic_limit: dict[str, int]) -> None:
    with pytest.raises(InvalidOption, match="are PushConsumer limits"):
        lite(flow_limits=FlowLimits(**topic_limit))


def test_the_lite_overall_cap_is_refused_by_the_push_consumer() -> None:
    with pytest.raises(InvalidOption, match="pull_threshold_for_all is a LitePullConsumer limit"):
        rocketmq_py.PushConsumer(
            "cg-push-flow", namesrv=NAMESRV, flow_limits=FlowLimits(pull_threshold_for_all=5)
        )


@pytest.mark.parametrize(
    "options",
    [
        {"pull_batch_size": 0},
        {"topic_metadata_check_interval": 0},
        {"flow_limits": FlowLimits(pull_threshold_for_all=0)},
        {"flow_limits": FlowLimits(pull_threshold_for_queue=0)},
        {"flow_limits": FlowLimits(consume_max_span=65536)},
    ],
)
def test_bad_values_are_invalid_options(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidOption) as info:
        lite(**options)
    assert isinstance(info.value, ClientError)  # what it raised before


def test_a_bad_old_keyword_warns_and_is_an_invalid_option() -> None:
    with (
        pytest.warns(DeprecationWarning, match="is deprecated; use flow_limits"),
        pytest.raises(InvalidOption, match="pull_threshold_for_all"),
    ):
        lite(pull_threshold_for_all=0)


def test_the_old_attribute_still_reads_and_warns() -> None:
    consumer = lite(flow_limits=FlowLimits(pull_threshold_for_all=35))
    with pytest.warns(DeprecationWarning, match="use flow_limits.pull_threshold_for_all") as rec:
        assert consumer.pull_threshold_for_all == 35
    assert rec[0].filename == __file__


async def test_seek_to_begin_is_a_deprecated_seek_to_beginning() -> None:
    consumer = lite()
    mq = MessageQueue("T", "broker-a", 0)
    with pytest.raises(StateError):
        await consumer.seek_to_beginning(mq)
    with (
        pytest.warns(DeprecationWarning, match="seek_to_begin is deprecated; use seek_to_beginning") as rec,
        pytest.raises(StateError),  # not running: the same answer as the new name's
    ):
        await consumer.seek_to_begin(mq)
    assert rec[0].filename == __file__


# --- the facades ---------------------------------------------------------------------------------


@pytest.mark.parametrize("facade", [rocketmq_py.aio, rocketmq_py.sync], ids=["aio", "sync"])
def test_facades_take_flow_limits_and_warn_for_old_keywords(facade: Any) -> None:
    limits = FlowLimits(pull_threshold_for_queue=20)
    assert facade.LitePullConsumer("g", namesrv=NAMESRV, flow_limits=limits)._client.flow_limits is limits
    with pytest.warns(DeprecationWarning, match=r"pull_threshold_for_queue=\.\.\.") as rec:
        consumer = facade.LitePullConsumer("g", namesrv=NAMESRV, pull_threshold_for_queue=20)
    assert rec[0].filename == __file__
    assert consumer._client.flow_limits == limits
    with pytest.warns(DeprecationWarning, match="use flow_limits.pull_threshold_for_all") as rec:
        assert consumer.pull_threshold_for_all == 10000
    assert rec[0].filename == __file__


def test_the_blocking_seek_to_begin_warns_at_the_callers_line() -> None:
    consumer = rocketmq_py.sync.LitePullConsumer("g", namesrv=NAMESRV)
    with (
        pytest.warns(DeprecationWarning, match="seek_to_begin is deprecated; use seek_to_beginning") as rec,
        pytest.raises(StateError),  # not started
    ):
        consumer.seek_to_begin(MessageQueue("T", "broker-a", 0))
    assert rec[0].filename == __file__


async def test_the_asyncio_seek_to_begin_warns_at_the_callers_line() -> None:
    consumer = rocketmq_py.aio.LitePullConsumer("g", namesrv=NAMESRV)
    with (
        pytest.warns(DeprecationWarning, match="seek_to_begin is deprecated; use seek_to_beginning") as rec,
        pytest.raises(StateError),  # not open
    ):
        await consumer.seek_to_begin(MessageQueue("T", "broker-a", 0))
    assert rec[0].filename == __file__
