"""A handoff's commit overtaken on the broker by an older one the member sent before it.

The broker stores a pull's commit offset on its pull executor (``PullMessageProcessor``, commit
flag of the pull) and the periodic oneway UPDATE_CONSUMER_OFFSET and the handoff's answered one on
its consumer-manage executor (``ConsumerManageProcessor.updateConsumerOffset``), each a pool of
threads: a commit sent earlier can be stored later, and ``ConsumerOffsetManager.commitOffset``
stores it anyway (it only logs ``[NOTIFYME]update consumer offset less than store``). The group
then starts that queue again before where the member stopped: CI saw it once as
``integration/test_cli_group.py::test_consume_from_beginning_prints_the_produced_messages``
(7 messages consumed and the consumer closed, 5 stored). A member whose commits may ride on pulls
or go oneway therefore reads each handed-off offset back once after its commit and commits it
again when the broker holds an older one. Here the fake broker stores an older offset right after
the handoff's commit, as that overtaking would.
"""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import MessageQueue, RemotingCommand, RequestCode, ResponseCode
from tests.consumer._pop_fake import wait_until
from tests.consumer.conftest import Cluster, Recorder


def _overtaking(cluster: Cluster, mq: MessageQueue, older: int) -> list[int]:
    """Make broker a store ``older`` for ``mq`` right after the first answered commit of it; the
    offsets of the answered commits of ``mq`` are recorded in the returned list."""
    fb = cluster.broker(mq)
    answered: list[int] = []

    async def update(request: RemotingCommand) -> RemotingCommand | None:
        fields = request.ext_fields
        key = (fields["consumerGroup"], fields["topic"], int(fields["queueId"]))
        fb.consumer_offsets[key] = int(fields["commitOffset"])
        if request.is_oneway:
            return None
        if key == (cluster.group, mq.topic, mq.queue_id):
            answered.append(int(fields["commitOffset"]))
            if len(answered) == 1:
                fb.consumer_offsets[key] = older  # the older commit, stored after this one
        return RemotingCommand.response(request, ResponseCode.SUCCESS)

    fb.on(RequestCode.UPDATE_CONSUMER_OFFSET, update)
    return answered


async def _consume_all_and_close(
    cluster: Cluster, make_consumer: Callable[..., PushConsumer], recorder: Recorder
) -> None:
    """Three messages on each queue, consumed; then the consumer closes (its handoff commits)."""
    async with make_consumer(persist_interval=3600):
        for queue in cluster.queues():
            cluster.put(queue, 3)
        await wait_until(lambda: len(recorder.messages) == 12)


async def test_a_closing_members_commit_overtaken_by_an_older_one_is_made_again(
    cluster: Cluster,
    make_consumer: Callable[..., PushConsumer],
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    mq = cluster.queues()[0]
    answered = _overtaking(cluster, mq, older=1)
    await _consume_all_and_close(cluster, make_consumer, recorder)
    assert answered == [3, 3]  # the handoff's commit, and again once read back as 1
    for queue in cluster.queues():
        assert cluster.broker(queue).consumer_offsets[(cluster.group, queue.topic, queue.queue_id)] == 3


async def test_a_commit_read_back_as_stored_is_not_made_again(
    cluster: Cluster,
    make_consumer: Callable[..., PushConsumer],
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    mq = cluster.queues()[0]
    answered = _overtaking(cluster, mq, older=3)  # "older" is the same offset: nothing went back
    await _consume_all_and_close(cluster, make_consumer, recorder)
    assert answered == [3]
    reads = [cmd for fb in cluster.brokers for cmd in fb.requests(RequestCode.QUERY_CONSUMER_OFFSET)]
    assert len(reads) >= 4  # each queue's start offset (at least), and each handoff's read-back
