"""The producer: validation, queue selection with latency fault tolerance, send results."""
