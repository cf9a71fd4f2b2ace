"""The Temporal Web UI tells a run's and a session's story, read in a real browser.

A dev server started by the product (`hosting.dev_server.ensure_dev_server`, the one
`worker.py --dev` starts, Web UI on) on free ports, a real worker, runs and a session
started through the typed client, and Debian's `chromium`, headless, showing the UI's
pages (Playwright, `tests/browser_helpers.py`): the static summary and details, the current details
(the UI asks the worker for them) and every activity's summary must be on the page.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid

from client import RunHandle, Runs, Sessions
from tests.helpers import call, turn
from tests.session_helpers import usage_rows_settled
from tests.web_ui_pages import (
    FIELDS,
    QUERY,
    REPO,
    SUMMARY,
    WebUI,
    agent,
    metadata_of,
    summaries,
    until_tool_started,
)


async def test_a_runs_page_shows_its_summary_details_and_every_activity(web_ui: WebUI) -> None:
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    script = agent(
        turn(tool_calls=[call("calculator", {"expression": "17 * 23"})]),
        turn("17 * 23 = 391."),
        tools=["calculator"],
    )
    run = await runs.start(QUERY, script, workflow_id=f"web-ui-run-{uuid.uuid4().hex[:8]}")
    assert (await run.result()).result == "17 * 23 = 391."

    history = await web_ui.page(run.workflow_id, "history", summaries(4))
    # Newest event first: the second LLM call, the tool call, the first LLM call, the start.
    assert history.after("Summary") == [
        "llm scripted #2",
        "tool calculator call_0_0",
        "llm scripted #1",
        SUMMARY,
    ], f"saved at {history.saved}"
    assert history.after("Activity Type") == ["llm_call", "run_tool", "llm_call"]

    metadata = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert metadata.user_metadata("summary") == SUMMARY
    assert metadata.user_metadata("details") == (
        "**model** `scripted` · **tools** calculator · **max iterations** 10\n\n"
        "**query** What is 17 * 23? Show your work."
    )
    assert metadata.user_metadata("current-details") == (
        "status: completed · iteration 2/10 · model scripted · termination: final_answer"
    )


async def start_slow_tool(web_ui: WebUI) -> RunHandle:
    """A run whose first tool call (`slow`) takes two minutes: it is under way when this returns."""
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    script = agent(turn(tool_calls=[call("slow", {"seconds": 120})]), tools=["slow"], tool_timeout_s=300)
    run = await runs.start("Take your time.", script, workflow_id=f"web-ui-slow-{uuid.uuid4().hex[:8]}")
    await until_tool_started(run)
    return run


async def test_the_current_details_follow_the_run(web_ui: WebUI) -> None:
    run = await start_slow_tool(web_ui)
    during = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert during.user_metadata("current-details").startswith(
        "status: running · iteration 1/10 · model scripted"
    )
    pending = await web_ui.page(run.workflow_id, "history", summaries(3))
    assert pending.after("Summary") == ["tool slow call_0_0", "llm scripted #1", "scripted: Take your time."]

    assert (await run.cancel("enough")).status == "accepted"
    assert (await run.result()).status == "cancelled"
    after = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert after.user_metadata("current-details") == (
        "status: cancelled · iteration 1/10 · model scripted · termination: cancelled"
    )


async def test_the_current_details_name_the_tools_being_called(web_ui: WebUI) -> None:
    run = await start_slow_tool(web_ui)
    try:
        during = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
        assert during.user_metadata("current-details") == (
            "status: running · iteration 1/10 · model scripted · tools: slow"
        )
    finally:
        await run.cancel("test over")


async def test_a_claim_checked_input_still_has_its_summary(web_ui: WebUI) -> None:
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    report = "Summarise this report: " + "quarterly revenue grew in every region " * 500
    run = await runs.start(
        report, agent(turn("Revenue grew.")), workflow_id=f"web-ui-big-{uuid.uuid4().hex[:8]}"
    )
    assert (await run.result()).result == "Revenue grew."

    history = await web_ui.page(run.workflow_id, "history", summaries(2))
    started_summary = history.after("Summary")[-1]
    assert started_summary.startswith("scripted: Summarise this report: quarterly revenue grew")
    assert started_summary.endswith("…") and len(started_summary) <= len("scripted: ") + 80
    # The input and the result are in the payload store; the page shows their references.
    assert int(history.after("External Payloads")[0]) >= 2, f"saved at {history.saved}"
    page_text = " ".join(history.texts)
    assert '"driverName" : "react.payload-store"' in page_text, f"saved at {history.saved}"
    digest = re.findall(r'"claimData" : \{ "sha256" : "([0-9a-f]{64})"', page_text)[0]

    # What the docs tell an operator to do with the digest the page shows.
    shown = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        "payload",
        digest,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(shown.communicate(), timeout=60)
    assert shown.returncode == 0, err.decode()
    assert json.loads(out)["query"] == report


async def test_a_sessions_page_and_its_runs_page(web_ui: WebUI) -> None:
    sessions = Sessions(web_ui.client, task_queue=web_ui.task_queue)
    session = sessions.get(f"web-ui-session-{uuid.uuid4().hex[:8]}")
    script = agent(
        turn(tool_calls=[call("calculator", {"expression": "2 + 2"})]), turn("Four."), tools=["calculator"]
    )
    accepted = await session.ask("What is 2 + 2?", config=script, agent_id="helpdesk")
    assert (await session.await_result(accepted.request_id)).result == "Four."

    metadata = await web_ui.page(session.workflow_id, "user-metadata", metadata_of("summary", "details"))
    assert metadata.user_metadata("summary") == "session helpdesk · scripted: What is 2 + 2?"
    assert metadata.user_metadata("details").startswith("**agent** helpdesk\n\n**model** `scripted`")

    # The session's history: its start, then each ask's run, by the summary the session gives it,
    # and the request's usage row, written aside once it ended.
    await usage_rows_settled(web_ui.client.get_workflow_handle(session.workflow_id))
    history = await web_ui.page(session.workflow_id, "history", summaries(3))
    assert history.after("Summary") == [
        f"record usage of {accepted.request_id}",
        "scripted: What is 2 + 2?",
        "session helpdesk · scripted: What is 2 + 2?",
    ], f"saved at {history.saved}"

    child = await web_ui.page(accepted.run_workflow_id, "history", summaries(4))
    assert child.after("Summary") == [
        "llm scripted #2",
        "tool calculator call_0_0",
        "llm scripted #1",
        "scripted: What is 2 + 2?",
    ], f"saved at {child.saved}"


async def test_the_current_details_say_which_call_awaits_approval(web_ui: WebUI) -> None:
    runs = Runs(web_ui.client, task_queue=web_ui.task_queue)
    script = agent(
        turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]),
        turn("42."),
        tools=["calculator"],
        approval_required=["calculator"],
    )
    run = await runs.start("Multiply.", script, workflow_id=f"web-ui-approval-{uuid.uuid4().hex[:8]}")
    for _ in range(300):
        if (await run.state()).pending_approvals:
            break
        await asyncio.sleep(0.05)
    waiting = await web_ui.page(run.workflow_id, "user-metadata", metadata_of(*FIELDS))
    assert waiting.user_metadata("current-details") == (
        "status: running · iteration 1/10 · model scripted · tools: calculator · "
        "awaiting approval: calculator (call_0_0)"
    )
    assert (await run.approve("call_0_0", approver="web-ui-test")).status == "accepted"
    assert (await run.result()).result == "42."
