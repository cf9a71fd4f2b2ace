"""AG-UI from Python (httpx) against a real gateway, dev server and worker: runs, approvals, busy threads.

Each test uses its own thread; the gateway (`gateway`) has the agents of `TEST_AGENTS`.
"""

from __future__ import annotations

import uuid

from tests.gateway_helpers import (
    ALICE,
    BOB,
    GatewayServer,
    agui_run,
    module_gateway,
    run_input,
    text_of,
)

gateway = module_gateway()


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def test_a_full_run_streams_text_then_finishes_with_the_answer(gateway: GatewayServer) -> None:
    thread = _thread()
    async with gateway.http(ALICE) as http:
        events = await agui_run(http, run_input(thread, "run-full-1", "Hello?"))
    types = [e.type for e in events]
    assert types[0] == "RUN_STARTED" and events[0].event["runId"] == "run-full-1"
    assert events[0].event["threadId"] == thread
    assert types[-1] == "RUN_FINISHED"
    assert (
        types.index("TEXT_MESSAGE_START")
        < types.index("TEXT_MESSAGE_CONTENT")
        < types.index("TEXT_MESSAGE_END")
    )
    assert types.index("MESSAGES_SNAPSHOT") < types.index("RUN_FINISHED")
    answer = "Hello from the gateway, streamed in small pieces."
    assert text_of(events) == answer
    assert events[-1].event["result"] == answer
    assert all(e.id for e in events), "every SSE event carries an id"
    ask = next(e for e in events if e.type == "CUSTOM" and e.event["name"] == "ask")
    assert ask.event["value"]["disposition"] == "started"
    snapshot = next(e for e in events if e.type == "MESSAGES_SNAPSHOT")
    roles = [m["role"] for m in snapshot.event["messages"]]
    assert roles == ["user", "assistant"]


async def test_another_principal_gets_404_for_the_thread(gateway: GatewayServer) -> None:
    thread = _thread()
    async with gateway.http(ALICE) as alice, gateway.http(BOB) as bob:
        await agui_run(alice, run_input(thread, "run-owned-1"))
        mine = await alice.get(f"/agui/default/threads/{thread}/events?after=run-owned-1:-1:0:0")
        assert mine.status_code == 200
        theirs = await bob.get(f"/agui/default/threads/{thread}/events")
        missing = await bob.get(f"/agui/default/threads/{_thread()}/events")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json() == {"error": {"code": "not_found", "message": "no such thread"}}


async def test_an_approval_interrupts_the_run_and_a_resume_continues_it(
    gateway: GatewayServer,
) -> None:
    thread = _thread()
    async with gateway.http(ALICE) as http:
        first = await agui_run(http, run_input(thread, "run-appr-1", "17 * 23?"), agent="approver")
        finished = first[-1].event
        assert (finished["type"], finished["outcome"]["type"]) == ("RUN_FINISHED", "interrupt")
        assert first[-2].type == "MESSAGES_SNAPSHOT"
        [interrupt] = finished["outcome"]["interrupts"]
        assert interrupt["id"] == interrupt["toolCallId"] == "call-calc"
        assert interrupt["payload"]["tool"] == "calculator"
        assert interrupt["payload"]["arguments"] == {"expression": "17 * 23"}
        edited = {"approved": True, "arguments": {"expression": "17 * 24"}}
        resume = [{"interruptId": "call-calc", "status": "resolved", "payload": edited}]
        second = await agui_run(http, run_input(thread, "run-appr-2", None, resume=resume), agent="approver")
    types = [e.type for e in second]
    assert types[0] == "RUN_STARTED" and second[0].event["runId"] == "run-appr-2"
    assert "TOOL_CALL_START" not in types, "nothing from before the interrupt is sent again"
    [result] = [e for e in second if e.type == "TOOL_CALL_RESULT"]
    assert result.event["toolCallId"] == "call-calc" and "408" in str(result.event["content"])
    assert second[-1].type == "RUN_FINISHED" and second[-1].event["result"] == "17 * 23 = 391."
    assert int(second[0].id.split(":")[1]) >= int(first[-1].id.split(":")[1])


async def test_a_run_id_reused_with_another_message_is_refused_by_name(gateway: GatewayServer) -> None:
    """G5: it was acknowledged `started` and replayed the old answer; the new message was never asked."""
    thread = _thread()
    async with gateway.http(ALICE) as http:
        first = await agui_run(http, run_input(thread, "reused-1", "Hello?"))
        retried = await agui_run(http, run_input(thread, "reused-1", "Hello?"))
        reused = await agui_run(http, run_input(thread, "reused-1", "Something else entirely"))
    assert first[-1].type == "RUN_FINISHED"
    assert retried[-1].type == "RUN_FINISHED", "a retried POST of the same run re-attaches"
    assert text_of(retried) == text_of(first)
    types = [e.type for e in reused]
    assert types == ["RUN_STARTED", "CUSTOM", "RUN_ERROR"], types
    assert reused[1].event["name"] == "ask_refused"
    assert reused[1].event["value"]["reason"] == "request_id_reused"
    assert reused[-1].event["code"] == "request_id_reused"
    records = await gateway.ctx.sessions.get(f"gw/alice/default/{thread}").requests()
    assert [r.request_id for r in records] == ["reused-1"], "nothing more was asked"
