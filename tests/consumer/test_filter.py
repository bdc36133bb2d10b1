"""Client-side tag re-check of pulled messages (pure, protocol.md §8.6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.consumer._filter import MessageFilter
from rocketmq_py.protocol import MessageExt
from rocketmq_py.protocol._bodies import (
    ExpressionType,
    SubscriptionData,
    build_subscription_data,
    java_string_hash,
)


def sub(expression: str | None, expression_type: ExpressionType = ExpressionType.TAG) -> MessageFilter:
    return MessageFilter(
        build_subscription_data("T", expression, sub_version=1, expression_type=expression_type)
    )


def tagged(tag: str | None, offset: int = 0) -> MessageExt:
    return MessageExt("T", b"", tags=tag, queue_offset=offset)


@pytest.mark.parametrize("expression", ["*", "", None])
def test_star_and_empty_accept_everything(expression: str | None) -> None:
    f = sub(expression)
    assert f.accepts_all
    assert f.accepts(tagged("A"))
    assert f.accepts(tagged(None))


def test_tag_list_keeps_only_listed_tags() -> None:
    f = sub("TagA || TagB")
    assert not f.accepts_all
    assert f.tags == {"TagA", "TagB"}
    assert f.accepts(tagged("TagA"))
    assert f.accepts(tagged("TagB"))
    assert not f.accepts(tagged("TagC"))


def test_messages_without_tags_are_dropped_when_tags_are_named() -> None:
    assert not sub("TagA").accepts(tagged(None))


def test_whitespace_around_tags_is_trimmed_by_the_subscription() -> None:
    f = sub("  TagA ||\tTagB  ||")
    assert f.accepts(tagged("TagA"))
    assert f.accepts(tagged("TagB"))
    assert not f.accepts(tagged(" TagA"))


def test_hash_collisions_let_the_broker_pass_what_the_client_drops() -> None:
    # "Aa" and "BB" share Java's String.hashCode, so the broker's tagsCode filter passes both.
    assert java_string_hash("Aa") == java_string_hash("BB")
    f = sub("Aa")
    assert f.filter_messages([tagged("Aa", 0), tagged("BB", 1), tagged("Aa", 2)]) == [
        tagged("Aa", 0),
        tagged("Aa", 2),
    ]


def test_the_whole_tags_property_must_match() -> None:
    # Java compares msg.getTags() as one string: no splitting of a multi-tag value.
    f = sub("A || B")
    assert not f.accepts(tagged("A||B"))


def test_sql92_accepts_everything_that_arrives() -> None:
    f = sub("a > 5", ExpressionType.SQL92)
    assert f.accepts_all
    assert f.accepts(tagged(None))
    assert f.accepts(tagged("anything"))


def test_class_filter_mode_skips_the_check() -> None:
    data = SubscriptionData(
        topic="T",
        sub_string="TagA",
        sub_version=1,
        tags_set=frozenset({"TagA"}),
        code_set=frozenset({java_string_hash("TagA")}),
        class_filter_mode=True,
    )
    f = MessageFilter(data)
    assert f.accepts_all
    assert f.accepts(tagged("TagB"))


def test_filter_messages_returns_a_new_list_in_order() -> None:
    batch = [tagged("A", 0), tagged("B", 1), tagged(None, 2), tagged("A", 3)]
    everything = sub("*").filter_messages(batch)
    assert everything == batch
    assert everything is not batch
    kept = sub("A").filter_messages(iter(batch))
    assert [m.queue_offset for m in kept] == [0, 3]
    assert kept[0] is batch[0]


def test_repr_names_topic_and_tags() -> None:
    assert repr(sub("B || A")) == "<MessageFilter topic='T' accepts=['A', 'B']>"
    assert repr(sub("*")) == "<MessageFilter topic='T' accepts=all>"


tags = st.sampled_from(["A", "B", "C", "Aa", "BB", None])


@given(st.lists(tags, max_size=30), st.sets(st.sampled_from(["A", "B", "Aa"]), min_size=1))
def test_filter_messages_agrees_with_accepts(message_tags: list[str | None], wanted: set[str]) -> None:
    f = sub(" || ".join(sorted(wanted)))
    batch = [tagged(tag, i) for i, tag in enumerate(message_tags)]
    kept = f.filter_messages(batch)
    assert kept == [m for m in batch if f.accepts(m)]
    assert all(m.tags in wanted for m in kept)
    assert len(kept) == sum(1 for tag in message_tags if tag in wanted)
