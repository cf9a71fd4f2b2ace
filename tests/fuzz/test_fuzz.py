"""Fuzzing every signal and Update of `ReActRun` and `AgentSession` with generated junk.

Junk goes through a raw Temporal client with the SDK's default JSON converter, as from another
SDK, the CLI or a script (strategies: `tests/fuzz_strategies.py`). Long-lived targets absorb
the cases: runs blocked in a held scripted LLM call (`tests/llm_gate.py`: it lasts until the
test answers it), and one session whose active request is such a run, round after round; each
target retires after `BATCHES_PER_TARGET` batches. Each Update must get its named rejection (or its rejected
`Ack`); afterwards every target must still do its real work (a valid steer is queued, the
run completes with exactly the expected thread, the session answers and continues the same
conversation with its config untouched), no history may hold a failed workflow task, and a
run's trace must count every rejection.

`REACT_FUZZ_BATCHES` (default 66) sets the batches of 8 per target: 2 x 66 x 8 = 1,056 cases
(junk start inputs: `tests/fuzz/test_fuzz_start_inputs.py`).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from typing import Any

from hypothesis import strategies as st
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from contracts import RunResult, Trace
from contracts.session import RequestResult, SessionStatus
from payloads.blob_store import BlobStore
from tests.fuzz_helpers import BATCH, generate, raw_client, task_failures, until
from tests.fuzz_strategies import Case, Target, cases
from tests.helpers import messages, thread_of
from tests.llm_gate import HELD_S, answer_llm_call
from tests.session_helpers import session_thread

BATCHES = int(os.environ.get("REACT_FUZZ_BATCHES", "66"))
BATCHES_PER_TARGET = 6
"""Batches a target absorbs while its LLM call is held; then it gets a valid steer, the test
answers the call ("draft"), and a fresh target takes over."""
STEER = "A valid steer, after the junk."
SESSION_CONFIG = {"model": "scripted", "system_prompt": "You are fuzzed.", "tools": ["echo"]}


def script(final: str) -> list[dict[str, Any]]:
    return [{"delay_s": HELD_S}, {"content": final}]


async def llm_started(client: Client, run_id: str) -> bool:
    try:
        trace = await client.get_workflow_handle(run_id).query("trace", result_type=Trace)
    except RPCError:  # a session's run that has not started yet
        return False
    return any(event.kind == "llm_started" for event in trace.events)


async def call(handle: WorkflowHandle[Any, Any], case: Case) -> None:
    """Send one case; for an Update, check the answer against the case's expectation."""
    if case.kind == "signal":
        await handle.signal(case.name, args=case.args)
        return
    about = f"{case.name} Update with {case.args!r:.300}"
    try:
        answer = await handle.execute_update(case.name, args=case.args)  # pyright: ignore[reportUnknownMemberType]
    except WorkflowUpdateFailedError as err:
        assert isinstance(err.cause, ApplicationError), f"{about}: unnamed failure {err.cause!r}"
        assert err.cause.type in case.expect.errors, f"{about}: {err.cause.type}: {err.cause.message}"
        return
    if not case.expect.answer:
        assert isinstance(answer, dict), f"{about}: answered {answer!r:.300}"
        ack: dict[str, Any] = answer  # pyright: ignore[reportUnknownVariableType]
        assert ack.get("status") == "rejected" and ack.get("reason") in case.expect.reasons, f"{about}: {ack}"


