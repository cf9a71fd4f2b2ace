"""The Web UI tests' set-up: a dev server with the UI, a worker, the UI's pages read in headless chromium.

The browser is Debian's chromium driven by Playwright (`tests/browser_helpers.py`). The tests read each
page's DOM every quarter second until it shows what they wait for: the UI keeps a long-poll
request open on a running workflow's page, so "the page has loaded" never quite happens.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import pytest_asyncio
from playwright.async_api import Browser
from temporalio.client import Client

from client import AgentConfig, RunHandle
from contracts.limits import KIB
from hosting.data_converter import build_data_converter
from hosting.dev_server import ensure_dev_server
from payloads.blob_store import BlobStore
from settings.deployment import load_settings
from tests.agent_tools import registry_for_tests
from tests.browser_helpers import chromium
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
    browser: Browser
    pages: Path

    async def page(self, workflow_id: str, tab: str, ready: Callable[[PageText], bool]) -> PageText:
        """A tab (`history`, `user-metadata`, ...) of the workflow's latest run, once `ready` holds.

        After 30 s without `ready`, the page as it is then (the test's assertions say what is missing).
        """
        run_id = (await self.client.get_workflow_handle(workflow_id).describe()).run_id
        url = f"{self.base_url}/namespaces/default/workflows/{workflow_id}/{run_id}/{tab}"
        saved = self.pages / f"{workflow_id}-{tab}-{uuid.uuid4().hex[:6]}.html"
        dom = await self.dom(url, lambda dom: ready(PageText.of(dom, saved)))
        saved.write_text(dom)  # for whoever reads a failure: the page as the browser built it
        return PageText.of(dom, saved)

    async def dom(self, url: str, ready: Callable[[str], bool], timeout_s: float = 30) -> str:
        """The DOM of `url` in a new tab once `ready(dom)` holds, else the last one read after `timeout_s`."""
        tab = await self.browser.new_page()
        try:
            await tab.goto(url, wait_until="commit")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while True:
                dom = await tab.content()
                if ready(dom) or loop.time() > deadline:
                    return dom
                await asyncio.sleep(0.25)
        finally:
            await tab.close()


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
        async with chromium() as browser, worker:
            yield WebUI(client, queue, base_url, browser, folder)
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
