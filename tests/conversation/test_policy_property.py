"""Property tests of the budgeted projector over random lanes and random policies.

Lanes are random sequences of user messages, assistant answers and tool groups (an
assistant call with 1-3 results), with content from empty to very long. For every
lane and policy, checked against a reference computed here from the input alone:

* the kept messages are a suffix of the included messages (order preserved, no gap);
* tool-call groups are never split (a kept result has its call before it, a kept call
  all its results);
* the newest turn is always kept, and the budget holds whenever that turn fits alone;
* the fill is greedy: with no message window, the next older group would not have fit;
* meta is consistent with what is sent; the projection is deterministic;
* `compaction_split` cuts at a turn boundary without splitting a group.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation.budget import (
    compaction_split,
    estimate_text_tokens,
    estimate_tokens,
    project_for_model,
    trim_to_view,
    would_drop,
)
from conversation.messages import Context, Message, ToolCall
from conversation.policy import ALL_KINDS, ContextPolicy, MessageKind

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

lengths = st.one_of(st.integers(0, 300), st.integers(2_000, 40_000))
items = st.one_of(
    st.tuples(st.just("user"), lengths, st.just(0)),
    st.tuples(st.just("answer"), lengths, st.just(0)),
    st.tuples(st.just("tools"), lengths, st.integers(1, 3)),
)


def build_lane(spec: list[tuple[str, int, int]]) -> list[Message]:
    messages: list[Message] = []
    for n, (kind, length, results) in enumerate(spec):
        text = f"{n}:" + "x" * length
        if kind == "user":
            messages.append(Message(role="user", content=text))
        elif kind == "answer":
            messages.append(Message(role="assistant", content=text))
        else:
            ids = [f"c{n}-{r}" for r in range(results)]
            calls = [ToolCall(id=i, name="calc", arguments='{"x": 1}') for i in ids]
            messages.append(Message(role="assistant", content="" if length % 2 else text, tool_calls=calls))
            messages.extend(Message(role="tool", content=text, tool_call_id=i, name="calc") for i in ids)
    return messages


@st.composite
def contexts(draw: st.DrawFn) -> Context:
    messages = build_lane(draw(st.lists(items, max_size=30)))
    summary = draw(st.one_of(st.none(), st.text(min_size=1, max_size=200)))
    prompt = draw(st.one_of(st.none(), st.just("You are helpful."), st.just("p" * 3_000)))
    return Context(system_prompt=prompt, summary=summary, messages=messages)


@st.composite
def policies(draw: st.DrawFn) -> ContextPolicy:
    max_input = draw(st.integers(50, 30_000))
    return ContextPolicy(
        max_input_tokens=max_input,
        reserve_output_tokens=draw(st.integers(0, max_input - 1)),
        max_messages=draw(st.one_of(st.just(0), st.integers(1, 25))),
        keep_last_turns=draw(st.integers(0, 5)),
        summarization=draw(st.sampled_from(["none", "use_existing", "request_new"])),
        summary_role=draw(st.sampled_from(["system", "user"])),
        include_kinds=draw(st.lists(st.sampled_from(ALL_KINDS), unique=True)),
        system_prompt=draw(st.one_of(st.none(), st.just("override"))),
    )


@dataclass
class Reference:
    """What the input says, independently of the projector's grouping code."""

    included: list[int]  # indices of messages whose kind is included
    turn: list[int]  # user messages at or before each message
    costs: list[int]


def reference(context: Context, policy: ContextPolicy, counts: list[int] | None) -> Reference:
    def kind(m: Message) -> MessageKind:
        return "tool" if m.role == "tool" or m.tool_calls else m.role

    turns: list[int] = []
    seen = 0
    for m in context.messages:
        seen += m.role == "user"
        turns.append(seen)
    included = [i for i, m in enumerate(context.messages) if kind(m) in policy.include_kinds]
    costs = counts if counts is not None else [estimate_tokens(m) for m in context.messages]
    return Reference(included, turns, costs)


