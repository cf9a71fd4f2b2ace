"""The same semantics through every protocol: one scenario list, one driver per protocol, one outcome.

Each scenario (ask, busy reject and enqueue, steer, interrupt, approve and deny, cancel, not
found, another principal) runs through AG-UI, A2A, MCP and the AI SDK's UI message stream
against one real gateway, and checks the same outcome in the session's thread (read with the
typed client). A driver maps the scenario's operations onto its protocol; a protocol without an
operation says so (`Driver.cancels`, `Driver.steer_names_request`), and the scenarios that need
it are not generated for it. A new protocol is one more `Driver` class in `DRIVERS`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conversation import MessageEntry
from gateway.identity.principal import Principal
from gateway.owners import session_id
from tests.gateway_helpers import (
    ALICE,
    BOB,
    GatewayServer,
    SseEvent,
    auth,
    module_gateway,
    read_sse,
    run_input,
)

gateway = module_gateway()

CALL_ID = "call-calc"
"""The call the `approver` test agent asks approval for."""
STEERED = "Steered: the short version."
HELD = "A held answer " * 20


@dataclass(frozen=True)
class Outcome:
    """What an operation came to, in the core's words: a request status, `accepted`, or `refused` (a code)."""

    status: str
    request_id: str | None = None
    code: str | None = None
    detail: str = ""
    """What the protocol said (kept for a failing assertion's message)."""


class Driver:
    """One protocol's way to ask, steer, decide, cancel and wait (for `token`, on `agent`)."""

    name: ClassVar[str]
    cancels: ClassVar[bool] = True
    steer_names_request: ClassVar[bool] = True

    def __init__(self, gw: GatewayServer, token: str, agent: str) -> None:
        self.gw, self.token, self.agent = gw, token, agent

    async def ask(self, thread: str, text: str, *, on_busy: str = "reject", wait: bool = True) -> Outcome:
        raise NotImplementedError

    async def steer(self, thread: str, request_id: str, text: str) -> Outcome:
        raise NotImplementedError

    async def decide(self, thread: str, request_id: str, *, approved: bool) -> Outcome:
        raise NotImplementedError

    async def cancel(self, thread: str, request_id: str) -> Outcome:
        raise NotImplementedError

    async def wait(self, thread: str, request_id: str) -> Outcome:
        raise NotImplementedError


# ---- AG-UI ---------------------------------------------------------------------------------------


class AguiDriver(Driver):
    """AG-UI: an ask is a run; a steer, an ask with `on_busy: steer`; a decision, a `resume`; no cancel."""

    name = "agui"
    cancels = False
    steer_names_request = False

    async def _post(self, body: dict[str, object], *, until_ack: bool) -> Outcome | list[SseEvent]:
        async with (
            self.gw.http(self.token) as http,
            http.stream("POST", f"/agui/{self.agent}", json=body) as response,
        ):
            if response.status_code != 200:
                raw = await response.aread()
                return Outcome("refused", code=json.loads(raw)["error"]["code"], detail=raw.decode())
            return await read_sse(response, stop_after=2 if until_ack else None)

    async def ask(self, thread: str, text: str, *, on_busy: str = "reject", wait: bool = True) -> Outcome:
        run_id = f"r-{uuid.uuid4().hex[:10]}"
        body = run_input(thread, run_id, text, forwardedProps={"on_busy": on_busy})
        events = await self._post(body, until_ack=not wait)
        if isinstance(events, Outcome):
            return events
        ack = events[1].event
        if ack["name"] == "ask_refused":
            return Outcome("refused", code=ack["value"]["reason"])
        request_id = ack["value"]["request_id"]
        if not wait:
            disposition = ack["value"]["disposition"]
            status = {"queued": "queued", "steered": "accepted"}.get(disposition, "running")
            return Outcome(status, request_id)
        return Outcome(_agui_end(events), request_id)

    async def steer(self, thread: str, request_id: str, text: str) -> Outcome:
        return await self.ask(thread, text, on_busy="steer", wait=False)

    async def decide(self, thread: str, request_id: str, *, approved: bool) -> Outcome:
        resume = [{"interruptId": CALL_ID, "status": "resolved", "payload": {"approved": approved}}]
        events = await self._post(
            run_input(thread, f"d-{uuid.uuid4().hex[:8]}", None, resume=resume), until_ack=False
        )
        if isinstance(events, Outcome):
            return events
        if events[-1].type == "RUN_ERROR" and events[1].event.get("name") == "approval_refused":
            return Outcome("refused", code=events[-1].event["code"])
        return Outcome(_agui_end(events), request_id)

    async def wait(self, thread: str, request_id: str) -> Outcome:
        async with (
            self.gw.http(self.token) as http,
            http.stream(
                "GET", f"/agui/{self.agent}/threads/{thread}/events", params={"after": f"{request_id}:-1:0:0"}
            ) as response,
        ):
            if response.status_code != 200:
                body = await response.aread()
                return Outcome("refused", code=json.loads(body)["error"]["code"], detail=body.decode())
            return Outcome(_agui_end(await read_sse(response)), request_id)


