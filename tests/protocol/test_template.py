"""RequestTemplate: the same bytes as RemotingCommand.encode for the same binary-header request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import LocalProtocolError
from rocketmq_py.protocol._codes import FLAG_ONEWAY, RequestCode, SerializeType
from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.protocol._template import CACHE_LIMIT, RequestTemplate

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
entries = st.dictionaries(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8), texts, max_size=6
)


@given(
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(0, 2**31 - 1),
    constant=entries,
    recurring=entries,
    fresh=entries,
    body=st.binary(max_size=64),
    oneway=st.booleans(),
)
def test_frame_is_byte_for_byte_the_generic_binary_encoding(
    code: int,
    opaque: int,
    constant: dict[str, str],
    recurring: dict[str, str],
    fresh: dict[str, str],
    body: bytes,
    oneway: bool,
) -> None:
    # Keys unique across the three parts, so the generic map keeps every entry in the same order.
    recurring = {k: v for k, v in recurring.items() if k not in constant}
    fresh = {k: v for k, v in fresh.items() if k not in constant and k not in recurring}
    template = RequestTemplate(code, constant)
    frame = template.frame(opaque, list(recurring.items()), list(fresh.items()), body, oneway=oneway)
    generic = RemotingCommand.request(
        code, {**constant, **recurring, **fresh}, body, oneway=oneway, serialize_type=SerializeType.ROCKETMQ
    ).with_opaque(opaque)
    assert frame == generic.encode()
    as_command = template.command(list(recurring.items()), list(fresh.items()), body).with_opaque(opaque)
    assert dict(as_command.ext_fields) == dict(generic.ext_fields)
    assert (
        as_command.encode()
        == RemotingCommand.request(
            code, {**constant, **recurring, **fresh}, body, serialize_type=SerializeType.ROCKETMQ
        )
        .with_opaque(opaque)
        .encode()
    )


def test_recurring_values_are_cached_and_the_cache_is_bounded() -> None:
    template = RequestTemplate(RequestCode.SEND_MESSAGE_V2, {"a": "g"})
    first = template.frame(1, [("b", "topic")], [], b"")
    assert template.frame(1, [("b", "topic")], [], b"") == first
    for n in range(CACHE_LIMIT + 10):
        template.frame(1, [("e", str(n))], [], b"")
    assert len(template._cache) <= CACHE_LIMIT


def test_oneway_sets_the_flag() -> None:
    frame = RequestTemplate(RequestCode.SEND_MESSAGE_V2, {}).frame(3, [], [], b"", oneway=True)
    generic = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, {}, oneway=True, serialize_type=SerializeType.ROCKETMQ
    ).with_opaque(3)
    assert generic.flag & FLAG_ONEWAY
    assert frame == generic.encode()


@pytest.mark.parametrize(
    ("code", "constant"),
    [(2**15, {}), (10, {"k": "\ud800"}), (10, {"k": 1})],
)
def test_what_the_encoding_cannot_carry_is_refused(code: int, constant: dict[str, object]) -> None:
    with pytest.raises(LocalProtocolError):
        RequestTemplate(code, constant)  # type: ignore[arg-type]


def test_a_bad_varying_value_is_refused() -> None:
    template = RequestTemplate(RequestCode.SEND_MESSAGE_V2, {})
    with pytest.raises(LocalProtocolError):
        template.frame(1, [], [("i", "\udc00")], b"")
