"""Duplicates when a group scales 2 -> 3 -> 2 under steady traffic: rocketmq-py and the Java client, one run.

One topic (8 queues on each broker) and two groups on it, consumed at the same time under the same
schedule: group ``...-py`` by rocketmq-py ``PushConsumer`` processes (``_dup_proc.py``), group
``...-java`` by Java ``DefaultMQPushConsumer`` processes (``java/DupCountConsumer.java``, compiled
with ``javac`` against the rocketmq-client jars of the Java benchmark tools, cached). Every member is
a process of its own with its client's defaults (AVG, 20 concurrent consumes, one message a call,
offsets persisted every 5 s, rebalance every 20 s and on NOTIFY_CONSUMER_IDS_CHANGED), except that
a new group starts from the first offset and that name-server and admin calls may take
``--api-timeout`` s instead of 3 (both sides: on a loaded machine a cold JVM misses 3 s on its first
name-server call, and ``DefaultMQPushConsumer.start()`` then throws). Each listener call records
the body (a sequence number) when entered, then "works" ``--consume-ms``.

The schedule, each phase ``--phase`` seconds:

1. three members on each side boot; two start their consumers; wait until each group owns every
   queue exactly once (the third waits, booted, for "go" on its stdin);
2. our producer sends ``--rate`` messages/s (body = key = sequence number) from here on;
3. the third member of each group gets "go" and joins (at the same moment on both sides: JVM
   start-up is not part of the rebalance); the phase runs from when both have started;
4. the first member of each group is stopped gracefully (SIGTERM -> close / shutdown hook);
5. the producer stops; wait until both sides consumed everything (or 60 s), 3 s more for late
   redeliveries; the remaining members are stopped gracefully.

A member that exits before its consumer started is started again, up to 3 times; any other exit
not asked for makes the run invalid (its output is printed, no figures).

Printed: per side produced, deliveries, unique, lost (acknowledged by the broker, never consumed)
and duplicates (deliveries beyond the first), the duplicates by phase, queue-seconds during which a
queue had two owners or none, the ratio of duplicates ours/Java (goal <= 0.5, ideally 0), and the
rebalance timeline (members joining and leaving, owned queues as each member reported them).

    python benchmarks/rebalance_duplicates.py [--phase 15] [--rate 300] [--consume-ms 20]
                                              [--api-timeout 10] [--namesrv host:port] [--keep]

A fresh local two-broker cluster is started and stopped unless ``--namesrv`` (or ROCKETMQ_NAMESRV)
names one.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import trio

from rocketmq_py import Message, Producer, RocketMQError
from rocketmq_py.testing import Classpath, Cluster, cache_dir, resolve_bench, start_cluster
from rocketmq_py.testing._distribution import find_java, write_home_conf
from rocketmq_py.testing._external import ExternalCluster

QUEUES = 8  # per broker
SETTLE_TIMEOUT = 120.0  # seconds for both groups of two to own every queue, JVM start-up included
STABLE_FOR = 2.0  # ... and to stay so that long before the traffic starts
DRAIN_TIMEOUT = 60.0  # seconds for both sides to consume everything once the producer stops
LINGER = 3.0  # seconds more for late redeliveries
JOIN_TIMEOUT = 120.0  # seconds for the third members to start their consumers after "go"
MAX_START_ATTEMPTS = 3  # per member: a start that fails (see check_members) is retried in a new process
STOP_TIMEOUT = 30.0  # seconds for a member to exit after SIGTERM before it is killed
SENDERS = 8  # sends in flight at most: the pacer, not the send latency, sets the rate
HERE = Path(__file__).resolve().parent
PY_MEMBER = HERE / "_dup_proc.py"
JAVA_SOURCE = HERE / "java" / "DupCountConsumer.java"
JAVA_MAIN = "DupCountConsumer"
_JAVA_OPTS = ["-Xms128m", "-Xmx256m"]
_EVENT = re.compile(r"^(\d{13}) (ready|started|owned|stopping|stopped)\b ?(.*)$")


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- the Java member -------------------------------------------------------------------------------


def javac() -> str:
    sibling = Path(find_java()).resolve().with_name("javac")
    found = str(sibling) if sibling.is_file() else shutil.which("javac")
    if not found:
        raise SystemExit("javac not found: the Java side needs a JDK, not only a JRE")
    return found


def compile_java(client: Classpath) -> str:
    """Compile ``DupCountConsumer.java`` once per source and client (cached); returns the classpath."""
    source = JAVA_SOURCE.read_bytes()
    digest = hashlib.sha256(source + f"{client.name}-{client.version}".encode()).hexdigest()[:12]
    out = cache_dir() / "bench-java" / f"dupcount-{digest}"
    if not (out / f"{JAVA_MAIN}.class").is_file():
        partial = out.with_name(out.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        argv = [javac(), "-nowarn", "-d", str(partial), "-cp", client.classpath, str(JAVA_SOURCE)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"javac failed:\n{done.stdout}{done.stderr}")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
        for stale in out.parent.glob("dupcount-*"):  # builds of earlier versions of the source
            if stale != out and not stale.name.endswith(".partial"):
                shutil.rmtree(stale, ignore_errors=True)
    return f"{out}{os.pathsep}{client.classpath}"


# --- members ---------------------------------------------------------------------------------------


@dataclass
class Member:
    """One consumer process: its event log (stdout) and its deliveries file."""

    side: str
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    deliveries_file: Path
    spawned_ms: int
    #: Booted and waiting for "go" on stdin before it starts its consumer (until ``go``).
    gated: bool = False
    go_ms: int | None = None
    sigterm_ms: int | None = None
    exited_ms: int | None = None
    killed: bool = False

    def events(self) -> list[tuple[int, str, str]]:
        """(epoch ms, kind, rest) of each event line so far (the JVM's other output is skipped)."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        found = (_EVENT.match(line) for line in text.splitlines())
        return [(int(m[1]), m[2], m[3]) for m in found if m]

    def owned(self) -> frozenset[str] | None:
        """The queues last reported (None before the first report)."""
        reports = [rest for _, kind, rest in self.events() if kind == "owned"]
        return parse_owned(reports[-1]) if reports else None

    def deliveries(self) -> list[tuple[int, int]]:
        """(sequence number, epoch ms) of each delivery."""
        out = []
        with contextlib.suppress(FileNotFoundError):
            for line in self.deliveries_file.read_text(errors="replace").splitlines():
                seq, _, ms = line.partition(" ")
                if seq.isdigit() and ms.isdigit():
                    out.append((int(seq), int(ms)))
        return out

    def started(self) -> bool:
        return any(kind == "started" for _, kind, _ in self.events())

    def ready(self) -> bool:
        return any(kind == "ready" for _, kind, _ in self.events())

    def go(self) -> None:
        """Let a gated member start its consumer: join the group."""
        if not self.gated or self.popen.stdin is None:
            return  # a replacement for a member that failed to start: not gated
        self.go_ms = now_ms()
        self.gated = False
        self.popen.stdin.write(b"go\n")
        self.popen.stdin.close()

    def alive(self) -> bool:
        if self.exited_ms is None and self.popen.poll() is not None:
            self.exited_ms = now_ms()
        return self.exited_ms is None

    def sigterm(self) -> None:
        if self.alive():
            self.sigterm_ms = now_ms()
            self.popen.send_signal(signal.SIGTERM)

    async def wait_exit(self) -> None:
        with trio.move_on_after(STOP_TIMEOUT):
            while self.alive():  # noqa: ASYNC110 - a child process, polled
                await trio.sleep(0.1)
        if self.alive():
            self.kill()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.killed = True
            self.popen.kill()
        self.popen.wait()
        self.alive()


def parse_owned(rest: str) -> frozenset[str]:
    _, _, queues = rest.partition(" ")
    return frozenset(q for q in queues.split(",") if q)


@dataclass
class Side:
    """One client's group and its members."""

    key: str  # "ours" or "java"
    label: str
    group: str
    argv: list[str]  # the member command; "{home}" and "{out}" are filled in by spawn
    gate_argv: list[str]  # appended for a member that waits for "go" on stdin
    workdir: Path
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    members: list[Member] = field(default_factory=list)
    #: Members that exited before they started (replaced by ``spawn(slot)``), named ``<name>#<attempt>``.
    failed_starts: list[Member] = field(default_factory=list)

    def spawn(self, slot: int | None = None, *, gated: bool = False) -> Member:
        """Start a new member, or (``slot``) one in place of a member that failed to start.

        A ``gated`` member boots (JVM, imports) and waits for :meth:`Member.go` to start its consumer.
        """
        slot = len(self.members) if slot is None else slot
        replacing = slot < len(self.members)
        name = f"{'py' if self.key == 'ours' else 'java'}{slot + 1}"
        attempt = 1 + replacing + sum(1 for m in self.failed_starts if m.name.startswith(f"{name}#"))
        home = self.workdir / (name if attempt == 1 else f"{name}.{attempt}")
        home.mkdir(parents=True)
        if self.key == "java":
            write_home_conf(home)  # ROCKETMQ_HOME and user.home of a Java member: its logs land here
        out = home / "deliveries.txt"
        log = home / "events.log"
        argv = [arg.format(home=home, out=out) for arg in self.argv + (self.gate_argv if gated else [])]
        with open(log, "wb") as log_file:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if gated else subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=dict(self.env, ROCKETMQ_HOME=str(home)),
                cwd=home,
                start_new_session=True,  # a Ctrl-C in the terminal reaches only us; we stop them
                preexec_fn=_die_with_parent,
            )
        member = Member(self.key, name, popen, log, out, now_ms(), gated=gated)
        if not replacing:
            self.members.append(member)
        else:
            failed = self.members[slot]
            failed.name = f"{name}#{attempt - 1}"
            self.failed_starts.append(failed)
            self.members[slot] = member
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive() and m.sigterm_ms is None and not m.gated]

    def partition_problem(self, queues: frozenset[str]) -> str | None:
        """Why the live members' owned queues are not a partition of ``queues`` (None when they are)."""
        owned = {m.name: m.owned() for m in self.live()}
        if any(o is None for o in owned.values()):
            return f"not all started: {sorted(n for n, o in owned.items() if o is None)}"
        counts = Counter(q for o in owned.values() for q in o or ())
        shared = sorted(q for q, n in counts.items() if n > 1)
        missing = sorted(queues - counts.keys())
        if shared or missing:
            return f"shared {shared}, unowned {missing}"
        return None


