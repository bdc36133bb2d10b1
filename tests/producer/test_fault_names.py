"""The fault tables' names end in ``_ms`` (issue 25 §3); the earlier names warn for one release."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_py import FaultConfig, LatencyFaultTolerance
from rocketmq_py.errors import InvalidOption
from rocketmq_py.producer._fault import LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS

LATENCY = (5.0, 20.0)
BENCH = (100.0, 200.0)


def test_new_names() -> None:
    config = FaultConfig(latency_max_ms=LATENCY, not_available_ms=BENCH)
    assert config.latency_max_ms == LATENCY
    assert config.not_available_ms == BENCH
    fault = config.build(lambda: 0.0)
    assert fault is not None
    assert fault.bench_ms(5) == 100
    assert fault.bench_ms(4) == 0


def test_defaults_are_the_java_tables_in_ms() -> None:
    config = FaultConfig()
    assert config.enabled
    assert config.latency_max_ms == LATENCY_MAX_MS
    assert config.not_available_ms == NOT_AVAILABLE_DURATION_MS
    assert FaultConfig(enabled=False).build() is None


def test_a_frozen_value_with_a_repr() -> None:
    config = FaultConfig(latency_max_ms=[5, 20], not_available_ms=[100, 200])  # any sequence: kept as a tuple
    assert config == FaultConfig(latency_max_ms=(5, 20), not_available_ms=(100, 200))
    assert hash(config) == hash(FaultConfig(latency_max_ms=(5, 20), not_available_ms=(100, 200)))
    assert config != FaultConfig()
    assert repr(config) == "FaultConfig(enabled=True, latency_max_ms=(5, 20), not_available_ms=(100, 200))"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.enabled = False  # type: ignore[misc]
    assert dataclasses.replace(config, enabled=False) == FaultConfig(
        enabled=False, latency_max_ms=(5, 20), not_available_ms=(100, 200)
    )
    assert [f.name for f in dataclasses.fields(FaultConfig)] == [
        "enabled",
        "latency_max_ms",
        "not_available_ms",
    ]


def test_old_keywords_still_work_and_warn() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"latency_max=\.\.\.\) is deprecated; use latency_max_ms"
    ) as record:
        config = FaultConfig(latency_max=LATENCY, not_available_ms=BENCH)
    assert record[0].filename == __file__  # the warning points at the caller
    assert config == FaultConfig(latency_max_ms=LATENCY, not_available_ms=BENCH)
    with pytest.warns(
        DeprecationWarning, match=r"not_available=\.\.\.\) is deprecated; use not_available_ms"
    ):
        config = FaultConfig(latency_max_ms=LATENCY, not_available=BENCH)
    assert config.not_available_ms == BENCH


def test_old_attributes_still_work_and_warn() -> None:
    config = FaultConfig(latency_max_ms=LATENCY, not_available_ms=BENCH)
    with pytest.warns(
        DeprecationWarning, match="FaultConfig.latency_max is deprecated; use latency_max_ms"
    ) as record:
        assert config.latency_max == LATENCY
    assert record[0].filename == __file__
    with pytest.warns(
        DeprecationWarning, match="FaultConfig.not_available is deprecated; use not_available_ms"
    ):
        assert config.not_available == BENCH


@pytest.mark.parametrize(
    "kwargs",
    [
        {"latency_max": LATENCY, "latency_max_ms": LATENCY},
        {"not_available": BENCH, "not_available_ms": BENCH},
    ],
)
def test_old_and_new_name_together_is_an_error(kwargs: dict[str, tuple[float, ...]]) -> None:
    with pytest.raises(InvalidOption, match="pass only"):
        FaultConfig(**kwargs)
    with pytest.raises(InvalidOption, match="pass only"):
        LatencyFaultTolerance(**kwargs)


def test_tables_of_different_lengths_are_refused() -> None:
    with pytest.raises(InvalidOption, match="same length"):
        FaultConfig(latency_max_ms=LATENCY, not_available_ms=(1.0,))
    with pytest.raises(InvalidOption, match="same length"):
        FaultConfig(latency_max_ms=LATENCY)  # the other table is Java's, of 7 entries


def test_latency_fault_tolerance_old_names_warn() -> None:
    with pytest.warns(DeprecationWarning, match="use latency_max_ms"):
        fault = LatencyFaultTolerance(latency_max=LATENCY, not_available_ms=BENCH)
    assert fault.bench_ms(20) == 200
    with pytest.warns(DeprecationWarning, match="use not_available_ms"):
        fault = LatencyFaultTolerance(latency_max_ms=LATENCY, not_available=BENCH)
    with pytest.warns(
        DeprecationWarning, match=r"duration_for\(\) is deprecated; use bench_ms\(\)"
    ) as record:
        assert fault.duration_for(20) == 200
    assert record[0].filename == __file__
    positional = LatencyFaultTolerance(lambda: 0.0, LATENCY, BENCH)  # the order is unchanged
    assert positional.bench_ms(5) == 100
