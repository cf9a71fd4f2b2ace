"""The session's compaction: `compact`, automatic compaction (`request_new`), and op submission.

A mixin of `AgentSession`. Compaction summarises the older part of the active lane
(`summarize` activity) into a `replace` op with reason `compaction`, submitted like any
context op: applied when idle, deferred while a run is active (and rebased when
applied, so nothing the run said is lost).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts import Ack, AgentConfig, RunInput
    from contracts.activities import SUMMARIZE_ACTIVITY
    from contracts.compaction import CompactInput, SummarizeRequest, SummarizeResult
    from contracts.session import RequestRecord
    from conversation import ContextOpPayload, ConversationState
    from conversation.budget import compaction_split, project_for_model, would_drop
    from conversation.compaction import compaction_op, lane_start_seq, rebase
    from conversation.messages import Message
    from conversation.policy import ContextPolicy, resolve_policy


class SessionCompaction:
    """Compaction and context-op submission for `AgentSession`."""

    _config: AgentConfig
    _conversation: ConversationState
    _active: RequestRecord | None
    _session_policy: ContextPolicy | None

    def _submit(self, op: ContextOpPayload, ack: Ack) -> None:
        """Apply an accepted op now (`applied`) or keep it for the end of the run (`deferred`)."""
        if ack.status == "applied":
            self._apply_submitted(op, {})
        elif ack.status == "deferred":
            self._conversation.pending_context_op = op

    def _apply_submitted(self, op: ContextOpPayload, refs: dict[str, str]) -> None:
        """Apply an op submitted to this session, rebased onto the current thread.

        A compaction computed while a run was active so keeps what the run said after it.
        Ops copied from a run's result are applied without this: their `base_seq` counts
        the run's thread, not the session's.
        """
        self._conversation.apply_operation(rebase(op, self._conversation.thread), workflow.now(), refs)

    def _policy(self) -> ContextPolicy:
        return resolve_policy(self._session_policy, self._config.context_policy)

    async def _compaction(
        self, op_id: str, policy: ContextPolicy, model: str | None
    ) -> ContextOpPayload | None:
        """Summarise the active lane's older part; None when there is nothing to compact."""
        lane = self._conversation.context
        older, keep = compaction_split(lane, policy)
        if not older:
            return None
        summary_model = model or policy.summary_model or self._config.model
        base_seq = len(self._conversation.thread) - 1
        result = await workflow.execute_activity(
            SUMMARIZE_ACTIVITY,
            SummarizeRequest(
                model=summary_model,
                messages=older,
                previous_summary=lane.summary,
                settings=self._config.model_settings,
                timeout_s=self._config.llm_timeout_s,
            ),
            result_type=SummarizeResult,
            start_to_close_timeout=timedelta(seconds=self._config.llm_timeout_s + 30),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=self._config.llm_max_attempts),
            summary=f"summarize {summary_model}",
        )
        unbounded = policy.model_copy(update={"max_input_tokens": 10**12, "max_messages": 0})
        before = project_for_model(lane, unbounded).meta.estimated_tokens
        op = compaction_op(
            op_id, self._conversation.active_context_ref, lane, keep, result.summary, base_seq, {}
        )
        assert op.operation.result_context is not None
        after = project_for_model(op.operation.result_context, unbounded).meta.estimated_tokens
        op.operation.meta = {
            "from_seq": lane_start_seq(self._conversation.thread, self._conversation.active_context_ref),
            "to_seq": base_seq,
            "model": summary_model,
            "messages_summarized": len(older),
            "tokens_before": before,
            "tokens_after": after,
        }
        return op

    async def _compact(self, request: CompactInput) -> Ack:
        op_id = request.op_id or f"compact-{workflow.uuid4()}"
        if self._conversation.is_applied(op_id):
            return Ack(status="duplicate", op_id=op_id, message="this op_id was already applied")
        op = await self._compaction(op_id, self._policy(), request.model)
        if op is None:
            return Ack(
                status="rejected",
                op_id=op_id,
                reason="nothing_to_compact",
                message="nothing older to summarise",
            )
        ack = Ack(status="deferred" if self._active is not None else "applied", op_id=op_id)
        self._submit(op, ack)
        return ack

    async def _compact_before_run(self, run_input: RunInput, policy: ContextPolicy) -> None:
        """`request_new`: compact first when the next turn's projection would drop messages."""
        lane = self._conversation.context
        upcoming = lane.model_copy(
            update={"messages": [*lane.messages, Message(role="user", content=run_input.query)]}
        )
        if not would_drop(upcoming, policy):
            return
        op = await self._compaction(f"auto-compact-{run_input.request_id}", policy, None)
        if op is not None:
            self._conversation.apply_operation(op, workflow.now(), {"request_id": run_input.request_id or ""})

    @workflow.signal(name="compact")
    async def compact_signal(self, request: CompactInput) -> None:
        """Compact the active lane (deferred while a run is active)."""
        await self._compact(request)

    @workflow.update(name="compact")
    async def compact_update(self, request: CompactInput) -> Ack:
        """Compact the active lane and say whether it was applied, deferred or not needed."""
        return await self._compact(request)