# --- the producer ----------------------------------------------------------------------------------


@dataclass
class SteadyProducer:
    """Sends sequence numbers at ``rate`` messages/s until stopped; keeps the acknowledged ones."""

    namesrv: str
    topic: str
    rate: float
    acked: set[int] = field(default_factory=set)
    failed: int = 0
    started_ms: int = 0
    stopped_ms: int = 0
    _stop: trio.Event = field(default_factory=trio.Event)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with Producer(f"bench-dup-producer-{uuid.uuid4().hex[:6]}", namesrv=self.namesrv) as producer:
            await producer.send(Message(self.topic, b"warm-up", keys="warm-up"))  # route and connections
            send, receive = trio.open_memory_channel[int](1000)

            async def sender(seqs: trio.MemoryReceiveChannel[int]) -> None:
                async for seq in seqs:
                    try:
                        await producer.send(Message(self.topic, str(seq).encode(), keys=str(seq)))
                    except RocketMQError:
                        self.failed += 1
                    else:
                        self.acked.add(seq)

            async with trio.open_nursery() as nursery:
                for _ in range(SENDERS):
                    nursery.start_soon(sender, receive.clone())
                receive.close()
                self.started_ms = now_ms()
                task_status.started()
                async with send:
                    start = trio.current_time()
                    seq = 0
                    while not self._stop.is_set():
                        await send.send(seq)
                        seq += 1
                        with trio.move_on_at(start + seq / self.rate):
                            await self._stop.wait()
                self.stopped_ms = now_ms()

    def stop(self) -> None:
        self._stop.set()


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Schedule:
    """Epoch ms of each step."""

    traffic: int = 0
    join: int = 0
    leave: int = 0
    producer_stop: int = 0
    end: int = 0

    def phase_of(self, ms: int) -> str:
        if ms < self.join:
            return "2 members"
        if ms < self.leave:
            return "2 -> 3"
        if ms < self.producer_stop:
            return "3 -> 2"
        return "drain, stop"


