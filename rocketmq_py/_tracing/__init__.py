"""Message trace (``enable_trace=True``): Java-compatible records written to the trace topic.

:mod:`._dispatcher` queues and sends records, with a sender the client opens for it (it never
imports the producer); the hook that makes them from sends and listener calls is in
:mod:`._trace_hook`; :mod:`._hooks` wires one whose sender is a ``Producer``, for clients that pass
no sender factory.
"""
