"""The lite pull consumer's constructor options, checked: batch size, flow limits, watch interval.

The flow limits come either as ``flow_limits=FlowLimits(...)`` or, deprecated, as four keywords of
their own; giving both is refused, and the push consumer's topic-level limits, which the lite
consumer cannot enforce, are refused too. Their defaults (Java lite ``pullThresholdForAll``,
``pullThresholdForQueue``, ``pullThresholdSizeForQueue``, ``consumeMaxSpan``) are FlowLimits' own,
in :mod:`._flow`.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketmq_py._deprecation import warn_deprecated
from rocketmq_py.consumer._flow import FlowLimits
from rocketmq_py.errors import InvalidOption

__all__ = ["lite_options"]


def lite_options(
    *,
    pull_batch_size: int,
    flow_limits: FlowLimits | None,
    old: Mapping[str, int | None],
    topic_metadata_check_interval: float,
) -> FlowLimits:
    """Check the lite consumer's options; the flow limits from ``flow_limits`` or ``old``.

    Args:
        pull_batch_size: messages per pull.
        flow_limits: the limits given as one object, or ``None``.
        old: the deprecated limit keywords, by name (``None``: not given).
        topic_metadata_check_interval: seconds between queue-change checks.

    Returns:
        The limits to enforce, validated for the lite consumer.

    Raises:
        InvalidOption: an option out of range, both ``flow_limits`` and ``old`` keywords given,
            or a limit the lite consumer cannot enforce (the push consumer's topic-level limits).
    """
    if pull_batch_size < 1:
        raise InvalidOption(f"pull_batch_size must be at least 1, got {pull_batch_size}")
    limits = _lite_flow_limits(flow_limits, old)
    if topic_metadata_check_interval <= 0:
        raise InvalidOption(
            f"topic_metadata_check_interval must be positive, got {topic_metadata_check_interval}"
        )
    return limits


def _lite_flow_limits(flow_limits: FlowLimits | None, old: Mapping[str, int | None]) -> FlowLimits:
    """The lite consumer's limits from ``flow_limits`` or the deprecated keywords (``old``), checked.

    Raises:
        InvalidOption: both were given, or a limit is out of range or one the lite consumer cannot
            enforce (the push consumer's topic-level limits).
    """
    given = {name: value for name, value in old.items() if value is not None}
    if given and flow_limits is not None:
        raise InvalidOption(
            f"give flow_limits or its fields {sorted(given)} as keywords (deprecated), not both"
        )
    for name in given:
        warn_deprecated(f"LitePullConsumer({name}=...) is deprecated; use flow_limits=FlowLimits({name}=...)")
    limits = FlowLimits(**given) if flow_limits is None else flow_limits
    limits.validate(consumer="lite")
    return limits