PHASES = ["2 members", "2 -> 3", "3 -> 2", "drain, stop"]


async def wait_settled(sides: list[Side], queues: frozenset[str]) -> None:
    deadline = trio.current_time() + SETTLE_TIMEOUT
    stable_since: float | None = None
    while True:
        problems = {s.key: p for s in sides if (p := s.partition_problem(queues)) is not None}
        problems |= {m.name: "not booted" for s in sides for m in s.members if m.gated and not m.ready()}
        now = trio.current_time()
        if problems:
            stable_since = None
        else:
            stable_since = stable_since if stable_since is not None else now
            if now - stable_since >= STABLE_FOR:
                return
        if now > deadline:
            raise RunInvalid(f"the groups did not settle in {SETTLE_TIMEOUT:.0f} s: {problems}")
        await trio.sleep(0.2)


def unique_seqs(side: Side) -> set[int]:
    return {seq for m in side.members + side.failed_starts for seq, _ in m.deliveries()}


class RunInvalid(Exception):
    """The schedule could not be followed: no figures."""


def log_tail(member: Member) -> str:
    text = member.log.read_text(errors="replace").splitlines()
    return "\n".join(ln for ln in text if "|-INFO in " not in ln and "|-WARN in " not in ln)[-4000:]


def check_members(sides: list[Side]) -> str | None:
    """Respawn members that exited before they started; what went wrong if one cannot be (else None).

    A cold JVM on a loaded machine can miss the 3-s timeout of its first name-server request, and
    ``DefaultMQPushConsumer.start()`` then throws: such a member is started again (a new process),
    up to MAX_START_ATTEMPTS times. Any other exit that was not asked for makes the run invalid.
    """
    for side in sides:
        for slot, member in enumerate(side.members):
            if member.sigterm_ms is not None or member.alive():
                continue
            attempts = 1 + sum(1 for m in side.failed_starts if m.name.startswith(f"{member.name}#"))
            if not member.started() and attempts < MAX_START_ATTEMPTS:
                print(
                    f"{member.name} exited with {member.popen.returncode} before it started: again",
                    flush=True,
                )
                side.spawn(slot, gated=member.gated)  # a third member that has not had "go" yet waits again
                continue
            return (
                f"{member.name} exited with {member.popen.returncode} before it was stopped "
                f"(start attempt {attempts}): the run is invalid. Its output:\n{log_tail(member)}"
            )
    return None


