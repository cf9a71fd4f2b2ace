"""Resumable AG-UI streams: reconnect by event id mid-answer, after the run's end, across continue-as-new.

A reconnect (`Last-Event-ID` or `?after=`) continues right after the event: no second RUN_STARTED,
the text exactly once. A GET without an id re-attaches to the running request, or replays the last.
"""

from __future__ import annotations

import asyncio
import uuid

from testing import AgentTestEnvironment
from tests.gateway_helpers import (
    ALICE,
    TEST_TOKENS,
    GatewayServer,
    SseEvent,
    agui_run,
    module_gateway,
    read_sse,
    run_input,
    running_gateway,
    text_of,
)

SLOW_ANSWER = "A slow answer " * 20


gateway = module_gateway()


def _thread() -> str:
    return f"r-{uuid.uuid4().hex[:10]}"


async def _first_part(gateway: GatewayServer, thread: str, run_id: str, count: int) -> list[SseEvent]:
    """The first `count` events of a slow run, then the connection drops."""
    async with (
        gateway.http(ALICE) as http,
        http.stream("POST", "/agui/slow", json=run_input(thread, run_id)) as r,
    ):
        return await read_sse(r, stop_after=count)


async def _rest(
    gateway: GatewayServer, thread: str, *, header: str | None = None, after: str | None = None
) -> list[SseEvent]:
    headers = {"Last-Event-ID": header} if header else {}
    params = {"after": after} if after else {}
    async with gateway.http(ALICE) as http:
        url = f"/agui/slow/threads/{thread}/events"
        async with http.stream("GET", url, headers=headers, params=params) as r:
            assert r.status_code == 200, await r.aread()
            return await read_sse(r)


async def test_a_reconnect_mid_answer_continues_right_after_the_event(gateway: GatewayServer) -> None:
    thread = _thread()
    first = await _first_part(gateway, thread, "resume-mid-1", 8)
    assert "TEXT_MESSAGE_CONTENT" in [e.type for e in first]
    rest = await _rest(gateway, thread, header=first[-1].id)
    types = [e.type for e in rest]
    assert "RUN_STARTED" not in types and "TEXT_MESSAGE_START" not in types
    assert types[-1] == "RUN_FINISHED"
    assert text_of(first) + text_of(rest) == SLOW_ANSWER
    ids = [e.id for e in first + rest]
    assert len([i for i in ids if i == first[-1].id]) == 1 or first[-1].type == "CUSTOM"


async def test_a_reconnect_after_the_run_ended_gets_the_rest_from_the_thread(
    gateway: GatewayServer,
) -> None:
    thread = _thread()
    first = await _first_part(gateway, thread, "resume-late-1", 5)
    await asyncio.sleep(5)  # the run ends meanwhile: its deltas leave the stream's log
    rest = await _rest(gateway, thread, after=first[-1].id)
    assert "RUN_STARTED" not in [e.type for e in rest]
    assert rest[-1].type == "RUN_FINISHED"
    assert text_of(first) + text_of(rest) == SLOW_ANSWER
    again = await _rest(gateway, thread, after=rest[-1].id)
    assert again == [], "after the last event there is nothing more"


async def test_a_get_without_id_reattaches_to_the_running_request_or_replays_the_last(
    gateway: GatewayServer,
) -> None:
    thread = _thread()
    first = await _first_part(gateway, thread, "resume-attach-1", 3)
    attached = await _rest(gateway, thread)
    assert attached[0].type == "RUN_STARTED" and attached[0].event["runId"] == "resume-attach-1"
    assert text_of(attached) == SLOW_ANSWER and attached[-1].type == "RUN_FINISHED"
    replayed = await _rest(gateway, thread)
    assert [e.type for e in replayed] == [
        e.type for e in attached if e.type != "CUSTOM" or e.event["name"] != "ask"
    ]
    assert first[0].id == attached[0].id


