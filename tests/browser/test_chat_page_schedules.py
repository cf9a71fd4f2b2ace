"""The chat page's schedules panel in a real browser (Debian's chromium through Playwright) on a real gateway.

The page schedules the open conversation (its agent and thread) every second; the firings reach
that thread on the `agents` fixture's dev server and worker; Pause and Run now act on it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from types import MappingProxyType

import pytest_asyncio
from playwright.async_api import Browser, expect

from clients.schedules import Schedules
from contracts.schedules import SCHEDULE_REF
from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.browser_helpers import chromium
from tests.gateway_helpers import ALICE, TEST_TOKENS, GatewayServer, running_gateway
from tests.schedules.test_schedules import eventually

WAIT_MS = 60_000
AGENTS = MappingProxyType({"default": scripted_agent(answer("Nothing new."), stream=True)})


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def page_and_gateway(agents: AgentTestEnvironment) -> AsyncIterator[tuple[GatewayServer, Browser]]:
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as gateway, chromium() as browser:
        yield gateway, browser


async def test_the_page_schedules_the_conversation_pauses_and_runs_it_now(
    page_and_gateway: tuple[GatewayServer, Browser],
) -> None:
    gateway, browser = page_and_gateway
    page = await (await browser.new_context()).new_page()
    page.on("pageerror", lambda error: print(f"page error: {error}"))
    await page.goto(gateway.url + "/")
    await page.locator("#token").fill(ALICE)
    await page.locator("#token").press("Enter")
    await expect(page.locator("#schedules")).to_have_attribute("data-loaded", "yes", timeout=WAIT_MS)
    thread = re.search(r"thread=([A-Za-z0-9_.-]+)", page.url)
    assert thread, page.url
    await page.locator("#schedule-message").fill("Anything new?")
    await page.locator("#schedule-every").fill("1")
    await page.locator("#schedule-create").click()
    item = page.locator("#schedules li").first
    await expect(item).to_have_attribute("data-paused", "no", timeout=WAIT_MS)
    name = await item.get_attribute("data-schedule")
    assert name is not None

    session = gateway.ctx.sessions.get(session_id(Principal("alice"), "default", thread.group(1)))

    async def scheduled() -> list[str]:
        try:
            return [r.refs.get(SCHEDULE_REF, "") for r in await session.requests()]
        except Exception:  # not started by a firing yet
            return []

    await eventually(scheduled, lambda refs: len(refs) >= 1)
    assert set(await scheduled()) == {f"schedule/alice/{name}"}

    await item.locator("button.pause").click()
    await expect(page.locator("#schedules li").first).to_have_attribute("data-paused", "yes", timeout=WAIT_MS)
    schedules = Schedules(gateway.ctx.client, task_queue=gateway.ctx.settings.task_queue)
    before = (await schedules.describe(f"schedule/alice/{name}")).firings
    await page.locator("#schedules li").first.locator("button.trigger").click()
    await eventually(lambda: schedules.describe(f"schedule/alice/{name}"), lambda v: v.firings > before)
    await schedules.delete(f"schedule/alice/{name}")
