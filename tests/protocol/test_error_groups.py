"""Taking our errors out of trio's exception groups (rocketmq_py.errors helpers)."""

from __future__ import annotations

from rocketmq_py.errors import ConnectionFailed, TopicNotExist, first_of_ours, leaf_exceptions, unwrap_single


def test_leaves_are_flattened_depth_first() -> None:
    a, b, c = ValueError("a"), ConnectionFailed("b"), KeyError("c")
    group = ExceptionGroup("outer", [a, ExceptionGroup("inner", [b, c])])
    assert leaf_exceptions(group) == [a, b, c]
    assert leaf_exceptions(a) == [a]


def test_unwrap_single_removes_groups_of_one_only() -> None:
    error = TopicNotExist("T")
    assert unwrap_single(ExceptionGroup("x", [ExceptionGroup("y", [error])])) is error
    two = ExceptionGroup("x", [error, ValueError("v")])
    assert unwrap_single(two) is two
    assert unwrap_single(error) is error


def test_first_of_ours_prefers_our_errors() -> None:
    ours = ConnectionFailed("down")
    other = RuntimeError("bug")
    assert first_of_ours(ExceptionGroup("g", [other, ExceptionGroup("h", [ours])])) is ours
    assert first_of_ours(ExceptionGroup("g", [other])) is other