class Targets:
    """The workflows absorbing the junk, the counts they must show, and what to verify at the end."""

    def __init__(self, client: Client, raw: Client, task_queue: str, store: BlobStore) -> None:
        self.client, self.raw, self.task_queue, self.store = client, raw, task_queue, store
        self.slots: dict[Target, asyncio.Semaphore] = {
            "run": asyncio.Semaphore(BATCH),
            "session": asyncio.Semaphore(BATCH),
        }
        self.handles: dict[Target, WorkflowHandle[Any, Any]] = {}
        self.absorbed: Counter[Target] = Counter()
        self.sent: Counter[str] = Counter()
        self.retired_runs: list[tuple[str, Counter[str], str]] = []
        self.run_counts: Counter[str] = Counter()
        self.session_id = f"agent-fuzz-{uuid.uuid4().hex[:8]}"
        self.rounds: list[str] = []
        self.round_runs: list[str] = []

    async def start_run(self) -> None:
        handle = await self.raw.start_workflow(
            "ReActRun",
            {"query": "fuzz target", "config": {"model": "scripted", "script": script("final answer")}},
            id=f"fuzz-run-{uuid.uuid4().hex[:8]}",
            task_queue=self.task_queue,
        )
        await until(lambda: llm_started(self.client, handle.id), "the target run's LLM call")
        self.handles["run"], self.absorbed["run"], self.run_counts = handle, 0, Counter()

    async def start_round(self) -> None:
        query = f"round {len(self.rounds) + 1}"
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "AgentSession",
            {"agent_id": "fuzz", "config": SESSION_CONFIG},
            id=self.session_id,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        accepted: dict[str, str] = await self.raw.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
            "ask",
            {"query": query, "overrides": {"script": script(f"final {query}")}},
            start_workflow_operation=start,
        )
        await until(lambda: llm_started(self.client, accepted["run_workflow_id"]), "the session's run")
        self.rounds.append(accepted["request_id"])
        self.round_runs.append(accepted["run_workflow_id"])
        self.handles["session"], self.absorbed["session"] = self.raw.get_workflow_handle(self.session_id), 0

    async def send(self, batch: list[Case]) -> None:
        target = batch[0].target
        if self.absorbed[target] == BATCHES_PER_TARGET:
            await (self.retire_run() if target == "run" else self.end_round())
            await (self.start_run() if target == "run" else self.start_round())
        self.absorbed[target] += 1

        async def one(case: Case) -> None:
            async with self.slots[target]:
                await call(self.handles[target], case)
            self.sent[f"{target} {case.kind}"] += 1
            if target == "run" and case.counted:
                self.run_counts[case.counted] += 1

        await asyncio.gather(*(one(case) for case in batch))

    async def steer(self, target: Target) -> str:
        ack: dict[str, Any] = await self.handles[target].execute_update("steer", {"content": STEER})  # pyright: ignore[reportUnknownMemberType]
        assert ack["status"] == "queued", f"the {target} refused a valid steer after the junk: {ack}"
        return ack["input_id"]

    async def retire_run(self) -> None:
        run_id = self.handles["run"].id
        self.retired_runs.append((run_id, self.run_counts, await self.steer("run")))
        await answer_llm_call(self.client, self.store, run_id, "draft")

    async def end_round(self) -> None:
        input_id = await self.steer("session")
        await answer_llm_call(self.client, self.store, self.round_runs[-1], "draft")
        handle = self.client.get_workflow_handle(self.session_id)
        record = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
            "await_result", {"request_id": self.rounds[-1]}, result_type=RequestResult
        )
        assert record.status == "completed" and record.result == f"final round {len(self.rounds)}", record
        entries = await session_thread(handle)
        assert any(e.refs.get("input_id") == input_id for e in entries), "the session lost its queued steer"

    async def verify_runs(self) -> None:
        for run_id, counts, input_id in self.retired_runs:
            handle = self.client.get_workflow_handle(run_id, result_type=RunResult)
            result = await handle.result()
            assert result.outcome.status == "completed" and result.result == "final answer", result.outcome
            expected = [
                ("user", "fuzz target"),
                ("assistant", "draft"),
                ("user", STEER),
                ("assistant", "final answer"),
            ]
            assert messages(result.entries) == expected and len(result.entries) == len(expected)
            assert result.entries[2].refs["input_id"] == input_id
            assert messages(await thread_of(handle)) == expected
            trace = await handle.query("trace", result_type=Trace)
            assert trace.rejections == {kind: n for kind, n in counts.items() if n}, f"{run_id} miscounted"
            kinds = [event.kind for event in trace.events]
            assert kinds.count("llm_completed") == 2 and kinds[-1] == "request_completed", kinds

    async def verify_session(self) -> None:
        handle = self.client.get_workflow_handle(self.session_id)
        status = await handle.query("status", result_type=SessionStatus)
        assert status.state == "idle" and status.pending_context_op_id is None, status
        assert status.config.model_dump(include=set(SESSION_CONFIG)) == SESSION_CONFIG
        assert status.config.tool_context == {}, "junk changed the session's config"
        expected: list[tuple[str, str]] = []
        for n in range(1, len(self.rounds) + 1):
            expected += [
                ("user", f"round {n}"),
                ("assistant", "draft"),
                ("user", STEER),
                ("assistant", f"final round {n}"),
            ]
        entries = await session_thread(handle)
        assert messages(entries) == expected and len(entries) == len(expected), (
            "junk changed the conversation"
        )
        failures = await task_failures(self.client, self.session_id)
        for run_id in self.round_runs:
            failures += await task_failures(self.client, run_id)
        for run_id, _, _ in self.retired_runs:
            failures += await task_failures(self.client, run_id)
        assert not failures, failures


async def test_junk_to_every_signal_and_update_changes_nothing(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    targets = Targets(client, raw_client(client), task_queue, store)
    plans = {
        target: generate(st.lists(cases(target), min_size=BATCH, max_size=BATCH), BATCHES)
        for target in ("run", "session")
    }

    async def absorb(target: Target) -> None:
        await (targets.start_run() if target == "run" else targets.start_round())
        for batch in plans[target]:
            await targets.send(batch)
        await (targets.retire_run() if target == "run" else targets.end_round())

    started = time.monotonic()
    await asyncio.gather(absorb("run"), absorb("session"))
    elapsed = time.monotonic() - started
    await targets.verify_runs()
    await targets.verify_session()
    total = sum(targets.sent.values())
    print(
        f"\nfuzz: {total} cases in {elapsed:.0f}s {dict(targets.sent)}, {len(targets.rounds)} session rounds"
    )
    assert total == 2 * BATCH * BATCHES, "hypothesis ran fewer examples than asked for"
