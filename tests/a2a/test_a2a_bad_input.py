"""A2A bad input over raw HTTP: each refusal in JSON-RPC's error shape with a named reason, nothing started.

Malformed JSON, a batch, an unknown method, an oversized body, a bad file part, an over-long query,
no token, an unknown agent, another principal's task id (the same answer as an unknown one), and
a decision for a task with nothing to decide. "Nothing started" is checked on the session: it
does not exist.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio.service import RPCError, RPCStatusCode

from gateway.identity.principal import Principal
from gateway.owners import session_id
from settings.attachment_policy import AttachmentPolicy
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, running_gateway

AGENTS = {"default": scripted_agent(answer("Fine."), stream=True)}
LIMIT = 160 * 1024
V1 = {"A2A-Version": "1.0"}
JSON_ACCEPT = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    small = AttachmentPolicy(max_bytes=64 * 1024, request_bytes=64 * 1024)
    async with running_gateway(
        agents, AGENTS, tokens=TEST_TOKENS, max_body_bytes=LIMIT, attachments=small
    ) as server:
        yield server


def send(
    context: str, parts: list[dict[str, Any]], method: str = "SendMessage", **message: Any
) -> dict[str, Any]:
    msg = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "contextId": context,
        "parts": parts,
        **message,
    }
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": msg}}


async def rpc(
    gw: GatewayServer, body: Any, token: str | None = ALICE, *, raw: bytes | None = None
) -> dict[str, Any]:
    async with gw.http(token) as http:
        if raw is not None:
            response = await http.post(
                "/a2a/default", content=raw, headers={**V1, "content-type": "application/json"}
            )
        else:
            response = await http.post("/a2a/default", json=body, headers=V1)
    reply = response.json()
    assert reply["jsonrpc"] == "2.0" and "error" in reply, reply
    return reply["error"]


def reason(error: dict[str, Any]) -> str | None:
    """The product code of an A2A 1.0 error (its ErrorInfo metadata), or of a plain JSON-RPC error's data."""
    data = error.get("data")
    if isinstance(data, list):
        details: list[dict[str, Any]] = [d for d in data if isinstance(d, dict)]  # pyright: ignore[reportUnknownVariableType]
        return next((d["metadata"].get("code") for d in details if "metadata" in d), None)
    return data.get("code") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


async def assert_nothing_started(agents: AgentTestEnvironment, context: str) -> None:
    with pytest.raises(RPCError) as caught:
        await agents.sessions.get(session_id(Principal("alice"), "default", context)).status()
    assert caught.value.status == RPCStatusCode.NOT_FOUND


