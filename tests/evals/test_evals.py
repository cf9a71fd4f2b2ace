"""Evaluations through a real gateway, the tests' worker, the scripted model and the store.

`geo` calls the calculator, then answers "Paris"; `lyon` answers "Lyon". A dataset of three cases
scores each by its evaluators (pydantic-evals' and ours); a case with recorded tool results runs
without calling the tool (its run's tool message is the recorded result); two evaluations compare;
every bad input is refused by name with nothing created; another principal's evaluation is 404.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from clients.attachment_intake import AttachmentSource
from contracts.thread import ThreadPage
from conversation import Entry, MessageEntry
from gateway.identity.principal import Principal
from gateway.owners import session_id
from store.evals import EvalStore
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.eval_helpers import evaluate
from tests.fake_openai import FakeOpenAI, chat_completion
from tests.fake_openai import tool_call as openai_tool_call
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, running_gateway

AGENTS = {
    **TEST_AGENTS,
    "geo": scripted_agent(
        call_tools(tool_call("calculator", {"expression": "2+2"})), answer("Paris"), tools=["calculator"]
    ),
    "lyon": scripted_agent(answer("Lyon")),
}
DATASET: dict[str, Any] = {
    "name": "capitals",
    "cases": [
        {"name": "france", "inputs": "Capital of France?", "expected_output": "Paris"},
        {
            "name": "wrong",
            "inputs": "Capital of the Rhône?",
            "expected_output": "Lyon",
            "evaluators": [{"Contains": "Ly"}],
        },
        {
            "name": "recorded",
            "inputs": {
                "query": "Capital, and 2+2?",
                "tool_results": [{"name": "calculator", "arguments": {"expression": "2+2"}, "result": 99}],
            },
            "expected_output": "Paris",
        },
    ],
    "evaluators": [
        "EqualsExpected",
        {"ToolTrajectory": {"expected": ["calculator"]}},
        {"MaxCost": 1.0},
        {"MaxDuration": 120},
    ],
}
YAML = """
name: capitals-yaml
cases:
  - name: france
    inputs: Capital of France?
    expected_output: Paris
evaluators:
  - EqualsExpected
  - JsonSchemaMatch:
      schema: {type: string, minLength: 3}
"""


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as server:
        yield server


def tool_contents(entries: list[Entry]) -> list[str]:
    """The contents of a run's tool messages."""
    return [e.payload.content for e in entries if isinstance(e, MessageEntry) and e.payload.role == "tool"]


async def test_each_case_is_a_run_scored_by_its_evaluators(gateway: GatewayServer) -> None:
    body = await evaluate(gateway, ALICE, "geo", DATASET)
    assert body["status"] == "completed"
    cases = {c["name"]: c for c in body["cases"]}
    assert list(cases) == ["france", "wrong", "recorded"]
    assert cases["france"]["passed"] is True
    assert cases["france"]["output"] == "Paris"
    assert cases["france"]["scores"] == {
        "EqualsExpected": True,
        "ToolTrajectory": True,
        "MaxCost": True,
        "MaxDuration": True,
    }
    assert cases["wrong"]["passed"] is False
    assert cases["wrong"]["scores"]["EqualsExpected"] is False
    assert cases["wrong"]["scores"]["Contains"] is False
    assert cases["recorded"]["passed"] is True
    summary = body["summary"]
    assert (summary["passed"], summary["failed"], summary["pending"]) == (2, 1, 0)
    assert summary["by_evaluator"]["EqualsExpected"] == {"passed": 2, "failed": 1, "pass_rate": 2 / 3}
    assert summary["by_evaluator"]["Contains"]["pass_rate"] == 0.0
    # The recorded case's run answered the calculator call with the recorded result (99), not 4.
    recorded = await gateway.ctx.runs.get(cases["recorded"]["run_workflow_id"]).result()
    assert tool_contents(recorded.entries) == ['{"ok": true, "result": 99}']
    live = await gateway.ctx.runs.get(cases["france"]["run_workflow_id"]).result()
    assert tool_contents(live.entries) == ['{"ok": true, "result": 4}']


