"""A run's long-term memory (`AgentConfig.memory`): its tools' calls, recall before the first LLM call.

Whose memory it is comes from the run's workflow id (`contracts.memory.memory_scope`: a gateway
session's `gw/<principal>/<agent>/...`), never from the config or the model. A memory tool's
failure, the store's included, is a result the model reads; recall that fails records its
problem in the trace and the run goes on without memories.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from contracts import RunInput, ToolError, ToolOutcome
from contracts.activities import MEMORY_DELETE, MEMORY_RECALL, MEMORY_SAVE, MEMORY_SEARCH
from contracts.errors import ACTIVITY_ERROR, INVALID_ARGUMENTS
from contracts.llm import ToolSpec
from contracts.memory import (
    MAX_MEMORY_ARGUMENTS_CHARS,
    MAX_RECALL_CHARS,
    MAX_SEARCH_QUERY_CHARS,
    MemoryItem,
    MemoryRecall,
    MemoryRecalled,
    MemoryToolCall,
    memory_scope,
)
from contracts.memory_tools import (
    MEMORY_DELETE_TOOL,
    MEMORY_SAVE_TOOL,
    MEMORY_SEARCH_TOOL,
    MEMORY_TOOL_SPECS,
    MEMORY_TOOLS,
)
from conversation import ContextPolicy, ToolCall
from workflows.activity_calls import call_activity

RECALL_HEADER = "Memories from earlier conversations that may help with this request:"
_SPECS = {MEMORY_SAVE_TOOL: MEMORY_SAVE, MEMORY_SEARCH_TOOL: MEMORY_SEARCH, MEMORY_DELETE_TOOL: MEMORY_DELETE}


def recall_text(items: list[MemoryItem], max_chars: int) -> tuple[str, list[str]]:
    """The recall message for `items` (best first) within `max_chars`, and the keys it holds."""
    lines = [RECALL_HEADER]
    used = len(RECALL_HEADER)
    keys: list[str] = []
    for item in items:
        line = f"- [{item.key}] {item.text}"
        if used + 1 + len(line) > max_chars:
            break
        lines.append(line)
        used += 1 + len(line)
        keys.append(item.key)
    return "\n".join(lines), keys


def recall_budget(policy: ContextPolicy) -> int:
    """Characters recall may add: `MAX_RECALL_CHARS`, or as many as the input budget has tokens if less.

    At about four characters a token, that is at most a quarter of what the budget holds.
    """
    return min(MAX_RECALL_CHARS, max(0, policy.max_input_tokens - policy.reserve_output_tokens))


class RunMemory:
    """The memory of one run: its scope, its tools' specs, their calls, and recall."""

    def __init__(self, run: RunInput) -> None:
        """Bind the run's memory config (none: every method is a no-op) and its scope."""
        self._config = run.config.memory
        self._scope = (
            None if self._config is None else memory_scope(workflow.info().workflow_id, self._config)
        )

    def specs(self) -> list[ToolSpec]:
        """The memory tools offered to the model (none unless `memory.tools`)."""
        return list(MEMORY_TOOL_SPECS) if self._config is not None and self._config.tools else []

    def offers(self, name: str) -> bool:
        """Whether `name` is one of this run's memory tools."""
        return name in MEMORY_TOOLS and bool(self.specs())

    async def call(self, call: ToolCall) -> ToolOutcome:
        """Run one memory tool call as its activity; every failure becomes a result the model reads."""
        assert self._scope is not None
        if len(call.arguments) > MAX_MEMORY_ARGUMENTS_CHARS:
            message = (
                f"arguments are {len(call.arguments)} characters; the limit is {MAX_MEMORY_ARGUMENTS_CHARS}"
            )
            return ToolOutcome(ok=False, attempts=0, error=ToolError(type=INVALID_ARGUMENTS, message=message))
        request = MemoryToolCall(scope=self._scope, call_id=call.id[:200], arguments=call.arguments)
        try:
            return await call_activity(_SPECS[call.name], request)
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise
            cause = err.cause
            kind = cause.type if isinstance(cause, ApplicationError) and cause.type else ACTIVITY_ERROR
            message = f"{call.name} failed: {cause or err}"
            return ToolOutcome(ok=False, error=ToolError(type=kind, message=message, retryable=True))

    async def recall(self, query: str) -> MemoryRecalled | None:
        """The best memories for `query` (None when recall is off or the query is blank)."""
        if self._config is None or self._scope is None or self._config.recall == 0 or not query.strip():
            return None
        request = MemoryRecall(
            scope=self._scope, query=query[:MAX_SEARCH_QUERY_CHARS], limit=self._config.recall
        )
        try:
            return await call_activity(MEMORY_RECALL, request)
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise
            return MemoryRecalled(problem=f"recall failed: {err.cause or err}"[:1_000])