async def test_bad_event_ids_and_unknown_requests_are_refused(gateway: GatewayServer) -> None:
    thread = _thread()
    async with gateway.http(ALICE) as http:
        await agui_run(http, run_input(thread, "resume-bad-1"))
        bad = await http.get(f"/agui/default/threads/{thread}/events", headers={"Last-Event-ID": "garbage"})
        unknown = await http.get(f"/agui/default/threads/{thread}/events", params={"after": "nope:1:0:0"})
        bad_thread = await http.get("/agui/default/threads/-bad/events")
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_input")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    assert (bad_thread.status_code, bad_thread.json()["error"]["code"]) == (400, "invalid_input")


async def test_streams_resume_across_the_sessions_continue_as_new(gateway: GatewayServer) -> None:
    thread = _thread()
    session = gateway.ctx.sessions.get(f"gw/alice/default/{thread}")
    async with gateway.http(ALICE) as http:
        before = await agui_run(http, run_input(thread, "can-0", "turn 0"))
    handle = gateway.ctx.client.get_workflow_handle(session.workflow_id)
    first_run = (await handle.describe()).run_id
    for turn in range(1, 40):  # typed-client asks (no streaming) until the session continues as new
        await session.ask_sync(f"turn {turn}", request_id=f"can-{turn}", on_busy="enqueue")
        if (await handle.describe()).run_id != first_run:
            break
    assert (await handle.describe()).run_id != first_run, "the session continued as new"
    middle = next(e for e in before if e.type == "TEXT_MESSAGE_START")
    rest = await _rest_default(gateway, thread, middle.id)
    assert "RUN_STARTED" not in [e.type for e in rest]
    assert text_of(rest) == text_of(before) and rest[-1].type == "RUN_FINISHED"


async def _rest_default(gateway: GatewayServer, thread: str, after: str) -> list[SseEvent]:
    async with gateway.http(ALICE) as http:
        url = f"/agui/default/threads/{thread}/events"
        async with http.stream("GET", url, params={"after": after}) as r:
            return await read_sse(r)


async def test_another_gateway_resumes_a_stream_the_first_one_served(agents: AgentTestEnvironment) -> None:
    thread = _thread()
    async with running_gateway(agents, tokens=TEST_TOKENS) as first_gateway:
        first = await _first_part(first_gateway, thread, "resume-other-1", 6)
    async with running_gateway(agents, tokens=TEST_TOKENS) as second_gateway:  # a restart, or a peer
        rest = await _rest(second_gateway, thread, header=first[-1].id)
    assert "RUN_STARTED" not in [e.type for e in rest] and rest[-1].type == "RUN_FINISHED"
    assert text_of(first) + text_of(rest) == SLOW_ANSWER


async def test_every_event_id_is_distinct_and_resuming_after_any_gives_exactly_the_rest(
    gateway: GatewayServer,
) -> None:
    """G6: RUN_STARTED and the CUSTOM `ask` had the same id: resuming after the first lost the second."""
    thread = _thread()
    async with gateway.http(ALICE) as http:
        whole = await agui_run(http, run_input(thread, "ids-1", "Hi"))
    ids = [e.id for e in whole]
    assert len(set(ids)) == len(ids), ids
    assert [e.type for e in whole[:2]] == ["RUN_STARTED", "CUSTOM"] and whole[1].event["name"] == "ask"
    for index, event in enumerate(whole[:-1]):
        rest = await _rest_default(gateway, thread, event.id)
        expected = whole[index + 1 :]
        assert [e.type for e in rest] == [e.type for e in expected], (index, event.type)
        assert [e.id for e in rest] == [e.id for e in expected], (index, event.type)
        assert text_of(rest) == text_of(expected)
    after_started = await _rest_default(gateway, thread, whole[0].id)
    assert (
        after_started[0].event["name"] == "ask"
        and after_started[0].event["value"]["disposition"] == "started"
    )
