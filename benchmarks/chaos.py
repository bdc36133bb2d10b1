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
the first / every queue of the hit broker delivered again (for ``namesrv``: every queue).

    python benchmarks/chaos.py [--rate 200] [--in-flight 64] [--phases kill,pause,namesrv,unreachable]
                               [--lead 10] [--kill-down 5] [--pause 10] [--namesrv-down 15]
                               [--unreachable 150] [--settle 60] [--drain 60]
                               [--attempt-timeout 1.0] [--pull-max-idle-time 120] [--version 5.3.3]
                               [--relay] [--proxy] [--proxy-down 5]

A phase may carry its own duration: ``--phases pause=1.2,pause=1.8,pause=10`` pauses three times.
``--short`` runs the shape ``integration/test_chaos.py`` uses (shorter faults, a 15-s idle-pull limit).
Timing figures need an idle machine.
"""

from __future__ import annotations

import argparse
import collections
import functools
import inspect
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import trio
from _chaos_report import ChaosReport, PhaseFigures, print_report

from rocketmq_py import ConsumeFromWhere, Message, MessageExt, Producer, PushConsumer
from rocketmq_py.errors import ClusterError, RocketMQError
from rocketmq_py.testing import Cluster, LocalCluster

PHASES = ("kill", "pause", "namesrv", "unreachable")
#: Phases run only when asked: ``proxy`` needs a cluster whose clients go through a Proxy.
OTHER_PHASES = ("proxy",)
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


_NUMBERS = re.compile(r"\d+(\.\d+)?")


def error_kind(exc: BaseException) -> str:
    """An error's type and text with numbers masked, so that failures group by cause."""
    return f"{type(exc).__name__}: {_NUMBERS.sub('#', str(exc))}"[:300]


async def poll(predicate: Callable[[], bool], interval: float = 0.1) -> None:
    """Return once ``predicate()`` holds (checked every ``interval`` s)."""
    while not predicate():  # noqa: ASYNC110 - the listener and the send tasks fill the state
        await trio.sleep(interval)


class _Watch:
    """The first delivery from each watched queue after a moment."""

    def __init__(self, queues: Sequence[tuple[str, int]], since: float) -> None:
        self.since = since
        self.first: dict[tuple[str, int], float | None] = dict.fromkeys(queues)

    def delivered(self, queue: tuple[str, int], now: float) -> None:
        if queue in self.first and self.first[queue] is None and now >= self.since:
            self.first[queue] = now

    @property
    def complete(self) -> bool:
        return all(t is not None for t in self.first.values())

    def figures(self) -> tuple[float | None, float | None]:
        times = [t for t in self.first.values() if t is not None]
        first = min(times) - self.since if times else None
        every = max(times) - self.since if times and self.complete else None
        return first, every


