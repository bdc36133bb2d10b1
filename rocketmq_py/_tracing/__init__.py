"""Message trace (``enable_trace=True``): Java-compatible records written to the trace topic.

:mod:`._dispatcher` queues and sends records; the hooks that make them from sends and listener
calls are in :mod:`._hooks`.
"""
