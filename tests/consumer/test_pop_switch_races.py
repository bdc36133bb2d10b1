"""A group switched between PULL and POP under load: what the switch must not do on the real broker.

First, a switch half done: the brokers disagree on the group's mode.

``mqadmin setConsumeMode -c <cluster>`` sets the mode on each master in turn
(``SetConsumeModeSubCommand.execute``: one ``setMessageRequestMode`` per master address), and a
member asks one broker of the topic, at random, each round (Java:
``RebalanceImpl.getRebalanceResultFromBroker`` via ``MQClientInstance.findBrokerAddrByTopic``). Each
broker answers QUERY_ASSIGNMENT with every queue of the topic in its own stored mode
(``QueryAssignmentProcessor.doLoadBalance``, the queues from ``TopicRouteInfoManager``). A round
that asked the switched broker, followed at once by one that asked the other (the switch's own
heartbeat makes the broker notify a rebalance), took the member to POP and back: the pops in flight
were cut, their messages hidden until revived, and pulled meanwhile (a CI run of
``integration/test_pop_modes.py`` saw two messages come twice that way, on 5.5.0).
"""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from rocketmq_py.consumer._push import PushConsumer
from rocketmq_py.protocol import MessageQueue, MessageRequestMode, pop_retry_topic
from tests.consumer._pop_fake import wait_until
from tests.consumer.conftest import Cluster, Recorder

POP, PULL = MessageRequestMode.POP, MessageRequestMode.PULL


def _setup(cluster: Cluster) -> None:
    """Both brokers list all four queues of the topic (as the real broker does, from its route), and
    the POP retry topic has a route too."""
    every = [MessageQueue(cluster.topic, fb.broker_name, q) for fb in cluster.brokers for q in range(2)]
    retry = pop_retry_topic(cluster.topic, cluster.group)
    for fb in cluster.brokers:
        fb.pop.route_queues[cluster.topic] = every
        fb.pop.modes[(cluster.topic, cluster.group)] = PULL
        fb.add_topic(retry, queues=1)
    cluster.namesrv.set_route(retry, Cluster.route(cluster.a, cluster.b, queues=1))


def _modes(cluster: Cluster, a: MessageRequestMode, b: MessageRequestMode) -> None:
    cluster.a.pop.modes[(cluster.topic, cluster.group)] = a
    cluster.b.pop.modes[(cluster.topic, cluster.group)] = b


async def _watch(seconds: float, changed: Callable[[], bool]) -> bool:
    """Whether ``changed()`` held at any poll (every 10 ms) within ``seconds``."""
    with trio.move_on_after(seconds):
        while not changed():  # noqa: ASYNC110 - state lives in the consumer
            await trio.sleep(0.01)
        return True
    return False


async def test_a_half_done_switch_neither_starts_nor_stops_popping(
    cluster: Cluster, make_consumer: Callable[..., PushConsumer], autojump_clock: trio.testing.MockClock
) -> None:
    """While the brokers disagree the member keeps the mode it had; it switches once every broker
    asked says the new one. (Before: about one round in two followed each broker, 20 s of rounds
    started and cut the pops again and again.)"""
    _setup(cluster)
    consumer = make_consumer(client_rebalance=False, rebalance_interval=1)
    async with consumer:
        pop = consumer._pop
        assert pop is not None
        await wait_until(lambda: any(mq.topic == cluster.topic for mq in consumer._queues))

        _modes(cluster, POP, PULL)  # broker-a switched, broker-b not yet
        assert not await _watch(20, lambda: bool(pop.queues)), "popping began while broker-b says PULL"
        assert any(mq.topic == cluster.topic for mq in consumer._queues)

        _modes(cluster, POP, POP)
        await wait_until(lambda: len(pop.queues) == 4)
        await wait_until(lambda: not any(mq.topic == cluster.topic for mq in consumer._queues))
        popping = dict(pop.queues)

        _modes(cluster, PULL, POP)  # back to PULL, broker-a first
        assert not await _watch(20, lambda: pop.queues != popping), "a pop loop stopped or restarted"

        _modes(cluster, PULL, PULL)
        await wait_until(lambda: not pop.queues)
        await wait_until(lambda: any(mq.topic == cluster.topic for mq in consumer._queues))


async def test_a_member_the_brokers_assign_commits_only_in_requests_whose_answer_it_waits_for(
    cluster: Cluster,
    make_consumer: Callable[..., PushConsumer],
    recorder: Recorder,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No commit offset rides on the pulls of a member with ``client_rebalance=False``, and its
    periodic commits are answered, as an orderly member's.

    A switch to POP hands the pulled queues to the pops, which start at the group's stored offset
    (``PopMessageProcessor.getPopOffset``). The broker stores a pull's commit offset on its pull
    executor (``PullMessageProcessor.tryCommitOffset``) and the handoff's UPDATE_CONSUMER_OFFSET on
    its consumer-manage executor, so a pull sent just before the handoff could store an older
    offset after it, and the pops handed out again the pulls' last messages. The real broker logged
    it in a loaded run of ``integration/test_pop_modes.py`` ("[NOTIFYME]update consumer offset less
    than store ... requestOffset=28, storeOffset=29" from ``PullMessageThread``); that run's
    switch test saw a message pulled and then popped.
    """
    _setup(cluster)  # PULL mode on both brokers
    cluster.answer_consumer_ids("127.0.0.1@me")
    async with make_consumer(client_rebalance=False, rebalance_interval=1, persist_interval=1):
        for mq in cluster.queues():
            cluster.put(mq, 3)
        await cluster.wait_until(lambda: len(recorder.messages) == 12)
        await trio.sleep(20)  # past a long poll's 15 s: each queue pulled again since
        cluster.assert_commits_only_answered(pulls=8)