async def test_a_yaml_dataset_and_two_evaluations_compared(gateway: GatewayServer) -> None:
    yaml_body = await evaluate(gateway, ALICE, "geo", YAML)
    assert yaml_body["dataset"] == "capitals-yaml"
    assert yaml_body["cases"][0]["scores"] == {"EqualsExpected": True, "JsonSchemaMatch": True}
    first = await evaluate(gateway, ALICE, "geo", DATASET)
    second = await evaluate(gateway, ALICE, "lyon", DATASET)  # a code profile: no `@N` (unknown_version)
    assert second["agent"] == "lyon"
    async with gateway.http(ALICE) as http:
        compared = (await http.get(f"/api/evals/{first['eval_id']}/compare/{second['eval_id']}")).json()
    assert compared["a"]["pass_rate"] == 2 / 3
    assert compared["b"]["pass_rate"] == 0.0
    assert compared["b"]["by_evaluator"]["Contains"] == 1.0
    assert compared["b"]["by_evaluator"]["ToolTrajectory"] == 0.0
    diff = {d["name"]: d for d in compared["differences"]}
    assert set(diff) == {"france", "wrong", "recorded"}
    assert diff["wrong"]["passed"] == {"a": False, "b": False}
    assert diff["wrong"]["scores"]["EqualsExpected"] == {"a": False, "b": True}
    assert diff["france"]["output"] == {"a": "Paris", "b": "Lyon"}
    assert set(compared["a"]) >= {"cost_usd", "latency_s_p50", "latency_s_max"}


async def _eval_count() -> int:
    store = EvalStore()
    try:
        rows = await store._sql("SELECT count(*) FROM evals")  # pyright: ignore[reportPrivateUsage]
        return int(rows[0][0])
    finally:
        await store.close()


