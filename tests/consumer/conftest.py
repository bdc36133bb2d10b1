"""Fixtures for push-consumer behaviour tests: a NameServer and two brokers, all FakeBrokers.

``cluster`` is three in-process fakes: ``namesrv`` answers route queries (``cluster.topic`` has two
queues on ``broker-a`` and two on ``broker-b``; the group's retry topic one queue on each), ``a``
and ``b`` hold messages, offsets and the group's members. ``make_consumer(**options)`` builds a
PushConsumer of ``cluster.group`` with client id ``127.0.0.1@me``, subscribed to ``cluster.topic``.
Test modules cannot import this file under ``--import-mode=importlib``, so helpers are methods of
the fixture objects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from rocketmq_py.consumer._push import ConsumeStatus, PushConsumer
from rocketmq_py.protocol import (
    BrokerData,
    ConsumerListBody,
    HeartbeatData,
    Message,
    MessageExt,
    MessageQueue,
    NotifyConsumerIdsChangedRequestHeader,
    PullMessageRequestHeader,
    PullSysFlag,
    QueueData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
    UpdateConsumerOffsetRequestHeader,
    decode_body,
    encode_body,
    from_ext_fields,
    to_ext_fields,
)
from rocketmq_py.testing._fake_broker import FakeBroker


@dataclass
class Cluster:
    """A fake NameServer and two fake brokers, with helpers to feed and read them."""

    namesrv: FakeBroker
    a: FakeBroker
    b: FakeBroker
    topic: str = "TopicTest"
    group: str = "cg-test"

    @property
    def retry(self) -> str:
        return "%RETRY%" + self.group

    @property
    def brokers(self) -> tuple[FakeBroker, FakeBroker]:
        return (self.a, self.b)

    @staticmethod
    def route(*brokers: FakeBroker, queues: int) -> TopicRouteData:
        return TopicRouteData(
            queue_datas=tuple(
                QueueData(broker_name=fb.broker_name, read_queue_nums=queues, write_queue_nums=queues, perm=6)
                for fb in brokers
            ),
            broker_datas=tuple(
                BrokerData(cluster="DefaultCluster", broker_name=fb.broker_name, broker_addrs={0: fb.address})
                for fb in brokers
            ),
        )

    def first_messages_out_of_memory(self) -> None:
        """Make both brokers answer QUERY_CONSUMER_OFFSET "not found" for a group with no offset on
        a queue holding messages, as a broker does once the queue's first message left memory, so
        that the consumer's consume-from-where decides where it starts. (A young broker answers 0,
        and a new group starts at the beginning whatever it asked: the fake's default, as
        ``ConsumerManageProcessor.queryConsumerOffset``; on the real broker,
        ``integration/test_push_consumer.py::test_consume_from_timestamp_searches_by_store_time_and_keeps_javas_fresh_queue_quirk``.)"""
        for fb in self.brokers:
            fb.first_in_memory = False

    def group_consumed_before(self) -> None:
        """Commit offset 0 for the group on every queue of the topic and its retry topic: a group that
        consumed them before, so the consumer reads its offsets from the brokers and commits them back
        even where it consumes nothing. (A 5.x broker answers "not found" for an empty queue the group
        never committed: ``ConsumerManageProcessor.queryConsumerOffset``.)"""
        for topic in (self.topic, self.retry):
            for mq in self.queues(topic):
                self.broker(mq).consumer_offsets[(self.group, mq.topic, mq.queue_id)] = 0

    def broker(self, mq: MessageQueue | str) -> FakeBroker:
        name = mq if isinstance(mq, str) else mq.broker_name
        return {self.a.broker_name: self.a, self.b.broker_name: self.b}[name]

    def queues(self, topic: str | None = None) -> list[MessageQueue]:
        """The topic's four queues (retry topic: two), sorted as the rebalance sorts them."""
        topic = topic or self.topic
        count = 1 if topic == self.retry else 2
        return [MessageQueue(topic, fb.broker_name, q) for fb in self.brokers for q in range(count)]

    def put(
        self, mq: MessageQueue, count: int = 1, *, tags: str | None = None, **kwargs: Any
    ) -> list[MessageExt]:
        """Store ``count`` messages (bodies ``b"<queue>-<n>"``) in ``mq``."""
        fb = self.broker(mq)
        start = len(fb.messages(mq.topic, mq.queue_id))
        messages = [
            Message(mq.topic, f"{mq.broker_name}/{mq.queue_id}-{start + n}".encode(), tags=tags, **kwargs)
            for n in range(count)
        ]
        return fb.put_messages(mq.queue_id, messages)

    @staticmethod
    def pulls(fb: FakeBroker, mq: MessageQueue | None = None) -> list[PullMessageRequestHeader]:
        """The PULL_MESSAGE headers ``fb`` received (for ``mq`` only, if given), in order."""
        headers = [
            from_ext_fields(PullMessageRequestHeader, cmd.ext_fields)
            for cmd in fb.requests(RequestCode.PULL_MESSAGE)
        ]
        if mq is None:
            return headers
        return [h for h in headers if (h.topic, h.queue_id) == (mq.topic, mq.queue_id)]

    def pulled_queues(self, topic: str | None = None) -> set[MessageQueue]:
        """Every queue of ``topic`` that was pulled at least once."""
        topic = topic or self.topic
        return {
            MessageQueue(h.topic, fb.broker_name, h.queue_id)
            for fb in self.brokers
            for h in self.pulls(fb)
            if h.topic == topic
        }

    @staticmethod
    def offset_updates(fb: FakeBroker, mq: MessageQueue | None = None) -> list[tuple[int, bool]]:
        """(commitOffset, oneway) of each UPDATE_CONSUMER_OFFSET ``fb`` received (for ``mq``)."""
        updates = []
        for cmd in fb.requests(RequestCode.UPDATE_CONSUMER_OFFSET):
            header = from_ext_fields(UpdateConsumerOffsetRequestHeader, cmd.ext_fields)
            if mq is None or (header.topic, header.queue_id) == (mq.topic, mq.queue_id):
                updates.append((header.commit_offset, cmd.is_oneway))
        return updates

    @staticmethod
    def heartbeats(fb: FakeBroker) -> list[HeartbeatData]:
        """The consumer heartbeats ``fb`` received, decoded, in order."""
        beats = [decode_body(HeartbeatData, cmd.body) for cmd in fb.requests(RequestCode.HEART_BEAT)]
        return [beat for beat in beats if beat.consumer_data_set]

    def answer_consumer_ids(self, *ids: str) -> None:
        """Both brokers answer GET_CONSUMER_LIST_BY_GROUP with ``ids`` (changeable later)."""

        async def answer(request: RemotingCommand) -> RemotingCommand:
            body = encode_body(ConsumerListBody(consumer_id_list=tuple(ids)))
            return RemotingCommand.response(request, ResponseCode.SUCCESS, body=body)

        for fb in self.brokers:
            fb.on(RequestCode.GET_CONSUMER_LIST_BY_GROUP, answer)

    async def notify_ids_changed(self, fb: FakeBroker) -> None:
        """``fb`` tells every client connected to it that the group's members changed (oneway)."""
        header = to_ext_fields(NotifyConsumerIdsChangedRequestHeader(consumer_group=self.group))
        command = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header, oneway=True)
        for client in fb.clients:
            await fb.send_to_client(command, expect_reply=False, client=client)

    def assert_commits_only_answered(self, *, pulls: int, stored: int = 3) -> None:
        """After a run of ``persist_interval=1`` for 20 s: every queue's offset is ``stored``, no pull
        (at least ``pulls`` of them) carried a commit offset, and each commit (every second, per
        queue) was a request whose answer the member waited for, never a oneway one."""
        for fb in self.brokers:
            offsets = {k: v for k, v in fb.consumer_offsets.items() if k[:2] == (self.group, self.topic)}
            assert sorted(offsets.values()) == [stored, stored], fb
        sent = [cmd for fb in self.brokers for cmd in fb.requests(RequestCode.PULL_MESSAGE)]
        assert len(sent) >= pulls
        assert [int(cmd.ext_fields["sysFlag"]) & PullSysFlag.COMMIT_OFFSET for cmd in sent] == [0] * len(sent)
        commits = [cmd for fb in self.brokers for cmd in fb.requests(RequestCode.UPDATE_CONSUMER_OFFSET)]
        assert len(commits) >= 4 * 19
        assert [cmd.is_oneway for cmd in commits] == [False] * len(commits)

    @staticmethod
    async def wait_until(predicate: Callable[[], bool], *, timeout: float = 60, step: float = 0.01) -> None:  # noqa: ASYNC109
        """Poll ``predicate`` every ``step`` seconds (trio time) until true; fail after ``timeout``."""
        with trio.fail_after(timeout):
            while not predicate():  # noqa: ASYNC110 - the state lives in the consumer, no event to wait on
                await trio.sleep(step)