async def run_schedule(
    cluster: Cluster, sides: list[Side], topic: str, args: argparse.Namespace
) -> tuple[SteadyProducer, Schedule]:
    """The schedule, aborted (SystemExit) as soon as a member exits on its own."""
    failure: list[str] = []
    result: tuple[SteadyProducer, Schedule] | None = None

    async def watch(cancel_scope: trio.CancelScope) -> None:
        while (problem := check_members(sides)) is None:  # noqa: ASYNC110 - processes, polled
            await trio.sleep(0.2)
        failure.append(problem)
        cancel_scope.cancel()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, nursery.cancel_scope)
            result = await steps(cluster, sides, topic, args)
            nursery.cancel_scope.cancel()
    except* RunInvalid as group:
        failure += [str(exc) for exc in group.exceptions]
    if failure or result is None:
        raise SystemExit(failure[0] if failure else "the run was cancelled")
    return result


async def steps(
    cluster: Cluster, sides: list[Side], topic: str, args: argparse.Namespace
) -> tuple[SteadyProducer, Schedule]:
    queues = frozenset(f"{b.name}:{q}" for b in cluster.brokers for q in range(QUEUES))
    schedule = Schedule()
    producer = SteadyProducer(cluster.namesrv_addr, topic, args.rate)
    for side in sides:
        side.spawn()
        side.spawn()
        side.spawn(gated=True)  # the third member boots now and joins later
    await wait_settled(sides, queues)
    print("both groups settled with 2 members; traffic starts", flush=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(producer.run)
        schedule.traffic = producer.started_ms
        await trio.sleep(args.phase)

        schedule.join = now_ms()
        for side in sides:
            side.members[2].go()
        print("a third member joins each group", flush=True)
        with trio.move_on_after(JOIN_TIMEOUT):
            while not all(s.members[2].started() for s in sides):  # noqa: ASYNC110 - processes, polled
                await trio.sleep(0.1)
        if not all(s.members[2].started() for s in sides):
            raise RunInvalid(f"the third members did not start in {JOIN_TIMEOUT:.0f} s")
        await trio.sleep(args.phase)

        schedule.leave = now_ms()
        print("the first member of each group stops (SIGTERM)", flush=True)
        leave_started = trio.current_time()
        async with trio.open_nursery() as stoppers:
            for side in sides:
                side.members[0].sigterm()
                stoppers.start_soon(side.members[0].wait_exit)
        await trio.sleep_until(leave_started + args.phase)
        producer.stop()
    schedule.producer_stop = producer.stopped_ms
    print(f"producer stopped: {len(producer.acked)} acknowledged; draining", flush=True)
    with trio.move_on_after(DRAIN_TIMEOUT):
        while any(producer.acked - unique_seqs(s) for s in sides):  # noqa: ASYNC110 - files, polled
            await trio.sleep(0.5)
    await trio.sleep(LINGER)
    async with trio.open_nursery() as stoppers:
        for side in sides:
            for member in side.members:
                member.sigterm()
                stoppers.start_soon(member.wait_exit)
    schedule.end = now_ms()
    return producer, schedule


# --- the figures -----------------------------------------------------------------------------------


@dataclass
class Figures:
    deliveries: int
    unique: int
    lost: int
    duplicates: int
    by_phase: Counter[str]
    double_owned_s: float
    unowned_s: float


def exit_note(member: Member) -> str:
    if member.killed:
        return " (killed)"
    if member.sigterm_ms is None:
        return " before it started: started again"
    if member.popen.returncode == 128 + signal.SIGTERM:
        return " (128 + SIGTERM: the JVM after its shutdown hooks)"
    return ""


def ownership_timeline(side: Side) -> list[tuple[int, str, str]]:
    """(epoch ms, member name, event) for ``side``, including the process exits, in time order."""
    members = side.members + side.failed_starts
    events = [(ms, m.name, f"{kind} {rest}".strip()) for m in members for ms, kind, rest in m.events()]
    events += [(m.spawned_ms, m.name, "spawned") for m in members]
    events += [(m.go_ms, m.name, "go: start the consumer") for m in members if m.go_ms is not None]
    events += [(m.sigterm_ms, m.name, "SIGTERM") for m in members if m.sigterm_ms is not None]
    events += [
        (m.exited_ms, m.name, f"exited {m.popen.returncode}{exit_note(m)}")
        for m in members
        if m.exited_ms is not None
    ]
    return sorted(events)


def ownership_gaps(side: Side, queues: frozenset[str], start: int, end: int) -> tuple[float, float]:
    """Queue-seconds in [start, end] during which a queue had two or more owners, and none."""
    owned: dict[str, frozenset[str]] = {}
    double = unowned = 0.0
    last = start
    for ms, name, text in [*ownership_timeline(side), (end + 1, "", "end")]:
        if ms > start:
            span = (min(ms, end) - last) / 1000
            counts = Counter(q for o in owned.values() for q in o)
            double += span * sum(1 for n in counts.values() if n > 1)
            unowned += span * len(queues - counts.keys())
            last = min(ms, end)
        if ms > end:
            break
        kind = text.split(" ", 1)[0]
        if kind == "owned":
            owned[name] = parse_owned(text.removeprefix("owned "))
        elif kind in ("stopped", "exited"):
            owned.pop(name, None)
    return double, unowned


def figures(side: Side, acked: set[int], schedule: Schedule, queues: frozenset[str]) -> Figures:
    per_seq: dict[int, list[int]] = {}
    for member in side.members + side.failed_starts:
        for seq, ms in member.deliveries():
            per_seq.setdefault(seq, []).append(ms)
    by_phase: Counter[str] = Counter()
    for times in per_seq.values():
        for ms in sorted(times)[1:]:
            by_phase[schedule.phase_of(ms)] += 1
    deliveries = sum(len(t) for t in per_seq.values())
    double, unowned = ownership_gaps(side, queues, schedule.traffic, schedule.producer_stop)
    return Figures(
        deliveries=deliveries,
        unique=len(per_seq),
        lost=len(acked - per_seq.keys()),
        duplicates=deliveries - len(per_seq),
        by_phase=by_phase,
        double_owned_s=double,
        unowned_s=unowned,
    )


def ratio_text(ours: int, java: int) -> str:
    if java == 0:
        return "n/a (both 0: goal met)" if ours == 0 else f"inf (Java 0, ours {ours}: goal not met)"
    ratio = ours / java
    verdict = "met" if ratio <= 0.5 else "not met"
    return f"{ratio:.2f} (goal <= 0.5, ideally 0: {verdict})"


def print_timeline(sides: list[Side], schedule: Schedule) -> None:
    marks = [
        (schedule.traffic, "-", "traffic starts"),
        (schedule.join, "-", "scale 2 -> 3"),
        (schedule.leave, "-", "scale 3 -> 2"),
        (schedule.producer_stop, "-", "producer stops"),
    ]
    rows = [(ms, "", name, text) for ms, name, text in marks]
    for side in sides:
        rows += [(ms, side.key, name, text) for ms, name, text in ownership_timeline(side)]
    print("\nRebalance timeline (s from traffic start; 'owned' as each member reported it):")
    for ms, key, name, text in sorted(rows):
        if key == "":
            print(f"  {(ms - schedule.traffic) / 1000:+8.2f}  ---- {text} ----")
            continue
        if text.startswith("owned "):
            count, _, _ = text.removeprefix("owned ").partition(" ")
            text = f"owns {count} queues"
        elif text.startswith("started "):
            text = f"started, client id {text.removeprefix('started ')}"
        print(f"  {(ms - schedule.traffic) / 1000:+8.2f}  {key:<5} {name:<6} {text}")


def print_report(
    sides: list[Side], producer: SteadyProducer, schedule: Schedule, queues: frozenset[str]
) -> None:
    acked = producer.acked
    seconds = (schedule.producer_stop - schedule.traffic) / 1000
    print(
        f"\nproduced {len(acked)} acknowledged ({len(acked) / seconds:.0f} msg/s over {seconds:.1f} s), "
        f"{producer.failed} failed sends"
    )
    results = {s.key: figures(s, acked, schedule, queues) for s in sides}
    header = (
        f"  {'side':<34} {'produced':>8} {'delivered':>9} {'unique':>7} {'lost':>5} {'dups':>6} "
        f"{'dup %':>6} {'2-owner q*s':>11} {'0-owner q*s':>11}"
    )
    print(header)
    for side in sides:
        f = results[side.key]
        pct = 100 * f.duplicates / max(len(acked), 1)
        print(
            f"  {side.label:<34} {len(acked):>8} {f.deliveries:>9} {f.unique:>7} {f.lost:>5} "
            f"{f.duplicates:>6} {pct:>6.2f} {f.double_owned_s:>11.1f} {f.unowned_s:>11.1f}"
        )
    print("  duplicates by phase (when the extra delivery happened):")
    for side in sides:
        by_phase = results[side.key].by_phase
        print(f"    {side.key:<5} " + ", ".join(f"{p}: {by_phase[p]}" for p in PHASES))
    ours, java = results["ours"].duplicates, results["java"].duplicates
    print(f"  duplicates ratio ours/Java: {ratio_text(ours, java)}")
    print_timeline(sides, schedule)


def make_sides(
    cluster: Cluster, topic: str, run_id: str, workdir: Path, args: argparse.Namespace
) -> list[Side]:
    client = resolve_bench(cluster.version)  # rocketmq-example's jars hold rocketmq-client and its deps
    java_cp = compile_java(client)
    common = [cluster.namesrv_addr]
    py_group, java_group = f"bench-dup-{run_id}-py", f"bench-dup-{run_id}-java"
    ours_argv = [sys.executable, str(PY_MEMBER), "--namesrv", *common, "--group", py_group]
    ours_argv += ["--topic", topic, "--out", "{out}", "--consume-ms", str(args.consume_ms)]
    ours_argv += ["--api-timeout", str(args.api_timeout)]
    ours_gate = ["--wait-for-go"]
    java_argv = [find_java(), *_JAVA_OPTS, "-Duser.home={home}", "-Drocketmq.home.dir={home}"]
    java_argv += ["-cp", java_cp, JAVA_MAIN, *common, java_group, topic, "{out}", str(round(args.consume_ms))]
    java_argv += [str(round(args.api_timeout * 1000))]
    ours = Side("ours", "rocketmq-py PushConsumer", py_group, ours_argv, ours_gate, workdir)
    java_label = f"Java DefaultMQPushConsumer {client.version}"
    java = Side("java", java_label, java_group, java_argv, ["wait-for-go"], workdir)
    return [ours, java]


@contextlib.contextmanager
def members_cleaned_up(sides: list[Side]) -> Iterator[None]:
    try:
        yield
    finally:
        for side in sides:
            for member in side.members + side.failed_starts:
                member.kill()


def run(cluster: Cluster, args: argparse.Namespace) -> None:
    run_id = uuid.uuid4().hex[:8]
    topic = f"bench-dup-{run_id}"
    cluster.create_topic(topic, QUEUES)
    queues = frozenset(f"{b.name}:{q}" for b in cluster.brokers for q in range(QUEUES))
    workdir = Path(tempfile.mkdtemp(prefix="bench-rebalance-"))
    sides = make_sides(cluster, topic, run_id, workdir, args)
    print(
        f"cluster {cluster.namesrv_addr}, topic {topic} ({QUEUES} queues x {len(cluster.brokers)} brokers), "
        f"{args.rate:g} msg/s, phases of {args.phase:g} s, {args.consume_ms:g} ms of work a message"
    )
    print(f"groups: {sides[0].group} (ours), {sides[1].group} (Java); member files in {workdir}", flush=True)
    try:
        with members_cleaned_up(sides):
            producer, schedule = trio.run(run_schedule, cluster, sides, topic, args)
        print_report(sides, producer, schedule, queues)
    finally:
        if args.keep:
            print(f"\nmember logs and deliveries kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", type=float, default=15.0, help="seconds of each phase")
    parser.add_argument("--rate", type=float, default=300.0, help="messages/s of the steady producer")
    parser.add_argument("--consume-ms", type=float, default=20.0, help="listener work per message")
    parser.add_argument(
        "--api-timeout",
        type=float,
        default=10.0,
        help="s for name-server and admin calls, both clients (their default is 3; see the docstring)",
    )
    parser.add_argument("--namesrv", help="use this cluster (host:port) instead of a fresh one")
    parser.add_argument("--keep", action="store_true", help="keep the members' logs and deliveries")
    args = parser.parse_args()
    if args.namesrv:
        run(ExternalCluster(args.namesrv).start(), args)
    elif os.environ.get("ROCKETMQ_NAMESRV"):
        run(start_cluster(), args)
    else:
        with start_cluster(brokers=2) as cluster:
            run(cluster, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