def _agui_end(events: list[SseEvent]) -> str:
    last = events[-1].event
    if last["type"] == "RUN_ERROR":
        return "failed"
    outcome: dict[str, Any] = last.get("outcome") or {}
    return {"interrupt": "awaiting_approval", "cancelled": "cancelled"}.get(
        str(outcome.get("type")), "completed"
    )


# ---- A2A -----------------------------------------------------------------------------------------

A2A_STATES = {
    "TASK_STATE_SUBMITTED": "queued",
    "TASK_STATE_WORKING": "running",
    "TASK_STATE_INPUT_REQUIRED": "awaiting_approval",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "cancelled",
}


class A2aDriver(Driver):
    """A2A 1.0 JSON-RPC: a message asks; a message to the task steers (text) or decides (data); CancelTask."""

    name = "a2a"

    async def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        async with self.gw.http(self.token) as http:
            return (await http.post(f"/a2a/{self.agent}", json=body, headers={"A2A-Version": "1.0"})).json()

    def _message(self, thread: str, parts: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        return {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "contextId": thread,
            "parts": parts,
            **fields,
        }

    async def _send(self, message: dict[str, Any], *, wait: bool) -> Outcome:
        reply = await self._rpc(
            "SendMessage", {"message": message, "configuration": {"returnImmediately": not wait}}
        )
        if "error" in reply:
            return Outcome("refused", code=_a2a_code(reply["error"]), detail=json.dumps(reply["error"]))
        task = reply["result"]["task"]
        return Outcome(A2A_STATES[task["status"]["state"]], task["id"].rsplit(":", 1)[1])

    async def ask(self, thread: str, text: str, *, on_busy: str = "reject", wait: bool = True) -> Outcome:
        message = self._message(thread, [{"text": text}], metadata={"on_busy": on_busy})
        return await self._send(message, wait=wait)

    async def steer(self, thread: str, request_id: str, text: str) -> Outcome:
        outcome = await self._send(
            self._message(thread, [{"text": text}], taskId=f"{thread}:{request_id}"), wait=False
        )
        return outcome if outcome.status == "refused" else Outcome("accepted", request_id)

    async def decide(self, thread: str, request_id: str, *, approved: bool) -> Outcome:
        message = self._message(thread, [{"data": {"approved": approved}}], taskId=f"{thread}:{request_id}")
        return await self._send(message, wait=True)

    async def cancel(self, thread: str, request_id: str) -> Outcome:
        reply = await self._rpc("CancelTask", {"id": f"{thread}:{request_id}"})
        if "error" in reply:
            return Outcome("refused", code=_a2a_code(reply["error"]))
        return Outcome(A2A_STATES[reply["result"]["status"]["state"]], request_id)

    async def wait(self, thread: str, request_id: str) -> Outcome:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SubscribeToTask",
            "params": {"id": f"{thread}:{request_id}"},
        }
        headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
        async with (
            self.gw.http(self.token) as http,
            http.stream("POST", f"/a2a/{self.agent}", json=body, headers=headers) as response,
        ):
            if "event-stream" not in response.headers.get("content-type", ""):
                return Outcome("refused", code=_a2a_code(json.loads(await response.aread())["error"]))
            state = ""
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                reply = json.loads(line[5:])
                if "error" in reply:
                    return Outcome("refused", code=_a2a_code(reply["error"]))
                result = reply["result"]
                found = result.get("task") or result.get("statusUpdate")
                if found is not None:
                    state = found["status"]["state"]
        return Outcome(A2A_STATES[state], request_id)