@dataclass
class Recorder:
    """A listener that records what it got and answers ``status`` (or runs ``hook`` first)."""

    status: ConsumeStatus | None = ConsumeStatus.CONSUME_SUCCESS
    messages: list[MessageExt] = field(default_factory=list)
    calls: int = 0
    hook: Callable[[list[MessageExt]], Any] | None = None

    async def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus | None:
        self.calls += 1
        self.messages.extend(msgs)
        if self.hook is not None:
            result = self.hook(msgs)
            if hasattr(result, "__await__"):
                await result
        return self.status

    def bodies(self) -> list[bytes]:
        return [m.body for m in self.messages]

    def offsets(self, mq: MessageQueue) -> list[int]:
        return [m.queue_offset for m in self.messages if (m.topic, m.queue_id) == (mq.topic, mq.queue_id)]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with (
        FakeBroker(broker_name="namesrv") as namesrv,
        FakeBroker(broker_name="broker-a") as a,
        FakeBroker(broker_name="broker-b") as b,
    ):
        result = Cluster(namesrv, a, b)
        for fb in (a, b):
            fb.add_topic(result.topic, queues=2)
            fb.add_topic(result.retry, queues=1)
        namesrv.set_route(result.topic, Cluster.route(a, b, queues=2))
        namesrv.set_route(result.retry, Cluster.route(a, b, queues=1))
        yield result


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_consumer(cluster: Cluster, recorder: Recorder) -> Callable[..., PushConsumer]:
    """``make_consumer(expression="*", **options)``: a consumer (not started) of ``cluster.group``.

    Its listener is ``recorder`` unless ``listener=`` is given; its client id is ``127.0.0.1@me``.
    """

    def make(expression: str = "*", topics: Iterable[str] | None = None, **options: Any) -> PushConsumer:
        options.setdefault("namesrv", cluster.namesrv.address)
        options.setdefault("listener", recorder)
        options.setdefault("instance_name", "me")
        options.setdefault("client_ip", "127.0.0.1")
        consumer = PushConsumer(options.pop("group", cluster.group), **options)
        for topic in topics or (cluster.topic,):
            consumer.subscribe(topic, expression)
        return consumer

    return make
