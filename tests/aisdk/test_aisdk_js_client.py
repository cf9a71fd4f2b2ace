"""The official AI SDK client (npm `ai` 7) against the real gateway's `/ai-sdk/{agent}` routes.

node runs tests/js/aisdk_client.mjs, which uses the SDK's own `DefaultChatTransport` and
`readUIMessageStream` (the parts `useChat` is made of) and prints the UI messages it folded, with
the response's status and headers. The gateway is the real one (`tests.gateway_helpers`), on a
real dev server and worker with the scripted test agents: an answer streams in pieces into one
assistant message; a call waiting for approval shows as an approval request, the SDK's resume
route replays it, and the SDK's approval response continues the same message to the answer; a
busy thread's refusal reaches the SDK as an error; a wrong token, junk and another principal are
refused by name.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway.identity.principal import Principal
from gateway.owners import session_id
from tests.gateway_helpers import ALICE, BOB, GatewayServer, installed_js_clients, module_gateway

gateway = module_gateway()

JS = Path(__file__).resolve().parents[1] / "js"
CALL_ID = "call-calc"
"""The call the `approver` test agent asks approval for."""


@pytest.fixture(scope="module")
def js_clients() -> Path:
    """tests/js with its node_modules installed from the lock file."""
    return installed_js_clients()


async def _client(gw: GatewayServer, agent: str, token: str, **request: Any) -> dict[str, Any]:
    """What the SDK's client saw for one chat request (or resume) to `/ai-sdk/{agent}`."""
    process = await asyncio.create_subprocess_exec(
        "node",
        "aisdk_client.mjs",
        cwd=JS,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    body = {"url": f"{gw.url}/ai-sdk/{agent}", "token": token, **request}
    out, err = await asyncio.wait_for(process.communicate(json.dumps(body).encode()), 120)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


def _chat() -> str:
    return f"sdk-{uuid.uuid4().hex[:10]}"


def _user(text: str) -> dict[str, Any]:
    return {"id": f"u{uuid.uuid4().hex[:15]}", "role": "user", "parts": [{"type": "text", "text": text}]}


def _final(seen: dict[str, Any]) -> dict[str, Any]:
    assert seen["status"] == 200, seen
    assert seen["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert seen["headers"]["content-type"].startswith("text/event-stream")
    return seen["messages"][-1]


def _texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["parts"] if part["type"] == "text"]


def _tool(message: dict[str, Any]) -> dict[str, Any]:
    [tool] = [part for part in message["parts"] if part["type"] == "dynamic-tool"]
    return tool


async def test_the_sdk_folds_a_streamed_answer_into_one_assistant_message(
    gateway: GatewayServer, js_clients: Path
) -> None:
    asked = _user("Hello?")
    seen = await _client(gateway, "default", ALICE, chatId=_chat(), messages=[asked])
    message = _final(seen)
    assert message["id"] == f"{asked['id']}:answer"  # the request's id is the asking message's
    assert message["role"] == "assistant"
    assert _texts(message) == ["Hello from the gateway, streamed in small pieces."]
    assert [p["type"] for p in message["parts"]] == ["step-start", "text"]
    assert message["metadata"]["disposition"] == "started"
    assert seen["errors"] == []
    assert len(seen["messages"]) > 3, "folded as it streamed, not in one piece"


async def test_an_approval_request_is_resumed_and_the_sdk_approval_continues_it(
    gateway: GatewayServer, js_clients: Path
) -> None:
    chat, asked = _chat(), _user("17 * 23?")
    waiting = _final(await _client(gateway, "approver", ALICE, chatId=chat, messages=[asked]))
    tool = _tool(waiting)
    assert waiting["id"] == f"{asked['id']}:answer"
    assert tool["state"] == "approval-requested" and tool["approval"] == {"id": CALL_ID}
    assert tool["toolName"] == "calculator" and tool["input"] == {"expression": "17 * 23"}

    # The SDK's resume route replays the waiting request from its start: the same message.
    resumed = _final(await _client(gateway, "approver", ALICE, chatId=chat, resume=True))
    assert resumed["id"] == waiting["id"] and _tool(resumed)["state"] == "approval-requested"

    # Another principal sees no such thread, and cannot decide for it.
    bobs = await _client(gateway, "approver", BOB, chatId=chat, resume=True)
    assert bobs["status"] == 404 and "not_found" in bobs["failed"]
    approved = {**tool, "state": "approval-responded", "approval": {"id": CALL_ID, "approved": True}}
    answered = {**waiting, "parts": [approved if p is tool else p for p in waiting["parts"]]}
    bob_decides = await _client(gateway, "approver", BOB, chatId=chat, messages=[asked, answered])
    assert bob_decides["status"] == 404 and "not_found" in bob_decides["failed"]

    # What addToolApprovalResponse leaves in the message, sent back: the same message continues.
    seen = await _client(
        gateway, "approver", ALICE, chatId=chat, messages=[asked, answered], continueMessage=answered
    )
    final = _final(seen)
    assert final["id"] == waiting["id"]
    done = _tool(final)
    assert done["state"] == "output-available" and done["approval"] == {"id": CALL_ID, "approved": True}
    assert json.loads(done["output"]) == {"ok": True, "result": 391}
    assert _texts(final)[-1] == "17 * 23 = 391." and seen["errors"] == []

    nothing = await _client(gateway, "approver", ALICE, chatId=chat, resume=True)
    assert (nothing["status"], nothing["resumed"]) == (204, None), "nothing runs: no stream"


async def test_a_busy_thread_refuses_the_next_message_as_an_sdk_error(
    gateway: GatewayServer, js_clients: Path
) -> None:
    chat = _chat()
    waiting = _final(await _client(gateway, "approver", ALICE, chatId=chat, messages=[_user("17 * 23?")]))
    assert _tool(waiting)["state"] == "approval-requested"
    seen = await _client(gateway, "approver", ALICE, chatId=chat, messages=[_user("And 2 + 2?")])
    refused = _final(seen)
    assert len(seen["errors"]) == 1 and seen["errors"][0].startswith("busy: ")
    assert refused["metadata"] == {"error": {"code": "busy"}, "refused": True}
    session = gateway.ctx.sessions.get(session_id(Principal("alice"), "approver", chat))
    records = await session.requests()
    assert [r.query_preview for r in records] == ["17 * 23?"], "the refused message was never asked"


async def test_a_wrong_token_junk_and_an_unknown_agent_are_refused_by_name(
    gateway: GatewayServer, js_clients: Path
) -> None:
    wrong = await _client(gateway, "default", "nope", chatId=_chat(), messages=[_user("Hi")])
    assert wrong["status"] == 401 and "unauthorized" in wrong["failed"]
    junk = await _client(gateway, "default", ALICE, chatId="bad id!", messages=[_user("Hi")])
    assert junk["status"] == 400 and "invalid_input" in junk["failed"] and "thread id" in junk["failed"]
    nobody = await _client(gateway, "nobody", ALICE, chatId=_chat(), messages=[_user("Hi")])
    assert nobody["status"] == 404 and "unknown_agent" in nobody["failed"]
