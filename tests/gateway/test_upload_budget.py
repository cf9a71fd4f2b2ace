"""The upload budget: the upload bodies one gateway holds at once (`gateway.server.upload_budget`).

A budget of 1 MiB and two 700 KB uploads: the second waits while the first's body is still coming,
and is answered once the first is; both are stored whole. An upload over the whole budget runs
alone; a refused token takes nothing from it (authentication comes first).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator

import pytest

from gateway.server.upload_budget import UploadBudget
from gateway.settings import load_settings
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.attachment_delivery import png
from tests.gateway_helpers import ALICE, TEST_TOKENS, running_gateway

MIB = 1024 * 1024


async def test_a_hold_waits_until_it_fits_and_one_over_the_budget_runs_alone() -> None:
    budget = UploadBudget(10)
    order: list[str] = []
    first_in, release = asyncio.Event(), asyncio.Event()

    async def hold(name: str, size: int, until: asyncio.Event | None = None) -> None:
        async with budget.hold(size):
            order.append(f"{name} in ({budget.held})")
            if until is not None:
                first_in.set()
                await until.wait()
        order.append(f"{name} out")

    first = asyncio.create_task(hold("a", 6, release))
    await first_in.wait()
    waiting = asyncio.create_task(hold("b", 6))
    big = asyncio.create_task(hold("c", 50))
    await asyncio.sleep(0.05)
    assert order == ["a in (6)"] and budget.held == 6  # b and c wait
    release.set()
    await asyncio.gather(first, waiting, big)
    assert order[:2] == ["a in (6)", "a out"]
    assert sorted(order[2:]) == ["b in (6)", "b out", "c in (50)", "c out"]
    assert budget.held == 0


async def test_a_second_upload_waits_for_the_first_body_and_both_are_stored(
    agents: AgentTestEnvironment,
) -> None:
    first_bytes, second_bytes = png(700_000), png(700_001)
    half, go_on = asyncio.Event(), asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield first_bytes[:100_000]
        half.set()
        await go_on.wait()
        yield first_bytes[100_000:]

    async with (
        running_gateway(
            agents, tokens=TEST_TOKENS, max_body_bytes=2 * MIB, upload_memory_bytes=MIB
        ) as gateway,
        gateway.http(ALICE) as http,
    ):
        size = {"Content-Type": "image/png"}
        first = asyncio.create_task(
            http.post(
                "/api/files?name=a.png",
                content=slow_body(),
                headers={**size, "Content-Length": str(len(first_bytes))},
            )
        )
        await half.wait()
        second = asyncio.create_task(http.post("/api/files?name=b.png", content=second_bytes, headers=size))
        await asyncio.sleep(0.5)
        assert not second.done(), "the second upload waits while the first holds the budget"
        go_on.set()
        answers = await asyncio.gather(first, second)
        assert [a.status_code for a in answers] == [201, 201], [a.text for a in answers]
        for answer, data in zip(answers, (first_bytes, second_bytes), strict=True):
            assert answer.json()["sha256"] == hashlib.sha256(data).hexdigest()
            assert (await http.get(f"/api/files/{answer.json()['id']}")).content == data
        async with gateway.http("not-a-token") as stranger:
            refused = await stranger.post("/api/files?name=c.png", content=second_bytes, headers=size)
        assert refused.status_code == 401


def test_the_budget_setting_is_read_and_bounded() -> None:
    setting = "REACT_GATEWAY_UPLOAD_MEMORY_BYTES"
    assert load_settings(environ={setting: str(8 * MIB)}).upload_memory_bytes == 8 * MIB
    assert load_settings(environ={}).upload_memory_bytes == 16 * MIB
    for bad in ("1000", "lots"):
        with pytest.raises(SettingsError, match=setting):
            load_settings(environ={setting: bad})