def _a2a_code(error: dict[str, Any]) -> str | None:
    """The product code of an A2A error (its ErrorInfo metadata, or a plain JSON-RPC error's data)."""
    data: Any = error.get("data")
    if isinstance(data, list):
        details: list[dict[str, Any]] = [d for d in data if isinstance(d, dict) and "metadata" in d]  # pyright: ignore[reportUnknownVariableType]
        return next((str(d["metadata"].get("code")) for d in details), None)
    return data.get("code") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


# ---- MCP -----------------------------------------------------------------------------------------

MCP_STATES = {
    "submitted": "queued",
    "input_required": "awaiting_approval",
    "queued": "accepted",
    "accepted": "accepted",
}


class McpDriver(Driver):
    """MCP tools: `ask`, `steer`, `approve`, `cancel`, `status`; a handle `<agent>:<session>:<request>`."""

    name = "mcp"

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=auth(self.token), timeout=httpx2.Timeout(30.0, read=120.0)) as http,
            Client(streamable_http_client(f"{self.gw.url}/mcp", http_client=http)) as client,
        ):
            yield client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        async with self._client() as client:
            result = await client.call_tool(tool, arguments)
        content: dict[str, Any] = result.structured_content or {}
        if result.is_error:
            said = " ".join(getattr(part, "text", "") for part in result.content)
            return Outcome("refused", code=str(content.get("error", {}).get("code")), detail=said)
        handle = str(content.get("handle") or "")
        status = str(content["status"])
        return Outcome(MCP_STATES.get(status, status), handle.rsplit(":", 1)[1] if handle else None)

    def _handle(self, thread: str, request_id: str) -> str:
        return f"{self.agent}:{thread}:{request_id}"

    async def ask(self, thread: str, text: str, *, on_busy: str = "reject", wait: bool = True) -> Outcome:
        arguments = {"query": text, "agent": self.agent, "session": thread, "on_busy": on_busy}
        return await self._call("ask", {**arguments, "wait_s": 60 if wait else 0})

    async def steer(self, thread: str, request_id: str, text: str) -> Outcome:
        return await self._call("steer", {"handle": self._handle(thread, request_id), "text": text})

    async def decide(self, thread: str, request_id: str, *, approved: bool) -> Outcome:
        decided = await self._call(
            "approve", {"handle": self._handle(thread, request_id), "approved": approved}
        )
        return decided if decided.status == "refused" else await self.wait(thread, request_id)

    async def cancel(self, thread: str, request_id: str) -> Outcome:
        return await self._call("cancel", {"handle": self._handle(thread, request_id)})

    async def wait(self, thread: str, request_id: str) -> Outcome:
        return await self._call("status", {"handle": self._handle(thread, request_id), "wait_s": 60})


# ---- the AI SDK ----------------------------------------------------------------------------------

AISDK_ENDS = {"stop": "completed", "tool-calls": "awaiting_approval", "other": "cancelled", "error": "failed"}


