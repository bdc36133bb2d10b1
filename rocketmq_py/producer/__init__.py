"""The producer: validation, queue selection with latency fault tolerance, send, transactions.

The public names are re-exported (lazily) by :mod:`rocketmq_py`; this package's own ``__init__``
imports nothing, so that its pure decision modules can be imported without trio.
"""
