"""The Temporal Web UI tells a run's and a session's story, read in a real browser.

A dev server started by the product (`hosting.dev_server.ensure_dev_server`, the one
`worker.py --dev` starts, Web UI on) on free ports, a real worker, runs and a session
started through the typed client, and Debian's `chromium`, headless, showing the UI's
pages (`tests/headless_chromium.py`): the static summary and details, the current details
(the UI asks the worker for them) and every activity's summary must be on the page.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import pytest_asyncio
from temporalio.client import Client

from client import AgentConfig, RunHandle, Runs, Sessions
from contracts.limits import KIB
from hosting.data_converter import build_data_converter
from hosting.dev_server import ensure_dev_server
from payloads.blob_store import BlobStore
from payloads.settings import load_settings
from tests.agent_tools import registry_for_tests
from tests.headless_chromium import HeadlessChromium
from tests.helpers import call, turn
from worker import build_worker

REPO = Path(__file__).resolve().parents[1]
CLAIM_CHECK_THRESHOLD = 16 * KIB  # this file's clients only: a 20,000-character query goes to the store
QUERY = "What is 17 * 23?  Show   your work."
SUMMARY = "scripted: What is 17 * 23? Show your work."
FIELDS = ("summary", "details", "current-details")


@dataclass(frozen=True)
class WebUI:
    """A dev server with its Web UI, a worker polling `task_queue` on it, and a browser."""

    client: Client
    task_queue: str
    base_url: str
    browser: HeadlessChromium
    pages: Path

    async def page(self, workflow_id: str, tab: str, ready: Callable[[PageText], bool]) -> PageText:
        """A tab (`history`, `user-metadata`, ...) of the workflow's latest run, once `ready` holds.

        After 30 s without `ready`, the page as it is then (the test's assertions say what is missing).
        """
        run_id = (await self.client.get_workflow_handle(workflow_id).describe()).run_id
        url = f"{self.base_url}/namespaces/default/workflows/{workflow_id}/{run_id}/{tab}"
        saved = self.pages / f"{workflow_id}-{tab}-{uuid.uuid4().hex[:6]}.html"
        dom = await self.browser.dom(url, lambda dom: ready(PageText.of(dom, saved)))
        saved.write_text(dom)  # for whoever reads a failure: the page as the browser built it
        return PageText.of(dom, saved)


class PageText(HTMLParser):
    """The visible text of a page (one string per text node) and the `src` of its iframes, by id."""

    def __init__(self, saved: Path) -> None:
        super().__init__()
        self.saved = saved
        self.texts: list[str] = []
        self.iframes: dict[str, str] = {}
        self._skipping = 0

    @classmethod
    def of(cls, dom: str, saved: Path) -> PageText:
        """Parse `dom` (saved at `saved`)."""
        page = cls(saved)
        page.feed(dom)
        page.close()
        return page

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skipping += 1
        found = dict(attrs)
        if tag == "iframe" and found.get("id"):
            self.iframes[found["id"] or ""] = found.get("src") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping and data.strip():
            self.texts.append(data.strip())

    def after(self, label: str) -> list[str]:
        """Every text right after a text equal to `label` (the UI's field layout: label, then value)."""
        return [value for name, value in zip(self.texts, self.texts[1:], strict=False) if name == label]

    def rendered(self, field: str) -> str:
        """The Markdown the user-metadata tab renders for `summary`, `details` or `current-details`.

        The UI renders each in an iframe whose `src` carries the Markdown (`/render?content=...`);
        "" when there is none (yet).
        """
        src = self.iframes.get(f"user-metadata-{field}", "")
        return parse_qs(urlparse(src).query).get("content", [""])[0]

    def user_metadata(self, field: str) -> str:
        """`rendered(field)`, which must not be empty."""
        content = self.rendered(field)
        assert content, f"no {field} on the page (saved at {self.saved})"
        return content


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def until_ui_answers(base_url: str) -> None:
    host, port = urlparse(base_url).netloc.split(":")
    for _ in range(100):
        try:
            _, writer = await asyncio.open_connection(host, int(port))
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError(f"the Web UI did not answer on {base_url}")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def web_ui(tmp_path_factory: pytest.TempPathFactory, store: BlobStore) -> AsyncIterator[WebUI]:
    folder = tmp_path_factory.mktemp("web-ui")
    address, ui_port = f"127.0.0.1:{free_port()}", free_port()
    server = await ensure_dev_server(address, db_file=folder / "dev.db", ui_port=ui_port)
    assert server is not None, f"a server already answered on {address}"
    try:
        settings = replace(load_settings(), payload_threshold=CLAIM_CHECK_THRESHOLD)
        client = await Client.connect(address, data_converter=build_data_converter(settings, store=store))
        queue = f"web-ui-{uuid.uuid4().hex[:8]}"
        worker = build_worker(
            client, task_queue=queue, registry=registry_for_tests(), store=store, max_cached_workflows=0
        )
        base_url = f"http://127.0.0.1:{ui_port}"
        await until_ui_answers(base_url)
        browser = await HeadlessChromium.start(folder / "chromium-profile")
        try:
            async with worker:
                yield WebUI(client, queue, base_url, browser, folder)
        finally:
            await browser.close()
    finally:
        server.terminate()
        await asyncio.to_thread(server.wait, 30)


def summaries(count: int) -> Callable[[PageText], bool]:
    """Ready once the history shows `count` summaries (the start's and its activities')."""
    return lambda page: len(page.after("Summary")) >= count


def metadata_of(*fields: str) -> Callable[[PageText], bool]:
    """Ready once the user-metadata tab renders these fields (the current details come from the worker)."""
    return lambda page: all(page.rendered(field) for field in fields)


def agent(*turns: Any, **fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"model": "scripted", "script": list(turns), **fields})


async def until_tool_started(run: RunHandle) -> None:
    for _ in range(300):
        if any(event.kind == "tool_started" for event in (await run.trace()).events):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the run's tool call did not start")


async def test_a_runs_page_shows_its_summary_details_and_every_activity(web_ui: WebUI) -> None:
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    script = agent(
        turn(tool_calls=[call("calculator", {"expression": "17 * 23"})]),
        turn("17 * 23 = 391."),
        tools=["calculator"],
    )
    run = await runs.start(QUERY, script, workflow_id=f"web-ui-run-{uuid.uuid4().hex[:8]}")
    assert (await run.result()).result == "17 * 23 = 391."

    history = await web_ui.page(run.workflow_id, "history", summaries(4))
    # Newest event first: the second LLM call, the tool call, the first LLM call, the start.
    assert history.after("Summary") == [
        "llm scripted #2",
        "tool calculator call_0_0",
        "llm scripted #1",
        SUMMARY,
    ], f"saved at {history.saved}"
    assert history.after("Activity Type") == ["llm_call", "run_tool", "llm_call"]

    metadata = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert metadata.user_metadata("summary") == SUMMARY
    assert metadata.user_metadata("details") == (
        "**model** `scripted` · **tools** calculator · **max iterations** 10\n\n"
        "**query** What is 17 * 23? Show your work."
    )
    assert metadata.user_metadata("current-details") == (
        "status: completed · iteration 2/10 · model scripted · termination: final_answer"
    )


async def start_slow_tool(web_ui: WebUI) -> RunHandle:
    """A run whose first tool call (`slow`) takes two minutes: it is under way when this returns."""
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    script = agent(turn(tool_calls=[call("slow", {"seconds": 120})]), tools=["slow"], tool_timeout_s=300)
    run = await runs.start("Take your time.", script, workflow_id=f"web-ui-slow-{uuid.uuid4().hex[:8]}")
    await until_tool_started(run)
    return run


async def test_the_current_details_follow_the_run(web_ui: WebUI) -> None:
    run = await start_slow_tool(web_ui)
    during = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert during.user_metadata("current-details").startswith(
        "status: running · iteration 1/10 · model scripted"
    )
    pending = await web_ui.page(run.workflow_id, "history", summaries(3))
    assert pending.after("Summary") == ["tool slow call_0_0", "llm scripted #1", "scripted: Take your time."]

    assert (await run.cancel("enough")).status == "accepted"
    assert (await run.result()).status == "cancelled"
    after = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert after.user_metadata("current-details") == (
        "status: cancelled · iteration 1/10 · model scripted · termination: cancelled"
    )


async def test_the_current_details_name_the_tools_being_called(web_ui: WebUI) -> None:
    run = await start_slow_tool(web_ui)
    try:
        during = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
        assert during.user_metadata("current-details") == (
            "status: running · iteration 1/10 · model scripted · tools: slow"
        )
    finally:
        await run.cancel("test over")


async def test_a_claim_checked_input_still_has_its_summary(web_ui: WebUI) -> None:
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    report = "Summarise this report: " + "quarterly revenue grew in every region " * 500
    run = await runs.start(
        report, agent(turn("Revenue grew.")), workflow_id=f"web-ui-big-{uuid.uuid4().hex[:8]}"
    )
    assert (await run.result()).result == "Revenue grew."

    history = await web_ui.page(run.workflow_id, "history", summaries(2))
    started_summary = history.after("Summary")[-1]
    assert started_summary.startswith("scripted: Summarise this report: quarterly revenue grew")
    assert started_summary.endswith("…") and len(started_summary) <= len("scripted: ") + 80
    # The input and the result are in the payload store; the page shows their references.
    assert int(history.after("External Payloads")[0]) >= 2, f"saved at {history.saved}"
    page_text = " ".join(history.texts)
    assert '"driverName" : "react.payload-store"' in page_text, f"saved at {history.saved}"
    digest = re.findall(r'"claimData" : \{ "sha256" : "([0-9a-f]{64})"', page_text)[0]

    # What the docs tell an operator to do with the digest the page shows.
    shown = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        "payload",
        digest,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(shown.communicate(), timeout=60)
    assert shown.returncode == 0, err.decode()
    assert json.loads(out)["query"] == report


async def test_a_sessions_page_and_its_runs_page(web_ui: WebUI) -> None:
    sessions = Sessions(web_ui.client, task_queue=web_ui.task_queue)
    session = sessions.get(f"web-ui-session-{uuid.uuid4().hex[:8]}")
    script = agent(
        turn(tool_calls=[call("calculator", {"expression": "2 + 2"})]), turn("Four."), tools=["calculator"]
    )
    accepted = await session.ask("What is 2 + 2?", config=script, agent_id="helpdesk")
    assert (await session.await_result(accepted.request_id)).result == "Four."

    metadata = await web_ui.page(session.workflow_id, "user-metadata", metadata_of("summary", "details"))
    assert metadata.user_metadata("summary") == "session helpdesk · scripted: What is 2 + 2?"
    assert metadata.user_metadata("details").startswith("**agent** helpdesk\n\n**model** `scripted`")

    # The session's history: its start, then each ask's run, by the summary the session gives it.
    history = await web_ui.page(session.workflow_id, "history", summaries(2))
    assert history.after("Summary") == [
        "scripted: What is 2 + 2?",
        "session helpdesk · scripted: What is 2 + 2?",
    ], f"saved at {history.saved}"

    child = await web_ui.page(accepted.run_workflow_id, "history", summaries(4))
    assert child.after("Summary") == [
        "llm scripted #2",
        "tool calculator call_0_0",
        "llm scripted #1",
        "scripted: What is 2 + 2?",
    ], f"saved at {child.saved}"
