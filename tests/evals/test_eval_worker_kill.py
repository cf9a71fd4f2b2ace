"""A worker killed mid-evaluation loses no case: its children, activities and the `EvalRun` resume on another.

A real `python worker.py` (A) runs an evaluation of 12 slow scripted cases, 3 at once; once some cases
are scored, A is killed with SIGKILL and worker B starts on the same task queue: the evaluation
completes with every case scored exactly once. Each step waits for an event (a log line, a stored
case, the workflow's result), never on the clock alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

from clients.evals import Evals
from contracts.evals import EvalCase
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.fake_openai import FakeOpenAI, chat_completion
from tests.fake_openai import tool_call as openai_tool_call
from tests.worker.test_many_workers import WorkerProcess

SAFETY_BOUND_S = 300
CASES = 12
RETRIED_WITHIN_S = 120
"""Far below `score_eval_case`'s 300 s start-to-close timeout: the retry comes from its heartbeat timeout."""


async def test_a_worker_killed_mid_evaluation_loses_no_case(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    queue = f"react-eval-kill-{uuid.uuid4().hex[:8]}"
    address = agents.temporal.client.service_client.config.target_host
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    first = WorkerProcess("a", address, queue, env, tmp_path)
    second: WorkerProcess | None = None
    evals = Evals(agents.client, task_queue=queue)
    try:
        await asyncio.wait_for(first.polling(), SAFETY_BOUND_S)
        dataset = '{"name": "slow", "cases": [%s], "evaluators": ["EqualsExpected"]}'
        cases = [
            EvalCase(
                name=f"c{i}",
                query=f"case {i}",
                dataset=dataset % f'{{"name": "c{i}", "inputs": "case {i}", "expected_output": "done"}}',
            )
            for i in range(CASES)
        ]
        config = scripted_agent(answer("done", delay_s=1.0))
        eval_id = await evals.start("kill-test", "slow", "slow", config, cases, concurrency=3)

        async def scored() -> int:
            view = await evals.show(eval_id, "kill-test")
            assert view is not None
            return len(view["cases"])

        async def some_scored() -> None:
            while await scored() < 3:  # noqa: ASYNC110 (rows another process writes)
                await asyncio.sleep(0.2)

        await asyncio.wait_for(some_scored(), SAFETY_BOUND_S)
        assert await scored() < CASES  # killed mid-evaluation
        first.kill()
        second = WorkerProcess("b", address, queue, env, tmp_path)
        result = await asyncio.wait_for(evals.wait(eval_id), SAFETY_BOUND_S)
        assert (result.passed, result.failed) == (CASES, 0)
        view = await evals.show(eval_id, "kill-test")
        assert view is not None
        assert view["status"] == "completed"
        assert sorted(c["name"] for c in view["cases"]) == sorted(f"c{i}" for i in range(CASES))
        assert all(c["passed"] for c in view["cases"])
    finally:
        first.kill()
        if second is not None:
            second.kill()
        await evals.close()


async def test_a_worker_killed_while_an_llm_judge_scores_a_case_is_retried_on_another_within_its_heartbeat(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    queue = f"react-eval-judge-kill-{uuid.uuid4().hex[:8]}"
    address = agents.temporal.client.service_client.config.target_host
    evals = Evals(agents.client, task_queue=queue)
    grading = json.dumps({"reason": "right", "pass": True, "score": 1.0})
    judged = chat_completion(tool_calls=[openai_tool_call("final_result", grading)])
    async with FakeOpenAI() as server:
        server.reply(judged, delay_s=40)  # worker A's judge call: A dies while it waits
        server.reply(judged)  # worker B's
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "OPENAI_API_BASE": server.base_url,
            "OPENAI_API_KEY": "sk-judge-test",
        }
        first = WorkerProcess("a", address, queue, env, tmp_path)
        second: WorkerProcess | None = None
        try:
            await asyncio.wait_for(first.polling(), SAFETY_BOUND_S)
            case = {"name": "c0", "inputs": "case 0"}
            rubric = {"LLMJudge": {"rubric": "says done", "model": "openai/gpt-4o-mini"}}
            dataset = json.dumps({"name": "judged", "cases": [case], "evaluators": [rubric]})
            config = scripted_agent(answer("done"))
            cases = [EvalCase(name="c0", query="case 0", dataset=dataset)]
            eval_id = await evals.start("kill-test", "judged", "judged", config, cases)

            async def judging() -> None:
                while not server.requests:  # noqa: ASYNC110 (a request another process makes)
                    await asyncio.sleep(0.1)

            await asyncio.wait_for(judging(), SAFETY_BOUND_S)
            first.kill()
            second = WorkerProcess("b", address, queue, env, tmp_path)
            result = await asyncio.wait_for(evals.wait(eval_id), RETRIED_WITHIN_S)
            assert (result.passed, result.failed) == (1, 0)
            assert len(server.requests) == 2  # the killed attempt's call, then the retry's
        finally:
            first.kill()
            if second is not None:
                second.kill()
            await evals.close()
