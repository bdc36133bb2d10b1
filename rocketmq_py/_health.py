"""A client's health, as a readiness probe reads it: one verdict, the reasons for it, and the parts.

:meth:`Producer.health`, :meth:`PushConsumer.health` and :meth:`LitePullConsumer.health` return a
frozen :class:`Health` built from what the client already knows (no request is sent):

- the NameServer: which one answered a route request last, and when; the verdict fails when route
  requests went unanswered for longer than :data:`NAMESRV_STALE_POLLS` route polls;
- the brokers: each address the client heartbeats (masters; a consumer's slaves too) and whether
  its last heartbeat was accepted; the verdict fails when no master accepted its last one;
- a consumer's queues: the seconds since each owned queue's last pull (or pop) answer (a queue
  paused by flow control is waiting for the listener, not for the broker), and its listener calls
  against ``consume_timeout``; the verdict fails while a queue's last listener call was cut at
  ``consume_timeout`` (the listener cannot finish on its messages: a later call that ends by itself
  clears it), while a call runs past it, or when no owned queue got a pull answer for
  ``pull_max_idle_time`` seconds.

What does not fail the verdict, but is worth knowing (one broker of several not answering, a
producer's fault isolation of a broker, one idle queue), is in :attr:`Health.warnings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rocketmq_py._client._instance import ClientInstance
from rocketmq_py.protocol import MessageQueue

__all__ = ["NAMESRV_STALE_POLLS", "BrokerHealth", "Health", "QueueHealth", "client_health"]

#: Route polls without a NameServer answer (``poll_namesrv_interval`` each) after which the
#: verdict fails: the routes are served from the cache meanwhile, so a short outage is a warning.
NAMESRV_STALE_POLLS = 3


@dataclass(frozen=True, slots=True)
class BrokerHealth:
    """One broker address the client heartbeats.

    Attributes:
        broker_name: the broker group's name.
        broker_id: 0 for the master, the replica's id otherwise.
        address: ``host:port``.
        reachable: whether its last heartbeat was accepted; ``None`` before the first.
        heartbeat_age: seconds since that heartbeat; ``None`` before the first.
        error: why it was not accepted, else ``None``.
        isolated_for: (producer) seconds the fault isolation of the broker still lasts, after
            sends to it failed or were slow; ``None`` when it is not isolated.
    """

    broker_name: str
    broker_id: int
    address: str
    reachable: bool | None
    heartbeat_age: float | None
    error: str | None = None
    isolated_for: float | None = None


@dataclass(frozen=True, slots=True)
class QueueHealth:
    """One queue a consumer owns.

    Attributes:
        queue: the queue.
        last_answer_age: seconds since a broker last answered its pull (since it was taken, before
            the first answer).
        paused: the pull is paused by flow control (the cache waits for the listener).
        stalled_for: seconds the longest listener call running on its messages has run past
            ``consume_timeout`` (until the consumer cuts it); ``None`` when none has.
        timed_out_ago: seconds since the last listener call on its messages was cut at
            ``consume_timeout``; ``None`` when the last call ended by itself (or none ran).
    """

    queue: MessageQueue
    last_answer_age: float
    paused: bool = False
    stalled_for: float | None = None
    timed_out_ago: float | None = None


@dataclass(frozen=True, slots=True)
class Health:
    """A client's health now (see :mod:`rocketmq_py._health`); ``ok`` is the readiness verdict.

    Attributes:
        ok: the client can do its job: it is started, a NameServer answered recently enough, a
            master accepts heartbeats, and (a consumer) no listener call is stuck and its queues
            get pull answers.
        reasons: why ``ok`` is false, one sentence each; empty when it is true.
        warnings: what is wrong without failing the verdict.
        client_id: the client id, ``None`` before the client started.
        running: the client is started.
        namesrv: the NameServer that answered a route request last; ``None`` before one did.
        namesrv_age: seconds since that answer.
        brokers: the addresses the client heartbeats, by name and id.
        queues: (consumers) the owned queues, in queue order.
    """

    ok: bool
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    client_id: str | None
    running: bool
    namesrv: str | None = None
    namesrv_age: float | None = None
    brokers: tuple[BrokerHealth, ...] = ()
    queues: tuple[QueueHealth, ...] = ()


def not_running() -> Health:
    """The health of a client that is not started."""
    return Health(ok=False, reasons=("not started",), warnings=(), client_id=None, running=False)


def client_health(
    instance: ClientInstance,
    now: float,
    *,
    isolated: Mapping[str, float] | None = None,
    queues: Iterable[QueueHealth] = (),
    idle_limit: float | None = None,
    consume_timeout: float | None = None,
) -> Health:
    """The health of a started client on ``instance`` at trio time ``now``.

    Args:
        isolated: (producer) broker name -> seconds its fault isolation still lasts.
        queues: (consumer) its owned queues.
        idle_limit: (consumer) seconds without a pull answer on every owned queue that fail it.
        consume_timeout: (push consumer) what a stalled call ran past, for the reasons' wording.
    """
    reasons: list[str] = []
    warnings: list[str] = []
    routes = instance.routes
    namesrv = namesrv_age = None
    if routes.last_answer is not None:
        namesrv, answered = routes.last_answer
        namesrv_age = now - answered
    failure = routes.last_failure
    if failure is not None and (routes.last_answer is None or failure[0] > routes.last_answer[1]):
        since = routes.last_answer[1] if routes.last_answer is not None else None
        limit = NAMESRV_STALE_POLLS * routes.poll_interval
        silent = now - since if since is not None else None
        if silent is None or silent > limit:
            how_long = f"for {silent:.0f} s" if silent is not None else "since the client started"
            reasons.append(f"no NameServer answered a route request {how_long}: {failure[1]}")
        else:
            warnings.append(f"the last route request got no NameServer answer: {failure[1]}")

    brokers: list[BrokerHealth] = []
    isolated = isolated or {}
    for name, addrs in sorted(routes.broker_table.items()):
        for broker_id, address in sorted(addrs.items()):
            beat = instance.heartbeats.get(address)
            reachable = None if beat is None else beat[1] is None
            brokers.append(
                BrokerHealth(
                    broker_name=name,
                    broker_id=broker_id,
                    address=address,
                    reachable=reachable,
                    heartbeat_age=None if beat is None else now - beat[0],
                    error=None if beat is None else beat[1],
                    isolated_for=isolated.get(name) if broker_id == 0 else None,
                )
            )
    masters = [b for b in brokers if b.broker_id == 0 and b.reachable is not None]
    down = [b for b in brokers if b.reachable is False]
    if masters and not any(b.reachable for b in masters):
        reasons.append(
            "no master broker accepted its last heartbeat: "
            + "; ".join(f"{b.broker_name} {b.address}: {b.error}" for b in masters)
        )
    else:
        warnings.extend(
            f"{b.broker_name} ({b.address}, id {b.broker_id}) did not accept its last heartbeat: {b.error}"
            for b in down
        )
    for name, seconds in sorted(isolated.items()):
        warnings.append(f"{name} is isolated for {seconds:.1f} s more after failed or slow sends")

    owned = tuple(queues)
    limit_text = f" (consume_timeout {consume_timeout:g} s)" if consume_timeout is not None else ""
    for q in owned:
        where = f"{q.queue.broker_name}/{q.queue.topic}/{q.queue.queue_id}"
        if q.stalled_for is not None:
            reasons.append(
                f"a listener call on {where} has run {q.stalled_for:.0f} s past its time{limit_text}"
            )
        elif q.timed_out_ago is not None:
            reasons.append(
                f"the last listener call on {where} was cut at its time{limit_text} {q.timed_out_ago:.0f} s ago"
            )
    if idle_limit is not None:
        pulling = [q for q in owned if not q.paused]
        idle = [q for q in pulling if q.last_answer_age > idle_limit]
        if pulling and len(idle) == len(pulling):
            reasons.append(f"no owned queue got a pull answer for {idle_limit:g} s")
        else:
            warnings.extend(
                f"{q.queue.broker_name}/{q.queue.topic}/{q.queue.queue_id}: no pull answer for "
                f"{q.last_answer_age:.0f} s"
                for q in idle
            )
    return Health(
        ok=not reasons,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        client_id=instance.client_id,
        running=True,
        namesrv=namesrv,
        namesrv_age=namesrv_age,
        brokers=tuple(brokers),
        queues=owned,
    )
