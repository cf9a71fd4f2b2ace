"""The chat page's agents in a real browser (Debian's chromium through Playwright) on a real gateway.

A manager (a static token with `agents:manage`) makes an agent from the Agents panel, publishes a
second version with a new prompt and answer, makes the first one latest again (the roll back) and
pins the second one in the version picker; each answer says which version gave it (from the thread
read's request records). Refusals show in the panel by name (403 `forbidden` for a token without
`agents:manage`, 409 `read_only_agent`, 400 `invalid_input` naming the field) and make nothing. The
gateway's store of agents is a fresh SQLite file: only this module's agents are listed.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from testing import AgentTestEnvironment, answer, scripted_agent
from tests.browser_helpers import chromium
from tests.gateway_helpers import ALICE, TEST_TOKENS, GatewayServer, running_gateway

WAIT_MS = 60_000
MANAGER = "chat-manager-token-0123456789"
ASKER = "chat-asker-token-0123456789"
TOKENS = f"{TEST_TOKENS},{MANAGER}=carol:agents:ask+agents:manage,{ASKER}=dave:agents:ask"
AGENTS = MappingProxyType({"default": scripted_agent(answer("Hello."))})


def script(said: str) -> str:
    """The config textarea's JSON: the rest of a scripted agent's config, answering `said`."""
    return json.dumps({"script": [{"content": said}]})


@dataclass
class Agents:
    gateway: GatewayServer
    browser: Browser

    async def page(self, token: str) -> Page:
        """A fresh browser context's chat page, signed in with `token`, its agents listed."""
        page = await (await self.browser.new_context()).new_page()
        page.on("pageerror", lambda error: print(f"page error: {error}"))
        page.on("response", lambda r: print(f"{r.status} {r.request.method} {r.url}"))
        await page.goto(self.gateway.url + "/")
        await page.locator("#token").fill(token)
        await page.locator("#token").press("Enter")
        await page.locator("#token").blur()
        await expect(page.locator("#agent")).to_have_value("default", timeout=WAIT_MS)
        await expect(page.locator("#sessions")).to_have_attribute("data-loaded", "yes", timeout=WAIT_MS)
        return page

    async def names(self) -> list[str]:
        """`GET /api/agents`' names, as alice."""
        async with self.gateway.http(ALICE) as http:
            listed = await http.get("/api/agents")
            assert listed.status_code == 200, listed.text
            return listed.json()["agents"]

    async def thread(self, agent: str, thread: str) -> dict[str, Any]:
        """`GET /api/threads/{agent}/{thread}` as carol (the manager)."""
        async with self.gateway.http(MANAGER) as http:
            read = await http.get(f"/api/threads/{agent}/{thread}")
            assert read.status_code == 200, read.text
            return read.json()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agents_page(
    agents: AgentTestEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Agents]:
    store = f"sqlite:///{tmp_path_factory.mktemp('agents') / 'store.db'}"
    async with (
        running_gateway(agents, AGENTS, tokens=TOKENS, memory_store_url=store) as gateway,
        chromium() as browser,
    ):
        yield Agents(gateway, browser)


async def fill_form(page: Page, *, name: str | None = None, prompt: str, config: str, note: str) -> None:
    if name is not None:
        await page.locator("#agent-name").fill(name)
    await page.locator("#agent-prompt").fill(prompt)
    await page.locator("#agent-config").fill(config)
    await page.locator("#agent-note").fill(note)


async def ask(page: Page, text: str, answers: int) -> None:
    """Send `text` in the open conversation; wait for its answer, the thread's `answers`-th."""
    await page.locator("#message").fill(text)
    await page.locator("#send").click()
    await expect(page.locator("#transcript .msg.assistant")).to_have_count(answers, timeout=WAIT_MS)


async def last_answer(page: Page, said: str, version: str) -> None:
    last = page.locator("#transcript .msg.assistant").last
    await expect(last.locator(".text")).to_have_text(said, timeout=WAIT_MS)
    await expect(last.locator(".version")).to_have_text(version, timeout=WAIT_MS)