async def test_malformed_json_rpc_is_the_protocols_own_error(gw: GatewayServer) -> None:
    assert (await rpc(gw, None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": '))["code"] == -32700
    assert (await rpc(gw, [{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]))["code"] == -32600
    assert (await rpc(gw, {"jsonrpc": "1.0", "id": 1, "method": "GetTask"}))["code"] == -32600
    assert (await rpc(gw, {"jsonrpc": "2.0", "id": 1, "method": "tasks/teleport"}))["code"] == -32601
    error = await rpc(gw, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}})
    assert error["code"] == -32602


async def test_file_parts_and_long_queries_are_refused_by_name(
    gw: GatewayServer, agents: AgentTestEnvironment
) -> None:
    context = f"bad-{uuid.uuid4().hex[:6]}"
    file_part = {"raw": "aGVsbG8=", "mediaType": "image/png", "filename": "x.png"}  # "hello": no image
    error = await rpc(gw, send(context, [{"text": "look"}, file_part]))
    assert error["code"] == -32602 and reason(error) == "media_type_mismatch"
    error = await rpc(gw, send(context, [{"text": "look"}, {"url": "https://example.com/x.pdf"}]))
    assert reason(error) == "url_refused"
    error = await rpc(gw, send(context, [{"text": "x" * 100_001}]))
    assert error["code"] == -32602 and reason(error) == "payload_too_large"
    error = await rpc(gw, send(context, [{"text": "   "}]))
    assert reason(error) == "invalid_input"
    error = await rpc(gw, send(context, [{"text": "hi"}], metadata={"on_busy": "sometimes"}))
    assert reason(error) == "invalid_input"
    error = await rpc(gw, send("bad context!", [{"text": "hi"}]))
    assert error["code"] == -32001  # no such context can exist
    await assert_nothing_started(agents, context)


async def chunked(body: bytes) -> AsyncIterator[bytes]:
    """`body` in 16 KiB chunks: sent without a content-length (chunked transfer encoding)."""
    for start in range(0, len(body), 16 * 1024):
        yield body[start : start + 16 * 1024]


async def test_oversized_bodies_tokens_and_agents(gw: GatewayServer, agents: AgentTestEnvironment) -> None:
    context = f"big-{uuid.uuid4().hex[:6]}"
    error = await rpc(gw, send(context, [{"text": "x" * (LIMIT + 1)}]))
    assert reason(error) == "payload_too_large"
    # The routes that carry attachments take bodies up to the attachment limits, no more.
    oversized = json.dumps(
        send(context, [{"text": "x" * (gw.ctx.settings.attachment_body_bytes + 1)}])
    ).encode()
    for path in ("/a2a/default", "/mcp"):  # no declared length: refused as the bytes pass the limit
        async with gw.http(ALICE) as http:
            response = await http.post(path, content=chunked(oversized), headers={**V1, **JSON_ACCEPT})
        assert "content-length" not in response.request.headers
        reply = response.json()
        assert (response.status_code, reply["jsonrpc"]) == (413, "2.0"), reply
        assert reply["error"]["data"]["code"] == "payload_too_large", reply
    await assert_nothing_started(agents, context)
    async with gw.http() as http:
        response = await http.post("/a2a/default", json=send(context, [{"text": "hi"}]))
        assert response.status_code == 401
        assert response.json()["error"]["data"]["code"] == "unauthorized"
        response = await http.post(
            "/a2a/nobody", json=send(context, [{"text": "hi"}]), headers={"Authorization": f"Bearer {ALICE}"}
        )
        assert response.status_code == 404
        assert response.json()["error"]["data"]["code"] == "unknown_agent"
        card = await http.get("/a2a/nobody/.well-known/agent-card.json")
        assert card.status_code == 404
    await assert_nothing_started(agents, context)


async def test_another_principals_task_is_not_found_like_an_unknown_one(gw: GatewayServer) -> None:
    context = f"own-{uuid.uuid4().hex[:6]}"
    async with gw.http(ALICE) as http:
        reply = (await http.post("/a2a/default", json=send(context, [{"text": "hi"}]), headers=V1)).json()
    task_id = reply["result"]["task"]["id"]
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for method in ("GetTask", "CancelTask"):
        for token, task in ((BOB, task_id), (ALICE, f"{context}:unknown"), (ALICE, "garbage")):
            error = await rpc(
                gw, {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": task}}, token
            )
            assert error["code"] == -32001, (method, token, task)
    decision = send(context, [{"data": {"approved": True}}], taskId=task_id)
    assert (await rpc(gw, decision, BOB))["code"] == -32001
    error = await rpc(gw, decision, ALICE)
    assert reason(error) == "not_running"  # the task has ended: nothing to decide, nothing changed
    error = await rpc(gw, {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task_id}})
    assert error["code"] == -32002  # not cancelable: it has ended


async def test_the_v0_3_method_names_work_on_the_same_endpoint(gw: GatewayServer) -> None:
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "kind": "message",
        "parts": [{"kind": "text", "text": "hi"}],
    }
    async with gw.http(ALICE) as http:
        reply = (
            await http.post(
                "/a2a/default",
                json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}},
            )
        ).json()
        task = reply["result"]
        assert task["status"]["state"] == "completed"
        got = (
            await http.post(
                "/a2a/default",
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}},
            )
        ).json()
        assert got["result"]["artifacts"][0]["parts"][0]["text"] == "Fine."
    async with gw.http(BOB) as http:
        got = (
            await http.post(
                "/a2a/default",
                json={"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": task["id"]}},
            )
        ).json()
    assert got["error"]["code"] == -32001
