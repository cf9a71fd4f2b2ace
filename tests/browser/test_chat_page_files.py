"""The chat page's files and branches in a real browser (Debian's chromium, Playwright), on a real gateway.

Files: an image chosen with the Attach button, dropped onto the composer or pasted into the message
is uploaded (`POST /api/files`), shown as a chip with its thumbnail, and sent as an AG-UI media
part naming the file; the scripted model's `describe_input` turn answers what it received, so the
test compares the bytes' SHA-256. The thumbnail shows again after a reload (fetched with the bearer
token) and the download link gives the same bytes. A refused file is named in the error area and
nothing is asked. Branches: editing an earlier message, or regenerating the last answer, makes a
branch of the family that the page opens; "2 / 2" (its arrows) moves between it and the original, which
stays as it was. The gateway runs in-process (`tests.gateway_helpers`) with a small file limit.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest_asyncio
from playwright.async_api import Browser, FilePayload, Locator, Page, Route, expect

from contracts import ScriptTurn
from settings.attachment_policy import AttachmentPolicy
from testing import AgentTestEnvironment, scripted_agent
from tests.attachment_delivery import png
from tests.browser_helpers import chromium
from tests.gateway_helpers import ALICE, TEST_TOKENS, GatewayServer, running_gateway

WAIT_MS = 60_000
MAX_BYTES = 64 * 1024
AGENTS = MappingProxyType({"default": scripted_agent(ScriptTurn(describe_input=True), stream=True)})


@dataclass(frozen=True)
class Image:
    """A real PNG a test attaches: its name, bytes, and width in pixels."""

    name: str
    data: bytes

    @property
    def sha256(self) -> str:
        """The digest of its bytes."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def width(self) -> int:
        """Its width, from its IHDR chunk."""
        return struct.unpack(">I", self.data[16:20])[0]

    def payload(self) -> FilePayload:
        """As Playwright's `set_input_files` takes it."""
        return {"name": self.name, "mimeType": "image/png", "buffer": self.data}

    def js(self) -> dict[str, str]:
        """As the page's script below builds a `File` of it."""
        return {"name": self.name, "type": "image/png", "base64": base64.b64encode(self.data).decode()}


def image(name: str, seed: int) -> Image:
    """A small PNG of noise (its own bytes for each seed)."""
    return Image(name, png(3_000, seed=seed))


@dataclass
class Files:
    gateway: GatewayServer
    browser: Browser

    async def page(self) -> Page:
        """A fresh browser context's chat page, signed in as alice, on a new chat."""
        page = await (await self.browser.new_context(accept_downloads=True)).new_page()
        page.on("pageerror", lambda error: print(f"page error: {error}"))
        page.on("response", lambda r: print(f"{r.status} {r.request.method} {r.url}"))
        await page.goto(self.gateway.url + "/")
        await page.locator("#token").fill(ALICE)
        await page.locator("#token").press("Enter")
        await page.locator("#token").blur()
        await expect(page.locator("#agent option[data-kind=profile]")).to_have_count(
            len(AGENTS), timeout=WAIT_MS
        )
        await expect(page.locator("#send")).to_be_enabled(timeout=WAIT_MS)
        await page.locator("#new-chat").click()
        return page

    async def thread(self, thread: str) -> dict[str, Any] | None:
        """`GET /api/threads/default/{thread}` as alice (None: no such thread)."""
        async with self.gateway.http(ALICE) as http:
            response = await http.get(f"/api/threads/default/{thread}")
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        return response.json()

    async def family(self, thread: str) -> dict[str, Any]:
        """`GET /api/threads/default/{thread}/branches` as alice."""
        async with self.gateway.http(ALICE) as http:
            response = await http.get(f"/api/threads/default/{thread}/branches")
        assert response.status_code == 200, response.text
        return response.json()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def files(agents: AgentTestEnvironment) -> AsyncIterator[Files]:
    policy = AttachmentPolicy(max_bytes=MAX_BYTES)
    async with (
        running_gateway(agents, AGENTS, tokens=TEST_TOKENS, attachments=policy) as gateway,
        chromium() as browser,
    ):
        yield Files(gateway, browser)


def thread_of(page: Page) -> str:
    found = re.search(r"thread=([A-Za-z0-9_.-]+)", page.url)
    assert found, page.url
    return found.group(1)


async def send(page: Page, text: str) -> None:
    """Send `text` (with the files pending) and wait until its answer is in the transcript."""
    answers = await page.locator("#transcript .msg.assistant").count()
    await page.locator("#message").fill(text)
    await page.locator("#send").click()
    await expect(page.locator("#transcript .msg.assistant")).to_have_count(answers + 1, timeout=WAIT_MS)
    await expect(page.locator("body")).to_have_attribute("data-running", "no", timeout=WAIT_MS)


