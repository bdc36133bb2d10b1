"""Settings for every fast test."""

from __future__ import annotations

from hypothesis import settings

# No per-example deadline: hypothesis's default (200 ms) is a timed assertion, and `make test` runs
# these tests while the session's brokers share the two cores; test_headers.py::test_round_trip
# failed on it under that load. The examples' content is what is checked, not their speed.
settings.register_profile("rocketmq-py", deadline=None)
settings.load_profile("rocketmq-py")
