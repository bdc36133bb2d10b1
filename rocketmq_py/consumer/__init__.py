"""The push consumer: rebalance, queue allocation, process queues, pull loops, offset stores.

This package's own ``__init__`` imports nothing, so that its pure decision modules (such as
:mod:`rocketmq_py.consumer._allocate`) can be imported without trio.
"""