async def seen_by_model(answer: Locator) -> list[dict[str, Any]]:
    """The last user message's parts as the model received them (a `describe_input` answer)."""
    described = json.loads(await answer.locator(".text").inner_text())
    return [m for m in described if m["role"] == "user"][-1]["parts"]


def images_in(parts: list[dict[str, Any]]) -> list[str]:
    return [p["sha256"] for p in parts if p["kind"] == "image"]


def texts_in(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if p["kind"] == "text"]


async def expect_thumbnail(item: Locator, shown: Image) -> None:
    """`item` shows `shown`'s thumbnail, decoded (a broken image has no width)."""
    chip = item.locator(".file", has_text=shown.name)
    await expect(chip.locator("img.thumb")).to_have_js_property("naturalWidth", shown.width, timeout=WAIT_MS)


async def test_an_attached_image_reaches_the_model_and_shows_again_after_a_reload(
    files: Files, tmp_path: Path
) -> None:
    page = await files.page()
    dot = image("dot.png", seed=11)
    await page.locator("#files").set_input_files([dot.payload()])  # what the Attach button opens
    pending = page.locator("#attachments .file")
    await expect(pending).to_have_count(1, timeout=WAIT_MS)
    await expect(pending.locator(".name")).to_have_text("dot.png")
    await expect(pending.locator(".size")).to_have_text(f"{len(dot.data) / 1024:.1f} KiB")
    await expect_thumbnail(page.locator("#attachments"), dot)

    await page.locator("#message").fill("What is in the picture?")
    await page.locator("#send").click()
    await expect(page.locator("#attachments")).to_be_hidden()
    await expect_thumbnail(page.locator("#live .msg.user"), dot)  # while it is being answered
    answer = page.locator("#transcript .msg.assistant").first
    await expect(answer).to_contain_text("sha256", timeout=WAIT_MS)
    parts = await seen_by_model(answer)
    assert images_in(parts) == [dot.sha256], parts
    assert "What is in the picture?" in texts_in(parts)

    thread = thread_of(page)
    saved = await files.thread(thread)
    assert saved is not None
    [user] = [m for m in saved["messages"] if m.get("role") == "user"]
    assert [(a["name"], a["media_type"], a["sha256"]) for a in user["attachments"]] == [
        ("dot.png", "image/png", dot.sha256)
    ]

    await page.reload()
    await expect(page.locator("#transcript .msg.user")).to_have_count(1, timeout=WAIT_MS)
    user_item = page.locator("#transcript .msg.user").first
    await expect_thumbnail(user_item, dot)
    assert (await user_item.locator("img.thumb").get_attribute("src") or "").startswith("blob:")
    link = user_item.locator(".file a.download")
    await expect(link).to_have_attribute("download", "dot.png")
    async with page.expect_download(timeout=WAIT_MS) as downloading:
        await link.click()
    download = await downloading.value
    assert download.suggested_filename == "dot.png"
    target = tmp_path / "dot.png"
    await download.save_as(target)
    assert target.read_bytes() == dot.data


DROP_AND_PASTE = """async ([where, files, kind]) => {
    const transfer = new DataTransfer();
    for (const f of files) {
        const bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        transfer.items.add(new File([bytes], f.name, { type: f.type }));
    }
    const target = document.querySelector(where);
    if (kind === "paste") {
        const init = { clipboardData: transfer, bubbles: true, cancelable: true };
        target.dispatchEvent(new ClipboardEvent("paste", init));
        return;
    }
    for (const type of ["dragenter", "dragover", "drop"]) {
        const init = { dataTransfer: transfer, bubbles: true, cancelable: true };
        target.dispatchEvent(new DragEvent(type, init));
    }
}"""


