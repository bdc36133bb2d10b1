"""PySpark 4.x Python Data Source for Apache RocketMQ (format ``rocketmq``).

The source and sink arrive with issue 7; this package exists so that the layout, packaging and
type checking are in place from the start.
"""

__all__: list[str] = []
