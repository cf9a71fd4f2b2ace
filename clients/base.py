"""What a run's handle and a session's handle share: typed Updates and queries, controls, thread paging.

Workflows are addressed by their public names (`steer`, `thread`, ...), exactly as
any other Temporal client would address them, so the client never imports workflow
code. Every payload is built by `clients.inputs` (checked before it is sent),
every answer is decoded into its contract model, and a coded refusal becomes a
`RejectedError`, or a rejected `Ack` for the acknowledging controls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from clients import inputs
from clients.errors import RejectedError, workflow_rejection
from clients.run_start import is_not_found
from clients.scope import ClientScope as ClientScope
from clients.scope import StoreReader, Timeouts
from clients.update_retry import execute_update
from contracts import Ack, CancelInput, SteerInput, ThreadPage
from contracts.approval import ApproveInput, PendingApproval
from contracts.errors import UNKNOWN_CALL
from contracts.signals import SteerMode
from contracts.thread import DEFAULT_PAGE_ENTRIES
from conversation import Context, ContextModifyInput, Entry
from conversation.thread import OperationReason

M = TypeVar("M", bound=BaseModel)
STALE_REFUSAL_S = 2.0
"""How long `approve` retries `unknown_call` for a call the run's state lists as waiting."""
STALE_RECHECK_S = 0.02