async def test_make_publish_roll_back_and_pin_each_answer_naming_its_version(agents_page: Agents) -> None:
    name = f"helper-{uuid.uuid4().hex[:6]}"
    page = await agents_page.page(MANAGER)
    await fill_form(page, name=name, prompt="You are v1.", config=script("one"), note="first")
    await page.locator("#agent-create").click()
    await expect(page.locator("#agents-status")).to_have_text(f"made {name} v1", timeout=WAIT_MS)
    await expect(page.locator("#agent")).to_have_value(name, timeout=WAIT_MS)
    await expect(page.locator("#agent-version")).to_be_visible()
    await expect(page.locator("#agent-versions li")).to_have_count(1, timeout=WAIT_MS)
    assert name in await agents_page.names()

    await ask(page, "Who are you?", 1)
    await last_answer(page, "one", "v1")
    found = re.search(r"thread=([A-Za-z0-9_.-]+)", page.url)
    assert found, page.url
    thread = found.group(1)

    # v2: the same form (still holding v1's config), a new prompt and answer.
    await fill_form(page, prompt="You are v2.", config=script("two"), note="new prompt")
    await page.locator("#agent-publish").click()
    published = f"published {name} v2 (latest)"
    await expect(page.locator("#agents-status")).to_have_text(published, timeout=WAIT_MS)
    versions = page.locator("#agent-versions")
    await expect(versions).to_have_attribute("data-latest", "2", timeout=WAIT_MS)
    await expect(versions.locator("li")).to_have_count(2)
    await expect(versions.locator("li[data-version='2'] .note")).to_have_text("new prompt")
    await expect(versions.locator("li[data-version='2'] .who")).to_contain_text("carol")
    await expect(versions.locator("li[data-version='2'] .is-latest")).to_have_text("latest")
    await ask(page, "And now?", 2)
    await last_answer(page, "two", "v2")
    await expect(page.locator("#transcript .msg.assistant").first.locator(".version")).to_have_text("v1")

    # The roll back: v1 is latest again, and the thread asked as `name` follows it.
    await versions.locator("li[data-version='1'] button.make-latest").click()
    await expect(versions).to_have_attribute("data-latest", "1", timeout=WAIT_MS)
    await expect(page.locator("#agents-status")).to_have_text(f"{name}: v1 is latest")
    await ask(page, "After the roll back?", 3)
    await last_answer(page, "one", "v1")

    # Pinned: `name@2` asks v2 in the same thread, whatever latest says.
    await page.locator("#agent-version").select_option("2")
    await expect(page).to_have_url(re.compile(rf"agent={re.escape(name)}%402|agent={re.escape(name)}@2"))
    await expect(page.locator("#transcript .msg.assistant")).to_have_count(3, timeout=WAIT_MS)
    await ask(page, "Pinned?", 4)
    await last_answer(page, "two", "v2")
    badges = await page.locator("#transcript .msg.assistant .version").all_inner_texts()
    assert badges == ["v1", "v2", "v1", "v2"]
    read = await agents_page.thread(name, thread)
    assert [r["agent_version"] for r in read["request_records"]] == [1, 2, 1, 2]
    async with agents_page.gateway.http(MANAGER) as http:
        assert (await http.get(f"/api/agents/{name}")).json()["latest"] == 1  # the pin moved nothing

    # Another tab of the browser (its localStorage, no form state) opens the pinned conversation, and
    # the form starts from the last config published here.
    url = page.url
    page = await page.context.new_page()
    await page.goto(url)
    await expect(page.locator("#agent")).to_have_value(name, timeout=WAIT_MS)
    await expect(page.locator("#agent-version")).to_have_value("2", timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.assistant .version")).to_have_text(
        ["v1", "v2", "v1", "v2"], timeout=WAIT_MS
    )
    await expect(page.locator("#agent-name")).to_have_value(name)
    await expect(page.locator("#agent-prompt")).to_have_value("You are v2.")
    assert json.loads(await page.locator("#agent-config").input_value()) == json.loads(script("two"))


async def test_refusals_show_by_name_in_the_panel_and_make_nothing(agents_page: Agents) -> None:
    name = f"refused-{uuid.uuid4().hex[:6]}"
    asker = await agents_page.page(ASKER)
    await fill_form(asker, name=name, prompt="p", config=script("a"), note="")
    await asker.locator("#agent-create").click()
    status = asker.locator("#agents-status")
    await expect(status).to_have_attribute("data-state", "refused", timeout=WAIT_MS)
    await expect(status).to_contain_text("forbidden")
    await expect(status).to_contain_text("agents:manage")
    await expect(asker.locator("#agent")).to_have_value("default")

    manager = await agents_page.page(MANAGER)
    status = manager.locator("#agents-status")
    refusals = [
        ("default", script("a"), ["read_only_agent"]),
        (name, json.dumps({"system_promt": "x"}), ["invalid_input", "system_promt"]),
        (name, "{not json", ["invalid_input", "config: not JSON"]),
    ]
    for agent, config, named in refusals:  # each names what no other one does
        await fill_form(manager, name=agent, prompt="p", config=config, note="")
        await manager.locator("#agent-create").click()
        await expect(status).to_have_attribute("data-state", "refused", timeout=WAIT_MS)
        for word in named:
            await expect(status).to_contain_text(word, timeout=WAIT_MS)
    assert name not in await agents_page.names()
    assert "default" in await agents_page.names()
    await expect(manager.locator("#agent")).to_have_value("default")
