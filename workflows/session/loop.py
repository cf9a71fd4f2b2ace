"""One session's loop: serving its requests one at a time, and what needs the session as a whole.

`AgentSession` builds the session's components (`SessionParts`) and hands them to this
loop, to `SessionControls` and to its own handlers. `run` restores a snapshot (when the
session starts from one), then serves requests one at a time and returns the input to
continue as new with, once that is due and the session is idle (nothing active,
nothing waiting) with every handler finished. The loop also owns the session's
identity (agent id, fork origin, the forks it started): its status, fork and export.
"""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts.branches import MAX_BRANCHES, Branch, BranchList
from contracts.errors import INVALID_INPUT
from contracts.session import (
    AskAccepted,
    AskInput,
    ExportInput,
    ExportResult,
    ForkInput,
    ForkOrigin,
    ForkResult,
    SessionCarry,
    SessionInput,
    SessionStatus,
)
from workflows.session.export import export_lane
from workflows.session.fork import (
    FORK_WAIT_S,
    PATCH_FORK_WAIT_BOUNDED,
    ForkNumbers,
    fork_problem,
    projection_at,
    start_fork,
)
from workflows.session.parts import SessionParts
from workflows.session.requests import set_idle_details
from workflows.session.restore import restore_snapshot
from workflows.session.thread import TAIL_CHARS


