"""Fixtures for transport tests: a FakeBroker (no default handlers) that echoes code 9001."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketmq_py.protocol._command import RemotingCommand
from rocketmq_py.testing._fake_broker import FakeBroker


async def _echo(request: RemotingCommand) -> RemotingCommand | None:
    if request.is_oneway:
        return None
    return RemotingCommand.response(request, 0, ext_fields=request.ext_fields, body=request.body)


@pytest.fixture
async def fake_broker() -> AsyncIterator[FakeBroker]:
    """A FakeBroker answering request code 9001 with SUCCESS, echoing ext fields and body."""
    async with FakeBroker(defaults=False) as fb:
        fb.on(9001, _echo)
        yield fb
