"""Two real evaluations of two versions of one agent, for the report's tests (the file and the page).

A manager (a static token with `agents:manage`) makes an agent at run time whose version 1 answers
"Paris" and whose version 2 answers model text holding markup (`SCRIPT_ANSWER`); each version is
evaluated on `DATASET` by the tests' worker, every case a real run of the scripted model.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from clients.evals import eval_workflow_id
from contracts.evals import EvalResult
from testing import answer, scripted_agent
from tests.gateway_helpers import ALICE, BOB, GatewayServer

__all__ = ["DATASET", "MANAGER", "SCRIPT_ANSWER", "TOKENS", "Evaluated", "evaluate", "two_versions_evaluated"]

MANAGER = "carol-token-0123456789"
TOKENS = f"{ALICE}=alice,{BOB}=bob,{MANAGER}=carol:agents:ask+agents:manage"
SCRIPT_ANSWER = "<script>alert(1)</script> Lyon"
DATASET: dict[str, Any] = {
    "name": "capitals-report",
    "cases": [
        {"name": "france", "inputs": "Capital of France?", "expected_output": "Paris"},
        {"name": "rhone", "inputs": "Capital of the Rhône?", "expected_output": "Lyon"},
    ],
    "evaluators": ["EqualsExpected", {"Contains": "Lyon"}, {"MaxCost": 1.0}],
}
"""Version 1 ("Paris"): EqualsExpected 1 of 2, Contains 0 of 2; version 2: EqualsExpected 0 of 2,
Contains 2 of 2; MaxCost passes every case. Both cases differ between the two."""


@dataclass(frozen=True)
class Evaluated:
    """The agent and its two versions' evaluations, as `GET /api/evals/{id}` answered them."""

    agent: str
    first: dict[str, Any]
    second: dict[str, Any]


async def evaluate(
    gateway: GatewayServer, token: str, agent: str, dataset: object, **fields: object
) -> dict[str, Any]:
    """Start an evaluation of `agent` (`fields`: more of its body), wait for its end; its view."""
    async with gateway.http(token) as http:
        body = {"agent": agent, "dataset": dataset, "concurrency": 2, **fields}
        posted = await http.post("/api/evals", json=body)
        assert posted.status_code == 202, posted.text
        eval_id: str = posted.json()["eval_id"]
        handle = gateway.ctx.client.get_workflow_handle(eval_workflow_id(eval_id), result_type=EvalResult)
        await handle.result()
        shown = await http.get(f"/api/evals/{eval_id}")
        assert shown.status_code == 200, shown.text
        view: dict[str, Any] = shown.json()
        assert view["status"] == "completed", view
        return view


def _config(said: str) -> dict[str, Any]:
    return scripted_agent(answer(said)).model_dump(mode="json", exclude_defaults=True)


async def two_versions_evaluated(gateway: GatewayServer, token: str = ALICE) -> Evaluated:
    """A fresh agent with versions 1 and 2 (made by `MANAGER`), each evaluated by `token` on `DATASET`."""
    name = f"capitals-{uuid.uuid4().hex[:6]}"
    async with gateway.http(MANAGER) as manager:
        made = await manager.post("/api/agents", json={"name": name, "config": _config("Paris")})
        assert made.status_code == 201, made.text
        published = await manager.post(
            f"/api/agents/{name}/versions", json={"config": _config(SCRIPT_ANSWER)}
        )
        assert published.status_code == 201, published.text
    first = await evaluate(gateway, token, f"{name}@1", DATASET)
    second = await evaluate(gateway, token, f"{name}@2", DATASET)
    return Evaluated(name, first, second)
