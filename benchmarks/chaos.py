"""Chaos: steady production and consumption through broker and NameServer faults, on a cluster of its own.

A fresh local cluster (two brokers, ``rocketmq_py.testing.LocalCluster(2)``, behind the kit's relay
when a phase needs it or ``--relay`` asks) and one topic (8 queues on each broker). One ``Producer``
sends ``--rate`` messages/s (the body is a sequence number) with at most ``--in-flight`` sends at once; one ``PushConsumer`` (a new group, from the first offset)
consumes everything. Then, one after the other, each phase runs ``--lead`` seconds of steady traffic,
injects its fault, lifts it, and waits (at most ``--settle`` seconds) until every queue of the hit
broker has delivered a message again:

- ``kill``: SIGKILL a broker (``--kill-broker``), restart it ``--kill-down`` s later on its store;
- ``pause``: SIGSTOP a broker (``--pause-broker``) for ``--pause`` s (connections stay open, nothing
  answers), then SIGCONT;
- ``namesrv``: stop the NameServer for ``--namesrv-down`` s, start it again and wait until every
  broker registered again (polled here when ``start_namesrv`` gives up);
- ``proxy``: (a cluster with a Proxy in front, which every client takes as its NameServer:
  ``--proxy``) SIGKILL the Proxy, start it again ``--proxy-down`` s later on its ports; every queue
  must deliver again;
- ``controller``: (a 5.x ``ControllerCluster`` instead: ``--controller``, implied by the phase)
  SIGKILL the master; the controller elects a slave. Sends carry ``--keys`` sharding keys (16) and
  an orderly group (rows ``controller/orderly``) consumes beside the concurrent one; key order and
  the offsets on the new master are checked (see ``_chaos_controller``);
- ``unreachable``: black-hole a broker (``--block-broker``) for ``--unreachable`` s: the cluster's
  brokers are reached through the testing kit's relay (``LocalCluster(relay=True)``, no root needed),
  which stops forwarding and accepting; the broker keeps its NameServer registration, so clients keep
  being sent to it: past the consumer's idle-pull limit (``pull_max_idle_time``, 120 s by default)
  this is the idle-pull-drop case.

After the last phase production stops and the consumer drains (at most ``--drain`` s). Per phase
(a send belongs to the phase in which it started) it prints: acked and failed sends, failures among
the sends started while the fault was on, lost (acked, never consumed), duplicates (deliveries of a
sequence number beyond its first), split into *again* (one send stored more than once: an attempt
abandoned and retried that the broker stored anyway; at most one per retry, shown beside) and
*redeliv* (the same stored message delivered again), the sends in flight when the fault began and at most while it lasted, and the seconds from lifting the fault until
the first / every queue of the hit broker delivered again (for ``namesrv``: every queue), and the
seconds from the fault's start to the first acknowledgment of a send started after it.

    python benchmarks/chaos.py [--rate 200] [--in-flight 64] [--phases kill,pause,namesrv,unreachable]
                               [--lead 10] [--kill-down 5] [--pause 10] [--namesrv-down 15]
                               [--unreachable 150] [--settle 60] [--drain 60]
                               [--attempt-timeout 1.0] [--pull-max-idle-time 120] [--version 5.3.3]
                               [--relay] [--proxy] [--proxy-down 5] [--controller] [--keys 16]

A phase may carry its own duration: ``--phases pause=1.2,pause=1.8,pause=10`` pauses three times.
``--short`` runs the shape ``integration/test_chaos.py`` uses (shorter faults, a 15-s idle-pull limit).
Timing figures need an idle machine.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import inspect
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import trio
from _chaos_controller import ControllerFault, OrderlyLog
from _chaos_report import ChaosReport, PhaseFigures, Records, Watch, error_kind, print_report, tally

from rocketmq_py import ConsumeFromWhere, Message, MessageExt, Producer, PushConsumer, select_by_hash
from rocketmq_py.errors import ClusterError, RocketMQError
from rocketmq_py.hooks import Hook, SendContext
from rocketmq_py.testing import Cluster, ControllerCluster, LocalCluster

PHASES = ("kill", "pause", "namesrv", "unreachable")
#: Phases run only when asked: ``proxy`` needs a cluster whose clients go through a Proxy,
#: ``controller`` a 5.x controller-mode group (and runs with sharding keys and an orderly group).
OTHER_PHASES = ("proxy", "controller")
#: Sharding keys of a ``controller`` run when ``--keys`` is not given.
CONTROLLER_KEYS = 16
_NOT_GIVEN: Any = object()


@dataclass(frozen=True, slots=True)
class ChaosOptions:
    """What :func:`run_chaos` does; the defaults are the issue's full run."""

    rate: float = 200.0
    in_flight: int = 64
    size: int = 128
    queues: int = 8  # per broker
    phases: tuple[str, ...] = PHASES
    lead: float = 10.0
    kill_down: float = 5.0
    pause: float = 10.0
    namesrv_down: float = 15.0
    unreachable: float = 150.0
    proxy_down: float = 5.0
    settle: float = 60.0
    drain: float = 60.0
    kill_broker: str = "broker-a"
    pause_broker: str = "broker-b"
    block_broker: str = "broker-b"
    #: Producer(attempt_timeout=...); _NOT_GIVEN keeps the producer's default.
    attempt_timeout: float | None = _NOT_GIVEN
    #: PushConsumer(pull_max_idle_time=...) when the consumer has that option; None: its default.
    pull_max_idle_time: float | None = None
    #: Sharding keys: > 0 sends message ``seq`` with key ``seq % keys`` (one send of a key at a time,
    #: to the queue the key hashes to) and adds an orderly group whose per-key order is checked.
    keys: int = 0