def framing_tokens(context: Context, policy: ContextPolicy) -> int:
    """The system prompt and summary, estimated the documented way."""
    prompt = policy.system_prompt if policy.system_prompt is not None else context.system_prompt
    tokens = 0
    summary_used = (
        bool(context.summary) and policy.summarization != "none" and "summary" in policy.include_kinds
    )
    block = f"Summary of the earlier conversation:\n{context.summary}" if summary_used else None
    if block is not None and policy.summary_role == "user":
        tokens += estimate_text_tokens(block)
    elif block is not None:
        prompt = f"{prompt}\n\n{block}" if prompt else block
    return tokens + (estimate_text_tokens(prompt) if prompt else 0)


def check(context: Context, policy: ContextPolicy, counts: list[int] | None) -> None:
    view = project_for_model(context, policy, token_counts=counts)
    ref = reference(context, policy, counts)
    messages = context.messages
    summary_used = (
        bool(context.summary) and policy.summarization != "none" and "summary" in policy.include_kinds
    )
    sent = view.messages[1:] if summary_used and policy.summary_role == "user" else view.messages
    if summary_used and policy.summary_role == "user":
        assert view.messages[0].role == "user" and view.messages[0].content.endswith(context.summary or "")

    # A suffix of the included messages: order preserved, nothing skipped.
    kept = ref.included[len(ref.included) - len(sent) :]
    assert sent == [messages[i] for i in kept]

    # Tool groups whole: a kept result has its call kept before it; a kept call has all its results.
    position = {messages[i].tool_call_id: p for p, i in enumerate(kept) if messages[i].role == "tool"}
    for p, i in enumerate(kept):
        for call in messages[i].tool_calls or ():
            assert position.get(call.id, -1) > p
    calls = {call.id: p for p, i in enumerate(kept) for call in messages[i].tool_calls or ()}
    for p, i in enumerate(kept):
        if messages[i].role == "tool":
            assert calls.get(messages[i].tool_call_id or "", len(kept)) < p

    # The newest turn is always kept; the budget holds whenever it fits on its own.
    fixed = framing_tokens(context, policy)
    newest = [i for i in ref.included if ref.included and ref.turn[i] == ref.turn[ref.included[-1]]]
    assert set(newest) <= set(kept)
    estimated = fixed + sum(ref.costs[i] for i in kept)
    assert view.meta.estimated_tokens == estimated
    if fixed + sum(ref.costs[i] for i in newest) <= policy.input_budget:
        assert estimated <= policy.input_budget

    # Greedy: without a message window, the next older included group would not have fit.
    dropped = len(kept) < len(ref.included)
    if dropped and policy.max_messages == 0:
        last = ref.included[len(ref.included) - len(kept) - 1]
        first = last
        if messages[last].role == "tool":  # the lane is well formed: the call precedes its results
            first = next(j for j in range(last, -1, -1) if messages[j].tool_calls)
        group = range(first, last + 1)
        assert estimated + sum(ref.costs[j] for j in group) > policy.input_budget

    # Meta matches what is sent.
    meta = view.meta
    assert meta.budget == policy.input_budget
    assert meta.summary_used == summary_used
    assert meta.entries_total == len(messages) + bool(context.summary)
    assert meta.entries_included == len(sent) + summary_used
    assert meta.truncated == (dropped or estimated > policy.input_budget)
    assert would_drop(context, policy, counts) == dropped
    assert project_for_model(context, policy, token_counts=counts) == view


@SETTINGS
@given(contexts(), policies())
def test_projection_invariants_with_the_heuristic(context: Context, policy: ContextPolicy) -> None:
    check(context, policy, None)


