"""``trace_hook``: a trace hook whose dispatcher sends with a ``Producer`` unless told otherwise.

The hook itself is :class:`~rocketmq_py._tracing._trace_hook.TraceHook` (re-exported here); the
producer wires its own with :func:`~rocketmq_py._tracing._trace_hook.new_trace_hook` and passes
itself as the sender factory. This module is for the clients that pass none (the consumers, whose
``_enable_trace`` calls ``trace_hook(group, config, namespace, trace_topic)``). It names
``Producer``, so nothing in the producer may import it: that would close the import circle the
factory removed. Once the consumers pass ``open_sender`` too, this module can go.
"""

from __future__ import annotations

from rocketmq_py._client._config import ClientConfig
from rocketmq_py._tracing._dispatcher import OpenTraceSender
from rocketmq_py._tracing._trace_hook import DEFAULT_REGION, TraceHook, new_trace_hook

__all__ = ["DEFAULT_REGION", "TraceHook", "trace_hook"]


def trace_hook(
    group: str,
    config: ClientConfig,
    namespace: str | None,
    trace_topic: str | None,
    *,
    open_sender: OpenTraceSender | None = None,
) -> TraceHook:
    """The trace hook (and its dispatcher) of a client with ``enable_trace=True``.

    ``open_sender`` opens the dispatcher's sender; by default a ``Producer`` (imported here, when
    needed, as the consumers it serves import it too).
    """
    if open_sender is None:
        from rocketmq_py.producer._producer import Producer  # (the producer never imports this module)

        open_sender = Producer
    return new_trace_hook(group, config, namespace, trace_topic, open_sender=open_sender)