class AisdkDriver(Driver):
    """The AI SDK's chat request: an ask is a user message; a steer, one with `on_busy: steer`.

    A decision is the assistant message with its tool part `approval-responded`; waiting, the
    SDK's resume route; no cancel.
    """

    name = "aisdk"
    cancels = False
    steer_names_request = False

    async def _post(self, body: dict[str, Any], *, until_start: bool) -> Outcome:
        async with (
            self.gw.http(self.token) as http,
            http.stream("POST", f"/ai-sdk/{self.agent}", json=body) as response,
        ):
            if response.status_code != 200:
                raw = await response.aread()
                return Outcome("refused", code=json.loads(raw)["error"]["code"], detail=raw.decode())
            return await _aisdk_outcome(response, until_start=until_start)

    async def ask(self, thread: str, text: str, *, on_busy: str = "reject", wait: bool = True) -> Outcome:
        message = {
            "id": f"u-{uuid.uuid4().hex[:10]}",
            "role": "user",
            "parts": [{"type": "text", "text": text}],
        }
        body = {"id": thread, "messages": [message], "trigger": "submit-message", "on_busy": on_busy}
        return await self._post(body, until_start=not wait)

    async def steer(self, thread: str, request_id: str, text: str) -> Outcome:
        return await self.ask(thread, text, on_busy="steer", wait=False)

    async def decide(self, thread: str, request_id: str, *, approved: bool) -> Outcome:
        part = {
            "type": "dynamic-tool",
            "toolName": "calculator",
            "toolCallId": CALL_ID,
            "state": "approval-responded",
            "input": {"expression": "17 * 23"},
            "approval": {"id": CALL_ID, "approved": approved},
        }
        message = {"id": request_id, "role": "assistant", "parts": [part]}
        return await self._post({"id": thread, "messages": [message]}, until_start=False)

    async def wait(self, thread: str, request_id: str) -> Outcome:
        """Resume the thread's stream until the running request is `request_id`, and read it to its end."""
        for _ in range(20):
            async with (
                self.gw.http(self.token) as http,
                http.stream("GET", f"/ai-sdk/{self.agent}/{thread}/stream") as response,
            ):
                if response.status_code != 200:
                    raw = await response.aread()
                    if response.status_code == 204:
                        return Outcome("idle", request_id, detail="nothing runs")
                    return Outcome("refused", code=json.loads(raw)["error"]["code"], detail=raw.decode())
                outcome = await _aisdk_outcome(response, until_start=False)
            if outcome.request_id == request_id:
                return outcome
        raise AssertionError(f"request {request_id} never ran")


async def _aisdk_outcome(response: httpx.Response, *, until_start: bool) -> Outcome:
    """What a UI message stream says: after `start`, the ask's disposition; at its end, the request's."""
    request_id, status, code = None, "", None
    async for line in response.aiter_lines():
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        metadata: dict[str, Any] = chunk.get("messageMetadata") or {}
        if chunk["type"] == "start":
            request_id = chunk["messageId"].removesuffix(":answer")
            if until_start:
                disposition = str(metadata.get("disposition"))
                status = {"queued": "queued", "steered": "accepted"}.get(disposition, "running")
                return Outcome(status, request_id)
        elif chunk["type"] == "finish":
            status = AISDK_ENDS[chunk["finishReason"]]
            code = metadata.get("error", {}).get("code")
            if metadata.get("refused"):
                status = "refused"
    return Outcome(status, request_id, code)


DRIVERS: tuple[type[Driver], ...] = (AguiDriver, A2aDriver, McpDriver, AisdkDriver)


# ---- the scenarios -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """The session's thread (its messages, by role) and its requests' statuses."""

    users: list[str]
    answers: list[str]
    tools: list[str]
    statuses: dict[str, str]


async def seen(gw: GatewayServer, agent: str, thread: str) -> Seen:
    session = gw.ctx.sessions.get(session_id(Principal("alice"), agent, thread))
    page = await session.thread_page(0, 200)
    messages = [e.payload for e in page.entries if isinstance(e, MessageEntry)]
    records = await session.requests()
    return Seen(
        users=[m.content for m in messages if m.role == "user"],
        answers=[m.content for m in messages if m.role == "assistant" and m.content],
        tools=[m.content for m in messages if m.role == "tool"],
        statuses={r.request_id: r.status for r in records},
    )


def _thread(driver: type[Driver], scenario: str) -> str:
    return f"{driver.name}-{scenario}-{uuid.uuid4().hex[:8]}"


