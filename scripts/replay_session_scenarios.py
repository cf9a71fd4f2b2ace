"""The replay scenarios of sessions: asks, compaction, forwarded controls, archiving, busy asks, fork, reset.

Registered with `scripts._replay_registry.scenario`; see there.
"""

from __future__ import annotations

from scripts._replay_lab import Lab, Session
from scripts._replay_registry import calc, expect, scenario, slow


@scenario("child", "activity:summarize", "update:compact", "continued_as_new", "continued_from")
async def session(lab: Lab) -> list[str]:
    """A session: asks with tools, compaction, a lane switch, and continue-as-new."""
    talk = Session(lab, "session", context_policy={"keep_last_turns": 1})
    await talk.result(
        await talk.ask("What is 6 * 7?", {"tool_calls": [calc("6 * 7", "c1")]}, {"content": "42."})
    )
    await talk.result(await talk.ask("And 6 * 8?", {"content": "48."}))
    expect(await talk.update("compact", {"op_id": "compact-1"}), "status", "applied")
    switch = {"op_id": "lane-b", "context_ref": "side", "operation": {"type": "switch"}}
    expect(await talk.update("context_modify", switch), "status", "applied")
    for i in range(12):
        await talk.result(await talk.ask(f"turn {i}", {"content": f"answer {i}"}))
    return talk.ids


@scenario(
    *("signal_sent:steer", "signal_sent:inject", "signal_sent:cancel", "signal_sent:control_ack"),
    *("signal:control_ack", "update:steer", "update:cancel"),
)
async def session_controls(lab: Lab) -> list[str]:
    """Steer, inject and cancel forwarded through a session (the runs answer with `control_ack`)."""
    talk = Session(lab, "controls")
    first = await talk.ask("Take your time.", slow(1.5, "s1"), {"content": "Done."}, {"content": "Done."})
    await lab.until_tool_runs(talk.children[-1])
    expect(await talk.update("steer", {"content": "Answer in French."}), "status", "queued")
    await talk.handle.signal("inject", {"content": "FYI: the user is on mobile."})
    await talk.result(first)
    second = await talk.ask("Wait.", slow(5, "s2"))
    await lab.until_tool_runs(talk.children[-1])
    expect(await talk.update("cancel", {"reason": "user pressed stop"}), "status", "accepted")
    expect((await talk.result(second))["outcome"], "status", "cancelled")
    expect(await talk.update("steer", {"content": "Anyone there?"}), "reason", "idle")
    return talk.ids


def _bulk(op: int) -> list[dict[str, str]]:
    """100 messages of about 1,000 characters: one replace op adds about 100 KB to the thread."""
    words = "the archived part of a long conversation stays in the payload store " * 14
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"[{op}.{i}] {words}"} for i in range(100)
    ]


@scenario("activity:archive_segment", "activity:read_segment", "continued_as_new", "claim_checked")
async def session_archive(lab: Lab) -> list[str]:
    """A session whose thread outgrows ARCHIVE_CHARS: archived, read back, carried across continue-as-new."""
    talk = Session(lab, "archive")
    first = await talk.ask("Remember the number 7.", {"content": "Noted: 7."})
    await talk.result(first)
    for op in range(11):  # each op's payload stays under the 128 KiB claim-check threshold
        replace = {"type": "replace", "reason": "restore", "result_context": {"messages": _bulk(op)}}
        expect(
            await talk.update("context_modify", {"op_id": f"bulk-{op}", "operation": replace}),
            "status",
            "applied",
        )
    await talk.result(await talk.ask("What was the number?", {"content": "It was 7."}))  # archives
    expect(await talk.result(first), "result", "Noted: 7.")  # its answer is archived: read back
    run_id = (await talk.handle.describe()).run_id
    for i in range(20):
        await talk.result(await talk.ask(f"turn {i}", {"content": f"answer {i}"}))
        if (await talk.handle.describe()).run_id != run_id:
            break
    return talk.ids


@scenario("child", "update:ask", "update:await_result")
async def busy_session(lab: Lab) -> list[str]:
    """Asks to a busy session: enqueued, steered, interrupting and rolling back."""
    talk = Session(lab, "busy")
    first = await talk.ask("Take your time.", slow(2, "s1"), {"content": "One."})
    await lab.until_tool_runs(talk.children[-1])
    queued = await talk.ask("Next, please.", {"content": "Two."}, on_busy="enqueue")
    await talk.ask("Also this.", on_busy="steer")
    await talk.result(first)
    await talk.result(queued)
    third = await talk.ask("Slow again.", slow(3, "s2"), {"content": "Three."})
    await lab.until_tool_runs(talk.children[-1])
    replacing = await talk.ask("Instead, this.", {"content": "Four."}, on_busy="interrupt")
    expect((await talk.result(third))["outcome"], "status", "cancelled")
    await talk.result(replacing)
    fifth = await talk.ask("And slow.", slow(3, "s3"), {"content": "Five."})
    await lab.until_tool_runs(talk.children[-1])
    rolled = await talk.ask("Forget that.", {"content": "Six."}, on_busy="rollback")
    expect((await talk.result(fifth))["outcome"], "status", "cancelled")
    await talk.result(rolled)
    return talk.ids


@scenario("update:fork", "update:reset_thread")
async def fork_and_reset(lab: Lab) -> list[str]:
    """A session forked at its first answer, then reset; the fork answers on its own."""
    talk = Session(lab, "forking")
    first = await talk.ask("Remember 7.", {"content": "Noted: 7."})
    await talk.result(first)
    forked = await talk.update("fork", {"seq": 1})
    fork = Session(lab, "forked")
    fork.id = forked["session_id"]
    fork.handle = lab.client.get_workflow_handle(fork.id)
    await talk.update("reset_thread", {"reason": "start over"})
    second = await talk.ask("What did I say?", {"content": "Nothing yet."})
    await talk.result(second)
    answered = await fork.ask("And now?", {"content": "You said 7."})
    await fork.result(answered)
    return [*talk.ids, *fork.ids]
