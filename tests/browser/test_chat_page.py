"""The chat page in a real browser: Debian's chromium driven by Playwright, on a real gateway.

The gateway runs in-process (`tests.gateway_helpers`) on the `agents` fixture's dev server and
worker; its agents are scripted models that stream their answers slowly (pieces of a few
characters, a pause before each), so a test sees the answer being written. Each test has its
own browser context (its own localStorage: token, thread id, last event id).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import MappingProxyType

import pytest_asyncio
from playwright.async_api import Browser, Page, Route, expect

from clients.session_handle import SessionHandle
from contracts import ScriptTurn
from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.browser_helpers import chromium
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, running_gateway

SLOW_ANSWER = "A durable answer arrives piece by piece, " * 4 + "and ends here."
STEERED = "Steered: the short answer."
WAIT_MS = 60_000


def slowly(text: str) -> ScriptTurn:
    """A streamed answer of a few characters a piece, with a pause before each (about 4 s in all)."""
    return answer(text).model_copy(update={"chunk_chars": 5, "chunk_delay_s": 0.12})


PAGE_AGENTS = MappingProxyType(
    {
        "default": scripted_agent(slowly(SLOW_ANSWER), stream=True),
        "approver": scripted_agent(
            call_tools(tool_call("calculator", {"expression": "17 * 23"}, call_id="call-calc")),
            answer("The calculator has answered."),
            tools=["calculator"],
            approval_required=["calculator"],
            stream=True,
        ),
        "steerable": scripted_agent(slowly(SLOW_ANSWER * 3), answer(STEERED), stream=True),
    }
)


@dataclass
class Chat:
    gateway: GatewayServer
    browser: Browser

    async def page(self, token: str) -> Page:
        """A fresh browser context's chat page, its token typed into the token field."""
        context = await self.browser.new_context()
        page = await context.new_page()
        # For whoever reads a failure (pytest shows a failed test's output): what the page did.
        page.on("console", lambda message: print(f"console {message.type}: {message.text}"))
        page.on("pageerror", lambda error: print(f"page error: {error}"))
        page.on("requestfailed", lambda request: print(f"failed: {request.method} {request.url}"))
        page.on(
            "response", lambda response: print(f"{response.status} {response.request.method} {response.url}")
        )
        page.on("requestfinished", lambda request: print(f"finished: {request.method} {request.url}"))
        await page.goto(self.gateway.url + "/")
        await page.locator("#token").fill(token)
        await page.locator("#token").press("Enter")
        await page.locator("#token").blur()
        await expect(page.locator("#agent option[data-kind=profile]")).to_have_count(
            len(PAGE_AGENTS), timeout=WAIT_MS
        )
        return page

    def session(self, owner: str, agent: str, thread: str) -> SessionHandle:
        return self.gateway.ctx.sessions.get(session_id(Principal(owner), agent, thread))


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def chat(agents: AgentTestEnvironment) -> AsyncIterator[Chat]:
    async with running_gateway(agents, PAGE_AGENTS, tokens=TEST_TOKENS) as gateway, chromium() as browser:
        yield Chat(gateway, browser)


async def ask(page: Page, text: str, agent: str = "default") -> str:
    """Send `text` to `agent` in a new chat; the thread id the page chose."""
    await page.locator("#agent").select_option(agent)
    await page.locator("#new-chat").click()
    await page.locator("#message").fill(text)
    await page.locator("#send").click()
    thread = re.search(r"thread=([A-Za-z0-9_.-]+)", page.url)
    assert thread, page.url
    return thread.group(1)


async def partial_answer(page: Page) -> str:
    """The live answer's text once some of it, not all, is on the page."""
    live = page.locator("#live .msg.assistant .text").first
    await expect(live).not_to_be_empty(timeout=WAIT_MS)
    return await live.inner_text()


async def test_a_message_sent_while_the_page_starts_keeps_its_answer(chat: Chat) -> None:
    """A message sent while the page starts keeps its answer.

    The page's start (after a token is entered) opens a chat; a message sent before it got there
    lost its stream (the start's new chat cut it): Send now waits for the start.
    """
    page = await chat.page(ALICE)
    release = asyncio.Event()

    async def slow_threads(route: Route) -> None:
        await release.wait()  # the start stays between its reads and opening a chat
        await route.continue_()

    await page.route("**/api/threads", slow_threads)
    await page.locator("#token").fill(ALICE + " ")  # changed (the page trims it): a new start
    await page.locator("#token").press("Enter")  # a start: agents, then the slow threads
    await page.locator("#message").fill("Sent during the start.")
    await expect(page.locator("#send")).to_be_disabled(timeout=WAIT_MS)
    await page.locator("#message").press("Enter")  # refused while starting: the text stays
    await expect(page.locator("#message")).to_have_value("Sent during the start.")
    release.set()
    await page.locator("#send").click()  # waits until the start is over
    await expect(page.locator("#transcript .msg.assistant").first).to_contain_text(
        SLOW_ANSWER, timeout=WAIT_MS
    )
    await page.unroute("**/api/threads")


