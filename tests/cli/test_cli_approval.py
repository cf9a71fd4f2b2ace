"""Approving tool calls from the command line: `client.py approve` from another terminal, `chat` asking y/n/e.

The CLI runs as a user runs it: separate `client.py` processes against the dev server,
with a worker on the product's task queue in this process; `chat` runs in a pty.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pydantic import JsonValue
from temporalio.client import Client

from cli.chat_approvals import ApprovalPrompt
from cli.render import event_line
from clients.runs import Runs
from clients.sessions import Sessions
from contracts import TASK_QUEUE, Ack, TraceEvent, TraceKind
from conversation import MessageEntry
from payloads.blob_store import BlobStore
from testing import answer, call_tools, tool_call
from tests.agent_tools import registry_for_tests
from tests.approvals.test_approval import agent, calculate, decisions, tool_results, waiting
from tests.cli.test_cli_follow import REPO, cli, script_file
from tests.cli.test_cli_stream import WAIT_S, Terminal
from worker import build_worker


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    """A worker on the product's task queue (where the CLI starts runs and sessions)."""
    worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
    async with worker:
        yield TASK_QUEUE


async def test_approve_and_deny_from_another_terminal(client: Client, product_queue: str) -> None:
    both = call_tools(
        tool_call("calculator", {"expression": "6 * 7"}, call_id="calc-1"),
        tool_call("calculator", {"expression": "1 / 0"}, call_id="calc-2"),
    )
    run = await Runs(client, task_queue=product_queue).start("Two sums?", agent(both, answer("Done.")))
    await waiting(run, 2)
    shown = await cli(client, "show", run.workflow_id, "state")
    assert shown.code == 0 and "awaiting approval" in shown.out and "calc-2" in shown.out, shown.err

    approved = await cli(client, "approve", run.workflow_id, "calc-1", "--approver", "carol")
    assert approved.code == 0 and approved.out.startswith("accepted calc-1"), approved.err
    twice = await cli(client, "approve", run.workflow_id, "calc-1")  # calc-2 still waits: the run goes on
    assert twice.code == 1 and "rejected: already_decided" in twice.out
    unknown = await cli(client, "approve", run.workflow_id, "calc-9")
    assert unknown.code == 1 and "rejected: unknown_call" in unknown.out
    edit_denial = await cli(client, "approve", run.workflow_id, "calc-2", "--deny", "--arguments", "{}")
    assert edit_denial.code == 1 and "--arguments" in edit_denial.err
    bad_json = await cli(client, "approve", run.workflow_id, "calc-2", "--arguments", "{expression")
    assert bad_json.code == 1 and "not valid JSON" in bad_json.err
    denied = await cli(client, "approve", run.workflow_id, "calc-2", "--deny", "--reason", "divides by 0")
    assert denied.code == 0 and denied.out.startswith("accepted calc-2"), denied.err

    result = await run.result()
    assert result.status == "completed"
    results = tool_results(result)
    assert results["calc-1"]["result"] == 42
    assert (
        results["calc-2"]["error"]["type"] == "denied"
        and "divides by 0" in results["calc-2"]["error"]["message"]
    )
    assert [(d["call_id"], d["approver"]) for d in await decisions(run)] == [
        ("calc-1", "carol"),
        ("calc-2", getpass.getuser()),  # the default approver: the user's name
    ]


async def test_approve_through_a_session_id(client: Client, product_queue: str, tmp_path: Path) -> None:
    session_id = f"agent-cli-{uuid.uuid4().hex[:8]}"
    script = script_file(tmp_path, [calculate().model_dump(mode="json"), {"content": "It is 42."}])
    args = ("--script", script, "--tool", "calculator", "--require-approval", "calculator", "--no-follow")
    asked = await cli(client, "ask", session_id, "What is 6 * 7?", *args)
    assert asked.code == 0, asked.err
    session = Sessions(client).get(session_id)
    [record] = await session.requests()
    await waiting(Runs(client).get(record.run_workflow_id))
    approved = await cli(client, "approve", session_id, "calc-1")
    assert approved.code == 0 and approved.out.startswith("accepted calc-1"), approved.err
    result = await session.await_result(record.request_id)
    assert result.status == "completed" and result.result == "It is 42."
    idle = await cli(client, "approve", session_id, "calc-1")
    assert idle.code == 1 and "rejected: idle" in idle.out


def _calls(*expressions: str) -> list[dict[str, Any]]:
    """One scripted turn per expression, each calling the calculator (ids calc-1, calc-2, ...)."""
    turns = [calculate(e, f"calc-{n}") for n, e in enumerate(expressions, start=1)]
    return [t.model_dump(mode="json") for t in turns]


