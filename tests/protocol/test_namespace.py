"""Namespace wrapping: the examples of Java's NamespaceUtilTest, then round trips."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rocketmq_py.protocol import (
    MessageQueue,
    is_system_resource,
    namespace_of,
    unwrap_name,
    unwrap_queue,
    validate_namespace,
    wrap_name,
    wrap_queue,
)

NS = "MQ_INST_XXX"


@pytest.mark.parametrize(
    ("plain", "wrapped"),
    [
        ("TOPIC_XXX", "MQ_INST_XXX%TOPIC_XXX"),
        ("GID_XXX", "MQ_INST_XXX%GID_XXX"),
        ("%RETRY%GID_XXX", "%RETRY%MQ_INST_XXX%GID_XXX"),
        ("%DLQ%GID_XXX", "%DLQ%MQ_INST_XXX%GID_XXX"),
    ],
)
def test_java_examples(plain: str, wrapped: str) -> None:
    assert wrap_name(NS, plain) == wrapped
    assert wrap_name(NS, wrapped) == wrapped  # already wrapped: unchanged
    assert unwrap_name(NS, wrapped) == plain
    assert namespace_of(wrapped) == NS
    assert namespace_of(plain) == ""


def test_another_namespace_is_not_unwrapped() -> None:
    assert unwrap_name("MQ_INST_XXX1", "%RETRY%MQ_INST_XXX%GID_XXX") == "%RETRY%MQ_INST_XXX%GID_XXX"
    assert unwrap_name("ns", "orders") == "orders"


@pytest.mark.parametrize(
    "name",
    ["rmq_sys_topic", "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "CID_RMQ_SYS_TRANS", ""],
)
def test_system_names_are_never_wrapped(name: str) -> None:
    assert wrap_name(NS, name) == name
    assert unwrap_name(NS, name) == name
    assert namespace_of(name) == ""


def test_system_resources() -> None:
    assert is_system_resource("rmq_sys_SYNC_BROKER_MEMBER_a")
    assert is_system_resource("CID_RMQ_SYS_x")
    assert not is_system_resource("orders")
    assert not is_system_resource("%RETRY%rmq_sys_x")  # as Java: a retry topic is not a system topic


@pytest.mark.parametrize("namespace", [None, ""])
def test_no_namespace_changes_nothing(namespace: str | None) -> None:
    assert wrap_name(namespace, "orders") == "orders"
    assert unwrap_name(namespace, "ns%orders") == "ns%orders"
    assert validate_namespace(namespace) is None


@pytest.mark.parametrize("bad", ["a%b", "a b", "ns|x", "né"])
def test_validate_namespace_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        validate_namespace(bad)


def test_validate_namespace_accepts() -> None:
    assert validate_namespace("MQ_INST-1") == "MQ_INST-1"


def test_queues() -> None:
    mq = MessageQueue("orders", "broker-a", 3)
    wrapped = wrap_queue("ns", mq)
    assert wrapped == MessageQueue("ns%orders", "broker-a", 3)
    assert unwrap_queue("ns", wrapped) == mq
    assert wrap_queue(None, mq) is mq
    assert unwrap_queue("ns", mq) is mq


namespaces = st.text(alphabet="abcXYZ019_-", min_size=1, max_size=8)
bare = st.text(alphabet="abAB12_-%|", min_size=1, max_size=12)
names = st.tuples(st.sampled_from(["", "%RETRY%", "%DLQ%"]), bare).map("".join)


@given(namespaces, names)
def test_round_trip(namespace: str, name: str) -> None:
    wrapped = wrap_name(namespace, name)
    assert wrap_name(namespace, wrapped) == wrapped  # idempotent
    if wrapped != name:  # a name already in the namespace stays as given, both ways
        assert unwrap_name(namespace, wrapped) == name
        assert namespace_of(wrapped) == namespace
    assert unwrap_name(namespace, unwrap_name(namespace, wrapped)) == unwrap_name(namespace, wrapped)


@given(namespaces, namespaces, names)
def test_other_namespace_left_alone(ours: str, theirs: str, name: str) -> None:
    assume(ours != theirs)
    wrapped = wrap_name(theirs, name)
    assert unwrap_name(ours, wrapped) == wrapped


@given(namespaces, st.sampled_from(["", "%RETRY%", "%DLQ%"]), bare)
def test_wrap_adds_the_namespace_after_the_prefix(namespace: str, prefix: str, rest: str) -> None:
    assume(not rest.startswith(namespace + "%"))
    assume(not rest.startswith(("%RETRY%", "%DLQ%")))
    assert wrap_name(namespace, prefix + rest) == f"{prefix}{namespace}%{rest}"
