"""``Admin.message`` takes an offset message id: a producer's id (a UNIQ_KEY, also 32 hex digits)
given to it says so, instead of failing on the address it decodes to."""

from __future__ import annotations

import pytest

from rocketmq_py.admin._messages import store_address
from rocketmq_py.errors import ClientError
from rocketmq_py.protocol import encode_offset_msg_id
from rocketmq_py.protocol._ids import UniqKeyGenerator


def test_an_offset_id_names_its_broker_and_offset() -> None:
    assert store_address(encode_offset_msg_id("127.0.0.1", 10911, 4096)) == ("127.0.0.1:10911", 4096)


def test_a_unique_key_is_not_taken_for_an_offset_id() -> None:
    # Its process id's low 16 bits are the high half of the port an offset id holds there.
    key = UniqKeyGenerator(ip="127.0.0.1", pid=4242, salt=0x1234ABCD).next()
    with pytest.raises(ClientError, match="message_by_unique_key"):
        store_address(key)


@pytest.mark.parametrize("port", [0, 65536, 2**31])
def test_an_id_whose_port_is_out_of_range_is_refused(port: int) -> None:
    raw = bytes([127, 0, 0, 1]) + port.to_bytes(4, "big") + (7).to_bytes(8, "big")
    with pytest.raises(ClientError, match="port"):
        store_address(raw.hex().upper())
