"""Tool state effects against a real server: order, policy, rejections the model sees, the `state` context.

The test tools (`tests.agent_tools`): `change_state` returns one effect (after a delay, to
finish out of order), `many_effects` returns many, `peek_state` returns the context it got.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio.client import Client

from clients.sessions import Sessions
from contracts import RunResult, ToolOutcome
from contracts.effects import MAX_EFFECTS, MAX_STATE_BYTES, StateEffect
from conversation import Entry, MessageEntry, ToolCall
from tests.conftest import SUGGEST_CAN_AT
from tests.helpers import call, llm_inputs, start_run, state_of, trace_of, turn
from tests.session.test_session_lifetime import continue_as_new_hops
from tests.session_helpers import config, new_session_id, script
from workflows.run.agent_state import AgentStateBook

STATE_TOOLS = ["change_state", "many_effects", "peek_state"]


def effect(op: str, path: str, value: Any = None, seconds: float = 0.0) -> dict[str, Any]:
    return {"op": op, "path": path, "value_json": json.dumps(value), "seconds": seconds}


def tool_results(entries: list[Entry]) -> list[dict[str, Any]]:
    return [
        json.loads(e.payload.content)
        for e in entries
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    ]


async def test_effects_are_applied_in_call_order_even_when_calls_finish_out_of_order(
    client: Client, task_queue: str
) -> None:
    script_ = [
        turn(
            tool_calls=[
                call("change_state", effect("set", "cart.total", 1, seconds=1.5), "slow"),
                call("change_state", effect("set", "cart.total", 2), "fast"),
                call("change_state", effect("merge", "cart", {"items": ["a"]}), "merge"),
            ]
        ),
        turn("done"),
    ]
    handle = await start_run(
        client, task_queue, script_, tools=STATE_TOOLS, effect_policy=["cart"], query="fill the cart"
    )
    result = await handle.result()
    assert result.status == "completed"
    trace = await trace_of(handle)
    finished = [e.call_id for e in trace.events if e.kind == "tool_completed"]
    assert finished.index("fast") < finished.index("slow")  # they really finished out of order
    applied = [e.call_id for e in trace.events if e.kind == "state_effects_applied"]
    assert applied == ["slow", "fast", "merge"]
    # In completion order the slow call's 1 would have won.
    assert result.agent_state == {"cart": {"total": 2, "items": ["a"]}}
    assert (await state_of(handle)).agent_state == result.agent_state


async def test_a_forbidden_path_is_rejected_and_the_models_next_call_sees_why(
    client: Client, task_queue: str
) -> None:
    script_ = [
        turn(
            tool_calls=[
                call("change_state", effect("set", "secrets.token", "x"), "forbidden"),
                call("change_state", effect("set", "cart.n", 1), "allowed"),
            ]
        ),
        turn("noted"),
    ]
    handle = await start_run(client, task_queue, script_, tools=STATE_TOOLS, effect_policy=["cart"])
    result = await handle.result()
    assert result.agent_state == {"cart": {"n": 1}}
    forbidden, allowed = tool_results(result.entries)
    assert forbidden["ok"] is True and forbidden["result"] == "set secrets.token"
    assert forbidden["effects_rejected"][0].startswith("effect_forbidden: set 'secrets.token'")
    assert "effects_rejected" not in allowed
    second_call = (await llm_inputs(handle))[1]
    sent = json.dumps(second_call)
    assert "effect_forbidden" in sent and "secrets.token" in sent
    rejected = [e for e in (await trace_of(handle)).events if e.kind == "state_effects_rejected"]
    assert [(e.call_id, e.data["reasons"]) for e in rejected] == [("forbidden", ["effect_forbidden"])]


async def test_invalid_effects_are_rejected_by_name_and_change_nothing(
    client: Client, task_queue: str
) -> None:
    script_ = [
        turn(tool_calls=[call("change_state", effect("set", "cart", "a string"), "c1")]),
        turn(
            tool_calls=[
                call("change_state", effect("merge", "cart", {"x": 1}), "into-string"),
                call("change_state", effect("set", "cart.deep", 1), "through-string"),
                call("change_state", effect("merge", "other", [1, 2]), "merge-list"),
                call("many_effects", {"count": MAX_EFFECTS + 1}, "too-many"),
            ]
        ),
        turn("noted"),
    ]
    handle = await start_run(
        client, task_queue, script_, tools=STATE_TOOLS, effect_policy=["cart", "other", "n"]
    )
    result = await handle.result()
    assert result.agent_state == {"cart": "a string"}
    results = tool_results(result.entries)[1:]
    messages = [r["effects_rejected"][0] for r in results]
    assert all(m.startswith("invalid_effect: ") for m in messages), messages
    assert "not an object" in messages[0] and "'cart'" in messages[1]
    assert f"at most {MAX_EFFECTS}" in messages[3]
    rejected = [e for e in (await trace_of(handle)).events if e.kind == "state_effects_rejected"]
    assert [e.call_id for e in rejected] == ["into-string", "through-string", "merge-list", "too-many"]


async def test_an_empty_policy_allows_nothing(client: Client, task_queue: str) -> None:
    script_ = [turn(tool_calls=[call("change_state", effect("set", "a", 1), "c1")]), turn("ok")]
    handle = await start_run(client, task_queue, script_, tools=STATE_TOOLS)
    result = await handle.result()
    assert result.agent_state is None
    assert tool_results(result.entries)[0]["effects_rejected"][0].startswith("effect_forbidden")


async def test_the_next_round_sees_the_refreshed_state_over_the_users_state_key(
    client: Client, task_queue: str
) -> None:
    script_ = [
        turn(tool_calls=[call("peek_state", {}, "p1")]),
        turn(tool_calls=[call("change_state", effect("set", "count", 1), "c1")]),
        turn(tool_calls=[call("peek_state", {}, "p2")]),
        turn("done"),
    ]
    handle = await start_run(
        client,
        task_queue,
        script_,
        tools=STATE_TOOLS,
        effect_policy=["*"],
        tool_context={"state": "the user's", "tenant": "t1"},
    )
    result: RunResult = await handle.result()
    first, _, second = tool_results(result.entries)
    assert first["result"] == {"state": {}, "rest": {"tenant": "t1"}}
    assert second["result"] == {"state": {"count": 1}, "rest": {"tenant": "t1"}}


async def test_a_run_without_the_feature_sends_the_users_context_unchanged(
    client: Client, task_queue: str
) -> None:
    script_ = [turn(tool_calls=[call("peek_state", {}, "p1")]), turn("done")]
    handle = await start_run(
        client, task_queue, script_, tools=STATE_TOOLS, tool_context={"state": "the user's"}
    )
    result = await handle.result()
    assert tool_results(result.entries)[0]["result"] == {"state": "the user's", "rest": {}}
    assert result.agent_state is None


async def test_a_session_keeps_the_state_across_asks_and_continue_as_new(
    client: Client, task_queue: str
) -> None:
    sid = new_session_id()
    session = Sessions(client, task_queue=task_queue).get(sid)
    agent = config(tools=STATE_TOOLS, effect_policy=["notes"])
    first = await session.ask_sync(
        "remember a",
        config=agent,
        overrides=script(
            turn(tool_calls=[call("change_state", effect("merge", "notes", {"a": 1}), "c1")]), turn("ok")
        ),
    )
    assert first.status == "completed"
    assert await session.agent_state() == {"notes": {"a": 1}}
    second = await session.ask_sync(
        "remember b",
        overrides=script(
            turn(tool_calls=[call("change_state", effect("merge", "notes", {"b": 2}), "c1")]),
            turn(tool_calls=[call("peek_state", {}, "p1")]),
            turn("ok"),
        ),
    )
    assert second.status == "completed"
    assert await session.agent_state() == {"notes": {"a": 1, "b": 2}}
    # Asks without effects keep it, until the session has continued as new at least once.
    for i in range(SUGGEST_CAN_AT // 8):
        await session.ask_sync(f"turn {i}", overrides=script(turn(f"answer {i}")))
        if await continue_as_new_hops(client, sid) >= 1:
            break
    assert await continue_as_new_hops(client, sid) >= 1
    assert await session.agent_state() == {"notes": {"a": 1, "b": 2}}
    third = await session.ask_sync(
        "what do you know",
        overrides=script(turn(tool_calls=[call("peek_state", {}, "p1")]), turn("ok")),
    )
    run = await session.run(third.request_id)
    entries = [entry async for entry in run.thread()]
    assert tool_results(entries)[0]["result"]["state"] == {"notes": {"a": 1, "b": 2}}


class Events:
    """Collects what the book records (the run's `RunRecord` in a workflow)."""

    def __init__(self) -> None:
        self.kinds: list[tuple[str, str | None]] = []

    def event(self, kind: str, *, call_id: str | None = None, **_: Any) -> None:
        self.kinds.append((kind, call_id))


def one_round(book: AgentStateBook, *effects: StateEffect) -> list[str]:
    """Apply one call's effects; the rejection sentences its result carries."""
    tool_call = ToolCall(id="c1", name="t", arguments="{}")
    [(_, outcome)] = book.apply_round([(tool_call, ToolOutcome(ok=True, effects=list(effects)))], Events())
    return outcome.effects_rejected


def test_the_book_applies_paths_prefixes_deletes_and_the_size_limit() -> None:
    book = AgentStateBook({"keep": 1}, ["cart", "big"])
    assert one_round(book, StateEffect(op="set", path="cart.a.b", value=1)) == []
    assert book.state == {"keep": 1, "cart": {"a": {"b": 1}}}
    [forbidden] = one_round(book, StateEffect(op="set", path="cartography", value=1))
    assert forbidden.startswith("effect_forbidden")
    [empty] = one_round(book, StateEffect(op="set", path="cart..x", value=1))
    assert empty.startswith("invalid_effect") and "empty key" in empty
    assert (
        one_round(book, StateEffect(op="delete", path="cart.a"), StateEffect(op="delete", path="cart.z"))
        == []
    )
    assert book.state == {"keep": 1, "cart": {}}
    [too_big] = one_round(book, StateEffect(op="set", path="big.blob", value="x" * MAX_STATE_BYTES))
    assert too_big.startswith("invalid_effect") and "limit" in too_big
    assert book.state == {"keep": 1, "cart": {}}  # undone, and `big` was not left behind
    assert book.tool_context({"state": "mine", "t": 1}) == {"state": {"keep": 1, "cart": {}}, "t": 1}
    assert AgentStateBook({}, []).tool_context({"state": "mine"}) == {"state": "mine"}
