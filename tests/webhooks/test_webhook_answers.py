"""How a receiver's answer ends an attempt: a bounded read of any body, 410 Gone, a name that does not exist.

A real dev server and worker run `DeliverWebhook` workflows against a real HTTP server on
127.0.0.1 (the tests' allow-list) that streams its answers lazily, so an endless body costs the
server nothing and shows how much of it the delivery read.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
import pytest_asyncio
from aiohttp import web
from temporalio.client import Client

from contracts.webhooks import (
    DELIVERY_WORKFLOW_TYPE,
    WebhookBody,
    WebhookData,
    WebhookDelivery,
    WebhookOutcome,
)
from tests.webhook_receiver import free_port, serve_posts

HUGE_BYTES = 256 * 1024 * 1024
_CHUNK = b"x" * 65_536


@dataclass
class Streamer:
    """Serves `POST /<status>`: that status with a `HUGE_BYTES` body written chunk by chunk."""

    port: int = field(default_factory=free_port)
    sent: list[int] = field(default_factory=list[int])
    _runner: web.AppRunner | None = None

    def url(self, status: int) -> str:
        return f"http://127.0.0.1:{self.port}/{status}"

    async def start(self) -> None:
        self._runner = await serve_posts(self.port, "/{status}", self._answer)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(status=int(request.match_info["status"]))
        response.content_length = HUGE_BYTES
        await response.prepare(request)
        sent = 0
        try:
            while sent < HUGE_BYTES:
                await response.write(_CHUNK)
                sent += len(_CHUNK)
        except (ConnectionError, RuntimeError):
            pass  # the delivery closed the connection: what it did not read was never sent
        self.sent.append(sent)
        return response


@pytest_asyncio.fixture(loop_scope="session")
async def streamer() -> AsyncIterator[Streamer]:
    serving = Streamer()
    await serving.start()
    yield serving
    await serving.stop()


async def deliver(client: Client, task_queue: str, url: str, timeout_s: float = 60) -> WebhookOutcome:
    """Run one `DeliverWebhook` to `url` and wait for its outcome."""
    delivery_id = f"test-delivery-{uuid.uuid4().hex[:10]}"
    body = WebhookBody(
        type="request.completed",
        timestamp=datetime.now(UTC),
        data=WebhookData(agent="a", thread_id="t", request_id="r", status="completed", answer="ok"),
    )
    handle = await client.start_workflow(
        DELIVERY_WORKFLOW_TYPE,
        WebhookDelivery(url=url, webhook_id=delivery_id, body=body),
        id=delivery_id,
        task_queue=task_queue,
        result_type=WebhookOutcome,
    )
    return await asyncio.wait_for(handle.result(), timeout_s)


async def test_a_huge_answer_is_never_read_past_a_small_prefix_on_success_nor_on_retries(
    client: Client, task_queue: str, streamer: Streamer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_WEBHOOK_GIVE_UP_S", "3")
    # What the receiver managed to send is the measure of what the delivery read (tracemalloc
    # would measure it too, but starting and stopping it while the worker's threads allocate
    # crashes CPython 3.11: python/cpython#128679, fixed only from 3.12.9).
    delivered = await deliver(client, task_queue, streamer.url(200))
    retried = await deliver(client, task_queue, streamer.url(500))
    assert delivered.delivered and delivered.status_code == 200
    assert not retried.delivered and retried.attempts >= 2 and "answered 500: xxx" in (retried.reason or "")
    assert len(streamer.sent) == 1 + retried.attempts
    assert max(streamer.sent) < 32 * 1024 * 1024  # 256 MiB answers, cut after what the sockets buffer


async def test_410_gone_and_a_name_that_does_not_exist_end_the_delivery_at_once(
    client: Client, task_queue: str, streamer: Streamer
) -> None:
    gone = await deliver(client, task_queue, streamer.url(410), timeout_s=20)
    assert not gone.delivered and gone.attempts == 1 and "410" in (gone.reason or "")
    assert "Gone" in (gone.reason or "")
    missing = await deliver(client, task_queue, "https://no-such-receiver.invalid/hook", timeout_s=20)
    assert not missing.delivered and missing.attempts == 1
    assert "no-such-receiver.invalid does not resolve" in (missing.reason or "")
