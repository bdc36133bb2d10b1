"""Queue allocation strategies: the documented examples, Java's hashes, and partition properties."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rocketmq_py.consumer._allocate import (
    DEFAULT_VIRTUAL_NODE_COUNT,
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    _broker_room,
    allocate,
    get_strategy,
    java_string_key,
    md5_hash,
    queue_sort_key,
    queue_to_java_string,
    sort_consumers,
    sort_queues,
    strategy_class,
)
from rocketmq_py.errors import ClientError
from rocketmq_py.protocol import MessageQueue

GROUP = "GID_test"


def queues(*brokers: str, per_broker: int, topic: str = "TopicTest") -> list[MessageQueue]:
    return sort_queues(MessageQueue(topic, b, q) for b in brokers for q in range(per_broker))


def shares(
    strategy: AllocateStrategy, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> dict[str, list[MessageQueue]]:
    """What each member computes for itself, as every member of a group does."""
    return {cid: strategy.allocate(GROUP, cid, mq_all, cid_all) for cid in cid_all}


def assert_partition(owned: dict[str, list[MessageQueue]], expected: Sequence[MessageQueue]) -> None:
    every = Counter(mq for share in owned.values() for mq in share)
    assert every == Counter(expected), "each queue must be owned by exactly one member"


def is_subsequence(part: Sequence[MessageQueue], whole: Sequence[MessageQueue]) -> bool:
    it = iter(whole)
    return all(mq in it for mq in part)


# --- Averagely -----------------------------------------------------------------------------------


def test_averagely_eight_queues_four_consumers_two_contiguous_each() -> None:
    mq_all = queues("broker-a", per_broker=8)
    owned = shares(AllocateAveragely(), mq_all, ["c0", "c1", "c2", "c3"])
    assert owned == {f"c{i}": mq_all[2 * i : 2 * i + 2] for i in range(4)}


def test_averagely_nine_queues_three_brokers_four_consumers() -> None:
    mq_all = queues("broker-a", "broker-b", "broker-c", per_broker=3)
    owned = shares(AllocateAveragely(), mq_all, ["c0", "c1", "c2", "c3"])
    assert owned == {"c0": mq_all[0:3], "c1": mq_all[3:5], "c2": mq_all[5:7], "c3": mq_all[7:9]}
    assert owned["c1"] == [MessageQueue("TopicTest", "broker-b", 0), MessageQueue("TopicTest", "broker-b", 1)]


def test_averagely_more_consumers_than_queues_leaves_the_last_idle() -> None:
    mq_all = queues("broker-a", per_broker=3)
    owned = shares(AllocateAveragely(), mq_all, ["c0", "c1", "c2", "c3", "c4"])
    assert owned == {"c0": mq_all[0:1], "c1": mq_all[1:2], "c2": mq_all[2:3], "c3": [], "c4": []}


def test_averagely_as_many_consumers_as_queues() -> None:
    mq_all = queues("broker-a", per_broker=3)
    assert shares(AllocateAveragely(), mq_all, ["c0", "c1", "c2"]) == {f"c{i}": [mq_all[i]] for i in range(3)}


# --- AveragelyByCircle ---------------------------------------------------------------------------


def test_averagely_by_circle_round_robin() -> None:
    mq_all = queues("broker-a", per_broker=8)
    owned = shares(AllocateAveragelyByCircle(), mq_all, ["c0", "c1", "c2"])
    assert owned == {
        "c0": [mq_all[0], mq_all[3], mq_all[6]],
        "c1": [mq_all[1], mq_all[4], mq_all[7]],
        "c2": [mq_all[2], mq_all[5]],
    }


def test_averagely_by_circle_more_consumers_than_queues() -> None:
    mq_all = queues("broker-a", per_broker=2)
    owned = shares(AllocateAveragelyByCircle(), mq_all, ["c0", "c1", "c2"])
    assert owned == {"c0": [mq_all[0]], "c1": [mq_all[1]], "c2": []}


# --- ConsistentHash ------------------------------------------------------------------------------


def test_md5_hash_is_the_first_four_digest_bytes_big_endian() -> None:
    # RFC 1321 vectors: MD5("") = d41d8cd9 8f00..., MD5("abc") = 90015098 3cd2...
    # Java's MD5Hash shifts the accumulator left before or-ing in digest[0..3]: big-endian.
    assert md5_hash("") == 0xD41D8CD9
    assert md5_hash("abc") == 0x90015098
    assert md5_hash("192.168.0.1@1001-0") == 0x8B4127DB


def test_md5_hash_encodes_utf8_and_replaces_lone_surrogates_like_java() -> None:
    key = "gr\u00fc\u00df-\U0001f600"
    assert md5_hash(key) == int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")
    assert md5_hash("\ud800") == md5_hash("?")  # String.getBytes() writes '?' for it


def test_queue_to_java_string() -> None:
    mq = MessageQueue("TopicTest", "broker-a", 3)
    assert queue_to_java_string(mq) == "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]"


CH_CIDS = ["192.168.0.1@1001", "192.168.0.2@1002", "192.168.0.3@1003"]


def test_consistent_hash_hand_computed_allocation() -> None:
    # Worked out with hashlib alone: position = int.from_bytes(md5(key).digest()[:4], "big").
    # The 30 virtual nodes are "<cid>-0" .. "<cid>-9"; the relevant ones, sorted, are
    #   0x0ba4fdef 192.168.0.3@1003-1   (smallest key: where wrapped queues land)
    #   0x366b674d 192.168.0.1@1001-1   0x76d3a76f 192.168.0.3@1003-0
    #   0x87284333 192.168.0.1@1001-4   0xe85beca7 192.168.0.3@1003-3
    # and each queue's Java toString hashes to, with the first ring key >= it:
    #   broker-a/0 0x767d59fc -> 0x76d3a76f (.3)    broker-b/0 0x8047d940 -> 0x87284333 (.1)
    #   broker-a/1 0xffc8cd39 -> wraps to 0x0ba4fdef (.3)
    #   broker-a/2 0x32df78bf -> 0x366b674d (.1)    broker-b/1 0x28132b90 -> 0x366b674d (.1)
    #   broker-a/3 0xd9b9174a -> 0xe85beca7 (.3)    broker-b/2 0xd666a43e -> 0xe85beca7 (.3)
    #   broker-b/3 0xf6cc3f9e -> wraps to 0x0ba4fdef (.3)
    mq_all = queues("broker-a", "broker-b", per_broker=4)
    a, b = "broker-a", "broker-b"
    assert shares(AllocateConsistentHash(), mq_all, CH_CIDS) == {
        "192.168.0.1@1001": [MessageQueue("TopicTest", n, q) for n, q in ((a, 2), (b, 0), (b, 1))],
        "192.168.0.2@1002": [],
        "192.168.0.3@1003": [
            MessageQueue("TopicTest", n, q) for n, q in ((a, 0), (a, 1), (a, 3), (b, 2), (b, 3))
        ],
    }


def test_consistent_hash_ring_positions_hand_computed() -> None:
    positions, owners = AllocateConsistentHash().ring(CH_CIDS)
    assert len(positions) == 3 * DEFAULT_VIRTUAL_NODE_COUNT
    assert positions == sorted(positions)
    ring = dict(zip(positions, owners, strict=True))
    assert ring[0x0BA4FDEF] == "192.168.0.3@1003"  # "192.168.0.3@1003-1", the smallest key
    assert ring[0x8B4127DB] == "192.168.0.1@1001"  # "192.168.0.1@1001-0"
    assert ring[0xECA59757] == "192.168.0.2@1002"  # "192.168.0.2@1002-1"
    assert positions[0] == 0x0BA4FDEF


def test_consistent_hash_adding_a_consumer_moves_only_queues_to_it() -> None:
    mq_all = queues(*(f"broker-{i}" for i in range(10)), per_broker=20)
    before_cids = sort_consumers(f"10.0.0.{i}@9876" for i in range(5))
    after_cids = sort_consumers([*before_cids, "10.0.0.99@9876"])
    strategy = AllocateConsistentHash()
    before = {mq: cid for cid, s in shares(strategy, mq_all, before_cids).items() for mq in s}
    after = {mq: cid for cid, s in shares(strategy, mq_all, after_cids).items() for mq in s}
    moved = [mq for mq in mq_all if before[mq] != after[mq]]
    assert moved, "the new member should get something"
    assert all(after[mq] == "10.0.0.99@9876" for mq in moved)
    assert len(moved) < len(mq_all) // 2  # about 1/6 expected; averagely would move most


def test_consistent_hash_later_colliding_virtual_node_wins() -> None:
    strategy = AllocateConsistentHash(hash_function=lambda key: 7)
    mq_all = queues("broker-a", per_broker=3)
    assert strategy.ring(["a", "b"]) == ([7], ["b"])
    assert shares(strategy, mq_all, ["a", "b"]) == {"a": [], "b": mq_all}


def test_consistent_hash_repeated_cid_continues_replica_numbers() -> None:
    # Java counts the virtual nodes the client already holds and numbers on from there.
    doubled = AllocateConsistentHash().ring(["x", "x"])
    assert doubled == AllocateConsistentHash(virtual_node_count=20).ring(["x"])


def test_consistent_hash_zero_virtual_nodes_gives_nobody_anything() -> None:
    mq_all = queues("broker-a", per_broker=3)
    assert shares(AllocateConsistentHash(virtual_node_count=0), mq_all, ["a", "b"]) == {"a": [], "b": []}


def test_consistent_hash_rejects_negative_virtual_node_count() -> None:
    with pytest.raises(ClientError, match="virtual node count"):
        AllocateConsistentHash(virtual_node_count=-1)


def _reference_consistent_hash(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str], nodes: int
) -> list[MessageQueue]:
    """A slow, direct reading of the algorithm: linear scan for the successor on the ring."""

    def position(key: str) -> int:
        return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")

    ring: dict[int, str] = {}
    for cid in cid_all:
        for k in range(nodes):
            ring[position(f"{cid}-{k}")] = cid
    result = []
    for mq in mq_all:
        h = position(f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]")
        successor = min((p for p in ring if p >= h), default=min(ring))
        if ring[successor] == current_cid:
            result.append(mq)
    return result


# --- ByConfig ------------------------------------------------------------------------------------


def test_by_config_returns_the_configured_queues_whatever_the_inputs() -> None:
    chosen = (MessageQueue("T", "broker-b", 1), MessageQueue("T", "broker-a", 0))
    strategy = AllocateByConfig(chosen)
    assert strategy.allocate(GROUP, "c0", queues("broker-a", per_broker=2), ["c0", "c1"]) == list(chosen)
    assert strategy.allocate(GROUP, "", [], []) == list(chosen)  # Java checks nothing here
    assert strategy.allocate(GROUP, "nobody", [], ["c0"]) == list(chosen)


# --- ByMachineRoom -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("broker_name", "room"),
    [
        ("hz@broker-a", "hz"),
        ("hz@broker-a@", "hz"),  # Java's split drops trailing empty strings
        ("@broker-a", ""),
        ("hz@", None),
        ("hz@@", None),
        ("hz@a@b", None),
        ("broker-a", None),
        ("", None),
        ("@", None),
    ],
)
def test_broker_room_follows_java_split(broker_name: str, room: str | None) -> None:
    assert _broker_room(broker_name) == room


def test_by_machine_room_shares_only_the_configured_rooms() -> None:
    mq_all = queues("hz@broker-a", "sh@broker-b", "bj@broker-c", "broker-d", per_broker=4)
    hz_sh = [mq for mq in mq_all if mq.broker_name[:2] in ("hz", "sh")]
    owned = shares(AllocateByMachineRoom(frozenset({"hz", "sh"})), mq_all, ["c0", "c1", "c2"])
    # 8 eligible queues over 3 consumers: blocks of 2, then the remainder 6, 7 to c0 and c1.
    assert owned == {
        "c0": [hz_sh[0], hz_sh[1], hz_sh[6]],
        "c1": [hz_sh[2], hz_sh[3], hz_sh[7]],
        "c2": [hz_sh[4], hz_sh[5]],
    }


def test_by_machine_room_with_no_eligible_queue() -> None:
    mq_all = queues("broker-a", per_broker=4)
    assert shares(AllocateByMachineRoom(frozenset({"hz"})), mq_all, ["c0", "c1"]) == {"c0": [], "c1": []}


# --- MachineRoomNearby ---------------------------------------------------------------------------


def _room_of_queue(mq: MessageQueue) -> str:
    return mq.broker_name.split("-", 1)[0]


def _room_of_cid(cid: str) -> str:
    return cid.split("-", 1)[0]


def nearby(inner: AllocateStrategy) -> AllocateMachineRoomNearby:
    return AllocateMachineRoomNearby(inner, _room_of_queue, _room_of_cid)


def test_machine_room_nearby_prefers_own_room_and_shares_unattended_rooms() -> None:
    mq_all = queues("bj-broker", "hz-broker", "sh-broker", per_broker=4)
    bj, hz, sh = mq_all[0:4], mq_all[4:8], mq_all[8:12]
    owned = shares(nearby(AllocateAveragely()), mq_all, ["hz-c0", "hz-c1", "sh-c0"])
    # hz queues go to the two hz consumers, sh queues to sh-c0, and bj (nobody there) to all three.
    assert owned == {
        "hz-c0": [hz[0], hz[1], bj[0], bj[1]],
        "hz-c1": [hz[2], hz[3], bj[2]],
        "sh-c0": [*sh, bj[3]],
    }


def test_machine_room_nearby_unattended_rooms_come_in_room_order() -> None:
    mq_all = queues("bj-broker", "gz-broker", "hz-broker", per_broker=1)
    owned = shares(nearby(AllocateAveragely()), mq_all, ["hz-c0"])
    assert owned == {"hz-c0": [mq_all[2], mq_all[0], mq_all[1]]}  # my room first, then bj, gz


def test_machine_room_nearby_name_includes_the_inner_strategy() -> None:
    assert nearby(AllocateAveragely()).name == "MACHINE_ROOM_NEARBY-AVG"
    assert nearby(AllocateConsistentHash()).name == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"


def test_machine_room_nearby_rejects_empty_rooms() -> None:
    mq_all = queues("hz-broker", per_broker=1)
    no_broker_room = AllocateMachineRoomNearby(AllocateAveragely(), lambda mq: "", _room_of_cid)
    with pytest.raises(ClientError, match="machine room is empty for MessageQueue"):
        no_broker_room.allocate(GROUP, "hz-c0", mq_all, ["hz-c0"])
    no_consumer_room = AllocateMachineRoomNearby(AllocateAveragely(), _room_of_queue, lambda cid: "")
    with pytest.raises(ClientError, match="machine room is empty for consumer id"):
        no_consumer_room.allocate(GROUP, "hz-c0", mq_all, ["hz-c0"])


# --- common checks, names, lookup ----------------------------------------------------------------

CHECKED: list[AllocateStrategy] = [
    AllocateAveragely(),
    AllocateAveragelyByCircle(),
    AllocateConsistentHash(),
    AllocateByMachineRoom(frozenset({"hz"})),
    nearby(AllocateAveragely()),
]


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
def test_empty_inputs_raise_client_error(strategy: AllocateStrategy) -> None:
    mq_all = queues("hz@broker-a", per_broker=2)
    with pytest.raises(ClientError, match="current client id is empty"):
        strategy.allocate(GROUP, "", mq_all, ["hz-c0"])
    with pytest.raises(ClientError, match="mq_all is empty"):
        strategy.allocate(GROUP, "hz-c0", [], ["hz-c0"])
    with pytest.raises(ClientError, match="cid_all is empty"):
        strategy.allocate(GROUP, "hz-c0", mq_all, [])


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
def test_unknown_cid_gets_nothing(strategy: AllocateStrategy) -> None:
    mq_all = queues("hz@broker-a", per_broker=4)
    assert strategy.allocate(GROUP, "hz-stranger", mq_all, ["hz-c0", "hz-c1"]) == []


def test_java_names() -> None:
    assert AllocateAveragely().name == "AVG"
    assert AllocateAveragelyByCircle().name == "AVG_BY_CIRCLE"
    assert AllocateConsistentHash().name == "CONSISTENT_HASH"
    assert AllocateByConfig(()).name == "CONFIG"
    assert AllocateByMachineRoom(frozenset()).name == "MACHINE_ROOM"


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("AVG", AllocateAveragely),
        ("avg", AllocateAveragely),
        ("averagely", AllocateAveragely),
        ("AVG_BY_CIRCLE", AllocateAveragelyByCircle),
        ("averagely_by_circle", AllocateAveragelyByCircle),
        ("Consistent_Hash", AllocateConsistentHash),
        ("consistent-hash", AllocateConsistentHash),
        ("config", AllocateByConfig),
        ("by_config", AllocateByConfig),
        ("MACHINE_ROOM", AllocateByMachineRoom),
        ("by_machine_room", AllocateByMachineRoom),
        ("machine_room_nearby", AllocateMachineRoomNearby),
    ],
)
def test_strategy_class_by_name(name: str, cls: type[AllocateStrategy]) -> None:
    assert strategy_class(name) is cls


def test_get_strategy() -> None:
    assert isinstance(get_strategy("averagely"), AllocateAveragely)
    assert isinstance(get_strategy("AVG_BY_CIRCLE"), AllocateAveragelyByCircle)
    assert get_strategy("consistent_hash") == AllocateConsistentHash()
    mine = AllocateByConfig(())
    assert get_strategy(mine) is mine
    with pytest.raises(ClientError, match="needs configuration: construct AllocateByConfig"):
        get_strategy("config")
    with pytest.raises(ClientError, match="needs configuration"):
        get_strategy("MACHINE_ROOM_NEARBY")
    with pytest.raises(ClientError, match="unknown allocation strategy 'round_robin'"):
        strategy_class("round_robin")


def test_allocate_accepts_a_name_or_a_strategy() -> None:
    mq_all = queues("broker-a", per_broker=4)
    assert allocate("avg", GROUP, "c1", mq_all, ["c0", "c1"]) == mq_all[2:4]
    assert allocate(AllocateAveragelyByCircle(), GROUP, "c1", mq_all, ["c0", "c1"]) == mq_all[1::2]


# --- sorting like Java ---------------------------------------------------------------------------


def test_sort_consumers_orders_by_utf16_code_unit() -> None:
    # U+1F600 is the surrogate pair D83D DE00, which Java sorts before U+FFFF.
    assert sort_consumers(["\uffff", "\U0001f600", "b", "a"]) == ["a", "b", "\U0001f600", "\uffff"]
    assert sorted(["\uffff", "\U0001f600"]) == ["\uffff", "\U0001f600"]  # Python's order differs
    assert java_string_key("ab") < java_string_key("abc") < java_string_key("b")


def test_sort_queues_by_topic_broker_then_numeric_queue_id() -> None:
    shuffled = [
        MessageQueue("T", "broker-b", 0),
        MessageQueue("T", "broker-a", 10),
        MessageQueue("S", "broker-z", 5),
        MessageQueue("T", "broker-a", 9),
        MessageQueue("T\uffff", "a", 0),
        MessageQueue("T\U0001f600", "a", 0),
    ]
    assert sort_queues(shuffled) == [
        MessageQueue("S", "broker-z", 5),
        MessageQueue("T", "broker-a", 9),
        MessageQueue("T", "broker-a", 10),
        MessageQueue("T", "broker-b", 0),
        MessageQueue("T\U0001f600", "a", 0),
        MessageQueue("T\uffff", "a", 0),
    ]
    assert queue_sort_key(MessageQueue("T", "b", 1)) == (b"\x00T", b"\x00b", 1)


# --- properties ----------------------------------------------------------------------------------

ROOMS = ("bj", "hz", "sh")
_names = st.text(alphabet="ab\u00e9\uffff\U0001f600", min_size=1, max_size=3)
_queue_lists = st.lists(
    st.builds(MessageQueue, _names, _names, st.integers(0, 20)), min_size=1, max_size=40, unique=True
).map(sort_queues)
_cid_lists = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8, unique=True).map(
    sort_consumers
)
_simple = st.sampled_from(
    [AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash(), AllocateConsistentHash(3)]
)


@given(strategy=_simple, mq_all=_queue_lists, cid_all=_cid_lists)
def test_every_queue_has_exactly_one_owner(
    strategy: AllocateStrategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    owned = shares(strategy, mq_all, cid_all)
    assert_partition(owned, mq_all)
    assert all(is_subsequence(share, mq_all) for share in owned.values())


@given(strategy=_simple, mq_all=_queue_lists, cid_all=_cid_lists, stranger=st.text(min_size=1))
def test_deterministic_and_strangers_get_nothing(
    strategy: AllocateStrategy, mq_all: list[MessageQueue], cid_all: list[str], stranger: str
) -> None:
    for cid in cid_all:
        first = strategy.allocate(GROUP, cid, mq_all, cid_all)
        assert strategy.allocate("other-group", cid, tuple(mq_all), tuple(cid_all)) == first
    if stranger not in cid_all:
        assert strategy.allocate(GROUP, stranger, mq_all, cid_all) == []


@given(mq_all=_queue_lists, cid_all=_cid_lists)
def test_averagely_blocks_are_contiguous_and_balanced(mq_all: list[MessageQueue], cid_all: list[str]) -> None:
    owned = shares(AllocateAveragely(), mq_all, cid_all)
    sizes = [len(owned[cid]) for cid in cid_all]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the bigger blocks go first
    assert [mq for cid in cid_all for mq in owned[cid]] == mq_all  # laid end to end


@given(mq_all=_queue_lists, cid_all=_cid_lists)
def test_averagely_by_circle_is_every_cth_queue(mq_all: list[MessageQueue], cid_all: list[str]) -> None:
    owned = shares(AllocateAveragelyByCircle(), mq_all, cid_all)
    for i, cid in enumerate(cid_all):
        assert owned[cid] == [mq for j, mq in enumerate(mq_all) if j % len(cid_all) == i]


@given(mq_all=_queue_lists, cid_all=_cid_lists, nodes=st.integers(1, 12))
def test_consistent_hash_matches_a_linear_scan_reference(
    mq_all: list[MessageQueue], cid_all: list[str], nodes: int
) -> None:
    strategy = AllocateConsistentHash(nodes)
    for cid in cid_all:
        assert strategy.allocate(GROUP, cid, mq_all, cid_all) == _reference_consistent_hash(
            cid, mq_all, cid_all, nodes
        )


@given(mq_all=_queue_lists, cid_all=_cid_lists, newcomer=st.text(min_size=1, max_size=8))
def test_consistent_hash_join_moves_queues_only_to_the_newcomer(
    mq_all: list[MessageQueue], cid_all: list[str], newcomer: str
) -> None:
    assume(newcomer not in cid_all)
    strategy = AllocateConsistentHash()
    before = {mq: cid for cid, s in shares(strategy, mq_all, cid_all).items() for mq in s}
    grown = sort_consumers([*cid_all, newcomer])
    after = {mq: cid for cid, s in shares(strategy, mq_all, grown).items() for mq in s}
    assert all(after[mq] in (before[mq], newcomer) for mq in mq_all)


_room_queue_lists = st.lists(
    st.builds(
        MessageQueue,
        st.sampled_from(["TopicA", "TopicB"]),
        st.builds(lambda room, n: f"{room}@broker-{n}", st.sampled_from(ROOMS), st.integers(0, 3)),
        st.integers(0, 7),
    ),
    min_size=1,
    max_size=40,
    unique=True,
).map(sort_queues)


@given(mq_all=_room_queue_lists, cid_all=_cid_lists, extra_rooms=st.sets(st.sampled_from(["gz", "sz"])))
def test_by_machine_room_partitions_when_every_room_is_covered(
    mq_all: list[MessageQueue], cid_all: list[str], extra_rooms: set[str]
) -> None:
    strategy = AllocateByMachineRoom(frozenset({*ROOMS, *extra_rooms}))
    owned = shares(strategy, mq_all, cid_all)
    assert_partition(owned, mq_all)
    assert all(is_subsequence(share, mq_all) for share in owned.values())


@given(mq_all=_room_queue_lists, cid_all=_cid_lists, rooms=st.sets(st.sampled_from(ROOMS)))
def test_by_machine_room_leaves_uncovered_rooms_unowned(
    mq_all: list[MessageQueue], cid_all: list[str], rooms: set[str]
) -> None:
    owned = shares(AllocateByMachineRoom(frozenset(rooms)), mq_all, cid_all)
    assert_partition(owned, [mq for mq in mq_all if mq.broker_name.split("@")[0] in rooms])


_room_cid_lists = st.lists(
    st.builds(lambda room, rest: f"{room}-{rest}", st.sampled_from(ROOMS), st.text(max_size=6)),
    min_size=1,
    max_size=8,
    unique=True,
).map(sort_consumers)
_inner = st.sampled_from([AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash()])


@given(inner=_inner, mq_all=_room_queue_lists, cid_all=_room_cid_lists)
def test_machine_room_nearby_partitions_and_keeps_rooms_local(
    inner: AllocateStrategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    strategy = AllocateMachineRoomNearby(inner, lambda mq: mq.broker_name.split("@")[0], _room_of_cid)
    owned = shares(strategy, mq_all, cid_all)
    assert_partition(owned, mq_all)
    attended = {_room_of_cid(cid) for cid in cid_all}
    for cid, share in owned.items():
        for mq in share:
            room = mq.broker_name.split("@")[0]
            assert room == _room_of_cid(cid) or room not in attended
    assert owned == shares(strategy, mq_all, cid_all)
