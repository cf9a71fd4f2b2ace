"""The `summarize` activity: compaction's summary of the older part of a lane.

With the `scripted` model the summary is deterministic text built from the messages
(no LLM call, and litellm is not even loaded), so agents' compaction can be tested like
the rest of the scripted model. Other models go through `activities.llm._litellm`, loaded
on first use like the LLM activity's.
"""

from __future__ import annotations

from temporalio import activity

from activities._heartbeat import with_heartbeat
from activities.llm.llm_call import complete
from contracts import SCRIPTED_MODEL, LLMRequest, Usage
from contracts.activities import SUMMARIZE_ACTIVITY
from contracts.compaction import SummarizeRequest, SummarizeResult
from conversation import Message

SUMMARY_INSTRUCTIONS = (
    "You compact a conversation between a user and an AI assistant. Write a concise summary that keeps "
    "every fact, decision, open question, tool result and user preference needed to continue the "
    "conversation. Write it as notes, not as a dialogue. Reply with the summary only."
)
SCRIPTED_SUMMARY_CHARS = 2_000


def transcript(messages: list[Message], previous_summary: str | None) -> str:
    """The text the summarizer reads: the previous summary, then one line per message."""
    lines = [f"Earlier summary: {previous_summary}"] if previous_summary else []
    for message in messages:
        calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls or [])
        lines.append(f"{message.role}: {message.content}" + (f" [calls {calls}]" if calls else ""))
    return "\n".join(lines)


def scripted_summary(request: SummarizeRequest) -> str:
    """The scripted model's deterministic summary."""
    text = transcript(request.messages, request.previous_summary).replace("\n", " | ")
    return f"Summary of {len(request.messages)} earlier messages: {text}"[:SCRIPTED_SUMMARY_CHARS]


@activity.defn(name=SUMMARIZE_ACTIVITY)
async def summarize(request: SummarizeRequest) -> SummarizeResult:
    """Summarise the older part of a lane with the agent's (or a cheaper) model."""
    if request.model == SCRIPTED_MODEL:
        return SummarizeResult(summary=scripted_summary(request))
    llm_request = LLMRequest(
        model=request.model,
        system_prompt=SUMMARY_INSTRUCTIONS,
        messages=[Message(role="user", content=transcript(request.messages, request.previous_summary))],
        settings=request.settings,
        timeout_s=request.timeout_s,
        iteration=0,
    )
    parsed = await with_heartbeat(complete(llm_request, attempt=activity.info().attempt))
    usage: Usage = parsed.usage
    return SummarizeResult(summary=parsed.content.strip(), usage=usage)
