"""The guard's reading of what a request does (`classify`), pure.

Junk never raises (a body that cannot be read is classified by its route), and each protocol's
operation gets its scope.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.aisdk.chunks import ANSWER_SUFFIX
from gateway.guard.operations import AISDK_ANSWER_SUFFIX, classify

JUNK_BODIES = [
    b"",
    b"null",
    b"[]",
    b"\xff\xfe",
    b"[" * 100_000 + b"]" * 100_000,
    json.dumps({"method": "tools/call", "params": {"name": ["approve"]}}).encode(),
    json.dumps([{"method": "tools/call", "params": None}] * 50).encode(),
    json.dumps({"resume": "yes", "threadId": {"a": 1}}).encode(),
    b'{"threadId": "t", "runId": "\\ud800"}',
    b'{"id": "t", "messages": [{"id": "\\udfff:answer", "role": "assistant"}]}',
    json.dumps({"method": "SendMessage", "params": {"message": {"taskId": 7, "parts": "x"}}}).encode(),
]
PATHS = [
    "/agui/default",
    "/ai-sdk/default",
    "/a2a/default",
    "/mcp",
    "/api/threads/a/b/fork",
    "/api/threads/a/b/requests",
    "/api/schedules/x",
    "/nowhere",
]


@pytest.mark.parametrize("body", JUNK_BODIES)
def test_junk_bodies_are_classified_by_route(body: bytes) -> None:
    for path in PATHS:
        for operation in classify("POST", path, body):
            assert operation.action and len(operation.target) <= 200


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=10), c),
        max_leaves=30,
    )
)
def test_any_json_is_classified_without_raising(value: object) -> None:
    body = json.dumps(value).encode()
    for path in PATHS:
        classify("POST", path, body)


def test_each_protocol_names_its_operation_and_scope() -> None:
    def one(path: str, body: object) -> tuple[str, str | None, bool]:
        [operation] = classify("POST", path, json.dumps(body).encode())
        return operation.action, operation.scope, operation.starts_run

    assert one("/agui/default", {"threadId": "t", "messages": []}) == ("ask", "agents:ask", True)
    assert one("/agui/default", {"threadId": "t", "resume": [{"interruptId": "c"}]}) == (
        "approve",
        "agents:approve",
        False,
    )
    a2a_decision = {
        "method": "message/send",
        "params": {"message": {"taskId": "t", "parts": [{"kind": "data", "data": {"approved": False}}]}},
    }
    assert one("/a2a/default", a2a_decision) == ("approve", "agents:approve", False)
    a2a_steer = {
        "method": "SendMessage",
        "params": {"message": {"taskId": "t", "parts": [{"text": "faster"}]}},
    }
    assert one("/a2a/default", a2a_steer) == ("steer", "agents:ask", False)
    assert one("/a2a/default", {"method": "tasks/cancel", "params": {"id": "t"}}) == (
        "cancel",
        "agents:ask",
        False,
    )
    assert one("/a2a/default", {"method": "SendMessage", "params": {"message": {"parts": []}}}) == (
        "ask",
        "agents:ask",
        True,
    )
    mcp = {"method": "tools/call", "params": {"name": "approve", "arguments": {"handle": "a:b:c"}}}
    assert one("/mcp", mcp) == ("approve", "agents:approve", False)
    assert one("/mcp", {"method": "tools/list"}) == ("connect", None, False)
    user_ask: dict[str, object] = {"id": "t", "messages": [{"role": "user", "parts": []}]}
    assert one("/ai-sdk/default", user_ask) == (
        "ask",
        "agents:ask",
        True,
    )
    aisdk_decision = {
        "id": "t",
        "messages": [{"role": "assistant", "parts": [{"state": "approval-responded"}]}],
    }
    assert one("/ai-sdk/default", aisdk_decision) == ("approve", "agents:approve", False)
    assert one("/api/threads/default/t/requests", {"message": "hi"}) == ("ask", "agents:ask", True)
    assert classify("GET", "/ai-sdk/default/t/stream", None)[0].scope == "agents:ask"
    assert classify("DELETE", "/api/schedules/nightly", None)[0].scope == "agents:schedules"
    [renamed] = classify("PUT", "/api/threads/default/t/title", None)
    renaming = (renamed.action, renamed.scope, renamed.audited, renamed.thread)
    assert renaming == ("configure", "agents:ask", True, "t")
    assert classify("GET", "/healthz", None) == []


def test_one_request_is_one_target_whatever_the_protocol() -> None:
    """`<agent>/<thread>/<request>`: an AG-UI ask, an AI SDK decision, an A2A steer, an MCP cancel."""

    def target(path: str, body: object) -> str:
        [operation] = classify("POST", path, json.dumps(body).encode())
        return operation.target

    same = "approver/t1/r1"
    assert target("/agui/approver", {"threadId": "t1", "runId": "r1", "messages": []}) == same
    user: dict[str, object] = {"id": "t1", "messages": [{"id": "r1", "role": "user", "parts": []}]}
    assert target("/ai-sdk/approver", user) == same
    decided: dict[str, object] = {"id": "t1", "messages": [{"id": "r1:answer", "role": "assistant"}]}
    assert target("/ai-sdk/approver", decided) == same
    steer = {"method": "SendMessage", "params": {"message": {"taskId": "t1:r1", "parts": [{"text": "x"}]}}}
    assert target("/a2a/approver", steer) == same
    assert target("/a2a/approver", {"method": "tasks/cancel", "params": {"id": "t1:r1"}}) == same
    a2a_ask = {"method": "SendMessage", "params": {"message": {"contextId": "t1", "messageId": "r1"}}}
    assert target("/a2a/approver", a2a_ask) == same
    mcp = {"method": "tools/call", "params": {"name": "cancel", "arguments": {"handle": "approver:t1:r1"}}}
    assert target("/mcp", mcp) == same
    # An id that is not a request id is named as the gateway names its request (`request_id_for`).
    hashed = classify("POST", "/agui/approver", json.dumps({"threadId": "t1", "runId": "r 1"}).encode())
    assert hashed[0].request.startswith("r-") and len(hashed[0].request) == 34
    assert AISDK_ANSWER_SUFFIX == ANSWER_SUFFIX


def test_steering_asks_are_marked_in_every_protocol() -> None:
    def steers(path: str, body: object) -> bool:
        [operation] = classify("POST", path, json.dumps(body).encode())
        return operation.starts_run and operation.steers_running

    assert steers("/agui/a", {"threadId": "t", "runId": "r", "forwardedProps": {"on_busy": "steer"}})
    assert steers("/ai-sdk/a", {"id": "t", "on_busy": "steer", "messages": [{"id": "m", "role": "user"}]})
    assert steers("/api/threads/a/t/requests", {"message": "x", "on_busy": "steer"})
    a2a = {
        "method": "SendMessage",
        "params": {"metadata": {"on_busy": "steer"}, "message": {"contextId": "t"}},
    }
    assert steers("/a2a/a", a2a)
    mcp = {
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"session": "t", "on_busy": "steer"}},
    }
    assert steers("/mcp", mcp)
    assert not steers("/agui/a", {"threadId": "t", "runId": "r", "forwardedProps": {"on_busy": "interrupt"}})
    assert classify("HEAD", "/agui/a/threads/t/events", None)[0].scope == "agents:ask"
    assert classify("HEAD", "/ai-sdk/a/t/stream", None)[0].scope == "agents:ask"