async def test_bad_input_is_refused_by_name_and_creates_nothing(gateway: GatewayServer) -> None:
    one = {"inputs": "hi", "expected_output": "x"}
    bad: list[tuple[dict[str, Any], int, str]] = [
        ({"agent": "geo", "dataset": "cases: ["}, 400, "invalid_dataset"),
        ({"agent": "geo", "dataset": {"cases": [{"inputz": "hi"}]}}, 400, "invalid_dataset"),
        ({"agent": "geo", "dataset": {"cases": []}}, 400, "invalid_dataset"),
        (
            {"agent": "geo", "dataset": {"cases": [{**one, "evaluators": ["Sparkles"]}]}},
            400,
            "unknown_evaluator",
        ),
        (
            {"agent": "geo", "dataset": {"cases": [one], "evaluators": ["HasMatchingSpan"]}},
            400,
            "unknown_evaluator",
        ),
        (
            {"agent": "geo", "dataset": {"cases": [one], "evaluators": [{"LLMJudge": {"rubric": "polite"}}]}},
            400,
            "unknown_judge_model",
        ),
        (
            {
                "agent": "geo",
                "dataset": {
                    "cases": [one],
                    "evaluators": [{"LLMJudge": {"rubric": "r", "model": "no-such-model"}}],
                },
            },
            400,
            "unknown_judge_model",
        ),
        ({"agent": "nobody", "dataset": {"cases": [one]}}, 404, "unknown_agent"),
        ({"agent": "geo", "dataset": {"cases": [one] * 501}}, 400, "invalid_dataset"),
        ({"agent": "geo", "dataset": {"cases": [one]}, "concurrency": 0}, 400, "invalid_input"),
        ({"agent": "geo", "dataset": {"cases": [one]}, "extra": 1}, 400, "invalid_input"),
    ]
    before = await _eval_count()
    async with gateway.http(BOB) as http:
        for body, status, code in bad:
            refused = await http.post("/api/evals", json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (status, code), (
                body,
                refused.text,
            )
    assert await _eval_count() == before


async def test_another_principals_evaluation_is_not_found(gateway: GatewayServer) -> None:
    body = await evaluate(gateway, ALICE, "lyon", {"cases": [{"inputs": "hi", "expected_output": "Lyon"}]})
    assert body["cases"][0]["passed"] is True
    async with gateway.http(BOB) as http:
        assert (await http.get(f"/api/evals/{body['eval_id']}")).status_code == 404
        assert (await http.get(f"/api/evals/{body['eval_id']}/compare/{body['eval_id']}")).status_code == 404
        assert (await http.get("/api/evals/ev-missing")).json()["error"]["code"] == "not_found"


async def test_an_llm_judge_grades_each_case_through_a_real_openai_compatible_server(
    gateway: GatewayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = [(True, "polite and right"), (False, "rude")]
    async with FakeOpenAI() as server:
        for passed, reason in verdicts:
            grading = json.dumps({"reason": reason, "pass": passed, "score": 1.0 if passed else 0.0})
            server.reply(chat_completion(tool_calls=[openai_tool_call("final_result", grading)]))
        # The worker's litellm path reaches the provider as it would any OpenAI-compatible one.
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-test")
        dataset = {
            "name": "judged",
            "cases": [
                {"name": "first", "inputs": "Capital of France?"},
                {"name": "second", "inputs": "Capital of France, again?"},
            ],
            "evaluators": [{"LLMJudge": {"rubric": "The answer is polite", "model": "openai/gpt-4o-mini"}}],
        }
        body = await evaluate(gateway, ALICE, "lyon", dataset)
        asked = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert body["status"] == "completed"
    judged = sorted(c["scores"]["LLMJudge"] for c in body["cases"])
    assert judged == [False, True], body["cases"]
    assert len(asked) == 2
    for request in asked:
        assert request.body["model"] == "gpt-4o-mini"
        assert request.headers["Authorization"] == "Bearer sk-judge-test"
        prompt = json.dumps(request.body["messages"])
        assert "The answer is polite" in prompt and "Lyon" in prompt  # the rubric and the case's output
        assert [t["function"]["name"] for t in request.body["tools"]] == ["final_result"]
    summary = body["summary"]
    assert (summary["passed"], summary["failed"]) == (1, 1)
    assert summary["by_evaluator"]["LLMJudge"] == {"passed": 1, "failed": 1, "pass_rate": 0.5}


async def asked_in_thread(gateway: GatewayServer, owner: str, agent: str, question: str) -> tuple[str, str]:
    """A finished ask of `owner`'s new thread with `agent`: (thread id, request id)."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    session = gateway.ctx.sessions.get(session_id(Principal(owner), agent, thread))
    accepted = await session.ask(question, config=AGENTS[agent], agent_id=agent)
    assert (await session.await_result(accepted.request_id)).status == "completed"
    return thread, accepted.request_id


async def test_a_recorded_request_becomes_a_case_that_answers_from_the_same_tool_results(
    gateway: GatewayServer,
) -> None:
    thread, request_id = await asked_in_thread(gateway, "alice", "geo", "Capital, and 2+2?")
    async with gateway.http(ALICE) as http:
        got = await http.get(f"/api/threads/geo/{thread}/requests/{request_id}/case")
        assert got.status_code == 200, got.text
        assert got.json() == {
            "name": f"{thread}/{request_id}",
            "inputs": {
                "query": "Capital, and 2+2?",
                "tool_results": [
                    {"name": "calculator", "arguments": {"expression": "2+2"}, "result": 4, "ok": True}
                ],
            },
            "expected_output": "Paris",
        }
    async with gateway.http(BOB) as http:  # another principal's thread: the same 404 as a missing one
        others = await http.get(f"/api/threads/geo/{thread}/requests/{request_id}/case")
        assert (others.status_code, others.json()["error"]["code"]) == (404, "not_found")

    # A dataset made partly from the thread: its own case, then the recorded request (its last).
    dataset: dict[str, Any] = {
        "name": "mixed",
        "cases": [{"name": "france", "inputs": "Capital of France?"}],
        "evaluators": ["EqualsExpected", {"ToolTrajectory": {"expected": ["calculator"]}}],
    }
    body = await evaluate(gateway, ALICE, "geo", dataset, from_threads=[{"thread": thread}])
    cases = {c["name"]: c for c in body["cases"]}
    assert list(cases) == ["france", f"{thread}/{request_id}"]
    recorded = cases[f"{thread}/{request_id}"]
    assert recorded["passed"] is True and recorded["output"] == "Paris"
    # Its run answered the calculator call from the record: no tool activity ran.
    history = await gateway.ctx.client.get_workflow_handle(recorded["run_workflow_id"]).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "run_tool" not in scheduled and "llm_call" in scheduled


async def test_cases_from_threads_refused_by_name_create_nothing(gateway: GatewayServer) -> None:
    thread, _ = await asked_in_thread(gateway, "alice", "geo", "Capital, and 2+2?")
    evaluators = {"evaluators": ["EqualsExpected"]}
    bad: list[tuple[object, int, str]] = [
        ([{"thread": thread}], 404, "not_found"),  # bob asks for alice's thread
        ([{"thread": "t-none"}], 404, "not_found"),
        ([{"thread": thread, "request_id": "nope"}], 404, "not_found"),
        ({"thread": thread}, 400, "invalid_input"),
        ([{"thread": thread, "extra": 1}], 400, "invalid_input"),
        ([{"thread": 3}], 400, "invalid_input"),
        ([{"thread": "bad id/with slash"}], 400, "invalid_input"),
        ([], 400, "invalid_dataset"),  # no case at all
    ]
    before = await _eval_count()
    async with gateway.http(BOB) as http:
        for from_threads, status, code in bad:
            body = {"agent": "geo", "dataset": evaluators, "from_threads": from_threads}
            refused = await http.post("/api/evals", json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (status, code), (
                from_threads,
                refused.text,
            )
    assert await _eval_count() == before


async def test_a_case_carries_the_callers_files_by_id_and_no_one_elses(gateway: GatewayServer) -> None:
    async with gateway.http(ALICE) as http:
        uploaded = await http.post(
            "/api/files",
            content=b"Lyon is on the Rhone.",
            headers={"content-type": "text/plain"},
            params={"name": "facts.txt"},
        )
        assert uploaded.status_code == 201, uploaded.text
    file_id: str = uploaded.json()["id"]
    case = {"name": "with-file", "inputs": {"query": "Read it", "attachments": [file_id]}}
    body = await evaluate(gateway, ALICE, "lyon", {"cases": [{**case, "expected_output": "Lyon"}]})
    (scored,) = body["cases"]
    assert scored["passed"] is True, scored
    # The case's run asked its query with the file: the user message carries its reference.
    page = await gateway.ctx.runs.get(scored["run_workflow_id"]).thread_page()
    users = [e.payload for e in page.entries if isinstance(e, MessageEntry) and e.payload.role == "user"]
    assert [a.id for a in users[0].attachments or []] == [file_id], users
    assert users[0].attachments is not None and users[0].attachments[0].name == "facts.txt"

    bad: list[tuple[object, int, str]] = [
        ([file_id], 404, "not_found"),  # alice's file, named by bob
        (["f-" + "0" * 32], 404, "not_found"),
        (["../etc/passwd"], 404, "not_found"),
        (file_id, 400, "invalid_dataset"),  # not a list
        ([7], 400, "invalid_dataset"),
        ([file_id] * 11, 400, "invalid_dataset"),  # more than a message may carry
    ]
    before = await _eval_count()
    async with gateway.http(BOB) as http:
        for attachments, status, code in bad:
            inputs = {"query": "Read it", "attachments": attachments}
            dataset = {"cases": [{"name": "bad", "inputs": inputs}]}
            refused = await http.post("/api/evals", json={"agent": "lyon", "dataset": dataset})
            assert (refused.status_code, refused.json()["error"]["code"]) == (status, code), (
                attachments,
                refused.text,
            )
    assert await _eval_count() == before


async def test_a_recorded_request_with_a_file_becomes_a_case_asking_with_it(gateway: GatewayServer) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    session = gateway.ctx.sessions.get(session_id(Principal("alice"), "lyon", thread))
    facts = AttachmentSource(data=b"Lyon is on the Rhone.", name="facts.txt", media_type="text/plain")
    accepted = await session.ask(
        "Read it", config=AGENTS["lyon"], agent_id="lyon", attachments=[facts], attachment_owner="alice"
    )
    assert (await session.await_result(accepted.request_id)).status == "completed"
    (asked,) = [e.payload for e in await _user_entries(session.thread_page)]
    file_ids = [a.id for a in asked.attachments or []]
    assert len(file_ids) == 1
    async with gateway.http(ALICE) as http:
        got = await http.get(f"/api/threads/lyon/{thread}/requests/{accepted.request_id}/case")
        assert got.status_code == 200, got.text
        assert got.json()["inputs"] == {"query": "Read it", "attachments": file_ids}
    dataset = {"evaluators": ["EqualsExpected"]}
    (scored,) = (await evaluate(gateway, ALICE, "lyon", dataset, from_threads=[{"thread": thread}]))["cases"]
    assert scored["passed"] is True, scored
    case_run = gateway.ctx.runs.get(scored["run_workflow_id"])
    (again,) = [e.payload for e in await _user_entries(case_run.thread_page)]
    assert [a.id for a in again.attachments or []] == file_ids  # the case's run asked with the same file


async def _user_entries(page: Callable[[], Awaitable[ThreadPage]]) -> list[MessageEntry]:
    """The user messages of a thread's first page."""
    return [e for e in (await page()).entries if isinstance(e, MessageEntry) and e.payload.role == "user"]