@SETTINGS
@given(contexts(), policies(), st.data())
def test_projection_invariants_with_exact_counts(
    context: Context, policy: ContextPolicy, data: st.DataObject
) -> None:
    counts = data.draw(
        st.lists(st.integers(1, 5_000), min_size=len(context.messages), max_size=len(context.messages))
    )
    check(context, policy, counts)


@SETTINGS
@given(contexts(), st.integers(0, 5))
def test_compaction_split_cuts_at_a_turn_without_splitting_groups(context: Context, keep_turns: int) -> None:
    head, keep = compaction_split(context, ContextPolicy(keep_last_turns=keep_turns))
    messages = context.messages
    assert head + keep == messages
    users = [m for m in messages if m.role == "user"]
    if len(users) >= max(1, keep_turns):
        assert keep[0].role == "user"
        assert sum(m.role == "user" for m in keep) == max(1, keep_turns)
    else:
        assert head == []
    head_calls = {call.id for m in head for call in m.tool_calls or ()}
    assert all(m.tool_call_id not in head_calls for m in keep if m.role == "tool")


@st.composite
def messy_message(draw: st.DrawFn) -> Message:
    """Any message, with tool ids from a small pool so that calls and results pair up only sometimes."""
    length = draw(st.integers(0, 4_000))
    match draw(st.sampled_from(["user", "answer", "call", "result"])):
        case "user":
            return Message(role="user", content="u" * length)
        case "answer":
            return Message(role="assistant", content="a" * length)
        case "call":
            ids = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True))
            return Message(role="assistant", tool_calls=[ToolCall(id=i, name="f") for i in ids])
        case _:
            return Message(role="tool", tool_call_id=draw(st.sampled_from("abcde")), content="t" * length)


messy_messages = st.lists(messy_message(), max_size=25)


def forward_groups(messages: list[Message]) -> list[tuple[int, int]]:
    """The documented grouping, computed front to back: a call plus the matching results right after it."""
    groups: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        j = i + 1
        if messages[i].tool_calls:
            ids = {c.id for c in messages[i].tool_calls or ()}
            while j < len(messages) and messages[j].role == "tool" and messages[j].tool_call_id in ids:
                j += 1
        groups.append((i, j))
        i = j
    return groups


@SETTINGS
@given(messy_messages, policies())
def test_messy_lanes_are_cut_at_group_boundaries(messages: list[Message], policy: ContextPolicy) -> None:
    """Stray results, unanswered calls and steering between results still never split a group."""
    context = Context(messages=messages)
    view = project_for_model(context, policy)
    kinds: dict[int, MessageKind] = {}
    for start, stop in forward_groups(messages):
        first = messages[start]
        for i in range(start, stop):
            kinds[i] = "tool" if first.role == "tool" or first.tool_calls else first.role
    included = [i for i in range(len(messages)) if kinds[i] in policy.include_kinds]
    kept = included[len(included) - len(view.messages) :]
    assert view.messages == [messages[i] for i in kept]
    starts = {start for start, _ in forward_groups(messages)}
    assert not kept or kept[0] in starts
    assert would_drop(context, policy) == (len(kept) < len(included))


@given(contexts(), policies(), contexts())
def test_trimming_to_the_view_changes_no_call_now_or_later(
    context: Context, policy: ContextPolicy, later: Context
) -> None:
    """The trimmed lane a session hands its run sends what the whole lane would, now and later."""
    trimmed = trim_to_view(context, policy)
    assert len(trimmed.messages) <= len(context.messages)
    now_full, now_trimmed = project_for_model(context, policy), project_for_model(trimmed, policy)
    assert (now_trimmed.system_prompt, now_trimmed.messages) == (now_full.system_prompt, now_full.messages)
    grown_full = context.model_copy(update={"messages": [*context.messages, *later.messages]})
    grown_trimmed = trimmed.model_copy(update={"messages": [*trimmed.messages, *later.messages]})
    assert project_for_model(grown_trimmed, policy).messages == project_for_model(grown_full, policy).messages