@pytest.mark.parametrize("follow", [(), ("--no-stream",)], ids=["streamed", "polled"])
async def test_chat_asks_yes_no_or_edit_inline(
    client: Client, product_queue: str, tmp_path: Path, follow: tuple[str, ...]
) -> None:
    session_id = f"agent-cli-{uuid.uuid4().hex[:8]}"
    script = script_file(tmp_path, [*_calls("6 * 7", "1 + 1", "2 ** 10"), {"content": "All done."}])
    terminal = Terminal()
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host, "TERM": "xterm"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    chat = [sys.executable, "client.py", "chat", session_id, "--script", script, "--tool", "calculator"]
    process = await asyncio.create_subprocess_exec(
        *chat,
        "--require-approval",
        "calculator",
        *follow,
        cwd=REPO,
        env=env,
        stdin=terminal.child,
        stdout=terminal.child,
        stderr=terminal.child,
    )
    try:
        await terminal.wait_for(f"session {session_id}")
        terminal.type("Compute three things.")
        await terminal.wait_for('approve calculator({"expression": "6 * 7"})? [y]es/[n]o/[e]dit')
        terminal.type("y")
        await terminal.wait_for("accepted calc-1")
        await terminal.wait_for('approve calculator({"expression": "1 + 1"})?')
        terminal.type("n")
        await terminal.wait_for("reason (shown to the model")
        terminal.type("not today")
        await terminal.wait_for("accepted calc-2")
        await terminal.wait_for('approve calculator({"expression": "2 ** 10"})?')
        terminal.type("e")
        await terminal.wait_for("one JSON object:")
        terminal.type("{expression")
        await terminal.wait_for("the edit is not valid JSON")
        terminal.type("e")
        terminal.type('{"expr": "3 + 3"}')
        await terminal.wait_for("rejected: invalid_arguments")
        terminal.type("e")
        terminal.type('{"expression": "3 + 3"}')
        await terminal.wait_for("accepted calc-3")
        final = await terminal.wait_for("answer: All done.")
        assert final.count("? [y]es/[n]o/[e]dit") == 5  # 3 calls, 2 asked again
        terminal.type("/quit")
        assert await asyncio.wait_for(process.wait(), WAIT_S) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        terminal.close()
    [record] = await Sessions(client).get(session_id).requests()
    run = Runs(client).get(record.run_workflow_id)
    tool_messages = [
        json.loads(e.payload.content)
        for e in (await run.result()).entries
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    ]
    assert tool_messages[0]["result"] == 42
    assert (
        tool_messages[1]["error"]["type"] == "denied" and "not today" in tool_messages[1]["error"]["message"]
    )
    assert tool_messages[2]["result"] == 6  # the edited arguments ran
    assert {d["approver"] for d in await decisions(run)} == {getpass.getuser()}


def _event(kind: TraceKind, call_id: str, seq: int, **data: JsonValue) -> TraceEvent:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return TraceEvent(
        seq=seq, at=at, kind=kind, iteration=1, request_id="r", run_id="u", call_id=call_id, data=data
    )


async def test_the_chat_asks_one_call_at_a_time_and_drops_one_decided_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sent: list[tuple[str, bool, str | None, dict[str, JsonValue] | None]] = []

    async def decide(
        call_id: str, approved: bool, reason: str | None, edited: dict[str, JsonValue] | None
    ) -> Ack:
        sent.append((call_id, approved, reason, edited))
        return Ack(status="accepted", call_id=call_id)

    prompt = ApprovalPrompt(decide)
    first = _event("approval_requested", "a", 1, name="calculator", arguments='{"expression": "1"}')
    prompt.seen(first)
    prompt.seen(_event("approval_requested", "b", 2, name="echo", arguments='{"text": "hi"}'))
    prompt.seen(first)  # seen again (the polled trace after the stream): asked once
    shown = capsys.readouterr().out
    assert shown.count("? [y]es/[n]o/[e]dit") == 1 and 'calculator({"expression": "1"})' in shown
    prompt.seen(_event("approval_decided", "a", 3, verdict="approved", approver="someone"))
    shown = capsys.readouterr().out
    assert "call a was decided meanwhile: approved" in shown and 'approve echo({"text": "hi"})?' in shown
    await prompt.answer("maybe")
    assert "answer y (approve), n (deny) or e" in capsys.readouterr().out and prompt.asking
    await prompt.answer("y")
    assert sent == [("b", True, None, None)] and not prompt.asking
    line = event_line(
        _event("approval_decided", "b", 4, verdict="denied", approver="bob", reason="no", edited=False)
    )
    assert "approval_decided" in line and "denied by bob" in line and "reason=no" in line