class WorkflowControls:
    """A handle on one run or session: its workflow id, Updates, queries and shared controls."""

    def __init__(self, client: Client, workflow_id: str, timeouts: Timeouts, store: StoreReader) -> None:
        """Address the workflow `workflow_id` (nothing is sent until a method is called)."""
        self.workflow_id = workflow_id
        self._client = client
        self._handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(workflow_id)
        self._timeouts = timeouts
        self._store = store

    # ---- typed Updates and queries ----------------------------------------------------------

    async def _update(self, name: str, payload: BaseModel, result_type: type[M], wait: timedelta | None) -> M:
        """Send an Update; a coded refusal raises `RejectedError`."""
        try:
            try:
                raw: object = await execute_update(self._handle, name, payload, result_type, wait)
            except RPCError as error:
                if not (is_not_found(error) and await self._appeared()):
                    raise
                raw = await execute_update(self._handle, name, payload, result_type, wait)
        except (WorkflowUpdateFailedError, RPCError) as error:
            rejection = workflow_rejection(error)
            if rejection is None:
                raise
            raise rejection from error
        return raw if isinstance(raw, result_type) else result_type.model_validate(raw)

    async def _query(self, name: str, result_type: type[M], arg: BaseModel | None = None) -> M:
        """Ask a query (with `arg`, or with none)."""
        raw = await self._query_value(name, result_type, arg)
        return raw if isinstance(raw, result_type) else result_type.model_validate(raw)

    async def _query_value(self, name: str, result_type: Any, arg: BaseModel | None = None) -> object:
        """A query's answer as the converter decoded it (asked again once on a timeout: `_timed_out`)."""
        timeout = self._timeouts.query

        async def ask() -> object:
            if arg is None:
                return await self._handle.query(name, result_type=result_type, rpc_timeout=timeout)
            return await self._handle.query(name, arg, result_type=result_type, rpc_timeout=timeout)

        try:
            return await ask()
        except RPCError as error:
            if not (_timed_out(error) or (is_not_found(error) and await self._appeared())):
                raise
        return await ask()

    async def _appeared(self) -> bool:
        """After `NOT_FOUND`: whether the workflow exists now, having waited for it (a promised run)."""
        return False

    async def _acked(
        self,
        name: str,
        build: Callable[[], BaseModel],
        op_id: str | None = None,
        wait: timedelta | None = None,
    ) -> Ack:
        """An acknowledging control: every refusal, the client's or the workflow's, is a rejected `Ack`."""
        try:
            payload = build()
            return await self._update(name, payload, Ack, wait or self._timeouts.control)
        except RejectedError as rejection:
            return rejection.ack(op_id)

    # ---- controls of the active run --------------------------------------------------------

    async def steer(
        self,
        content: str | SteerInput,
        *,
        expected_request_id: str | None = None,
        source: str | None = None,
        refs: Mapping[str, str] | None = None,
        mode: SteerMode = "queue",
        cancel_tools: bool = False,
    ) -> Ack:
        """Guide the run: user-style input read before its next LLM call.

        `content` is the text, or a `SteerInput` built by `clients.inputs.steer_input` (then
        the keyword arguments are not used: the input carries them).

        With `mode="interrupt"` the LLM call in flight is cancelled at once (what it had
        produced is kept as an `interrupted` assistant entry) and the model is called again
        with the steer; during a tool round the running tools finish first, unless
        `cancel_tools` (tools not started yet get a `cancelled` result either way).

        Returns:
            `queued` with the `input_id` recorded in the thread and the `mode` applied
            (`interrupt` only when something was in flight), or `rejected` with `reason`
            (`blank_content`, `payload_too_large`, `invalid_input` for an unknown mode,
            `request_mismatch`, `queue_full`, `sealed`, `idle` for a session with no active
            run, `not_running` for a finished run, ...).
        """
        return await self._acked(
            "steer",
            lambda: inputs.steer_input(
                content,
                expected_request_id=expected_request_id,
                source=source,
                refs=refs,
                mode=mode,
                cancel_tools=cancel_tools,
            ),
        )

    async def inject(
        self,
        content: str | SteerInput,
        *,
        expected_request_id: str | None = None,
        source: str | None = None,
        refs: Mapping[str, str] | None = None,
    ) -> Ack:
        """Add input to the run's conversation as new user content (takes `content`, answers as `steer`)."""
        return await self._acked(
            "inject",
            lambda: inputs.steer_input(
                content, expected_request_id=expected_request_id, source=source, refs=refs, what="inject"
            ),
        )

    async def cancel(self, reason: str | CancelInput | None = None) -> Ack:
        """Cancel the run (`reason`: why, or a built `CancelInput`).

        Returns:
            `accepted` when it ends `cancelled`, else `rejected` (`not_running`, `idle`).
        """
        return await self._acked("cancel", lambda: inputs.cancel_input(reason))

    async def approve(
        self,
        call_id: str | ApproveInput,
        *,
        approved: bool = True,
        reason: str | None = None,
        arguments: Mapping[str, JsonValue] | None = None,
        approver: str | None = None,
    ) -> Ack:
        """Decide a tool call that awaits approval (`approved=False` denies it; see `deny`).

        `reason` is shown to the model; `arguments` (approving only) replace the call's and
        must fit the tool's schema; `approver` names who decided (recorded in the trace).
        A session forwards the decision to its active run. `call_id` may be an `ApproveInput`
        built by `clients.inputs.approve_input` (which carries the other arguments).

        Returns:
            `accepted` with the `call_id`, or `rejected` with `reason` (`unknown_call`,
            `approval_not_required`, `already_decided`, `invalid_arguments` naming the fields,
            `invalid_input`, `not_running`, `idle` for a session with no active run); a
            refused decision changes nothing and the call keeps waiting.
        """

        def build() -> ApproveInput:
            return inputs.approve_input(
                call_id, approved=approved, reason=reason, arguments=arguments, approver=approver
            )

        ack = await self._acked("approve", build)
        deadline = asyncio.get_running_loop().time() + STALE_REFUSAL_S
        wanted = call_id if isinstance(call_id, str) else call_id.call_id
        while ack.reason == UNKNOWN_CALL and asyncio.get_running_loop().time() < deadline:
            # A call the run has just asked about can reach the workflow task that applies it,
            # where the Update is checked first: retried while the run's state lists the call.
            try:
                if not any(p.call_id == wanted for p in await self.pending_approvals()):
                    break
            except (RPCError, WorkflowQueryFailedError):  # e.g. a run's id asked as a session's
                break
            await asyncio.sleep(STALE_RECHECK_S)
            ack = await self._acked("approve", build)
        return ack

    async def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls awaiting a decision, oldest first (a run's, or a session's active run's)."""
        raise NotImplementedError

    async def deny(self, call_id: str, reason: str | None = None, *, approver: str | None = None) -> Ack:
        """Deny a tool call that awaits approval: the model gets a `denied` result with `reason`."""
        return await self.approve(call_id, approved=False, reason=reason, approver=approver)

    async def context_modify(self, request: ContextModifyInput) -> Ack:
        """Submit a context op: `applied` (idle), `deferred` (until the run ends), `duplicate`, `rejected`."""
        return await self._acked("context_modify", lambda: inputs.context_op(request), request.op_id or None)

    async def replace_context(
        self,
        context: Context,
        *,
        context_ref: str | None = None,
        op_id: str | None = None,
        reason: OperationReason = "manual",
        meta: Mapping[str, JsonValue] | None = None,
    ) -> Ack:
        """Replace a lane's context (default: the active lane) with `context`; see `context_modify`.

        `op_id` is the idempotency key (default: a new one): an op id already applied is a `duplicate`.
        """
        return await self._acked(
            "context_modify",
            lambda: inputs.replace_op(
                context, context_ref=context_ref, op_id=op_id, reason=reason, meta=meta
            ),
            op_id,
        )

    async def switch_context(
        self, context_ref: str, *, op_id: str | None = None, reason: OperationReason = "manual"
    ) -> Ack:
        """Switch to the lane `context_ref` (created empty if new); see `context_modify`."""
        return await self._acked(
            "context_modify", lambda: inputs.switch_op(context_ref, op_id=op_id, reason=reason), op_id
        )

    # ---- the thread ------------------------------------------------------------------------

    async def thread_page(self, since_seq: int = 0, limit: int = DEFAULT_PAGE_ENTRIES) -> ThreadPage:
        """Entries from `since_seq` on: at most `limit` (and about 1 MiB); `next_seq` continues (None: end).

        A session's archived entries are read from the payload store, so a page always
        carries entries (never a bare segment reference).

        Raises:
            RejectedError: `invalid_input` for a negative `since_seq` or a `limit` outside 1..1000.
            BlobMissingError: an archived segment is missing from the payload store.
        """
        query = inputs.thread_query(since_seq, limit)
        page = await self._query("thread", ThreadPage, query)
        if page.segment is None:
            return page
        segment = await self._store.segment(page.segment)
        start = max(query.since_seq - segment.first_seq, 0)
        entries = segment.entries[start : start + query.limit]
        if not entries:  # a segment shorter than its reference says: continue after it
            return ThreadPage(next_seq=page.next_seq, length=page.length)
        end = segment.first_seq + start + len(entries)
        return ThreadPage(entries=entries, next_seq=end if end < page.length else None, length=page.length)

    async def thread(
        self, since_seq: int = 0, *, page_size: int = DEFAULT_PAGE_ENTRIES
    ) -> AsyncIterator[Entry]:
        """Every entry from `since_seq` on, in seq order, read page by page (`async for entry in ...`)."""
        since: int | None = since_seq
        while since is not None:
            page = await self.thread_page(since, page_size)
            for entry in page.entries:
                yield entry
            since = page.next_seq

    async def _context(self, arg: BaseModel | None = None) -> Context:
        return await self._query("context", Context, arg)


def _timed_out(error: RPCError) -> bool:
    """Whether a query got no answer within its timeout (asked again once: a query changes nothing).

    Without a cached workflow a query replays the whole history on the worker; a worker busy with
    other tasks can miss one timeout and answer the next ask (seen on a loaded CI machine).
    """
    return error.status in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED)