class _Run:
    """The traffic, the deliveries and the phases of one chaos run."""

    def __init__(self, cluster: Cluster, options: ChaosOptions) -> None:
        self.cluster = cluster
        self.options = options
        self.topic = f"chaos-{uuid.uuid4().hex[:10]}"
        self.group = f"chaos-cg-{uuid.uuid4().hex[:8]}"
        self.hosts = {b.address: b.name for b in cluster.brokers}
        self.phase_of: list[int] = []  # seq -> phase index
        self.started_at: list[float] = []  # seq -> send start
        self.acked: set[int] = set()
        self.failed: list[tuple[int, str]] = []
        self.deliveries: collections.Counter[int] = collections.Counter()
        #: Where each delivery of a sequence number came from: (broker address, queue, offset).
        self.delivered_from: dict[int, list[tuple[str, int, int]]] = collections.defaultdict(list)
        #: The producer's retry count at each phase's start; ``retries()`` reads it.
        self.retries_at_start: list[int] = []
        self.retries: Callable[[], int] = lambda: 0
        self.in_flight = 0
        self.phase_index = 0
        self.watch: _Watch | None = None
        self.fault_on: PhaseFigures | None = None
        self.phases: list[PhaseFigures] = []

    # --- traffic --------------------------------------------------------------------------------

    async def produce(self, producer: Producer, stop: trio.Event) -> None:
        slots = trio.Semaphore(self.options.in_flight)
        interval = 1.0 / self.options.rate
        padding = b" " * max(0, self.options.size - 12)

        async def one(seq: int) -> None:
            try:
                await producer.send(Message(self.topic, b"%012d" % seq + padding))
            except RocketMQError as exc:
                self.failed.append((seq, error_kind(exc)))
            else:
                self.acked.add(seq)
            finally:
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
                nursery.start_soon(one, seq)
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
        self.retries_at_start.append(self.retries())
        kind, _, duration = name.partition("=")  # "pause=1.5": a 1.5-s pause
        broker, inject, seconds, lift = self.fault_steps(kind, phase)
        seconds = float(duration) if duration else seconds
        phase.broker = broker
        await trio.sleep(self.options.lead)
        phase.in_flight_at_fault = phase.in_flight_peak = self.in_flight
        phase.fault_at = trio.current_time()
        self.fault_on = phase
        print(
            f"  {name}: fault on {broker or ('the Proxy' if kind == 'proxy' else 'the NameServer')}",
            flush=True,
        )
        await inject()
        await trio.sleep(seconds)
        await lift()
        phase.lifted_at = trio.current_time()
        self.fault_on = None
        self.watch = _Watch(self.queues_of(broker), phase.lifted_at)
        print(f"  {name}: lifted after {phase.lifted_at - phase.fault_at:.1f} s", flush=True)
        with trio.move_on_after(self.options.settle):
            await poll(lambda: self.watch is not None and self.watch.complete)
        phase.resumed_first, phase.resumed_all = self.watch.figures()
        self.watch = None
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
        async with Producer(
            f"chaos-pg-{uuid.uuid4().hex[:8]}", namesrv=self.cluster.namesrv_addr, **producer_options
        ) as producer:
            self.retries = lambda: producer.statistics().retries
            async with consumer:
                with trio.fail_after(60):
                    await poll(lambda: self.owned(consumer) == o.queues * len(self.cluster.brokers))
                stop = trio.Event()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self.produce, producer, stop)
                    for name in o.phases:
                        await self.run_phase(name)
                    stop.set()
                print(f"  production stopped; draining (at most {o.drain:g} s)", flush=True)
                with trio.move_on_after(o.drain):
                    await poll(lambda: self.acked.issubset(self.deliveries.keys()))
                await trio.sleep(2.0)  # late redeliveries
            stats = producer.statistics()
            ends = [*self.retries_at_start[1:], stats.retries]
            for phase, began, ended in zip(self.phases, self.retries_at_start, ends, strict=True):
                phase.retries = ended - began
        return self.report(str(stats))

    def report(self, producer_stats: str) -> ChaosReport:
        failed_seqs = {seq for seq, _ in self.failed}
        for seq, kind in self.failed:
            self.phases[self.phase_of[seq]].errors[kind] += 1
        for seq, phase_index in enumerate(self.phase_of):
            phase = self.phases[phase_index]
            during = phase.fault_at <= self.started_at[seq] < phase.lifted_at
            phase.sent_during_fault += during
            if seq in self.acked:
                phase.acked += 1
                phase.lost += self.deliveries[seq] == 0
            elif seq in failed_seqs:
                phase.failed += 1
                phase.failed_during_fault += during
            phase.duplicates += max(0, self.deliveries[seq] - 1)
            if self.deliveries[seq] > 1:
                where = self.delivered_from[seq]
                phase.stored_again += len(set(where)) - 1
                phase.redelivered += len(where) - len(set(where))
        return ChaosReport(
            phases=self.phases,
            acked=len(self.acked),
            failed=len(self.failed),
            consumed=sum(1 for seq in self.deliveries if seq < len(self.phase_of)),
            lost=sum(p.lost for p in self.phases),
            duplicates=sum(p.duplicates for p in self.phases),
            producer_stats=producer_stats,
        )


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
    ):
        kind = int if name == "in_flight" else float
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    for name in ("kill_broker", "pause_broker", "block_broker"):
        parser.add_argument("--" + name.replace("_", "-"), default=None)
    args = parser.parse_args(argv)
    options = SHORT if args.short else defaults
    changes: dict[str, Any] = {
        name: value
        for name, value in vars(args).items()
        if value is not None
        and name not in ("short", "version", "phases", "attempt_timeout", "relay", "proxy")
    }
    if args.phases:
        changes["phases"] = tuple(args.phases.split(","))
    if args.attempt_timeout is not None:
        changes["attempt_timeout"] = None if args.attempt_timeout == "none" else float(args.attempt_timeout)
    options = replace(options, **changes)
    version = {"version": args.version} if args.version else {}
    print(f"chaos: {options}")
    started = time.monotonic()
    relay = args.relay or any(phase.partition("=")[0] == "unreachable" for phase in options.phases)
    proxy = args.proxy or any(phase.partition("=")[0] == "proxy" for phase in options.phases)
    cluster = LocalCluster(2, relay=relay, proxy=proxy, clients_via_proxy=proxy, **version)
    with cluster:
        cluster.start()
        print(f"cluster {cluster.namesrv_addr} ({cluster.version}) up in {time.monotonic() - started:.0f} s")
        report = trio.run(run_chaos, cluster, options)
    print_report(report)
    print(f"\nrun took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
