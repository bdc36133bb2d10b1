"""The push consumer's parts get their collaborators, never the consumer (STYLE habit 15).

No module imports ``consumer/_push.py`` but the public packages and the layers above it (every
import counts: TYPE_CHECKING blocks and imports inside functions too); the settings the parts
read are a snapshot of the public options; the queue table forgets only the state it was given.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import trio

from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.consumer._process_queue import ProcessQueue
from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.consumer._push_settings import check_pop_options
from rocketmq_py.consumer._queue_state import QueueState
from rocketmq_py.consumer._queue_table import QueueTable
from rocketmq_py.protocol import MessageQueue

PACKAGE = Path(__file__).resolve().parents[2] / "rocketmq_py"
PUSH = "rocketmq_py.consumer._push"
#: Where importing the public PushConsumer's module is fine: the packages re-exporting it and the
#: layers above it (the facades and the command line).
ALLOWED = ("__init__.py", "consumer/__init__.py", "aio/", "sync/", "cli/")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_nothing_below_the_public_api_imports_the_push_consumer() -> None:
    importers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if PUSH in _imports(path) and not str(path.relative_to(PACKAGE)).startswith(ALLOWED)
    )
    assert importers == []


def test_settings_are_the_options_at_start() -> None:
    consumer = PushConsumer(
        "g", namesrv="x:1", namespace="ns", listener=lambda msgs: None, orderly=True, pull_batch_size=7
    )
    consumer.consume_timeout = 3.0  # set after construction, before the start: the run sees it
    settings = consumer._settings()
    assert settings.group == "ns%g"
    assert settings.orderly
    assert settings.locks_queues
    assert (settings.pull_batch_size, settings.consume_timeout) == (7, 3.0)
    assert settings.strategy_name == consumer.strategy.name
    assert settings.request_timeout == consumer.config.request_timeout
    assert settings.properties()["pullBatchSize"] == "7"
    assert settings.user_queues([MessageQueue("ns%t", "b", 0)]) == [MessageQueue("t", "b", 0)]


def test_broadcasting_orderly_settings_take_no_locks() -> None:
    consumer = PushConsumer(
        "g", namesrv="x:1", listener=lambda msgs: None, orderly=True, message_model="BROADCASTING"
    )
    assert not consumer._settings().locks_queues


@pytest.mark.parametrize(("invisible", "nums"), [(4.9, 32), (300.1, 32), (60, 0), (60, 33)])
def test_pop_options_out_of_range_are_refused(invisible: float, nums: int) -> None:
    with pytest.raises(ValueError, match="pop_"):
        check_pop_options(invisible, nums)
    with pytest.raises(ValueError, match="pop_"):
        PushConsumer("g", namesrv="x:1", pop_invisible_time=invisible, pop_batch_nums=nums)


async def test_queue_table_forgets_only_the_state_it_was_given() -> None:
    mq = MessageQueue("t", "b", 0)
    table = QueueTable(FlowLimits())
    old = QueueState(mq, ProcessQueue(clock=trio.current_time), 0)
    new = QueueState(mq, ProcessQueue(clock=trio.current_time), 5)
    table.add(old)
    table.add(new)  # the queue came back while the old state was being handed off
    assert not table.forget(old)
    assert table[mq] is new
    assert table.of_topic("t") == [new]
    assert table.of_topic("u") == []
    assert table.forget(new)
    assert mq not in table
    assert len(table) == 0