async def test_a_conversation_read_that_returns_after_new_chat_shows_nothing(chat: Chat) -> None:
    # The page reads a conversation (a click in the list); New chat comes before the read does: the
    # read's answer must not put the old conversation's messages under the new chat.
    page = await chat.page(ALICE)
    thread = await ask(page, "Tell me.")
    await expect(page.locator("#chat")).to_contain_text("and ends here.", timeout=WAIT_MS)
    await expect(page.locator(f'#sessions [data-thread="{thread}"]')).to_have_count(1, timeout=WAIT_MS)
    release = asyncio.Event()

    async def slow_read(route: Route) -> None:
        await release.wait()
        await route.continue_()

    await page.route(f"**/api/threads/default/{thread}", slow_read)
    await page.locator(f'#sessions [data-thread="{thread}"]').click()  # opens it: the read is held
    await page.locator("#new-chat").click()
    release.set()
    await page.wait_for_timeout(1_000)  # the held read has come back by now
    assert await page.locator("#transcript .msg").count() == 0
    assert await page.locator("#thread-title").inner_text() == "New chat"
    await page.unroute(f"**/api/threads/default/{thread}")


async def test_tokens_appear_while_the_answer_is_written(chat: Chat) -> None:
    page = await chat.page(ALICE)
    thread = await ask(page, "Tell me slowly.")
    shown = await partial_answer(page)
    status = await chat.session("alice", "default", thread).status()
    assert status.state == "running", "the first tokens must show before the run ends"
    assert SLOW_ANSWER.startswith(shown) and 0 < len(shown) < len(SLOW_ANSWER), shown

    await expect(page.locator("#chat")).to_contain_text(SLOW_ANSWER, timeout=WAIT_MS)
    await expect(page.locator("body")).to_have_attribute("data-running", "no", timeout=WAIT_MS)
    await expect(page.locator("#usage")).to_contain_text("1 LLM calls", timeout=WAIT_MS)
    link = page.locator("#webui-link")
    await expect(link).to_have_attribute("href", re.compile(f"/workflows/gw%2Falice%2Fdefault%2F{thread}"))
    await expect(page.locator(f'#sessions li[data-thread="{thread}"]')).to_be_visible(timeout=WAIT_MS)


async def test_approve_a_tool_call_and_edit_another_ones_arguments(chat: Chat) -> None:
    page = await chat.page(ALICE)
    await ask(page, "Multiply.", agent="approver")
    card = page.locator('.tool-call[data-call-id="call-calc"]')
    await expect(card.locator(".args")).to_contain_text('"expression": "17 * 23"', timeout=WAIT_MS)
    await card.locator("button.approve").click()
    await expect(card.locator(".result")).to_contain_text("391", timeout=WAIT_MS)
    await expect(page.locator("#chat")).to_contain_text("The calculator has answered.", timeout=WAIT_MS)

    thread = await ask(page, "Multiply, edited.", agent="approver")
    card = page.locator('.tool-call[data-call-id="call-calc"]')
    await card.locator("button.edit").click(timeout=WAIT_MS)
    await card.locator("textarea.edit-args").fill('{"expression": "6 * 7"}')
    await card.locator("button.edit").click()
    await expect(card.locator(".result")).to_contain_text("42", timeout=WAIT_MS)
    await expect(page.locator("#chat")).to_contain_text("The calculator has answered.", timeout=WAIT_MS)
    # The model's call stays as it was written; the tool ran on the edited arguments.
    context = (await chat.session("alice", "approver", thread).context()).messages
    [result] = [json.loads(m.content) for m in context if m.role == "tool"]
    assert result["result"] == 42
    assert result["note"].startswith("alice approved this call with edited arguments")


async def test_steer_interrupts_the_answer_being_written(chat: Chat) -> None:
    page = await chat.page(ALICE)
    thread = await ask(page, "Tell me at length.", agent="steerable")
    await partial_answer(page)
    await page.locator("#on-busy").select_option("steer")
    await page.locator("#steer-mode").select_option("interrupt")
    await page.locator("#message").fill("Be brief.")
    await page.locator("#send").click()

    await expect(page.locator("#chat")).to_contain_text(STEERED, timeout=WAIT_MS)
    await expect(page.locator("body")).to_have_attribute("data-running", "no", timeout=WAIT_MS)
    assert SLOW_ANSWER * 3 not in await page.locator("#chat").inner_text()
    session = chat.session("alice", "steerable", thread)
    requests = await session.requests()
    assert len(requests) == 1, "a steer joins the running request"
    assert (await session.await_result(requests[0].request_id)).result == STEERED


