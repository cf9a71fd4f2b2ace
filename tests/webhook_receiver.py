"""A real HTTP receiver of webhooks on 127.0.0.1 that verifies every signature with `standardwebhooks`."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from standardwebhooks.webhooks import Webhook

Mode = Literal["accept", "fail", "hang", "redirect"]


@dataclass
class Received:
    """One POST the receiver got: its Standard Webhooks headers, its body, and whether it verified."""

    webhook_id: str
    body: dict[str, Any]
    verified: bool
    answered: int | None = None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""An aiohttp request handler."""


async def serve_posts(port: int, path: str, handler: Handler) -> web.AppRunner:
    """An aiohttp server on 127.0.0.1:`port` answering `POST path` with `handler` (clean it up to stop)."""
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


@dataclass
class Receiver:
    """Serves `POST /hook` on 127.0.0.1:`port` (`start`/`stop`); `mode` says how it answers."""

    port: int = field(default_factory=free_port)
    mode: Mode = "accept"
    received: list[Received] = field(default_factory=list[Received])
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def start(self) -> None:
        self._runner = await serve_posts(self.port, "/hook", self._hook)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def delivered(self) -> list[Received]:
        return [r for r in self.received if r.answered == 200]

    async def wait_for(self, count: int, *, delivered: bool = True, timeout_s: float = 60) -> list[Received]:
        """Wait until `count` POSTs arrived (answered 200, with `delivered`)."""

        async def reached() -> list[Received]:
            while True:
                got = self.delivered() if delivered else self.received
                if len(got) >= count:
                    return got
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(reached(), timeout_s)

    async def _hook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            Webhook(os.environ["REACT_WEBHOOK_SECRET"]).verify(raw, dict(request.headers))
            verified = True
        except Exception:
            verified = False
        got = Received(request.headers.get("webhook-id", ""), json.loads(raw), verified)
        self.received.append(got)
        self.arrived.set()
        if self.mode == "hang":
            await asyncio.sleep(3600)
        if self.mode == "redirect":  # to a private address: a delivery must never follow it
            got.answered = 307
            return web.Response(status=307, headers={"Location": "http://10.0.0.1/steal"})
        got.answered = 200 if self.mode == "accept" else 503
        self.arrived.set()
        return web.Response(status=got.answered)