async def test_a_dropped_image_and_a_pasted_one_are_sent_with_the_message(files: Files) -> None:
    page = await files.page()
    dropped, pasted = image("dropped.png", seed=21), image("pasted.png", seed=22)
    await page.evaluate(DROP_AND_PASTE, ["#composer", [dropped.js()], "drop"])
    await expect(page.locator("#attachments .file")).to_have_count(1, timeout=WAIT_MS)
    await page.evaluate(DROP_AND_PASTE, ["#message", [pasted.js()], "paste"])
    await expect(page.locator("#attachments .file .name")).to_have_text(["dropped.png", "pasted.png"])
    await expect_thumbnail(page.locator("#attachments"), dropped)
    await expect_thumbnail(page.locator("#attachments"), pasted)
    await expect(page.locator("#message")).to_have_value("")  # a pasted file is no text

    # One removed before sending: only the other is sent.
    await page.locator("#attachments .file", has_text="dropped.png").locator("button.remove").click()
    await expect(page.locator("#attachments .file .name")).to_have_text(["pasted.png"])
    await page.evaluate(
        DROP_AND_PASTE, ["#transcript", [dropped.js()], "drop"]
    )  # the transcript takes drops too
    await expect(page.locator("#attachments .file .name")).to_have_text(["pasted.png", "dropped.png"])
    await send(page, "Two pictures.")
    parts = await seen_by_model(page.locator("#transcript .msg.assistant").first)
    assert images_in(parts) == [pasted.sha256, dropped.sha256], parts
    user = page.locator("#transcript .msg.user").first
    await expect(user.locator(".file .name")).to_have_text(["pasted.png", "dropped.png"])
    await expect_thumbnail(user, pasted)
    await expect_thumbnail(user, dropped)


async def test_a_refused_file_is_named_and_nothing_is_sent(files: Files) -> None:
    page = await files.page()
    thread = thread_of(page)
    fake: FilePayload = {"name": "fake.png", "mimeType": "image/png", "buffer": b"this is no picture at all"}
    await page.locator("#files").set_input_files([fake])
    await expect(page.locator("#error")).to_contain_text("media_type_mismatch", timeout=WAIT_MS)
    big = Image("big.png", png(MAX_BYTES * 2, seed=31))
    assert len(big.data) > MAX_BYTES
    await page.locator("#files").set_input_files([big.payload()])
    await expect(page.locator("#error")).to_contain_text("payload_too_large", timeout=WAIT_MS)
    await expect(page.locator("#attachments .file")).to_have_count(0)

    # A file still uploading when Send is pressed, then refused: the message is not sent, its text stays.
    uploading, release = asyncio.Event(), asyncio.Event()

    async def hold(route: Route) -> None:
        uploading.set()
        await release.wait()
        await route.continue_()

    await page.route(re.compile(r"/api/files\?"), hold)
    await page.locator("#files").set_input_files([fake])
    await asyncio.wait_for(uploading.wait(), WAIT_MS / 1000)
    await page.locator("#message").fill("Look at this.")
    await page.locator("#send").click()
    release.set()
    await expect(page.locator("#error")).to_contain_text("media_type_mismatch", timeout=WAIT_MS)
    await expect(page.locator("#message")).to_have_value("Look at this.")
    await expect(page.locator("#live .msg")).to_have_count(0)
    await page.unroute(re.compile(r"/api/files\?"))
    assert await files.thread(thread) is None, "nothing was asked"


async def test_edit_an_earlier_message_opens_a_branch_and_the_arrows_go_back(files: Files) -> None:
    page = await files.page()
    await send(page, "First question.")
    photo = image("photo.png", seed=41)
    await page.locator("#files").set_input_files([photo.payload()])
    await expect(page.locator("#attachments .file")).to_have_count(1, timeout=WAIT_MS)
    await send(page, "Second question.")
    original = thread_of(page)
    first_answer = await page.locator("#transcript .msg.assistant .text").nth(1).inner_text()

    second = page.locator('#transcript .msg.user[data-seq="2"]')
    await second.locator("button.edit").click()
    await second.locator("textarea.editor").fill("Second question, edited.")
    await second.locator("button.save").click()

    branch = f"{original}-fork-1"
    await expect(page).to_have_url(re.compile(f"thread={re.escape(branch)}$"), timeout=WAIT_MS)
    answer = page.locator("#transcript .msg.assistant").last
    await expect(answer).to_contain_text("Second question, edited.", timeout=WAIT_MS)
    await expect(page.locator("body")).to_have_attribute("data-running", "no", timeout=WAIT_MS)
    parts = await seen_by_model(answer)
    assert texts_in(parts)[0] == "Second question, edited."
    assert images_in(parts) == [photo.sha256], "the edited message keeps its files"
    edited = page.locator("#transcript .msg.user", has_text="Second question, edited.")
    await expect_thumbnail(edited, photo)
    await expect(edited.locator(".branch-nav .position")).to_have_text("2 / 2", timeout=WAIT_MS)
    listed = await files.family(original)
    assert [(b["kind"], b["thread_id"]) for b in listed["branches"]] == [("root", original), ("edit", branch)]

    await edited.locator(".branch-nav button.prev").click()
    await expect(page).to_have_url(re.compile(f"thread={re.escape(original)}$"), timeout=WAIT_MS)
    back = page.locator('#transcript .msg.user[data-seq="2"]')
    await expect(back.locator(".text")).to_have_text("Second question.", timeout=WAIT_MS)
    await expect(back.locator(".branch-nav .position")).to_have_text("1 / 2")
    await expect(page.locator("#transcript .msg.assistant .text").nth(1)).to_have_text(first_answer)
    assert "Second question, edited." not in await page.locator("#transcript").inner_text()

    await back.locator(".branch-nav button.next").click()
    await expect(page).to_have_url(re.compile(f"thread={re.escape(branch)}$"), timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.user", has_text="Second question, edited.")).to_have_count(
        1, timeout=WAIT_MS
    )

    # A message sent from the original goes where the gateway sends it, the newest branch: it opens.
    await (
        page.locator("#transcript .msg.user", has_text="Second question, edited.")
        .locator("button.prev")
        .click()
    )
    await expect(page).to_have_url(re.compile(f"thread={re.escape(original)}$"), timeout=WAIT_MS)
    await expect(page.locator("#transcript .branch-nav .position")).to_have_text("1 / 2", timeout=WAIT_MS)
    await page.locator("#message").fill("Third question.")
    await page.locator("#send").click()
    await expect(page).to_have_url(re.compile(f"thread={re.escape(branch)}$"), timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.user .text").last).to_have_text(
        "Third question.", timeout=WAIT_MS
    )
    kept = await files.thread(original)
    assert kept is not None and kept["requests"] == 2, "the original is unchanged"


