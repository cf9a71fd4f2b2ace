"""One Workflow Stream subscription per run, however many viewers: 50 SSE clients cost what 1 costs.

Each stream poll is an Update in the run's history; the gateway's hub polls once per run and fans
out. Two runs of the same streamed agent, one watched by 1 client and one by 50 (the POST and 49
GETs re-attaching to the thread while the answer is held back 1.5 s), have histories within 5% of
each other, and every client got the whole answer. The answer streams in one piece: how a longer
answer is cut into batches depends on timing (the delta publisher's schedule), not on viewers.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx

from tests.gateway_helpers import (
    ALICE,
    GatewayServer,
    SseEvent,
    module_gateway,
    read_sse,
    run_input,
    text_of,
)

HELD_ANSWER = "A held answer " * 20
TRIALS = 3
"""Runs of each kind. Load can only add to a run's history (a poll or a delta batch more, when events
arrive apart), never take from it: the smallest of a few runs is the run's own cost."""


gateway = module_gateway()


async def watched_run(gateway: GatewayServer, viewers: int) -> tuple[int, list[list[SseEvent]]]:
    """A run watched by `viewers` SSE clients: its history's length and what each client got."""
    thread = f"h-{uuid.uuid4().hex[:10]}"
    async with gateway.http(ALICE, limits=httpx.Limits(max_connections=None)) as http:

        async def poster() -> list[SseEvent]:
            async with http.stream("POST", "/agui/held", json=run_input(thread, f"{thread}-r")) as response:
                return await read_sse(response)

        async def watcher() -> list[SseEvent]:
            async with http.stream("GET", f"/agui/held/threads/{thread}/events") as response:
                assert response.status_code == 200
                return await read_sse(response)

        first = asyncio.create_task(poster())
        session = gateway.ctx.sessions.get(f"gw/alice/held/{thread}")
        while True:  # the others attach while the run streams
            try:
                if (await session.status()).active_request_id:
                    break
            except Exception:
                pass
            await asyncio.sleep(0.05)
        streams = await asyncio.gather(first, *(watcher() for _ in range(viewers - 1)))
    record = await session.request(f"{thread}-r")
    history = await gateway.ctx.client.get_workflow_handle(record.run_workflow_id).fetch_history()
    return len(history.events), list(streams)


async def test_fifty_viewers_cost_the_history_of_one(gateway: GatewayServer) -> None:
    started = gateway.ctx.hub.subscriptions_started
    one: list[int] = []
    fifty: list[int] = []
    for _ in range(TRIALS):
        # Side by side: both runs stream under the same load.
        (single, [alone]), (events, streams) = await asyncio.gather(
            watched_run(gateway, 1), watched_run(gateway, 50)
        )
        one.append(single)
        fifty.append(events)
        assert text_of(alone) == HELD_ANSWER
        assert len(streams) == 50 and all(text_of(s) == HELD_ANSWER for s in streams)
        assert [s[-1].event for s in streams if s[-1].type != "RUN_FINISHED"] == []
    assert gateway.ctx.hub.subscriptions_started - started == 2 * TRIALS, "one subscription per run"
    # Fifty viewers add nothing: a run's history varies by a poll or a delta batch with timing (a few
    # events either way), so the cheapest fifty-viewer run is compared with the one-viewer runs.
    assert min(fifty) <= 1.05 * max(one), f"history events: 1 viewer {one}, 50 viewers {fifty}"
