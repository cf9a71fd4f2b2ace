"""Unit tests of the context policy and the budgeted projector, one rule at a time."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from conversation.budget import (
    SUMMARY_HEADER,
    compaction_split,
    estimate_tokens,
    project_for_model,
    would_drop,
)
from conversation.messages import Context, Message, ToolCall
from conversation.policy import ContextPolicy, resolve_policy


def user(text: str = "question") -> Message:
    return Message(role="user", content=text)


def answer(text: str = "answer") -> Message:
    return Message(role="assistant", content=text)


def tool_group(call_id: str, results: int = 1) -> list[Message]:
    """An assistant message calling `results` tools, followed by their results."""
    ids = [f"{call_id}-{n}" for n in range(results)]
    call = Message(role="assistant", tool_calls=[ToolCall(id=i, name="calc", arguments="{}") for i in ids])
    return [call, *(Message(role="tool", content="42", tool_call_id=i, name="calc") for i in ids)]


def turn(n: int, *, tools: int = 0, size: int = 10) -> list[Message]:
    """User turn `n`: a question, optionally a tool group, then an answer."""
    group = tool_group(f"t{n}", tools) if tools else []
    return [user(f"q{n} " + "x" * size), *group, answer(f"a{n} " + "y" * size)]


def lane(turns: int, **kwargs: int) -> Context:
    return Context(system_prompt="be brief", messages=[m for n in range(turns) for m in turn(n, **kwargs)])


def test_heuristic_counts_bytes_calls_and_overhead_but_not_thinking() -> None:
    assert estimate_tokens(user("x" * 40)) == 40 // 4 + 10
    assert estimate_tokens(user("é" * 4)) == 8 // 4 + 10  # bytes, not characters
    call = Message(role="assistant", content="ab", tool_calls=[ToolCall(id="1", name="calc", arguments="{}")])
    assert estimate_tokens(call) == len("abcalc{}") // 4 + 10
    assert estimate_tokens(answer("hi").model_copy(update={"thinking": "z" * 400})) == estimate_tokens(
        answer("hi")
    )


def test_defaults_presets_and_validation() -> None:
    policy = ContextPolicy()
    assert (policy.max_input_tokens, policy.reserve_output_tokens, policy.input_budget) == (
        8_000,
        2_000,
        6_000,
    )
    assert (policy.max_messages, policy.keep_last_turns) == (0, 3)
    assert (policy.summarization, policy.summary_role, policy.token_estimator) == (
        "use_existing",
        "system",
        "heuristic",
    )
    assert policy.include_kinds == ["user", "assistant", "tool", "summary"]
    short, long, tools = (
        ContextPolicy.short_context(),
        ContextPolicy.long_context(),
        ContextPolicy.tool_focused(),
    )
    assert (short.max_input_tokens, short.keep_last_turns) == (6_000, 2)
    assert (long.max_input_tokens, long.keep_last_turns) == (100_000, 10)
    assert (tools.keep_last_turns, tools.summarization) == (5, "none")
    with pytest.raises(ValidationError, match="reserve_output_tokens"):
        ContextPolicy(max_input_tokens=1_000, reserve_output_tokens=1_000)
    with pytest.raises(ValidationError):
        ContextPolicy(include_kinds=["system"])  # pyright: ignore[reportArgumentType]


def test_resolve_policy_takes_the_first_given_candidate() -> None:
    ask, session, agent = (
        ContextPolicy.short_context(),
        ContextPolicy.long_context(),
        ContextPolicy.tool_focused(),
    )
    assert resolve_policy(ask, session, agent) is ask
    assert resolve_policy(None, session, agent) is session
    assert resolve_policy(None, None, agent) is agent
    assert resolve_policy(None, None, None) == ContextPolicy()
    assert resolve_policy() == ContextPolicy()


def test_small_lane_is_sent_whole_with_consistent_meta() -> None:
    context = lane(3, tools=2)
    view = project_for_model(context, ContextPolicy())
    assert view.system_prompt == "be brief"
    assert view.messages == context.messages
    expected = sum(estimate_tokens(m) for m in context.messages) + len("be brief") // 4 + 10
    assert view.meta.model_dump() == {
        "estimated_tokens": expected,
        "budget": 6_000,
        "truncated": False,
        "entries_included": 15,
        "entries_total": 15,
        "summary_used": False,
    }
    assert not would_drop(context, ContextPolicy())


def test_excluding_tool_drops_whole_groups_and_keeps_plain_messages() -> None:
    context = lane(2, tools=2)
    view = project_for_model(context, ContextPolicy(include_kinds=["user", "assistant"]))
    assert [m.content for m in view.messages] == [context.messages[i].content for i in (0, 4, 5, 9)]
    assert all(m.role != "tool" and not m.tool_calls for m in view.messages)
    assert not would_drop(
        context, ContextPolicy(include_kinds=["user", "assistant"])
    )  # excluded, not dropped
    no_answers = project_for_model(context, ContextPolicy(include_kinds=["user", "tool"]))
    assert [m.role for m in no_answers.messages] == ["user", "assistant", "tool", "tool"] * 2


def test_summary_goes_into_the_system_prompt_or_a_first_user_message() -> None:
    context = lane(1).model_copy(update={"summary": "they met"})
    block = f"{SUMMARY_HEADER}\nthey met"
    system = project_for_model(context, ContextPolicy())
    assert system.system_prompt == f"be brief\n\n{block}"
    assert system.messages == context.messages
    assert (system.meta.summary_used, system.meta.entries_included, system.meta.entries_total) == (True, 3, 3)
    as_user = project_for_model(context, ContextPolicy(summary_role="user"))
    assert as_user.system_prompt == "be brief"
    assert as_user.messages == [user(block), *context.messages]
    no_prompt = project_for_model(context.model_copy(update={"system_prompt": None}), ContextPolicy())
    assert no_prompt.system_prompt == block
    for off in (
        ContextPolicy(summarization="none"),
        ContextPolicy(include_kinds=["user", "assistant", "tool"]),
    ):
        view = project_for_model(context, off)
        assert (view.system_prompt, view.meta.summary_used, view.meta.entries_included) == (
            "be brief",
            False,
            2,
        )
    request_new = project_for_model(context, ContextPolicy(summarization="request_new"))
    assert request_new.meta.summary_used


def test_policy_prompt_overrides_the_lane_prompt() -> None:
    view = project_for_model(lane(1), ContextPolicy(system_prompt="override"))
    assert view.system_prompt == "override"


def test_budget_keeps_the_newest_contiguous_groups_and_drops_the_oldest() -> None:
    context = lane(40, tools=1, size=200)  # 160 messages, about 12k heuristic tokens
    policy = ContextPolicy(max_input_tokens=3_000, reserve_output_tokens=500)
    view = project_for_model(context, policy)
    sent = len(view.messages)
    assert 0 < sent < len(context.messages)
    assert view.messages == context.messages[-sent:]
    assert view.meta.truncated and view.meta.estimated_tokens <= 2_500
    assert view.meta.estimated_tokens + estimate_tokens(context.messages[-sent - 1]) > 2_500  # greedy: full
    assert would_drop(context, policy)


def test_a_group_is_dropped_whole_and_nothing_older_is_kept() -> None:
    big_call = tool_group("big", 3)
    big_call[0] = big_call[0].model_copy(update={"content": "z" * 8_000})
    context = Context(
        messages=[user("old"), answer("old"), user("why"), *big_call, user("now"), answer("ok")]
    )
    view = project_for_model(context, ContextPolicy(max_input_tokens=2_000, reserve_output_tokens=0))
    assert [m.content for m in view.messages] == [
        "now",
        "ok",
    ]  # the small "old" turn is not kept past the gap


def test_the_newest_turn_is_kept_even_over_budget() -> None:
    context = Context(
        messages=[user("old"), answer("old"), user("q" * 40_000), *tool_group("c", 2), answer()]
    )
    view = project_for_model(context, ContextPolicy())
    assert view.messages == context.messages[2:]
    assert view.meta.truncated and view.meta.estimated_tokens > view.meta.budget


def test_max_messages_windows_whole_groups_beyond_the_protected_turns() -> None:
    context = lane(6, tools=2)  # turns of 5 messages: user, call, 2 results, answer
    view = project_for_model(context, ContextPolicy(max_messages=7, keep_last_turns=1))
    # The newest turn (5 messages), then the previous answer (6); the previous tool group
    # (3 more) would exceed the window, so it is dropped whole, and everything older with it.
    assert [m.role for m in view.messages] == ["assistant", "user", "assistant", "tool", "tool", "assistant"]
    assert view.messages[0].content.startswith("a4") and view.messages[-1].content.startswith("a5")
    window_then_group = project_for_model(context, ContextPolicy(max_messages=9, keep_last_turns=1))
    assert len(window_then_group.messages) == 9  # the previous answer, user and its group fit exactly
    protected = project_for_model(context, ContextPolicy(max_messages=2, keep_last_turns=3))
    assert protected.messages == context.messages[-15:]  # the last 3 turns beat the window
    newest_only = project_for_model(context, ContextPolicy(max_messages=1, keep_last_turns=0))
    assert newest_only.messages == context.messages[-5:]


def test_token_counts_replace_the_heuristic_when_given() -> None:
    context = lane(3)
    counts = [10] * len(context.messages)
    counts[0] = 7_000  # the oldest question is huge for the real tokenizer
    view = project_for_model(context, ContextPolicy(), token_counts=counts)
    assert view.messages == context.messages[1:]
    assert view.meta.estimated_tokens == 10 * 5 + len("be brief") // 4 + 10
    assert would_drop(context, ContextPolicy(), counts)
    assert not would_drop(context, ContextPolicy())
    with pytest.raises(ValueError, match="token_counts"):
        project_for_model(context, ContextPolicy(), token_counts=[1])


def test_projection_is_deterministic_and_cannot_change_the_lane() -> None:
    context = lane(5, tools=1).model_copy(update={"summary": "s"})
    policy = ContextPolicy(max_input_tokens=300, reserve_output_tokens=0)
    first = project_for_model(context, policy)
    assert first == project_for_model(context, policy)
    # The view shares the lane's messages (no copies per call), which are immutable.
    with pytest.raises(ValidationError, match="frozen"):
        first.messages[-1].content = "mutated"
    count = len(context.messages)
    first.messages.append(first.messages[0])
    assert len(context.messages) == count


def test_compaction_split_keeps_the_newest_turns_and_whole_groups() -> None:
    context = lane(5, tools=2)
    head, keep = compaction_split(context, ContextPolicy(keep_last_turns=2))
    assert head == context.messages[:15] and keep == context.messages[15:]
    assert compaction_split(context, ContextPolicy(keep_last_turns=9)) == ([], context.messages)
    assert compaction_split(context, ContextPolicy(keep_last_turns=0))[1] == context.messages[-5:]
    # A steering message between a call and a late result: the cut moves back to the call.
    group = tool_group("c", 2)
    odd = Context(messages=[user("a"), answer(), user("b"), group[0], group[1], user("steer"), group[2]])
    head, keep = compaction_split(odd, ContextPolicy(keep_last_turns=1))
    assert head == odd.messages[:3] and keep == odd.messages[3:]


def test_stray_results_and_unanswered_calls_are_groups_of_their_own() -> None:
    group = tool_group("c", 2)
    stray = Message(role="tool", content="late", tool_call_id="zz")
    messages = [stray, user("a"), group[0], group[1], user("steer"), group[2], answer("done")]
    context = Context(messages=messages)
    assert project_for_model(context, ContextPolicy()).messages == messages  # nothing repaired or reordered
    newest = project_for_model(context, ContextPolicy(max_messages=3, keep_last_turns=0))
    assert newest.messages == messages[4:]  # the call and its first result are dropped together
    unanswered = Context(messages=[user("a"), *tool_group("x", 1), user("b"), tool_group("y", 2)[0]])
    view = project_for_model(unanswered, ContextPolicy(max_messages=1, keep_last_turns=0))
    assert view.messages == unanswered.messages[3:]
    assert project_for_model(unanswered, ContextPolicy(include_kinds=["user"])).messages == [
        user("a"),
        user("b"),
    ]
