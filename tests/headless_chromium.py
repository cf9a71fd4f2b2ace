"""Debian's `chromium`, headless, driven over the DevTools protocol on a pipe (no extra package).

`chromium --dump-dom` with `--virtual-time-budget` never returns on the Web UI's page of a
running workflow: the UI keeps a long-poll request open, and virtual time stands still
while a request is in flight. So the tests drive the browser: open a page, read its DOM
every quarter second until it shows what the test waits for or a deadline passes.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


class HeadlessChromium:
    """One browser process; `dom(url, ready)` opens `url` in a new tab and returns its DOM."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        commands: int,
        replies: asyncio.StreamReader,
        transport: asyncio.ReadTransport,
    ) -> None:
        """Use `start()`."""
        self._process = process
        self._commands = commands
        self._replies = replies
        self._transport = transport
        self._next_id = 0

    @classmethod
    async def start(cls, profile: Path) -> HeadlessChromium:
        """Start Chromium with its user data in `profile` (its log beside it, `chromium.log`).

        Raises:
            FileNotFoundError: there is no /usr/bin/chromium (`scripts/setup.sh` installs it).
        """
        if not Path(CHROMIUM).is_file():
            raise FileNotFoundError(
                f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)"
            )
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()
        # The protocol expects its pipes on fds 3 (commands) and 4 (replies): bash moves them there.
        script = f'exec "$0" "$@" 3<&{to_browser_read} 4>&{from_browser_write}'
        log = (profile.parent / "chromium.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            "/bin/bash",  # dash cannot redirect from fds above 9
            "-c",
            script,
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            "about:blank",
            pass_fds=(to_browser_read, from_browser_write),
            stdout=log,
            stderr=log,
        )
        log.close()
        os.close(to_browser_read)
        os.close(from_browser_write)
        replies = asyncio.StreamReader(limit=64 * 1024 * 1024)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(replies), os.fdopen(from_browser_read, "rb", buffering=0)
        )
        return cls(process, to_browser_write, replies, transport)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        """Send one DevTools command and return its result (events in between are skipped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            raw = await asyncio.wait_for(self._replies.readuntil(b"\0"), timeout=60)
            reply = json.loads(raw[:-1])
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method}: {reply['error']}")
                return reply.get("result", {})

    async def dom(self, url: str, ready: Callable[[str], bool], timeout_s: float = 30) -> str:
        """The DOM of `url` as soon as `ready(dom)` holds, else the last one read after `timeout_s`."""
        target = (await self.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = (await self.send("Target.attachToTarget", {"targetId": target, "flatten": True}))[
            "sessionId"
        ]
        try:
            await self.send("Page.navigate", {"url": url}, session)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while True:
                evaluated = await self.send(
                    "Runtime.evaluate",
                    {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                    session,
                )
                dom: str = evaluated["result"].get("value", "")
                if ready(dom) or loop.time() > deadline:
                    return dom
                await asyncio.sleep(0.25)
        finally:
            await self.send("Target.closeTarget", {"targetId": target})

    async def close(self) -> None:
        """Close the browser (killed if it does not exit within 10 s)."""
        try:
            await self.send("Browser.close")
        except (RuntimeError, OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        os.close(self._commands)
        self._transport.close()
        try:
            await asyncio.wait_for(self._process.wait(), timeout=10)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
