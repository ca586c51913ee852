"""The budget of bytes in flight (``SRV-MEM-1``) on its own: room is granted in arrival order,
a reservation that finds none within its wait is refused, and a cancelled one leaves nothing held."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from openenv_anyio.server.memory.inflight_bytes import InflightBytes

pytestmark = pytest.mark.trio


async def test_reservations_wait_in_arrival_order() -> None:
    budget = InflightBytes(100, wait_s=60.0)
    assert await budget.reserve(80)
    granted: list[str] = []

    async def reserve(name: str, size: int) -> None:
        assert await budget.reserve(size)
        granted.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reserve, "big", 60)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(reserve, "small", 10)  # fits now, but the big one came first
        await trio.testing.wait_all_tasks_blocked()
        assert granted == [] and budget.stats() == {"bytes": 80, "waiting": 2, "refused": 0}
        budget.release(80)
    assert sorted(granted) == ["big", "small"] and budget.stats()["bytes"] == 70


async def test_no_room_within_the_wait_is_a_refusal() -> None:
    budget = InflightBytes(100, wait_s=0.0)
    assert await budget.reserve(100)
    assert not await budget.reserve(1)
    assert not await budget.reserve(101)  # never fits
    assert budget.stats() == {"bytes": 100, "waiting": 0, "refused": 2}


async def test_a_cancelled_reservation_holds_nothing_and_lets_the_next_in() -> None:
    budget = InflightBytes(100, wait_s=60.0)
    assert await budget.reserve(50)
    granted: list[int] = []
    big_scope = trio.CancelScope()

    async def reserve(size: int) -> None:
        assert await budget.reserve(size)
        granted.append(size)

    async def big() -> None:
        with big_scope:
            await reserve(60)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(big)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(reserve, 40)  # would fit, but waits behind the 60
        await trio.testing.wait_all_tasks_blocked()
        assert granted == [] and budget.stats()["waiting"] == 2
        big_scope.cancel()
    assert granted == [40] and budget.stats() == {"bytes": 90, "waiting": 0, "refused": 0}


async def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        InflightBytes(0, wait_s=1.0)