#: The shape of the integration test: every fault, shorter; the broker stays unreachable 25 s,
#: past a consumer idle-pull limit shortened to 15 s (the default is 120 s).
SHORT = ChaosOptions(
    lead=5.0,
    kill_down=2.0,
    namesrv_down=8.0,
    unreachable=25.0,
    pull_max_idle_time=15.0,
    drain=45.0,
)


class RetryCount(Hook):
    """Counts each send's retries (attempts after its first), by the sequence number in its body.

    A retry belongs to the send it repeats, so to the phase in which that send started, as the
    copies it may leave do: the producer's running total, split by time at each phase's start,
    gave a send that started before a phase began and retried after it to the wrong phase.
    """

    def __init__(self) -> None:
        self.of: collections.Counter[int] = collections.Counter()  # seq -> retries

    def before_send(self, ctx: SendContext) -> None:
        """Count an attempt after the first of its send."""
        if ctx.attempt > 1:
            self.of[int(ctx.message.body[:12])] += 1


async def poll(predicate: Callable[[], bool], interval: float = 0.1) -> None:
    """Return once ``predicate()`` holds (checked every ``interval`` s)."""
    while not predicate():  # noqa: ASYNC110 - the listener and the send tasks fill the state
        await trio.sleep(interval)


class _Run:
    """The traffic, the deliveries and the phases of one chaos run."""

    def __init__(self, cluster: Cluster, options: ChaosOptions) -> None:
        self.cluster = cluster
        self.options = options
        self.topic = f"chaos-{uuid.uuid4().hex[:10]}"
        self.group = f"chaos-cg-{uuid.uuid4().hex[:8]}"
        self.hosts = {b.address: b.name for b in [*cluster.brokers, *cluster.slaves]}
        self.phase_of: list[int] = []  # seq -> phase index
        self.started_at: list[float] = []  # seq -> send start
        self.acked_at: dict[int, float] = {}  # seq -> when acknowledged
        self.failed: list[tuple[int, str]] = []
        self.deliveries: collections.Counter[int] = collections.Counter()
        #: Where each delivery of a sequence number came from: (broker address, queue, offset).
        self.delivered_from: dict[int, list[tuple[str, int, int]]] = collections.defaultdict(list)
        #: The producer's retries, per send.
        self.retry_count = RetryCount()
        self.in_flight = 0
        self.phase_index = 0
        self.watch: Watch | None = None
        self.orderly_watch: Watch | None = None
        self.orderly_resumed: list[tuple[float | None, float | None]] = []  # per phase
        self.fault_on: PhaseFigures | None = None
        self.phases: list[PhaseFigures] = []
        #: The orderly group (with sharding keys) and what it got.
        self.orderly = OrderlyLog(options.keys) if options.keys > 0 else None
        self.groups = [self.group, *([f"{self.group}-orderly"] if self.orderly else [])]
        #: Steps of the phases to take once the consumers closed, and of this phase before its fault.
        self.after_close: list[Callable[[], Awaitable[None]]] = []
        self.before_fault: Callable[[], Awaitable[None]] | None = None

    # --- traffic --------------------------------------------------------------------------------

    async def produce(self, producer: Producer, stop: trio.Event) -> None:
        slots = trio.Semaphore(self.options.in_flight)
        interval = 1.0 / self.options.rate
        padding = b" " * max(0, self.options.size - 12)

        keys = self.options.keys
        last_of_key: dict[int, trio.Event] = {}  # the send of each key that goes last

        async def one(seq: int, key: int | None, after: trio.Event | None, done: trio.Event) -> None:
            try:
                body = b"%012d" % seq + padding
                if key is None:
                    await producer.send(Message(self.topic, body))
                else:  # a key's sends one after the other, so that its stored order is seq order
                    if after is not None:
                        await after.wait()
                    message = Message(self.topic, body, keys=[str(key)])
                    await producer.send(message, selector=select_by_hash, arg=key)
            except RocketMQError as exc:
                self.failed.append((seq, error_kind(exc)))
            else:
                self.acked_at[seq] = trio.current_time()
            finally:
                done.set()
                self.in_flight -= 1
                slots.release()

        async with trio.open_nursery() as nursery:
            next_at = trio.current_time()
            while not stop.is_set():
                await slots.acquire()
                seq = len(self.phase_of)
                self.phase_of.append(self.phase_index)
                self.started_at.append(trio.current_time())
                self.in_flight += 1
                if self.fault_on is not None:
                    self.fault_on.in_flight_peak = max(self.fault_on.in_flight_peak, self.in_flight)
                done = trio.Event()
                key = seq % keys if keys else None
                after = None if key is None else last_of_key.get(key)
                if key is not None:
                    last_of_key[key] = done
                nursery.start_soon(one, seq, key, after, done)
                next_at = max(next_at + interval, trio.current_time() - 1.0)  # no burst after a stall
                with trio.move_on_at(next_at):
                    await stop.wait()

    async def consume(self, messages: list[MessageExt]) -> None:
        # async: a plain function would run in a worker thread, away from the trio clock
        now = trio.current_time()
        for message in messages:
            seq = int(message.body[:12])
            self.deliveries[seq] += 1
            self.delivered_from[seq].append((message.store_host, message.queue_id, message.queue_offset))
            if self.watch is not None:
                self.watch.delivered(
                    (self.hosts.get(message.store_host, message.store_host), message.queue_id), now
                )

    async def consume_orderly(self, messages: list[MessageExt]) -> None:
        assert self.orderly is not None
        now = trio.current_time()
        for message in messages:
            where = (message.store_host, message.queue_id, message.queue_offset)
            self.orderly.delivered(int(message.body[:12]), where)
            if self.orderly_watch is not None:
                host = self.hosts.get(message.store_host, message.store_host)
                self.orderly_watch.delivered((host, message.queue_id), now)

    # --- faults ---------------------------------------------------------------------------------

    def queues_of(self, broker: str | None) -> list[tuple[str, int]]:
        names = [b.name for b in self.cluster.brokers] if broker is None else [broker]
        return [(name, q) for name in names for q in range(self.options.queues)]

    async def blocking(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a blocking cluster call in a worker thread (the testing kit forks JVMs from its own
        interpreter-long thread, so a worker retiring kills nothing)."""
        await trio.to_thread.run_sync(functools.partial(fn, *args))

    async def restart_namesrv(self, phase: PhaseFigures) -> None:
        try:
            await self.blocking(self.cluster.start_namesrv)
        except ClusterError as exc:
            phase.notes.append(f"start_namesrv raised: {str(exc).splitlines()[0]}")
            started = trio.current_time()
            await self.blocking(self.cluster.wait_until_registered, 180.0)
            phase.notes.append(f"every broker registered {trio.current_time() - started:.1f} s later")

    def fault_steps(
        self, name: str, phase: PhaseFigures
    ) -> tuple[str | None, Callable[[], Awaitable[None]], float, Callable[[], Awaitable[None]]]:
        """(hit broker, inject, seconds on, lift) of phase ``name``."""
        o, c = self.options, self.cluster
        if name == "controller":
            if not isinstance(c, ControllerCluster):
                raise ValueError("the controller phase needs a ControllerCluster")
            fault = ControllerFault(c, phase, self.topic, self.groups, o.queues, self.blocking)
            self.before_fault = fault.prepare
            self.after_close.append(fault.after)
            return (c.brokers[0].name, fault.inject, 0.0, fault.lift)
        if name == "kill":
            return (
                o.kill_broker,
                lambda: self.blocking(c.kill_broker, o.kill_broker),
                o.kill_down,
                (lambda: self.blocking(c.restart_broker, o.kill_broker)),
            )
        if name == "pause":
            return (
                o.pause_broker,
                lambda: self.blocking(c.pause_broker, o.pause_broker),
                o.pause,
                (lambda: self.blocking(c.resume_broker, o.pause_broker)),
            )
        if name == "namesrv":
            return (
                None,
                lambda: self.blocking(c.stop_namesrv),
                o.namesrv_down,
                lambda: self.restart_namesrv(phase),
            )
        if name == "unreachable":
            return (
                o.block_broker,
                lambda: self.blocking(c.block_broker, o.block_broker),
                o.unreachable,
                (lambda: self.blocking(c.unblock_broker, o.block_broker)),
            )
        if name == "proxy":
            if not isinstance(c, LocalCluster) or c.proxy_addr is None or c.namesrv_addr != c.proxy_addr:
                raise ValueError("the proxy phase needs LocalCluster(proxy=True, clients_via_proxy=True)")
            return (
                None,
                lambda: self.blocking(c.kill_proxy),
                o.proxy_down,
                lambda: self.blocking(c.restart_proxy),
            )
        raise ValueError(f"unknown phase {name!r}; phases are {', '.join((*PHASES, *OTHER_PHASES))}")

    async def run_phase(self, name: str) -> None:
        phase = PhaseFigures(name, None)
        self.phases.append(phase)
        self.phase_index = len(self.phases) - 1
        phase.start = trio.current_time()
        kind, _, duration = name.partition("=")  # "pause=1.5": a 1.5-s pause
        self.before_fault = None
        broker, inject, seconds, lift = self.fault_steps(kind, phase)
        seconds = float(duration) if duration else seconds
        phase.broker = broker
        await trio.sleep(self.options.lead)
        if self.before_fault is not None:
            await self.before_fault()
        phase.in_flight_at_fault = phase.in_flight_peak = self.in_flight
        phase.fault_at = trio.current_time()
        self.fault_on = phase
        hit = broker or ("the Proxy" if kind == "proxy" else "the NameServer")
        print(f"  {name}: fault on {hit}", flush=True)
        await inject()
        await trio.sleep(seconds)
        await lift()
        phase.lifted_at = trio.current_time()
        self.fault_on = None
        watch = self.watch = Watch(self.queues_of(broker), phase.lifted_at)
        orderly = self.orderly_watch = Watch(self.queues_of(broker), phase.lifted_at)
        print(f"  {name}: lifted after {phase.lifted_at - phase.fault_at:.1f} s", flush=True)
        with trio.move_on_after(self.options.settle):
            await poll(lambda: watch.complete and (self.orderly is None or orderly.complete))
        phase.resumed_first, phase.resumed_all = watch.figures()
        self.orderly_resumed.append(orderly.figures())
        self.watch = self.orderly_watch = None
        phase.end = trio.current_time()

    # --- the run --------------------------------------------------------------------------------

    def owned(self, consumer: PushConsumer) -> int:
        return sum(1 for stats in consumer.statistics() if stats.queue.topic == self.topic)

    def consumer_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.options.pull_max_idle_time is not None:
            if "pull_max_idle_time" not in inspect.signature(PushConsumer).parameters:
                raise SystemExit("this PushConsumer has no pull_max_idle_time option")
            options["pull_max_idle_time"] = self.options.pull_max_idle_time
        return options

    async def run(self) -> ChaosReport:
        o = self.options
        producer_options: dict[str, Any] = {}
        if o.attempt_timeout is not _NOT_GIVEN:
            producer_options["attempt_timeout"] = o.attempt_timeout
        consumer = PushConsumer(
            self.group,
            namesrv=self.cluster.namesrv_addr,
            listener=self.consume,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            **self.consumer_options(),
        )
        consumer.subscribe(self.topic)
        consumers = [consumer]
        if self.orderly is not None:
            consumers.append(
                PushConsumer(
                    self.groups[1],
                    namesrv=self.cluster.namesrv_addr,
                    listener=self.consume_orderly,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    orderly=True,
                    **self.consumer_options(),
                )
            )
            consumers[1].subscribe(self.topic)
        async with Producer(
            f"chaos-pg-{uuid.uuid4().hex[:8]}",
            namesrv=self.cluster.namesrv_addr,
            hooks=[self.retry_count],
            **producer_options,
        ) as producer:
            async with contextlib.AsyncExitStack() as stack:
                for member in consumers:
                    await stack.enter_async_context(member)
                every = o.queues * len(self.cluster.brokers)
                with trio.fail_after(60):
                    await poll(lambda: all(self.owned(member) == every for member in consumers))
                stop = trio.Event()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self.produce, producer, stop)
                    for name in o.phases:
                        await self.run_phase(name)
                    stop.set()
                print(f"  production stopped; draining (at most {o.drain:g} s)", flush=True)
                with trio.move_on_after(o.drain):
                    await poll(lambda: all(self.acked_at.keys() <= got for got in self.delivered_sets()))
                await trio.sleep(2.0)  # late redeliveries
            for step in self.after_close:
                await step()
            stats = producer.statistics()
            for seq, retries in self.retry_count.of.items():
                self.phases[self.phase_of[seq]].retries += retries
        return self.report(str(stats))

    def delivered_sets(self) -> list[Any]:
        """The sequence numbers each group got (views, for the drain's check)."""
        got = [self.deliveries.keys()]
        return got if self.orderly is None else [*got, self.orderly.deliveries.keys()]

    def report(self, producer_stats: str) -> ChaosReport:
        records = Records(self.phase_of, self.started_at, self.acked_at, self.failed, self.delivered_from)
        if self.orderly is None:
            return tally(records, self.phases, producer_stats)
        orderly = (self.orderly.delivered_from, self.orderly.breaks(), self.orderly_resumed)
        return tally(records, self.phases, producer_stats, orderly=orderly)


async def run_chaos(cluster: Cluster, options: ChaosOptions = ChaosOptions()) -> ChaosReport:
    """Run the phases of ``options`` against ``cluster`` (a fresh two-broker cluster of its own).

    Creates the topic, then produces, consumes and injects faults as the module docstring says.
    """
    chaos = _Run(cluster, options)
    await trio.to_thread.run_sync(cluster.create_topic, chaos.topic, options.queues)
    return await chaos.run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = ChaosOptions()
    parser.add_argument("--short", action="store_true", help="the integration test's shape")
    parser.add_argument("--version", default=None, help="RocketMQ version of the cluster")
    parser.add_argument(
        "--phases", default=None, help=f"comma-separated, from {','.join((*PHASES, *OTHER_PHASES))}"
    )
    parser.add_argument("--attempt-timeout", default=None, help="producer attempt_timeout (s, or 'none')")
    parser.add_argument(
        "--relay",
        action="store_true",
        help="reach the brokers through the kit's relay in every phase (on anyway with 'unreachable')",
    )
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="clients go through a Proxy in front of the cluster (5.x; on anyway with the 'proxy' phase)",
    )
    parser.add_argument(
        "--controller",
        action="store_true",
        help="a controller-mode group of three replicas (5.x; phases: controller; on with that phase)",
    )
    for name in (
        "rate",
        "in_flight",
        "lead",
        "kill_down",
        "pause",
        "namesrv_down",
        "unreachable",
        "proxy_down",
        "settle",
        "drain",
        "pull_max_idle_time",
        "keys",
    ):
        kind = int if name in ("in_flight", "keys") else float
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    for name in ("kill_broker", "pause_broker", "block_broker"):
        parser.add_argument("--" + name.replace("_", "-"), default=None)
    args = parser.parse_args(argv)
    options = SHORT if args.short else defaults
    changes: dict[str, Any] = {
        name: value
        for name, value in vars(args).items()
        if value is not None
        and name not in ("short", "version", "phases", "attempt_timeout", "relay", "proxy", "controller")
    }
    if args.phases:
        changes["phases"] = tuple(args.phases.split(","))
    controller = args.controller or "controller" in changes.get("phases", ())
    if controller:
        changes.setdefault("phases", ("controller",))
        changes.setdefault("keys", CONTROLLER_KEYS)
    if args.attempt_timeout is not None:
        changes["attempt_timeout"] = None if args.attempt_timeout == "none" else float(args.attempt_timeout)
    options = replace(options, **changes)
    version = {"version": args.version} if args.version else {}
    print(f"chaos: {options}")
    started = time.monotonic()
    relay = args.relay or any(phase.partition("=")[0] == "unreachable" for phase in options.phases)
    proxy = args.proxy or any(phase.partition("=")[0] == "proxy" for phase in options.phases)
    cluster: LocalCluster | ControllerCluster = (
        ControllerCluster(**version)
        if controller
        else LocalCluster(2, relay=relay, proxy=proxy, clients_via_proxy=proxy, **version)
    )
    with cluster:
        cluster.start()
        print(f"cluster {cluster.namesrv_addr} ({cluster.version}) up in {time.monotonic() - started:.0f} s")
        report = trio.run(run_chaos, cluster, options)
    print_report(report)
    print(f"\nrun took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
