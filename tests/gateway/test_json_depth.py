"""JSON nested too deep is refused by name on every endpoint, before any parser recurses into it.

The depth scan is checked as a plain function against Python's own parser on random shapes; the
refusals go through a real uvicorn server: 400 `invalid_input` on AG-UI, fork and reset, and a
JSON-RPC parse error (-32700) on A2A and MCP, whose libraries parse bodies themselves. A file
upload's raw bytes are not JSON and are not scanned: brackets in them are stored as they are.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest

from gateway.http_input import MAX_JSON_DEPTH, json_depth_exceeds
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, GatewayServer, agui_run, auth, module_gateway, run_input, text_of

gateway = module_gateway()

DEEP = 5000
"""Deep enough to make a recursive parser fail (Python's recursion limit is 1,000)."""


def _nested(depth: int, rng: random.Random) -> object:
    value: object = rng.choice([1, "x]}", '\\"[{', [], {}, None])
    for _ in range(depth):
        value = rng.choice([[value, "]"], {"k{": value, "[": []}, [{}, value, []]])
    return value


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return 0


def test_the_scan_counts_nesting_as_the_parser_sees_it() -> None:
    rng = random.Random(7)
    for _ in range(400):
        value = _nested(rng.randint(MAX_JSON_DEPTH - 5, MAX_JSON_DEPTH + 5), rng)
        body = json.dumps(value).encode()
        assert json_depth_exceeds(body) == (_depth(value) > MAX_JSON_DEPTH), body
    assert not json_depth_exceeds(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    assert json_depth_exceeds(b"[" * (MAX_JSON_DEPTH + 1))
    assert not json_depth_exceeds(json.dumps({"text": "[" * DEEP, "escaped": '\\"[' * DEEP}).encode())
    assert not json_depth_exceeds(b"[]" * 300_000)  # wide is not deep
    assert not json_depth_exceeds(b'"\\' * 300_000)  # an unterminated string of escapes: linear


def _deep_object(key: str) -> bytes:
    """A JSON object whose `key` holds arrays nested `DEEP` levels."""
    return b'{"' + key.encode() + b'": ' + b"[" * DEEP + b"]" * DEEP + b"}"


@pytest.mark.parametrize(
    "path",
    [
        "/agui/default",
        "/api/threads/default/{thread}/fork",
        "/api/threads/default/{thread}/reset",
    ],
)
async def test_deep_json_gets_400_invalid_input_on_rest_routes(gateway: GatewayServer, path: str) -> None:
    thread = f"deep-{uuid.uuid4().hex[:8]}"
    async with gateway.http(ALICE) as http:
        response = await http.post(path.format(thread=thread), content=_deep_object("messages"))
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_input"
        assert f"deeper than {MAX_JSON_DEPTH} levels" in error["message"]
        assert "Traceback" not in response.text


@pytest.mark.parametrize("path", ["/a2a/default/", "/mcp"])
async def test_deep_json_gets_a_jsonrpc_parse_error_on_a2a_and_mcp(gateway: GatewayServer, path: str) -> None:
    accept = "application/json, text/event-stream"
    headers = {**auth(ALICE), "content-type": "application/json", "accept": accept}
    async with gateway.http() as http:
        response = await http.post(path, content=_deep_object("params"), headers=headers)
        body = response.json()
        assert body["error"]["code"] == -32700, body
        assert body["error"]["data"]["code"] == "invalid_input"
        assert f"deeper than {MAX_JSON_DEPTH} levels" in body["error"]["message"]


async def test_an_uploaded_file_full_of_brackets_is_stored_not_scanned(gateway: GatewayServer) -> None:
    data = b"[{" * DEEP  # what a large image's bytes hold at random, here as text
    async with gateway.http(ALICE) as http:
        uploaded = await http.post(
            "/api/files",
            params={"name": "brackets.txt"},
            content=data,
            headers={"content-type": "text/plain"},
        )
        assert uploaded.status_code == 201, uploaded.text
        assert (await http.get(f"/api/files/{uploaded.json()['id']}")).content == data


async def test_json_at_the_limit_still_works(gateway: GatewayServer, agents: AgentTestEnvironment) -> None:
    thread = f"deep-ok-{uuid.uuid4().hex[:8]}"
    deep_state: object = "leaf"
    for _ in range(MAX_JSON_DEPTH - 1):  # the body's own object is one level
        deep_state = [deep_state]
    async with gateway.http(ALICE) as http:
        events = await agui_run(http, run_input(thread, f"{thread}-r1", state=deep_state))
    assert events[-1].type == "RUN_FINISHED"
    assert text_of(events) == "Hello from the gateway, streamed in small pieces."
