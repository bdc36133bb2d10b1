"""open_service_nursery: the body's own error leaves unwrapped; task errors stay grouped."""

from __future__ import annotations

import pytest
import trio

from rocketmq_py._transport._nursery import open_service_nursery


async def test_body_error_is_not_wrapped() -> None:
    cause = OSError("root cause")

    async def body() -> None:
        async with open_service_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            try:
                raise cause
            except OSError as exc:
                raise ValueError("body") from exc

    with pytest.raises(ValueError, match="body") as info:
        await body()
    assert info.value.__cause__ is cause
    assert not isinstance(info.value.__context__, BaseExceptionGroup)


async def test_task_error_stays_in_a_group() -> None:
    async def fail() -> None:
        raise KeyError("task")

    with pytest.RaisesGroup(KeyError):
        async with open_service_nursery() as nursery:
            nursery.start_soon(fail)
            await trio.sleep_forever()


async def test_outer_cancellation_passes_through(autojump_clock: object) -> None:
    with trio.move_on_after(1) as scope:
        async with open_service_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            await trio.sleep_forever()
    assert scope.cancelled_caught


async def test_clean_exit_waits_for_tasks(autojump_clock: object) -> None:
    done: list[float] = []

    async def work() -> None:
        await trio.sleep(3)
        done.append(trio.current_time())

    async with open_service_nursery() as nursery:
        nursery.start_soon(work)
    assert done == [pytest.approx(3)]