class SessionLoop:
    """One session's loop, status, fork and export."""

    def __init__(self, session: SessionInput, parts: SessionParts) -> None:
        """Serve `session` with its `parts` (built from it: `SessionParts.build`)."""
        carry = session.carry
        self._agent_id = session.agent_id
        self._input = session
        self._thread = parts.thread
        self._settings = parts.settings
        self._book = parts.book
        self._ops = parts.ops
        self._requests = parts.requests
        self._asks = parts.asks
        self._usage_rows = parts.usage_rows
        self._forked_from = carry.forked_from if carry else session.forked_from
        self._forks = ForkNumbers(carry.forks_started if carry else 0)
        self._branches: list[Branch] = list(carry.branches) if carry else []
        self._ready = session.snapshot is None or carry is not None
        self._failure: ApplicationError | None = None

    async def run(self) -> SessionInput:
        """Serve requests one at a time; return the next input once continuing as new is due, while idle.

        Raises:
            ApplicationError: the snapshot the session starts from cannot be restored (`snapshot_*`).
        """
        if not self._ready:
            self._failure = await restore_snapshot(self._input, self._thread)
            self._ready = True
            if self._failure is not None:
                await workflow.wait_condition(workflow.all_handlers_finished)
                raise self._failure
        set_idle_details(self._book.runs_started)
        self._usage_rows.write_carried()
        while True:
            await workflow.wait_condition(lambda: self._book.next is not None or self._continue_due())
            if self._book.next is not None:
                await self._requests.run_next()
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            if self._book.idle:  # nothing asked since the check
                return self._next_input()

    def _continue_due(self) -> bool:
        return workflow.info().is_continue_as_new_suggested() or self._thread.tail_chars >= TAIL_CHARS

    def _next_input(self) -> SessionInput:
        settings = self._settings
        carry = SessionCarry(
            conversation=self._thread.carried(),
            archive=self._thread.archive,
            config=settings.config,
            requests=self._book.records,
            runs_started=self._book.runs_started,
            window_tokens=self._thread.window_tokens,
            usage=self._requests.usage,
            agent_state=self._requests.agent_state,
            forked_from=self._forked_from,
            forks_started=self._forks.started,
            branches=self._branches,
            unwritten_usage=self._usage_rows.unwritten,
        )
        return SessionInput(
            agent_id=self._agent_id,
            config=settings.config,
            context_policy=settings.policy,
            carry=carry,
            webhook_url=settings.webhook_url,
        )

    async def accept(self, ask: AskInput) -> AskAccepted:
        """Once the session is ready, act on the ask by its `on_busy` (or fail as the session does)."""
        await workflow.wait_condition(lambda: self._ready)
        if self._failure is not None:
            raise self._failure
        return await self._asks.accept(ask)

    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        active, thread, pending = self._book.active, self._thread, self._ops.pending
        return SessionStatus(
            agent_id=self._agent_id,
            state="running" if active else "idle",
            active_request_id=active.request_id if active else None,
            active_run_workflow_id=active.run_workflow_id if active else None,
            config=self._settings.config,
            thread_length=thread.next_seq,
            archived_entries=thread.first_seq,
            active_context_ref=thread.active_context_ref,
            pending_context_op_id=pending.op_id if pending else None,
            requests_kept=len(self._book.records),
            waiting_requests=self._book.waiting_count,
            forked_from=self._forked_from,
            webhook_url=self._settings.webhook_url,
            head=self._branches[-1].session_id if self._branches else None,
        )

    # ---- the family's branches (this session is their root: `contracts.branches`) ------------

    def branches(self) -> BranchList:
        """The branches recorded here, oldest first (the last is the head)."""
        return BranchList(root_id=workflow.info().workflow_id, branches=list(self._branches))

    def branch_problem(self, branch: Branch) -> ApplicationError | None:
        """Why `branch` cannot be recorded here (`invalid_input`), or None (recorded already: None too)."""
        origin = self._forked_from
        if origin is not None and origin.branch_of is not None:
            message = f"this session is a branch of {origin.branch_of}: its branches are recorded there"
            return ApplicationError(message, type=INVALID_INPUT, non_retryable=True)
        known = any(b.session_id == branch.session_id for b in self._branches)
        if not known and len(self._branches) >= MAX_BRANCHES:
            message = f"this conversation has {MAX_BRANCHES} branches, the most it records: fork it instead"
            return ApplicationError(message, type=INVALID_INPUT, non_retryable=True)
        return None

    def record_branch(self, branch: Branch) -> BranchList:
        """Record `branch` as the family's newest (its head); a branch recorded before is left as it is."""
        problem = self.branch_problem(branch)
        if problem is not None:
            raise problem
        if all(b.session_id != branch.session_id for b in self._branches):
            self._branches.append(branch)
        return self.branches()

    async def export(self, request: ExportInput) -> ExportResult:
        """A signed snapshot token of one lane's context."""
        return await export_lane(self._agent_id, self._thread, request)

    async def fork(self, payload: ForkInput) -> ForkResult:
        """Start a new session from the active lane's projection at `payload.seq` (default: the latest)."""
        # A seq past the thread waits briefly for a running request to end. The SDK applies an
        # Update before the other jobs of its activation, so a run that ended as the fork arrived
        # may not have appended its entries yet (its request still looks active here).
        wanted = payload.seq if payload.seq is not None else 0

        def reachable() -> bool:
            return wanted < self._thread.next_seq or self._book.active is None

        if not workflow.patched(PATCH_FORK_WAIT_BOUNDED):
            await workflow.wait_condition(reachable)
        elif not reachable():
            with contextlib.suppress(asyncio.TimeoutError):
                await workflow.wait_condition(reachable, timeout=FORK_WAIT_S)
        problem = fork_problem(payload, self._thread.next_seq)
        if problem is not None:
            raise problem
        seq = payload.seq if payload.seq is not None else self._thread.next_seq - 1
        context = await projection_at(self._thread, self._thread.carried(), seq)
        origin = ForkOrigin(parent_id=workflow.info().workflow_id, seq=seq, branch_of=payload.branch_of)
        start = SessionInput(
            agent_id=self._agent_id,
            config=self._settings.config,
            context_policy=self._settings.policy,
            agent_state=self._requests.agent_state,
            webhook_url=self._settings.webhook_url,
        )
        child_id = await start_fork(start, origin, context, payload.session_id, self._forks)
        return ForkResult(session_id=child_id, forked_from=origin)
