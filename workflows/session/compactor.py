"""Compaction: summarise the older part of the active lane into a `replace` op with reason `compaction`.

The op is submitted like any context op (applied when idle; deferred while a run is
active, and rebased when applied so nothing the run said is lost). With
`summarization: request_new` the session compacts by itself before a run whose
projection would drop messages.
"""

from __future__ import annotations

from contracts import AgentConfig
from contracts.activities import SUMMARIZE
from contracts.compaction import SummarizeRequest
from conversation import ContextOpPayload, Message
from conversation.budget import compaction_split, project_for_model, would_drop
from conversation.compaction import compaction_op
from conversation.policy import ContextPolicy
from workflows.activity_calls import call_activity
from workflows.session.thread import SessionThread


class Compactor:
    """Builds compaction ops for the session's thread (it reads the thread; the thread applies the op)."""

    def __init__(self, thread: SessionThread) -> None:
        """Compact `thread`'s active lane."""
        self._thread = thread

    async def compaction(
        self, op_id: str, policy: ContextPolicy, config: AgentConfig, model: str | None
    ) -> ContextOpPayload | None:
        """The compaction op for the active lane; None when there is nothing older to summarise."""
        thread = self._thread
        lane = thread.context
        older, keep = compaction_split(lane, policy)
        if not older:
            return None
        summary_model = model or policy.summary_model or config.model
        base_seq = thread.next_seq - 1
        result = await call_activity(
            SUMMARIZE,
            SummarizeRequest(
                model=summary_model,
                messages=older,
                previous_summary=lane.summary,
                settings=config.model_settings,
                timeout_s=config.llm_timeout_s,
            ),
            config=config,
        )
        unbounded = policy.model_copy(update={"max_input_tokens": 10**12, "max_messages": 0})
        ref = thread.active_context_ref
        op = compaction_op(op_id, ref, lane, keep, result.summary, base_seq, {})
        assert op.operation.result_context is not None
        op.operation.meta = {
            "from_seq": thread.view_start(ref),
            "to_seq": base_seq,
            "model": summary_model,
            "messages_summarized": len(older),
            "tokens_before": project_for_model(lane, unbounded).meta.estimated_tokens,
            "tokens_after": project_for_model(op.operation.result_context, unbounded).meta.estimated_tokens,
        }
        return op

    async def before_run(
        self, query: str, request_id: str, policy: ContextPolicy, config: AgentConfig
    ) -> ContextOpPayload | None:
        """`request_new`: the compaction to apply first when the next turn's view would drop messages."""
        lane = self._thread.context
        upcoming = lane.model_copy(update={"messages": [*lane.messages, Message(role="user", content=query)]})
        if not would_drop(upcoming, policy):
            return None
        return await self.compaction(f"auto-compact-{request_id}", policy, config, None)
