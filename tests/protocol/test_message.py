"""Message / MessageExt: conveniences over properties, derived ids, value semantics."""

from __future__ import annotations

import pytest

from rocketmq_py.errors import LocalProtocolError
from rocketmq_py.protocol._message import Message, MessageExt, SysFlag


def test_message_conveniences_write_properties() -> None:
    msg = Message("T", b"body", tags="TagA", keys=["k1", "k2"], flag=3, delay_level=2)
    assert msg.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "2"}
    assert (msg.tags, msg.keys, msg.delay_level, msg.flag) == ("TagA", ("k1", "k2"), 2, 3)
    msg.tags = None
    msg.keys = ()
    msg.delay_level = None
    assert msg.properties == {}
    assert (msg.tags, msg.keys, msg.delay_level) == (None, (), 0)


def test_message_keys_as_one_string_are_split_on_spaces() -> None:
    msg = Message("T", keys="order-1  order-2")
    assert msg.properties["KEYS"] == "order-1  order-2"
    assert msg.keys == ("order-1", "order-2")


def test_message_arguments_win_over_properties() -> None:
    props = {"TAGS": "old", "x": "y"}
    msg = Message("T", properties=props, tags="new")
    assert msg.properties == {"TAGS": "new", "x": "y"}
    assert props == {"TAGS": "old", "x": "y"}  # copied


def test_message_more_conveniences() -> None:
    msg = Message("T", properties={"DELAY": "x"})
    assert msg.delay_level == 0  # not a number: treated as absent
    assert msg.wait_store_msg_ok is True  # absent means true, as in Java
    msg.wait_store_msg_ok = False
    assert msg.properties["WAIT"] == "false"
    assert msg.wait_store_msg_ok is False
    msg.properties["WAIT"] = "TRUE"
    assert msg.wait_store_msg_ok is True
    msg.deliver_time_ms = 1_760_000_000_000
    assert msg.deliver_time_ms == 1_760_000_000_000
    msg.deliver_time_ms = None
    assert msg.deliver_time_ms == 0
    msg.sharding_key = "user-7"
    assert msg.sharding_key == "user-7"
    assert msg.properties["__SHARDINGKEY"] == "user-7"
    assert msg.uniq_key is None
    msg.properties["UNIQ_KEY"] = "AB"
    assert msg.uniq_key == "AB"


def test_message_equality_and_repr() -> None:
    a = Message("T", b"x", tags="t")
    b = Message("T", b"x", tags="t")
    assert a == b
    assert a != Message("T", b"y", tags="t")
    assert a != Message("T", b"x", tags="t", flag=1)
    assert a != "not a message"
    assert "topic='T'" in repr(a)
    assert "<100 bytes>" in repr(Message("T", b"x" * 100))
    with pytest.raises(TypeError):
        hash(a)


def test_message_ext_ids_and_hosts() -> None:
    ext = MessageExt(
        "T",
        b"x",
        commit_log_offset=123456,
        born_host="10.0.0.1:50000",
        store_host="10.0.0.2:10911",
    )
    assert ext.offset_msg_id == "0A00000200002A9F000000000001E240"
    assert ext.msg_id == ext.offset_msg_id  # no UNIQ_KEY
    ext.properties["UNIQ_KEY"] = "C0A80114109212"
    assert ext.msg_id == "C0A80114109212"
    assert (ext.born_host, ext.store_host) == ("10.0.0.1:50000", "10.0.0.2:10911")
    assert ext.sys_flag & (SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6) == 0
    ext.commit_log_offset = 1
    assert ext.offset_msg_id == "0A00000200002A9F0000000000000001"  # the cache follows the fields
    assert "msg_id='C0A80114109212'" in repr(ext)


def test_message_ext_sets_v6_bits_from_hosts() -> None:
    ext = MessageExt("T", born_host="[::1]:1", store_host="10.0.0.2:2", sys_flag=SysFlag.STOREHOST_V6)
    assert ext.sys_flag == SysFlag.BORNHOST_V6
    assert ext.born_host == "[::1]:1"
    assert len(ext.offset_msg_id) == 32


def test_message_ext_transaction_id() -> None:
    ext = MessageExt("T", properties={"UNIQ_KEY": "U1"})
    assert ext.transaction_id is None
    ext.properties["TRAN_MSG"] = "true"
    assert ext.transaction_id == "U1"


def test_message_ext_equality() -> None:
    a = MessageExt("T", b"x", queue_offset=1)
    assert a == MessageExt("T", b"x", queue_offset=1)
    assert a != MessageExt("T", b"x", queue_offset=2)
    assert a != Message("T", b"x")
    assert Message("T", b"x") != a
    with pytest.raises(TypeError):
        hash(a)


def test_message_ext_broker_name_is_not_a_property() -> None:
    # Where the message was read from, as Java's MessageExt.brokerName: part of the value, never
    # of the properties (which is all that a re-send puts on the wire).
    assert MessageExt("T").broker_name == ""
    a = MessageExt("T", b"x", broker_name="broker-a", queue_id=0, queue_offset=1)
    assert a.broker_name == "broker-a"
    assert a.properties == {}
    assert a != MessageExt("T", b"x", broker_name="broker-b", queue_id=0, queue_offset=1)
    assert a == MessageExt("T", b"x", broker_name="broker-a", queue_id=0, queue_offset=1)
    assert "broker_name='broker-a', queue_id=0, queue_offset=1" in repr(a)


def test_message_ext_rejects_bad_hosts() -> None:
    with pytest.raises(LocalProtocolError):
        MessageExt("T", born_host="broker-a:10911")
