"""The gateway's `/ai-sdk/{agent}` routes over plain HTTP: retries re-attach, junk is refused by name.

The official client's view is tests/aisdk/test_aisdk_js_client.py; the same semantics as every
other protocol, tests/gateway/test_protocol_semantics.py. Here: what a clumsy or hostile client
sends, and what a retried POST gets.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.gateway_helpers import ALICE, TEST_TOKENS, GatewayServer, module_gateway, running_gateway

gateway = module_gateway()


def _body(chat: str, text: str = "Hello?", message_id: str | None = None, **extra: Any) -> dict[str, Any]:
    message = {
        "id": message_id or f"u{uuid.uuid4().hex[:15]}",
        "role": "user",
        "parts": [{"type": "text", "text": text}],
    }
    return {"id": chat, "messages": [message], "trigger": "submit-message", **extra}


async def _chunks(response: httpx.Response) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    async for line in response.aiter_lines():
        if line.startswith("data:") and line != "data: [DONE]":
            found.append(json.loads(line[5:]))
    return found


async def _post(
    gw: GatewayServer, body: object, agent: str = "default"
) -> tuple[int, list[dict[str, Any]], Any]:
    async with gw.http(ALICE) as http, http.stream("POST", f"/ai-sdk/{agent}", json=body) as response:
        if response.status_code != 200:
            return response.status_code, [], json.loads(await response.aread())
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        return 200, await _chunks(response), None


def _text(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


async def test_a_retried_post_of_the_same_message_re_attaches_to_its_request(gateway: GatewayServer) -> None:
    chat, message_id = f"retry-{uuid.uuid4().hex[:8]}", f"u{uuid.uuid4().hex[:15]}"
    status, first, _ = await _post(gateway, _body(chat, message_id=message_id))
    assert status == 200 and first[-1] == {"type": "finish", "finishReason": "stop"}
    status, again, _ = await _post(gateway, _body(chat, message_id=message_id))
    assert status == 200 and again[0]["messageId"] == f"{message_id}:answer"
    assert _text(again) == _text(first) == "Hello from the gateway, streamed in small pieces."
    assert again[-1] == {"type": "finish", "finishReason": "stop"}
    status, reused, _ = await _post(gateway, _body(chat, "Another question", message_id=message_id))
    assert status == 200 and reused[-1]["messageMetadata"]["error"]["code"] == "request_id_reused"
    records = await gateway.ctx.sessions.get(session_id(Principal("alice"), "default", chat)).requests()
    assert [r.request_id for r in records] == [message_id], "asked once"


JUNK: list[tuple[object, str, str]] = [
    ([1, 2], "invalid_input", "JSON object"),
    ({"id": "t1"}, "invalid_input", "messages"),
    ({"id": "t1", "messages": []}, "invalid_input", "messages"),
    ({"id": "t1", "messages": ["hi"]}, "invalid_input", "UI message"),
    (
        {"id": "t1-run-3", "messages": [{"id": "m1", "role": "user", "parts": []}]},
        "invalid_input",
        "thread",
    ),
    (_body("t1", message_id="bad id"), "invalid_input", "`id`"),
    (_body("t1", "   "), "invalid_input", "no text"),
    (_body("t1", on_busy="sometimes"), "invalid_input", "on_busy"),
    (_body("t1", mode="loud"), "invalid_input", "mode"),
    (_body("t1", expected_last_request="not an id!"), "invalid_input", "expected_last_request"),
    (_body("t1", trigger="regenerate-message", messageId="bad id!"), "invalid_input", "messageId"),
    (_body("t1", "x" * 100_001), "payload_too_large", "100,000"),
    (
        {"id": "t1", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "file", "url": "x"}]}]},
        "invalid_input",
        "mediaType",
    ),
    (
        {
            "id": "t1",
            "messages": [{"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}],
        },
        "invalid_input",
        "approval",
    ),
]
"""(body, the code it gets, what the message names)."""


@pytest.mark.parametrize(("body", "code", "says"), JUNK)
async def test_junk_is_refused_by_name_and_asks_nothing(
    gateway: GatewayServer, body: object, code: str, says: str
) -> None:
    status, _, error = await _post(gateway, body)
    assert error is not None and error["error"]["code"] == code, error
    assert says in error["error"]["message"] and status in (400, 413)


async def test_a_decision_for_an_unknown_request_or_thread_is_not_found(gateway: GatewayServer) -> None:
    part = {
        "type": "dynamic-tool",
        "toolCallId": "c1",
        "toolName": "calculator",
        "state": "approval-responded",
    }
    decided = {**part, "approval": {"id": "c1", "approved": True}}
    message = {"id": "r-unknown", "role": "assistant", "parts": [decided]}
    status, _, error = await _post(gateway, {"id": f"none-{uuid.uuid4().hex[:8]}", "messages": [message]})
    assert status == 404 and error["error"]["code"] == "not_found"
    chat = f"known-{uuid.uuid4().hex[:8]}"
    assert (await _post(gateway, _body(chat)))[0] == 200
    status, _, error = await _post(gateway, {"id": chat, "messages": [message]})
    assert status == 404 and error["error"]["code"] == "not_found"


async def test_the_resume_route_refuses_a_bad_thread_id_and_an_unknown_thread(gateway: GatewayServer) -> None:
    async with gateway.http(ALICE) as http:
        bad = await http.get("/ai-sdk/default/bad%20id/stream")
        unknown = await http.get(f"/ai-sdk/default/none-{uuid.uuid4().hex[:8]}/stream")
        agent = await http.get("/ai-sdk/nobody/t1/stream")
        anonymous = await http.get("/ai-sdk/default/t1/stream", headers={"Authorization": ""})
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_input")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    assert (agent.status_code, agent.json()["error"]["code"]) == (404, "unknown_agent")
    assert (anonymous.status_code, anonymous.json()["error"]["code"]) == (401, "unauthorized")


TWO_CALLS = scripted_agent(
    call_tools(
        tool_call("calculator", {"expression": "1 + 1"}, call_id="call-a"),
        tool_call("calculator", {"expression": "2 + 2"}, call_id="call-b"),
    ),
    answer("2 and 4."),
    tools=["calculator"],
    approval_required=["calculator"],
    stream=True,
)


def _decision(request_id: str, call_id: str) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "dynamic-tool",
        "toolCallId": call_id,
        "toolName": "calculator",
        "input": {},
    }
    decided = {**part, "state": "approval-responded", "approval": {"id": call_id, "approved": True}}
    return {"id": f"{request_id}:answer", "role": "assistant", "parts": [decided]}


async def test_two_calls_awaiting_approval_are_decided_one_stream_at_a_time(
    agents: AgentTestEnvironment,
) -> None:
    async with running_gateway(agents, {"two": TWO_CALLS}, tokens=TEST_TOKENS) as gw:
        chat = f"two-{uuid.uuid4().hex[:8]}"
        status, first, _ = await _post(gw, _body(chat, "Both?"), agent="two")
        request_id = first[0]["messageMetadata"]["request_id"]
        asked = [c["approvalId"] for c in first if c["type"] == "tool-approval-request"]
        assert status == 200 and first[-1]["finishReason"] == "tool-calls" and asked
        seen = list(asked)
        while len(seen) < 2:
            status, more, _ = await _post(
                gw, {"id": chat, "messages": [_decision(request_id, seen[-1])]}, agent="two"
            )
            assert status == 200 and more[-1]["finishReason"] == "tool-calls", more
            seen += [c["approvalId"] for c in more if c["type"] == "tool-approval-request"]
        assert sorted(seen) == ["call-a", "call-b"]
        status, last, _ = await _post(
            gw, {"id": chat, "messages": [_decision(request_id, seen[-1])]}, agent="two"
        )
        assert last[-1] == {"type": "finish", "finishReason": "stop"}, last
        assert _text(last) == "2 and 4."


LONG = "A long answer, streamed slowly. " * 12
"""An answer that streams for about 4 s (7 characters every 0.1 s)."""


async def test_a_client_cut_mid_answer_resumes_the_whole_answer_from_its_start(
    agents: AgentTestEnvironment,
) -> None:
    slow = scripted_agent(
        answer(LONG).model_copy(update={"chunk_chars": 7, "chunk_delay_s": 0.1}), stream=True
    )
    async with running_gateway(agents, {"long": slow}, tokens=TEST_TOKENS) as gw, gw.http(ALICE) as http:
        chat = f"cut-{uuid.uuid4().hex[:8]}"
        async with http.stream("POST", "/ai-sdk/long", json=_body(chat, "Tell me")) as response:
            lines = response.aiter_lines()
            async for line in lines:
                if line.startswith("data:") and json.loads(line[5:])["type"] == "text-delta":
                    break  # the client goes away mid-answer
        async with http.stream("GET", f"/ai-sdk/long/{chat}/stream") as resumed:
            assert resumed.status_code == 200
            chunks = await _chunks(resumed)
        assert chunks[0]["messageMetadata"]["disposition"] == "resumed"
        assert _text(chunks) == LONG and chunks[-1] == {"type": "finish", "finishReason": "stop"}
        assert (await http.get(f"/ai-sdk/long/{chat}/stream")).status_code == 204
