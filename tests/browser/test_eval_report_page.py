"""The evaluation report page in a real browser: Debian's chromium driven by Playwright, on a real gateway.

Two real evaluations (versions 1 and 2 of an agent made at run time, `tests.eval_helpers`) by
alice; alice and bob each ask a version once, so each has a usage row of their own. Alice signs in
on the chat page (her token in its field) and opens `/report?evals=a,b` with the token the chat
page keeps: the pass-rate bars carry the API's rates, the cost and latency dots the cases' values,
the comparison lists the cases that differ, the model's markup shows as text, the usage chart shows
alice's rows only. A wrong id and another principal's evaluation show `not_found`; no token shows
`unauthorized`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment
from tests.browser_helpers import chromium
from tests.eval_helpers import SCRIPT_ANSWER, TOKENS, Evaluated, two_versions_evaluated
from tests.gateway_helpers import ALICE, BOB, GatewayServer, running_gateway

WAIT_MS = 60_000
USAGE_WAIT_S = 60


@dataclass
class Report:
    gateway: GatewayServer
    browser: Browser
    evaluated: Evaluated

    async def page(self, token: str | None) -> Page:
        """A fresh browser context signed in on the chat page with `token` (None: not signed in)."""
        context = await self.browser.new_context()
        page = await context.new_page()
        # For whoever reads a failure (pytest shows a failed test's output): what the page did.
        page.on("console", lambda message: print(f"console {message.type}: {message.text}"))
        page.on("pageerror", lambda error: print(f"page error: {error}"))
        page.on("response", lambda r: print(f"{r.status} {r.request.method} {r.url}"))
        if token is not None:
            await page.goto(self.gateway.url + "/")
            await page.locator("#token").fill(token)
            await page.locator("#token").press("Enter")
            await page.locator("#token").blur()
            await expect(page.locator("#agent option").first).to_be_attached(timeout=WAIT_MS)
        return page

    async def open(self, token: str | None, *ids: str) -> Page:
        """The report page of `ids`, signed in on the chat page with `token`."""
        page = await self.page(token)
        await page.goto(f"{self.gateway.url}/report?evals={','.join(ids)}")
        return page


async def ask_and_record(gateway: GatewayServer, token: str, owner: str, agent: str) -> None:
    """Ask `agent` (`name@N`) once in a new thread; return once its session has written the usage row.

    The row is written after the request ends (`record_usage`, which the session does not wait
    for): the session's history is followed (a long poll) until that activity has completed.
    """
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with gateway.http(token) as http:
        posted = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": "Capital?"})
        assert posted.status_code == 202, posted.text
        request_id = posted.json()["request_id"]
        done = await http.get(f"/api/threads/{agent}/{thread}/requests/{request_id}", params={"wait_s": 30})
        assert done.json()["status"] == "completed", done.text
    handle = gateway.ctx.client.get_workflow_handle(session_id(Principal(owner), agent.split("@")[0], thread))

    async def recorded() -> None:
        scheduled: set[int] = set()
        async for event in handle.fetch_history_events(wait_new_event=True):
            if event.HasField("activity_task_scheduled_event_attributes"):
                if event.activity_task_scheduled_event_attributes.activity_type.name == "record_usage":
                    scheduled.add(event.event_id)
            elif event.HasField("activity_task_completed_event_attributes"):
                if event.activity_task_completed_event_attributes.scheduled_event_id in scheduled:
                    return

    await asyncio.wait_for(recorded(), USAGE_WAIT_S)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def report(agents: AgentTestEnvironment) -> AsyncIterator[Report]:
    async with running_gateway(agents, tokens=TOKENS) as gateway, chromium() as browser:
        evaluated = await two_versions_evaluated(gateway)
        await ask_and_record(gateway, ALICE, "alice", f"{evaluated.agent}@2")
        await ask_and_record(gateway, BOB, "bob", f"{evaluated.agent}@1")
        yield Report(gateway, browser, evaluated)


async def attributes(page: Page, selector: str, *names: str) -> list[dict[str, str]]:
    """The `names` attributes of every element `selector` finds."""
    found = await page.locator(selector).evaluate_all(
        "(elements, names) => elements.map("
        "(e) => Object.fromEntries(names.map((n) => [n, e.getAttribute(n)])))",
        list(names),
    )
    return cast(list[dict[str, str]], found)


async def test_the_charts_hold_the_apis_numbers_and_the_comparison_its_differences(report: Report) -> None:
    a, b = report.evaluated.first, report.evaluated.second
    page = await report.open(ALICE, a["eval_id"], b["eval_id"])
    rates = {
        (v["eval_id"], name): row["pass_rate"]
        for v in (a, b)
        for name, row in v["summary"]["by_evaluator"].items()
    }
    bars = page.locator("#pass-rates svg rect.bar")
    await expect(bars).to_have_count(len(rates), timeout=WAIT_MS)
    shown = await attributes(
        page, "#pass-rates svg rect.bar", "data-eval", "data-evaluator", "data-pass-rate"
    )
    assert {(s["data-eval"], s["data-evaluator"]): float(s["data-pass-rate"]) for s in shown} == rates

    dots = await attributes(
        page, "svg.strip circle.dot", "data-field", "data-eval", "data-case", "data-value"
    )
    assert {(d["data-field"], d["data-eval"], d["data-case"]): float(d["data-value"]) for d in dots} == {
        (field, v["eval_id"], c["name"]): c[field]
        for field in ("cost_usd", "duration_s")
        for v in (a, b)
        for c in v["cases"]
    }

    summary = page.locator("#summary tr[data-eval]")
    await expect(summary).to_have_count(2)
    await expect(summary.nth(0)).to_contain_text(f"{report.evaluated.agent}@1")
    await expect(summary.nth(1)).to_contain_text(f"{report.evaluated.agent}@2")
    await expect(summary.nth(0)).to_contain_text("completed")

    async with report.gateway.http(ALICE) as http:
        compared = (await http.get(f"/api/evals/{a['eval_id']}/compare/{b['eval_id']}")).json()
    differing = [d["name"] for d in compared["differences"]]
    assert differing == ["france", "rhone"]
    rows = page.locator("#comparisons table.differences tr[data-case]")
    await expect(rows).to_have_count(len(differing))
    assert [
        r["data-case"] for r in await attributes(page, "#comparisons tr[data-case]", "data-case")
    ] == differing
    await expect(rows.nth(0)).to_contain_text("Paris")
    await expect(rows.nth(0)).to_contain_text(SCRIPT_ANSWER)

    # The cases' tables: every case of each evaluation; the model's markup is text, not an element.
    cases = page.locator(f'table.cases[data-eval="{b["eval_id"]}"] tr[data-case]')
    await expect(cases).to_have_count(len(b["cases"]))
    await expect(cases.nth(0).locator("td.output")).to_have_text(SCRIPT_ANSWER)
    await expect(page.locator("main script")).to_have_count(0)


async def test_the_usage_chart_shows_the_principals_rows(report: Report) -> None:
    page = await report.open(ALICE)
    mine = f"{report.evaluated.agent}@2"
    await expect(page.locator(f'svg.usage-requests rect.bar[data-series="{mine}"]')).to_have_count(
        1, timeout=WAIT_MS
    )
    async with report.gateway.http(ALICE) as http:
        rows: list[dict[str, Any]] = (
            await http.get("/api/usage", params={"group_by": "agent,version,day"})
        ).json()["rows"]
    series = [f"{r['agent']}@{r['version']}" if r["version"] is not None else r["agent"] for r in rows]
    requests = await attributes(
        page, "svg.usage-requests rect.bar", "data-series", "data-day", "data-requests"
    )
    assert {(r["data-series"], r["data-day"]): int(r["data-requests"]) for r in requests} == {
        (s, r["day"]): r["requests"] for s, r in zip(series, rows, strict=True)
    }
    costs = await attributes(page, "svg.usage-cost rect.bar", "data-series", "data-day", "data-cost-usd")
    assert {(c["data-series"], c["data-day"]): float(c["data-cost-usd"]) for c in costs} == {
        (s, r["day"]): r["cost_usd"] for s, r in zip(series, rows, strict=True)
    }
    assert (mine, rows[series.index(mine)]["day"]) in {(r["data-series"], r["data-day"]) for r in requests}
    # Bob's request (version 1) is his: not on alice's chart.
    await expect(
        page.locator(f'svg.usage-requests rect.bar[data-series="{report.evaluated.agent}@1"]')
    ).to_have_count(0)
    await expect(page.locator("#usage-rows tr[data-series]")).to_have_count(len(rows))


async def test_a_wrong_id_and_another_principals_evaluation_show_not_found(report: Report) -> None:
    a = report.evaluated.first["eval_id"]
    page = await report.open(ALICE, a, "ev-nope")
    wrong = page.locator('#eval-errors li[data-eval="ev-nope"]')
    await expect(wrong).to_contain_text("not_found", timeout=WAIT_MS)
    await expect(wrong).to_have_attribute("data-code", "not_found")
    await expect(page.locator("#summary tr[data-eval]")).to_have_count(1)  # the other one still shows

    bobs = await report.open(BOB, a)
    await expect(bobs.locator(f'#eval-errors li[data-eval="{a}"]')).to_have_attribute(
        "data-code", "not_found", timeout=WAIT_MS
    )
    await expect(bobs.locator("#report")).to_be_hidden()


async def test_without_a_token_the_page_shows_unauthorized(report: Report) -> None:
    a = report.evaluated.first["eval_id"]
    page = await report.open(None, a)
    await expect(page.locator("#error")).to_contain_text("unauthorized", timeout=WAIT_MS)
    await expect(page.locator(f'#eval-errors li[data-eval="{a}"]')).to_have_attribute(
        "data-code", "unauthorized"
    )
    # Typing the token in the report page's own field shows the report.
    await page.locator("#token").fill(ALICE)
    await page.locator("#token").press("Enter")
    await expect(page.locator("#pass-rates svg rect.bar").first).to_be_attached(timeout=WAIT_MS)
    await expect(page.locator("#error")).to_be_hidden()
