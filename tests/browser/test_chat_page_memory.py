"""The chat page's memory panel in a real browser (Debian's chromium through Playwright) on a real gateway.

The panel shows what the open conversation's agent remembers of the caller (`/api/memory`), searches
it, forgets an item, follows the agent chosen, refreshes after an answer (the agent's `memory_save`
shows up), and shows a token's refusal in the panel while the rest of the page works.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import MappingProxyType

import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from contracts.memory import MemoryConfig
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.browser_helpers import chromium
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, running_gateway

WAIT_MS = 60_000
ASKER = "chat-asker-token-0123456789"
"""Carol's token: `agents:ask` and `agents:schedules`, no `memory:read`."""
AGENTS = MappingProxyType(
    {
        "default": scripted_agent(answer("Hello."), stream=True),
        "keeper": scripted_agent(
            call_tools(tool_call("memory_save", {"text": "Takes the night train", "key": "travel"})),
            answer("I will remember that."),
            memory=MemoryConfig(tools=True, recall=0, namespace="keeper"),
            stream=True,
        ),
    }
)
SEEDED = {"city": "Lives in Lyon", "drink": "Prefers green tea", "pet": "Has a cat named Miso"}


@dataclass
class Memories:
    gateway: GatewayServer
    browser: Browser

    async def page(self, token: str) -> Page:
        """A fresh browser context's chat page, signed in with `token`."""
        page = await (await self.browser.new_context()).new_page()
        page.on("pageerror", lambda error: print(f"page error: {error}"))
        page.on("response", lambda r: print(f"{r.status} {r.request.method} {r.url}"))
        await page.goto(self.gateway.url + "/")
        await page.locator("#token").fill(token)
        await page.locator("#token").press("Enter")
        await page.locator("#token").blur()
        await expect(page.locator("#agent option[data-kind=profile]")).to_have_count(
            len(AGENTS), timeout=WAIT_MS
        )
        return page


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def memories(agents: AgentTestEnvironment) -> AsyncIterator[Memories]:
    tokens = f"{TEST_TOKENS},{ASKER}=carol:agents:ask+agents:schedules"
    async with running_gateway(agents, AGENTS, tokens=tokens) as gateway, chromium() as browser:
        await _forget_everything(gateway)  # what modules before this one left in the process's store
        async with gateway.http(ALICE) as http:
            for key, text in SEEDED.items():
                put = await http.put(f"/api/memory/default/items/{key}", json={"text": text})
                assert put.status_code == 200, put.text
        async with gateway.http(BOB) as http:  # bob's, never on alice's page
            put = await http.put("/api/memory/default/items/secret", json={"text": "Bob's secret plan"})
            assert put.status_code == 200, put.text
        yield Memories(gateway, browser)
        await _forget_everything(gateway)


async def _forget_everything(gateway: GatewayServer) -> None:
    """Empty alice's and bob's memories of these agents in the session's shared store (others list them)."""
    for token in (ALICE, BOB):
        async with gateway.http(token) as http:
            for agent in AGENTS:
                listed = await http.get(f"/api/memory/{agent}", params={"limit": 100})
                assert listed.status_code == 200, listed.text
                for item in listed.json()["items"]:
                    gone = await http.delete(f"/api/memory/{agent}/items/{item['key']}")
                    assert gone.status_code == 200, gone.text


async def keys(page: Page) -> list[str]:
    return await page.locator("#memory li").evaluate_all("items => items.map(i => i.dataset.key)")


async def test_the_panel_lists_searches_and_forgets(memories: Memories) -> None:
    page = await memories.page(ALICE)
    panel = page.locator("#memory")
    await expect(panel).to_have_attribute("data-loaded", "yes", timeout=WAIT_MS)
    await expect(panel.locator("li")).to_have_count(len(SEEDED), timeout=WAIT_MS)
    assert await keys(page) == sorted(SEEDED)
    assert await panel.locator("li[data-key=drink] .text").inner_text() == SEEDED["drink"]
    assert "Bob's secret" not in await panel.inner_text()

    await page.locator("#memory-query").fill("green tea")
    await page.locator("#memory-search").click()
    await expect(panel).to_have_attribute("data-query", "green tea", timeout=WAIT_MS)
    assert (await keys(page))[0] == "drink"

    await page.locator("#memory-query").fill("")
    await page.locator("#memory-search").click()
    await expect(panel).to_have_attribute("data-query", "", timeout=WAIT_MS)
    await expect(panel.locator("li")).to_have_count(len(SEEDED), timeout=WAIT_MS)
    await panel.locator("li[data-key=city] button.forget").click()
    await expect(panel.locator("li")).to_have_count(len(SEEDED) - 1, timeout=WAIT_MS)
    assert await keys(page) == ["drink", "pet"]
    async with memories.gateway.http(ALICE) as http:  # forgotten in the store, not only on the page
        assert (await http.get("/api/memory/default/items/city")).status_code == 404
        assert (await http.get("/api/memory/default/items/drink")).status_code == 200
    assert await page.locator("#error").is_hidden()


async def test_the_panel_follows_the_agent_and_shows_what_it_saved(memories: Memories) -> None:
    page = await memories.page(BOB)
    panel = page.locator("#memory")
    await expect(panel).to_have_attribute("data-agent", "default", timeout=WAIT_MS)
    await expect(panel.locator("li")).to_have_count(1, timeout=WAIT_MS)
    await page.locator("#agent").select_option("keeper")
    await expect(panel).to_have_attribute("data-agent", "keeper", timeout=WAIT_MS)
    await expect(panel.locator("li")).to_have_count(0, timeout=WAIT_MS)
    await expect(page.locator("#memory-status")).to_have_text("keeper remembers nothing of you")
    await page.locator("#message").fill("I always take the night train.")
    await page.locator("#send").click()
    await expect(page.locator("#transcript .msg.assistant").last).to_contain_text(
        "I will remember that.", timeout=WAIT_MS
    )
    await expect(panel.locator("li[data-key=travel] .text")).to_have_text(
        "Takes the night train", timeout=WAIT_MS
    )
    async with memories.gateway.http(BOB) as http:
        assert (await http.get("/api/memory/keeper/items/travel")).json()["text"] == "Takes the night train"


async def test_a_token_without_memory_read_sees_the_refusal_in_the_panel(memories: Memories) -> None:
    page = await memories.page(ASKER)
    panel = page.locator("#memory")
    await expect(panel).to_have_attribute("data-loaded", "refused", timeout=WAIT_MS)
    await expect(page.locator("#memory-status")).to_contain_text("memory:read")
    await expect(panel.locator("li")).to_have_count(0)
    # The refusal is the panel's, never the page's error (which may still show the sign-in's 401:
    # the page's first, tokenless /api/agents can answer after the signed-in one).
    assert "memory" not in await page.locator("#error").inner_text()
    await expect(page.locator("#sessions")).to_have_attribute("data-loaded", "yes")