async def ask(gw: GatewayServer, driver: type[Driver]) -> None:
    thread = _thread(driver, "ask")
    done = await driver(gw, ALICE, "default").ask(thread, "Hello?")
    assert done.status == "completed", done
    now = await seen(gw, "default", thread)
    assert now.users == ["Hello?"] and now.answers == ["Hello from the gateway, streamed in small pieces."]
    assert now.statuses == {done.request_id: "completed"}


async def busy_reject(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "reject"), driver(gw, ALICE, "held")
    first = await alice.ask(thread, "First", wait=False)
    assert first.status == "running", first
    refused = await alice.ask(thread, "Second", on_busy="reject")
    assert (refused.status, refused.code) == ("refused", "busy"), refused
    assert (await alice.wait(thread, str(first.request_id))).status == "completed"
    now = await seen(gw, "held", thread)
    assert now.users == ["First"] and now.answers == [HELD], "the refused message was never asked"


async def busy_enqueue(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "enqueue"), driver(gw, ALICE, "held")
    first = await alice.ask(thread, "First", wait=False)
    queued = await alice.ask(thread, "Second", on_busy="enqueue", wait=False)
    assert queued.status == "queued", queued
    waited = await alice.wait(thread, str(queued.request_id))
    assert waited.status == "completed", waited
    now = await seen(gw, "held", thread)
    assert now.users == ["First", "Second"] and now.answers == [HELD, HELD]
    assert now.statuses == {first.request_id: "completed", queued.request_id: "completed"}


async def steer(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "steer"), driver(gw, ALICE, "steerable")
    first = await alice.ask(thread, "Tell me at length", wait=False)
    assert first.status == "running", first
    steered = await alice.steer(thread, str(first.request_id), "Be brief")
    assert steered.status == "accepted", steered
    assert (await alice.wait(thread, str(first.request_id))).status == "completed"
    now = await seen(gw, "steerable", thread)
    assert now.users == ["Tell me at length", "Be brief"] and now.answers[-1] == STEERED
    assert list(now.statuses.values()) == ["completed"], "the steer joined the running request"


async def steer_a_queued_request(gw: GatewayServer, driver: type[Driver]) -> None:
    """Steer goes to the session, for the request it names: one waiting for its turn is `not_running`."""
    thread, alice = _thread(driver, "steerqueued"), driver(gw, ALICE, "held")
    first = await alice.ask(thread, "First", wait=False)
    queued = await alice.ask(thread, "Second", on_busy="enqueue", wait=False)
    refused = await alice.steer(thread, str(queued.request_id), "Be brief")
    assert (refused.status, refused.code) == ("refused", "not_running"), refused
    assert (await alice.wait(thread, str(queued.request_id))).status == "completed"
    now = await seen(gw, "held", thread)
    assert now.users == ["First", "Second"], "the steer reached neither request"
    assert now.statuses == {first.request_id: "completed", queued.request_id: "completed"}


steer_a_queued_request.needs = "steer_names_request"  # pyright: ignore[reportFunctionMemberAccess]


async def interrupt(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "interrupt"), driver(gw, ALICE, "held")
    first = await alice.ask(thread, "First", wait=False)
    second = await alice.ask(thread, "Second", on_busy="interrupt")
    assert second.status == "completed", second
    now = await seen(gw, "held", thread)
    assert now.statuses == {first.request_id: "cancelled", second.request_id: "completed"}
    assert now.users == ["First", "Second"] and now.answers == [HELD]


async def approve(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "approve"), driver(gw, ALICE, "approver")
    waiting = await alice.ask(thread, "17 * 23?")
    assert waiting.status == "awaiting_approval", waiting
    done = await alice.decide(thread, str(waiting.request_id), approved=True)
    assert done.status == "completed", done
    now = await seen(gw, "approver", thread)
    [result] = now.tools
    assert json.loads(result) == {"ok": True, "result": 391} and now.answers[-1] == "17 * 23 = 391."