async def test_a_refresh_mid_answer_shows_the_answer_continuing(chat: Chat) -> None:
    page = await chat.page(ALICE)
    thread = await ask(page, "Survive a refresh.")
    before = await partial_answer(page)
    assert len(before) < len(SLOW_ANSWER)

    await page.reload()
    assert f"thread={thread}" in page.url
    live = page.locator("#live .msg.assistant .text").first
    await expect(live).not_to_be_empty(timeout=WAIT_MS)
    assert (await chat.session("alice", "default", thread).status()).state == "running"
    await expect(page.locator("#chat")).to_contain_text(SLOW_ANSWER, timeout=WAIT_MS)
    assert (await page.locator("#chat").inner_text()).count(SLOW_ANSWER) == 1, "nothing shown twice"


async def test_a_second_principal_sees_none_of_the_first_ones_sessions(chat: Chat) -> None:
    alice = await chat.page(ALICE)
    thread = await ask(alice, "Alice's secret.")
    await expect(alice.locator(f'#sessions li[data-thread="{thread}"]')).to_be_visible(timeout=WAIT_MS)

    bob = await chat.page(BOB)
    own = await ask(bob, "Bob's own.")
    await expect(bob.locator(f'#sessions li[data-thread="{own}"]')).to_be_visible(timeout=WAIT_MS)
    await expect(bob.locator(f'#sessions li[data-thread="{thread}"]')).to_have_count(0)
    for title in await bob.locator("#sessions li").evaluate_all("items => items.map(item => item.title)"):
        assert title.startswith("gw/bob/"), title
    statuses = await bob.evaluate(
        """async (thread) => {
            const headers = { Authorization: `Bearer ${localStorage.getItem("react-chat:token")}` };
            const paths = [`/api/threads/default/${thread}`, `/agui/default/threads/${thread}/events`];
            return Promise.all(paths.map(async (path) => (await fetch(path, { headers })).status));
        }""",
        thread,
    )
    assert statuses == [404, 404]
    await bob.goto(f"{chat.gateway.url}/?agent=default&thread={thread}")
    await expect(bob.locator("#agent option[data-kind=profile]")).to_have_count(
        len(PAGE_AGENTS), timeout=WAIT_MS
    )
    await expect(bob.locator("#transcript li")).to_have_count(0)
    assert "Alice's secret." not in await bob.locator("#chat").inner_text()


async def test_a_message_queued_while_busy_runs_after_the_answer(chat: Chat) -> None:
    page = await chat.page(ALICE)
    thread = await ask(page, "First question.")
    await partial_answer(page)
    await page.locator("#on-busy").select_option("enqueue")
    await page.locator("#message").fill("Second question.")
    await page.locator("#send").click()
    await expect(page.locator("#live")).to_contain_text("your message was queued", timeout=WAIT_MS)

    answers = page.locator("#transcript .msg.assistant .text")
    await expect(answers).to_have_text([SLOW_ANSWER, SLOW_ANSWER], timeout=2 * WAIT_MS)
    users = page.locator("#transcript .msg.user .text")
    await expect(users).to_have_text(["First question.", "Second question."])
    assert len(await chat.session("alice", "default", thread).requests()) == 2


async def test_fork_from_a_message_and_reset(chat: Chat) -> None:
    page = await chat.page(ALICE)
    thread = await ask(page, "Something to fork.")
    answer_item = page.locator("#transcript .msg.assistant").first
    await expect(answer_item).to_contain_text(SLOW_ANSWER, timeout=WAIT_MS)
    await answer_item.locator("button.fork").click()

    await expect(page).to_have_url(re.compile(f"thread={thread}-fork-1"), timeout=WAIT_MS)
    await expect(page.locator("#thread-title")).to_have_text(f"{thread}-fork-1", timeout=WAIT_MS)
    await expect(page.locator("#transcript")).to_contain_text("forked: the conversation so far")
    await expect(page.locator("#transcript .msg.user")).to_have_text(["Something to fork."])
    await expect(page.locator(f'#sessions li[data-thread="{thread}-fork-1"]')).to_be_visible(timeout=WAIT_MS)

    await page.locator("#reset").click()
    await expect(page.locator("#live")).to_contain_text("reset: applied", timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.note").last).to_have_text(re.compile("^context reset"))
    assert (await chat.session("alice", "default", f"{thread}-fork-1").context()).messages == []