async def test_regenerate_opens_a_branch_and_the_first_answer_stays_readable(files: Files) -> None:
    page = await files.page()
    await send(page, "Answer me twice.")
    original = thread_of(page)
    first = page.locator("#transcript .msg.assistant").last
    await first.locator("button.regenerate").click()

    branch = f"{original}-fork-1"
    await expect(page).to_have_url(re.compile(f"thread={re.escape(branch)}$"), timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.assistant")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.locator("body")).to_have_attribute("data-running", "no", timeout=WAIT_MS)
    asked = page.locator("#transcript .msg.user")
    await expect(asked.locator(".text")).to_have_text(["Answer me twice."])
    await expect(asked.locator(".branch-nav .position")).to_have_text("2 / 2", timeout=WAIT_MS)
    made = await files.thread(branch)
    assert made is not None and made["requests"] == 1, "the branch asked the message again"
    [regenerated] = (await files.family(original))["branches"][1:]
    assert (regenerated["kind"], regenerated["thread_id"]) == ("regenerate", branch)

    await asked.locator(".branch-nav button.prev").click()
    await expect(page).to_have_url(re.compile(f"thread={re.escape(original)}$"), timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.assistant")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.locator("#transcript .msg.assistant .text")).to_contain_text("Answer me twice.")
    kept = await files.thread(original)
    assert kept is not None and kept["requests"] == 1, "the original is unchanged"


async def test_sessions_show_their_title_and_when_last_used(files: Files) -> None:
    # Each thread is listed by its title (its first message's first line, or the name given to it)
    # and when it was last used, as the gateway's listing gives them.
    page = await files.page()
    await send(page, "Plan the trip to Lisbon.")
    first = thread_of(page)
    await page.locator("#new-chat").click()
    await send(page, "Untitled?")
    second = thread_of(page)
    async with files.gateway.http(ALICE) as http:
        renamed = await http.put(f"/api/threads/default/{second}/title", json={"title": "Named by hand"})
        assert renamed.status_code == 200, renamed.text
        listed: dict[str, dict[str, Any]] = {}
        for _ in range(100):  # the memo reaches visibility a moment later
            listed = {t["thread_id"]: t for t in (await http.get("/api/threads")).json()["threads"]}
            if listed.get(first, {}).get("title") and listed.get(second, {}).get("title") == "Named by hand":
                break
            await asyncio.sleep(0.1)
    assert listed[first]["title"] == "Plan the trip to Lisbon." and listed[first]["last_used_at"]
    await page.reload()
    item = page.locator(f'#sessions li[data-thread="{first}"]')
    await expect(item).to_contain_text("Plan the trip to Lisbon.", timeout=WAIT_MS)
    shown = await page.evaluate("(at) => new Date(at).toLocaleString()", listed[first]["last_used_at"])
    await expect(item.locator(".state")).to_have_text(shown)
    other = page.locator(f'#sessions li[data-thread="{second}"]')
    await expect(other).to_contain_text("Named by hand")
