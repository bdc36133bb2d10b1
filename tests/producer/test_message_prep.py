"""batch_request: the wrapper a batch is sent as, against the plain reference (each message's own
UNIQ_KEY kept, a new one set on the others, then encode_batch), whichever way it encodes."""

from __future__ import annotations

import copy
import itertools

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.producer._message_prep import batch_request
from rocketmq_py.producer._validation import RESERVED_PROPERTY_KEYS
from rocketmq_py.protocol import Message, PropertyKey
from rocketmq_py.protocol._batch import encode_batch

user_properties = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "color", "shard"]), st.text("abc xyz", max_size=5), max_size=3
)
uniq = st.one_of(st.none(), st.just(""), st.text("0123456789ABCDEF", min_size=32, max_size=32))


@st.composite
def batches(draw: st.DrawFn) -> list[Message]:
    out = []
    for props, key in draw(st.lists(st.tuples(user_properties, uniq), min_size=1, max_size=6)):
        message = Message("TopicB", b"body", properties=props)
        if key is not None:
            message.properties[PropertyKey.UNIQ_KEY] = key
        out.append(message)
    return out


@given(batches())
def test_the_wrapper_and_the_ids_are_the_reference_ones(batch: list[Message]) -> None:
    reference = copy.deepcopy(batch)
    counter, ref_counter = itertools.count(), itertools.count()

    def keys(n: int) -> list[str]:
        return [f"{next(counter):032X}" for _ in range(n)]

    wrapper, ids = batch_request(batch, None, 4 << 20, RESERVED_PROPERTY_KEYS, keys)

    ref_ids = []
    for message in reference:  # Java's MessageClientIDSetter.setUniqID: only where there is none
        if not message.properties.get(PropertyKey.UNIQ_KEY):
            message.properties[PropertyKey.UNIQ_KEY] = f"{next(ref_counter):032X}"
        ref_ids.append(message.properties[PropertyKey.UNIQ_KEY])
    assert ids == ref_ids
    assert wrapper.body == encode_batch(reference)
    assert [m.properties for m in batch] == [m.properties for m in reference]
