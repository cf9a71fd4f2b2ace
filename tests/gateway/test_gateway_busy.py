"""A second message to a busy thread gets the session's own answer through AG-UI `forwardedProps`.

Refused (`busy`, `stale`): a CUSTOM `ask_refused` naming the code, then RUN_ERROR with it, and
nothing is asked. Enqueued: CUSTOM `ask` says `queued`, then its own answer once the first ends.
Steered: CUSTOM `ask` says `steered`, then the running request's answer from the steer on.
"""

from __future__ import annotations

import asyncio
import uuid

from tests.gateway_helpers import (
    ALICE,
    GatewayServer,
    SseEvent,
    agui_run,
    module_gateway,
    read_sse,
    run_input,
    text_of,
)

gateway = module_gateway()


def _custom(events: list[SseEvent], name: str) -> dict[str, object]:
    return next(e.event["value"] for e in events if e.type == "CUSTOM" and e.event["name"] == name)


async def _busy_thread(gateway: GatewayServer, agent: str) -> tuple[str, asyncio.Task[list[SseEvent]]]:
    """A thread whose first run is streaming (its whole stream is read by the returned task)."""
    thread = f"b-{uuid.uuid4().hex[:10]}"
    started = asyncio.Event()

    async def first() -> list[SseEvent]:
        async with gateway.http(ALICE) as http:
            body = run_input(thread, f"{thread}-first", "Tell me slowly")
            async with http.stream("POST", f"/agui/{agent}", json=body) as response:
                lines = response.aiter_lines()
                head = await read_sse(lines, stop_after=4)
                started.set()
                return head + await read_sse(lines)

    task = asyncio.create_task(first())
    await started.wait()
    return thread, task


async def test_a_busy_thread_refuses_by_reason_code_and_asks_nothing(gateway: GatewayServer) -> None:
    thread, first = await _busy_thread(gateway, "slow")
    async with gateway.http(ALICE) as http:
        busy = await agui_run(http, run_input(thread, f"{thread}-2", "And now?"), agent="slow")
        props = {"forwardedProps": {"on_busy": "enqueue", "expected_last_request": "not-the-last"}}
        stale = await agui_run(http, run_input(thread, f"{thread}-3", "And now?", **props), agent="slow")
        bad = await http.post("/agui/slow", json=run_input(thread, "x", forwardedProps={"on_busy": "shout"}))
    for events, code in ((busy, "busy"), (stale, "stale")):
        assert [e.type for e in events] == ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]
        assert _custom(events, "ask_refused")["reason"] == code
        assert events[-1].event["code"] == code
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_input")
    assert (await first)[-1].type == "RUN_FINISHED"
    records = await gateway.ctx.sessions.get(f"gw/alice/slow/{thread}").requests()
    assert [r.request_id for r in records] == [f"{thread}-first"], "a refused message changed nothing"


async def test_an_enqueued_message_says_queued_then_streams_its_own_answer(gateway: GatewayServer) -> None:
    thread, first = await _busy_thread(gateway, "slow")
    async with gateway.http(ALICE) as http:
        props = {"forwardedProps": {"on_busy": "enqueue"}}
        queued = await agui_run(http, run_input(thread, f"{thread}-2", "Next one", **props), agent="slow")
    ack = _custom(queued, "ask")
    assert (ack["disposition"], ack["position"]) == ("queued", 1)
    assert (await first)[-1].type == "RUN_FINISHED"
    assert queued[-1].type == "RUN_FINISHED" and text_of(queued) == "A slow answer " * 20


async def test_a_steered_message_streams_the_running_answer_from_the_steer_on(gateway: GatewayServer) -> None:
    thread, first = await _busy_thread(gateway, "steerable")
    async with gateway.http(ALICE) as http:
        props = {"forwardedProps": {"on_busy": "steer"}}
        steered = await agui_run(
            http, run_input(thread, f"{thread}-2", "Shorter!", **props), agent="steerable"
        )
    ack = _custom(steered, "ask")
    assert ack["disposition"] == "steered" and ack["request_id"] == f"{thread}-first"
    assert text_of(steered) == "Steered: the short version."
    assert steered[-1].type == "RUN_FINISHED"
    whole = await first
    assert text_of(whole).endswith("Steered: the short version.")
    assert any(e.type == "CUSTOM" and e.event["name"] == "input_injected" for e in whole)
