"""Offset msgIds, UNIQ_KEYs and raw socket addresses, with fixed inputs."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_py.errors import LocalProtocolError, MalformedMessage
from rocketmq_py.protocol import _ids
from rocketmq_py.protocol._ids import (
    UniqKeyGenerator,
    decode_offset_msg_id,
    encode_offset_msg_id,
    format_socket_address,
    pack_socket_address,
    uniq_key_timestamp,
)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


MARCH_5_NOON = _ms(datetime(2024, 3, 5, 12, 0, 0, 123000, tzinfo=UTC))  # 388,800,123 ms into March


# --- offset msgId --------------------------------------------------------------------------------


def test_offset_msg_id_ipv4_layout() -> None:
    # ip 0A000002 | port 00002A9F (10911) | offset 000000000001E240 (123456)
    assert encode_offset_msg_id("10.0.0.2", 10911, 123456) == "0A00000200002A9F000000000001E240"
    assert decode_offset_msg_id("0A00000200002A9F000000000001E240") == ("10.0.0.2", 10911, 123456)


def test_offset_msg_id_ipv6_layout() -> None:
    msg_id = encode_offset_msg_id("[::1]", 10911, 5)
    assert msg_id == "00000000000000000000000000000001" + "00002A9F" + "0000000000000005"
    assert len(msg_id) == 56
    assert decode_offset_msg_id(msg_id) == ("::1", 10911, 5)


def test_offset_msg_id_accepts_lowercase_hex() -> None:
    assert decode_offset_msg_id("0a00000200002a9f000000000001e240") == ("10.0.0.2", 10911, 123456)


@given(
    st.ip_addresses().map(str),
    st.integers(0, 65535),
    st.integers(-(2**63), 2**63 - 1),
)
def test_offset_msg_id_round_trip(host: str, port: int, offset: int) -> None:
    msg_id = encode_offset_msg_id(host, port, offset)
    assert msg_id == msg_id.upper()
    assert decode_offset_msg_id(msg_id) == (host, port, offset)


@pytest.mark.parametrize("bad", ["", "0A", "Z" * 32, "0A00000200002A9F000000000001E24", "G" * 56, "00" * 20])
def test_decode_offset_msg_id_rejects_garbage(bad: str) -> None:
    with pytest.raises(MalformedMessage):
        decode_offset_msg_id(bad)


@pytest.mark.parametrize(
    ("host", "port", "offset"),
    [("broker-a", 10911, 0), ("10.0.0.256", 1, 0), ("10.0.0.1", 2**31, 0), ("10.0.0.1", 1, 2**63)],
)
def test_encode_offset_msg_id_rejects_what_does_not_fit(host: str, port: int, offset: int) -> None:
    with pytest.raises(LocalProtocolError):
        encode_offset_msg_id(host, port, offset)


# --- raw socket addresses ------------------------------------------------------------------------


def test_socket_address_forms() -> None:
    assert pack_socket_address("192.168.1.10:10911") == bytes([192, 168, 1, 10, 0, 0, 0x2A, 0x9F])
    assert format_socket_address(bytes([192, 168, 1, 10, 0, 0, 0x2A, 0x9F])) == "192.168.1.10:10911"
    raw6 = pack_socket_address("[fe80::1]:80")
    assert raw6 == bytes.fromhex("fe800000000000000000000000000001" + "00000050")
    assert format_socket_address(raw6) == "[fe80::1]:80"
    assert pack_socket_address("::1:80") == pack_socket_address("[::1]:80")  # unbracketed v6 too


@pytest.mark.parametrize("bad", ["10.0.0.1", ":80", "host:80", "10.0.0.1:x", "10.0.0.1:99999999999"])
def test_pack_socket_address_rejects(bad: str) -> None:
    with pytest.raises(LocalProtocolError):
        pack_socket_address(bad)


def test_format_socket_address_rejects_odd_lengths() -> None:
    with pytest.raises(ValueError, match="8 or 20"):
        format_socket_address(b"\x00" * 7)


# --- UNIQ_KEY ------------------------------------------------------------------------------------


def _fixed_generator(now: list[int], **kwargs: object) -> UniqKeyGenerator:
    options: dict[str, object] = {"ip": "192.168.1.20", "pid": 4242, "salt": 0x1234ABCD, "tz": UTC}
    options.update(kwargs)
    return UniqKeyGenerator(clock=lambda: now[0], **options)  # type: ignore[arg-type]


def test_uniq_key_layout() -> None:
    now = [MARCH_5_NOON]
    gen = _fixed_generator(now)
    # ip C0A80114 | pid 1092 (4242) | salt 1234ABCD | 172C9E7B ms into March (UTC) | counter
    assert gen.prefix == "C0A8011410921234ABCD"
    assert gen.next() == gen.prefix + "172C9E7B" + "0000"
    assert gen.next() == gen.prefix + "172C9E7B" + "0001"
    now[0] += 1
    assert gen() == gen.prefix + "172C9E7C" + "0002"


def test_uniq_key_truncates_pid_and_counter_to_16_bits() -> None:
    gen = _fixed_generator([MARCH_5_NOON], pid=0x12345)
    assert gen.prefix[8:12] == "2345"
    keys = [gen.next() for _ in range(65537)]
    assert keys[65535].endswith("FFFF")
    assert keys[65536].endswith("0000")


def test_uniq_key_ipv6_and_packed_ip() -> None:
    gen = _fixed_generator([MARCH_5_NOON], ip="fe80::1")
    key = gen.next()
    assert len(gen.prefix) == 44
    assert len(key) == 56
    assert key.startswith("FE800000000000000000000000000001")
    packed = _fixed_generator([MARCH_5_NOON], ip=bytes([10, 0, 0, 1]))
    assert packed.prefix.startswith("0A000001")
    with pytest.raises(ValueError, match="4 or 16"):
        _fixed_generator([MARCH_5_NOON], ip=b"\x01\x02")


def test_uniq_key_without_ip_uses_javas_fallback() -> None:
    gen = UniqKeyGenerator()
    key = gen.next()
    assert len(key) == 32
    assert key == key.upper()
    assert int(key, 16) >= 0


def test_uniq_key_month_rollover() -> None:
    now = [_ms(datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC))]
    gen = _fixed_generator(now)
    assert gen.next()[20:28] == f"{30 * 86_400_000 + 86_399_000:08X}"
    now[0] = _ms(datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC))
    assert gen.next()[20:28] == "000003E8"  # 1000 ms into January


def test_uniq_key_late_in_month_wraps_like_javas_int_cast() -> None:
    # 29 days = 2,505,600,000 ms > 2**31: Java's (int) cast keeps the low 32 bits.
    gen = _fixed_generator([_ms(datetime(2024, 3, 30, tzinfo=UTC))])
    assert gen.next()[20:28] == "95586C00"


def test_uniq_key_small_clock_step_back_writes_zero() -> None:
    start = _ms(datetime(2024, 3, 1, tzinfo=UTC))
    now = [start + 10]
    gen = _fixed_generator(now)
    assert gen.next()[20:28] == "0000000A"
    now[0] = start - 500  # NTP stepped back across the month start
    assert gen.next()[20:28] == "00000000"


def test_uniq_key_generator_is_thread_safe() -> None:
    gen = _fixed_generator([MARCH_5_NOON])
    keys: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [gen.next() for _ in range(2000)]
        with lock:
            keys.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 8000


def test_fork_hook_reseeds_auto_seeded_generators_only() -> None:
    auto = UniqKeyGenerator(ip="10.0.0.1", pid=7, clock=lambda: MARCH_5_NOON, tz=UTC)
    fixed = _fixed_generator([MARCH_5_NOON])
    auto.next()
    fixed.next()
    auto_prefix, fixed_prefix = auto.prefix, fixed.prefix
    _ids._reseed_after_fork()
    assert auto.prefix[:12] == auto_prefix[:12]  # ip and pid kept
    assert auto.prefix != auto_prefix  # new random salt (a 2**-32 chance of a false failure)
    assert auto.next().endswith("0000")  # counter restarted
    assert fixed.prefix == fixed_prefix
    assert fixed.next().endswith("0001")


def test_uniq_key_timestamp_same_month() -> None:
    key = _fixed_generator([MARCH_5_NOON]).next()
    later = MARCH_5_NOON + 3_600_000
    assert uniq_key_timestamp(key, now_ms=later, tz=UTC) == MARCH_5_NOON


def test_uniq_key_timestamp_guesses_previous_month() -> None:
    born = _ms(datetime(2024, 2, 28, 8, 0, tzinfo=UTC))
    key = _fixed_generator([born]).next()
    now = _ms(datetime(2024, 3, 2, tzinfo=UTC))  # March: 27 days would be in the future
    assert uniq_key_timestamp(key, now_ms=now, tz=UTC) == born


def test_uniq_key_timestamp_ipv6_and_local_default() -> None:
    key = _fixed_generator([MARCH_5_NOON], ip="::1").next()
    assert uniq_key_timestamp(key, now_ms=MARCH_5_NOON + 1, tz=UTC) == MARCH_5_NOON
    # Default time zone (local) on both sides; "now" a second later, as Java needs now > born.
    local_key = UniqKeyGenerator(ip="10.0.0.1").next()
    now = _ms(datetime.now(UTC)) + 1000
    assert 0 < now - uniq_key_timestamp(local_key, now_ms=now) < 60_000


@pytest.mark.parametrize("bad", ["", "XYZ", "Z" * 32, "0" * 30])
def test_uniq_key_timestamp_rejects_garbage(bad: str) -> None:
    with pytest.raises(MalformedMessage):
        uniq_key_timestamp(bad)
