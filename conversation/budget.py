"""The budgeted model view of a lane: what one LLM call actually sends.

The lane's `Context` keeps everything; `project_for_model` chooses, for every LLM
call, the newest messages that fit the `ContextPolicy`. It is pure and deterministic
(workflow code calls it), so the same context and policy always give the same view.

Rules that providers or the conversation impose, whatever the budget says:
- an assistant message with tool calls and its results form one group, kept or
  dropped whole (providers reject a call without its results and vice versa);
- the kept groups are a contiguous suffix of the lane, so order is preserved and no
  gap hides what the model is answering;
- the newest turn (from the last user message on) is always sent: a call without
  the question is useless, so the budget is only guaranteed when that turn fits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from conversation.media import attachment_tokens
from conversation.messages import Context, Message
from conversation.policy import ContextPolicy, MessageKind

SUMMARY_HEADER = "Summary of the earlier conversation:"
BYTES_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 10


class ProjectionMeta(BaseModel):
    """What the projection did, for traces and for deciding on compaction.

    Attributes:
        estimated_tokens: system prompt + summary + sent messages, with the policy's estimator.
        budget: the input budget (`max_input_tokens - reserve_output_tokens`).
        truncated: some included message was dropped, or the view is over budget.
        entries_included: messages sent, plus 1 when the summary is sent.
        entries_total: messages in the lane, plus 1 when it has a summary.
        summary_used: whether the lane's summary was sent.
    """

    estimated_tokens: int
    budget: int
    truncated: bool
    entries_included: int
    entries_total: int
    summary_used: bool


class ModelView(BaseModel):
    """The system prompt and messages of one LLM call, with how they were chosen."""

    system_prompt: str | None
    messages: list[Message]
    meta: ProjectionMeta


def estimate_text_tokens(text: str) -> int:
    """Heuristic tokens of one message carrying `text`: cheap, deterministic, slightly pessimistic."""
    return len(text.encode()) // BYTES_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS


def estimate_tokens(message: Message) -> int:
    """Heuristic tokens of `message`: content, tool call names and arguments, attachments.

    `thinking` is left out because the LLM activity never sends it back to the model. An
    attachment counts by `conversation.media.attachment_tokens` (from its reference alone).
    """
    parts = [message.content]
    for call in message.tool_calls or ():
        parts.append(call.name)
        parts.append(call.arguments)
    files = sum(attachment_tokens(a) for a in message.attachments or ())
    return estimate_text_tokens("".join(parts)) + files


@dataclass(frozen=True)
class _Group:
    """Messages `start:stop` of the lane, kept or dropped together.

    `later_users` counts the user messages after `start`: 0 for the newest turn, so
    turns are numbered from the end and the walk never needs the whole lane.
    """

    start: int
    stop: int
    kind: MessageKind
    later_users: int


def _groups_newest_first(messages: Sequence[Message]) -> Iterator[_Group]:
    """The units the projector keeps or drops whole, newest first, computed lazily.

    A tool-calling assistant message plus the run of results right after it whose
    `tool_call_id` matches one of its calls is one group; any other message, a stray
    tool result included, is a group of its own. Walking backwards lets a call stop
    as soon as the budget is full: its cost follows what is sent, not the lane size.
    """
    later_users = 0
    stop = len(messages)
    while stop > 0:
        last = messages[stop - 1]
        if last.role != "tool":
            yield _Group(stop - 1, stop, "tool" if last.tool_calls else last.role, later_users)
            later_users += last.role == "user"
            stop -= 1
            continue
        run_start = stop - 1
        while run_start > 0 and messages[run_start - 1].role == "tool":
            run_start -= 1
        caller = messages[run_start - 1] if run_start > 0 else None
        ids = {call.id for call in caller.tool_calls or ()} if caller is not None else set[str]()
        matched = run_start
        while matched < stop and messages[matched].tool_call_id in ids:
            matched += 1
        for orphan in range(stop - 1, matched - 1, -1):
            yield _Group(orphan, orphan + 1, "tool", later_users)
        if ids:
            yield _Group(run_start - 1, matched, "tool", later_users)
            stop = run_start - 1
        else:
            stop = run_start


@dataclass(frozen=True)
class _Plan:
    """The chosen groups (oldest first) and the numbers `ModelView.meta` reports."""

    kept: list[_Group]
    dropped_any: bool
    message_tokens: int


def _plan(context: Context, policy: ContextPolicy, counts: Sequence[int] | None, fixed: int) -> _Plan:
    """Walk the included groups newest first, keeping a contiguous suffix (steps 1, 3-6)."""
    messages = context.messages
    available = policy.input_budget - fixed
    tokens = count = 0
    newest_turn: int | None = None
    kept: list[_Group] = []
    for group in _groups_newest_first(messages):
        if group.kind not in policy.include_kinds:
            continue
        if newest_turn is None:
            newest_turn = group.later_users
        span = range(group.start, group.stop)
        cost = (
            sum(counts[i] for i in span)
            if counts is not None
            else sum(estimate_tokens(messages[i]) for i in span)
        )
        size = group.stop - group.start
        if group.later_users != newest_turn:
            if tokens + cost > available:
                return _Plan(kept[::-1], True, tokens)
            windowed = group.later_users >= policy.keep_last_turns and policy.max_messages > 0
            if windowed and count + size > policy.max_messages:
                return _Plan(kept[::-1], True, tokens)
        tokens += cost
        count += size
        kept.append(group)
    return _Plan(kept[::-1], False, tokens)


def _check_counts(context: Context, token_counts: Sequence[int] | None) -> None:
    if token_counts is not None and len(token_counts) != len(context.messages):
        raise ValueError(f"token_counts has {len(token_counts)} entries for {len(context.messages)} messages")


def _framing(context: Context, policy: ContextPolicy) -> tuple[str | None, Message | None, int]:
    """The system prompt and summary message to send (step 2 and 7), and their tokens."""
    prompt = policy.system_prompt if policy.system_prompt is not None else context.system_prompt
    summary_block = (
        f"{SUMMARY_HEADER}\n{context.summary}" if context.summary and policy.uses_summary else None
    )
    summary_message: Message | None = None
    if summary_block is not None and policy.summary_role == "user":
        summary_message = Message(role="user", content=summary_block)
    elif summary_block is not None:
        prompt = f"{prompt}\n\n{summary_block}" if prompt else summary_block
    fixed = estimate_text_tokens(prompt) if prompt else 0
    if summary_message is not None:
        fixed += estimate_tokens(summary_message)
    return prompt, summary_message, fixed


def project_for_model(
    context: Context, policy: ContextPolicy, *, token_counts: Sequence[int] | None = None
) -> ModelView:
    """The view of `context` one LLM call sends under `policy`.

    Args:
        context: the lane's full context (its summary stands for what precedes `messages`).
        policy: the resolved policy.
        token_counts: exact tokens of each of `context.messages` (same length), computed
            in an activity (`count_tokens`); None uses the heuristic. The system
            prompt and summary are always estimated with the heuristic.

    Raises:
        ValueError: `token_counts` does not match `context.messages` in length.
    """
    _check_counts(context, token_counts)
    prompt, summary_message, fixed = _framing(context, policy)
    plan = _plan(context, policy, token_counts, fixed)
    # Messages are never mutated once in a lane, so the view shares them (no copies on the hot path).
    sent = [context.messages[i] for group in plan.kept for i in range(group.start, group.stop)]
    summary_used = bool(context.summary) and policy.uses_summary
    estimated = fixed + plan.message_tokens
    meta = ProjectionMeta(
        estimated_tokens=estimated,
        budget=policy.input_budget,
        truncated=plan.dropped_any or estimated > policy.input_budget,
        entries_included=len(sent) + int(summary_used),
        entries_total=len(context.messages) + int(bool(context.summary)),
        summary_used=summary_used,
    )
    if summary_message is not None:
        sent.insert(0, summary_message)
    return ModelView(system_prompt=prompt, messages=sent, meta=meta)


def trim_to_view(context: Context, policy: ContextPolicy) -> Context:
    """The lane without the older messages that no call under `policy` would send again.

    A run only appends to its lane, so the oldest message its calls send can only move
    forward: the messages before today's view are dead weight in the run's input (and
    in Temporal history). Estimated with the heuristic; callers using exact counts
    should pass the whole lane.
    """
    _, _, fixed = _framing(context, policy)
    plan = _plan(context, policy, None, fixed)
    start = plan.kept[0].start if plan.kept else len(context.messages)
    return context.model_copy(update={"messages": context.messages[start:]})


def would_drop(context: Context, policy: ContextPolicy, token_counts: Sequence[int] | None = None) -> bool:
    """Whether the projection would leave out an included message for lack of room.

    Messages excluded by `include_kinds` do not count: compaction could not bring them
    back, so they must not trigger it. Callers should also check that
    `compaction_split` has something to summarise before compacting.
    """
    _check_counts(context, token_counts)
    _, _, fixed = _framing(context, policy)
    return _plan(context, policy, token_counts, fixed).dropped_any


def compaction_split(context: Context, policy: ContextPolicy) -> tuple[list[Message], list[Message]]:
    """Split the lane into (messages to summarise, messages to keep verbatim) for compaction.

    The kept part is the newest `keep_last_turns` turns (at least one: like the
    projector, compaction never hides the question being answered). The cut moves
    earlier if needed so that no tool result is kept without its call. With fewer
    turns than that, everything is kept. The lists hold the lane's own messages.
    """
    messages = context.messages
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    turns = max(1, policy.keep_last_turns)
    cut = users[-turns] if len(users) >= turns else 0
    owner: dict[str, int] = {}
    owners: list[int | None] = []
    for i, message in enumerate(messages):
        for call in message.tool_calls or ():
            owner[call.id] = i
        tool_owner = (
            owner.get(message.tool_call_id) if message.role == "tool" and message.tool_call_id else None
        )
        owners.append(tool_owner)
    earliest = min((o for o in owners[cut:] if o is not None), default=cut)
    while earliest < cut:
        cut = earliest
        earliest = min((o for o in owners[cut:] if o is not None), default=cut)
    return list(messages[:cut]), list(messages[cut:])
