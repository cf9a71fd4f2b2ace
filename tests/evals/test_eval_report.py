"""The evaluation report as one HTML file: `GET /api/evals/{id}/report.html` and `client.py eval report`.

Two real evaluations (versions 1 and 2 of an agent made at run time, `tests.eval_helpers`) on a
real gateway, the tests' worker and the test session's store. The file is read back with the
standard library's HTML parser: each evaluator's bar holds the pass rate the API reports, each
case's dots its cost and duration, the tables every case and the cases `compare` says differ; the
model's markup is text; another principal's evaluation is 404; the CLI writes the same bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest_asyncio
from typer.testing import CliRunner

from cli.session_commands import app
from gateway.guard.operations import classify
from gateway.identity.scopes import ASK
from testing import AgentTestEnvironment
from tests.eval_helpers import SCRIPT_ANSWER, TOKENS, Evaluated, two_versions_evaluated
from tests.gateway_helpers import ALICE, BOB, GatewayServer, running_gateway


class Elements(HTMLParser):
    """Every start tag of a document with its attributes, its text, and whether a script is in it."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, tag: str, cls: str) -> list[dict[str, str]]:
        """The attributes of each `tag` of class `cls`."""
        return [attrs for name, attrs in self.tags if name == tag and cls in attrs.get("class", "").split()]


def parsed(document: str) -> Elements:
    elements = Elements()
    elements.feed(document)
    return elements


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, tokens=TOKENS) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def evaluated(gateway: GatewayServer) -> Evaluated:
    return await two_versions_evaluated(gateway)


async def report(gateway: GatewayServer, token: str, eval_id: str, other: str | None = None) -> Any:
    async with gateway.http(token) as http:
        return await http.get(f"/api/evals/{eval_id}/report.html", params={"with": other} if other else {})


async def test_the_file_holds_the_apis_pass_rates_cases_and_differences(
    gateway: GatewayServer, evaluated: Evaluated
) -> None:
    a, b = evaluated.first, evaluated.second
    got = await report(gateway, ALICE, a["eval_id"], b["eval_id"])
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "text/html; charset=utf-8"
    assert got.headers["content-disposition"] == f'attachment; filename="eval-{a["eval_id"]}.html"'
    assert "script-src" not in got.headers["content-security-policy"]
    assert got.headers["content-security-policy"].startswith("default-src 'none'")
    doc = parsed(got.text)

    bars = {
        (r["data-eval"], r["data-evaluator"]): float(r["data-pass-rate"]) for r in doc.having("rect", "bar")
    }
    expected = {
        (view["eval_id"], name): row["pass_rate"]
        for view in (a, b)
        for name, row in view["summary"]["by_evaluator"].items()
    }
    assert bars == expected
    # What the dataset makes the two versions score (tests.eval_helpers.DATASET).
    assert expected[(a["eval_id"], "EqualsExpected")] == 0.5
    assert expected[(b["eval_id"], "Contains")] == 1.0

    dots = {
        (d["data-field"], d["data-eval"], d["data-case"]): float(d["data-value"])
        for d in doc.having("circle", "dot")
    }
    assert dots == {
        (field, view["eval_id"], case["name"]): case[field]
        for field in ("cost_usd", "duration_s")
        for view in (a, b)
        for case in view["cases"]
    }

    tables = doc.having("table", "cases")
    assert [t["data-eval"] for t in tables] == [a["eval_id"], b["eval_id"]]
    case_rows = [attrs["data-case"] for tag, attrs in doc.tags if tag == "tr" and "data-case" in attrs]
    async with gateway.http(ALICE) as http:
        compared = (await http.get(f"/api/evals/{a['eval_id']}/compare/{b['eval_id']}")).json()
    differing = [d["name"] for d in compared["differences"]]
    assert differing == ["france", "rhone"]
    # The differences' rows first, then each evaluation's cases.
    assert case_rows == differing + [c["name"] for c in a["cases"]] + [c["name"] for c in b["cases"]]

    # The model's markup is text: escaped in the file, the same characters once parsed, no script.
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Lyon" in got.text
    assert "<script" not in got.text
    assert all(tag != "script" for tag, _ in doc.tags)
    assert any(SCRIPT_ANSWER in text for text in doc.text)


async def test_one_evaluation_alone_has_no_comparison(gateway: GatewayServer, evaluated: Evaluated) -> None:
    got = await report(gateway, ALICE, evaluated.first["eval_id"])
    assert got.status_code == 200, got.text
    doc = parsed(got.text)
    assert doc.having("table", "differences") == []
    assert {r["data-eval"] for r in doc.having("rect", "bar")} == {evaluated.first["eval_id"]}


async def test_another_principals_evaluation_is_not_found(
    gateway: GatewayServer, evaluated: Evaluated
) -> None:
    a, b = evaluated.first["eval_id"], evaluated.second["eval_id"]
    for token, eval_id, other in ((BOB, a, None), (BOB, a, b), (ALICE, a, "ev-missing")):
        got = await report(gateway, token, eval_id, other)
        assert got.status_code == 404, got.text
        assert got.json()["error"]["code"] == "not_found"
    async with gateway.http() as anonymous:
        assert (await anonymous.get(f"/api/evals/{a}/report.html")).status_code == 401


def test_the_report_needs_agents_ask_like_the_other_eval_reads() -> None:
    for path in ("/api/evals/ev-1", "/api/evals/ev-1/compare/ev-2", "/api/evals/ev-1/report.html"):
        [operation] = classify("GET", path, None)
        assert (operation.action, operation.scope, operation.audited) == ("read", ASK, False)


async def test_the_cli_writes_the_same_bytes_as_the_route(
    gateway: GatewayServer, evaluated: Evaluated, agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    a, b = evaluated.first["eval_id"], evaluated.second["eval_id"]
    served = (await report(gateway, ALICE, a, b)).content
    out = tmp_path / "report.html"
    target = [
        "--address",
        agents.client.service_client.config.target_host,
        "--namespace",
        agents.client.namespace,
    ]
    args = [*target, "eval", "report", a, b, "--out", str(out), "--principal", "alice"]
    result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == served

    refused = await asyncio.to_thread(
        CliRunner().invoke, app, [*target, "eval", "report", a, "--out", str(out), "--principal", "bob"]
    )
    assert refused.exit_code == 1
    assert "not_found" in refused.output