async def deny(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "deny"), driver(gw, ALICE, "approver")
    waiting = await alice.ask(thread, "17 * 23?")
    assert waiting.status == "awaiting_approval", waiting
    done = await alice.decide(thread, str(waiting.request_id), approved=False)
    assert done.status == "completed", done
    now = await seen(gw, "approver", thread)
    [result] = now.tools
    assert "391" not in result and "denied" in result.lower(), result


async def cancel(gw: GatewayServer, driver: type[Driver]) -> None:
    """Cancel goes to the request's run: it ends `cancelled`, and a second cancel is `not_running`."""
    thread, alice = _thread(driver, "cancel"), driver(gw, ALICE, "held")
    started = await alice.ask(thread, "First", wait=False)
    cancelled = await alice.cancel(thread, str(started.request_id))
    assert cancelled.status == "cancelled", cancelled
    again = await alice.cancel(thread, str(started.request_id))
    assert (again.status, again.code) == ("refused", "not_running"), again
    assert (await seen(gw, "held", thread)).statuses == {started.request_id: "cancelled"}


async def not_found(gw: GatewayServer, driver: type[Driver]) -> None:
    thread, alice = _thread(driver, "unknown"), driver(gw, ALICE, "approver")
    outcomes = [await alice.wait(thread, "r1"), await alice.decide(thread, "r1", approved=True)]
    if driver.steer_names_request:
        outcomes.append(await alice.steer(thread, "r1", "Be brief"))
    if driver.cancels:
        outcomes.append(await alice.cancel(thread, "r1"))
    assert all((o.status, o.code) == ("refused", "not_found") for o in outcomes), outcomes


async def another_principal(gw: GatewayServer, driver: type[Driver]) -> None:
    thread = _thread(driver, "owner")
    alice, bob = driver(gw, ALICE, "approver"), driver(gw, BOB, "approver")
    waiting = await alice.ask(thread, "17 * 23?")
    request_id = str(waiting.request_id)
    outcomes = [await bob.wait(thread, request_id), await bob.decide(thread, request_id, approved=True)]
    if driver.steer_names_request:
        outcomes.append(await bob.steer(thread, request_id, "Be brief"))
    if driver.cancels:
        outcomes.append(await bob.cancel(thread, request_id))
    assert all((o.status, o.code) == ("refused", "not_found") for o in outcomes), outcomes
    assert (await seen(gw, "approver", thread)).statuses == {request_id: "running"}, "Bob changed nothing"
    decided = await alice.decide(thread, request_id, approved=True)
    assert decided.status == "completed", decided


cancel.needs = "cancels"  # pyright: ignore[reportFunctionMemberAccess]
SCENARIOS = (
    ask,
    busy_reject,
    busy_enqueue,
    steer,
    steer_a_queued_request,
    interrupt,
    approve,
    deny,
    cancel,
    not_found,
    another_principal,
)


def offers(driver: type[Driver], scenario: Any) -> bool:
    """Whether `driver`'s protocol has what `scenario` needs (its `needs`: a `Driver` flag)."""
    needs: str | None = getattr(scenario, "needs", None)
    return needs is None or bool(getattr(driver, needs))


CASES = [
    pytest.param(driver, scenario, id=f"{driver.name}-{scenario.__name__}")
    for driver in DRIVERS
    for scenario in SCENARIOS
    if offers(driver, scenario)
]


@pytest.mark.parametrize(("driver", "scenario"), CASES)
async def test_the_same_scenario_has_the_same_outcome_in_every_protocol(
    gateway: GatewayServer, driver: type[Driver], scenario: Any
) -> None:
    await scenario(gateway, driver)


def test_every_protocol_runs_every_scenario_it_offers() -> None:
    """AG-UI and the AI SDK have no cancel and no steer that names a request: every other pair runs."""
    for name in ("agui", "aisdk"):
        assert [str(case.id) for case in CASES if str(case.id).startswith(f"{name}-")] == [
            f"{name}-{s.__name__}" for s in SCENARIOS if s not in (cancel, steer_a_queued_request)
        ]
    assert len(CASES) == len(DRIVERS) * len(SCENARIOS) - 4
