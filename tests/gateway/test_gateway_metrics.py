"""The gateway's `GET /metrics` (issue 39): requests and refusals counted, bounded labels, who reads it.

Counted once at the outermost layer (`gateway.server.metrics.RequestMetrics`): by protocol,
operation (the guard's classification) and status; a refusal also by its code, read from its body
in the gateway's shape or JSON-RPC's. No label ever holds a thread, principal or request id.
`REACT_GATEWAY_METRICS` says who reads the endpoint: anyone (default), `agents:admin`, nobody.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.settings import load_settings
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, TEST_TOKENS, agui_run, run_input, running_gateway

ADMIN_TOKEN = "admin-token-0123456789"
TOKENS = f"{TEST_TOKENS},{ADMIN_TOKEN}=root:agents:admin"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(http: httpx.AsyncClient) -> Samples:
    """Every sample of the gateway's `/metrics`: (name, sorted labels) -> value."""
    answer = await http.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


async def test_requests_and_refusals_are_counted_by_protocol_operation_and_code(
    agents: AgentTestEnvironment,
) -> None:
    thread = f"metrics-{uuid.uuid4().hex[:8]}"
    async with running_gateway(agents, tokens=TOKENS) as gateway, gateway.http(ALICE) as http:
        before = await scrape(http)
        events = await agui_run(http, run_input(thread, f"{thread}-run"))
        assert events[-1].type == "RUN_FINISHED"
        assert (
            await http.get("/api/threads", headers={"authorization": "Bearer nope-nope-nope"})
        ).status_code == 401
        mcp = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"authorization": ""}
        )
        assert mcp.status_code == 401 and mcp.json()["error"]["data"]["code"] == "unauthorized"
        assert (await http.get("/api/no-such-thing")).status_code == 404
        after = await scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "react_gateway_requests_total"
    assert moved(requests, protocol="agui", operation="ask", status="200") == 1
    assert moved(requests, protocol="api", status="401") == 1
    refusals = "react_gateway_refusals_total"
    assert moved(refusals, protocol="api", code="unauthorized") == 1
    assert moved(refusals, protocol="mcp", code="unauthorized") == 1
    assert moved(refusals, protocol="api", code="not_found") == 1
    assert moved("react_gateway_response_start_seconds_count", protocol="agui") == 1
    assert value(after, "react_gateway_requests_in_flight", protocol="agui") == 0
    assert value(after, "react_active_runs") >= 0
    labels = {v for (_, ls), _ in after.items() for _, v in ls}
    assert not {thread, f"{thread}-run", "alice", ALICE} & labels, "an id or a principal became a label"


async def test_who_may_read_the_metrics_is_the_settings_choice(agents: AgentTestEnvironment) -> None:
    async with running_gateway(agents, tokens=TOKENS) as gateway, gateway.http() as anyone:
        assert (await anyone.get("/metrics")).status_code == 200  # public by default, as /healthz
    async with running_gateway(agents, tokens=TOKENS, metrics="admin") as gateway:
        async with gateway.http() as anyone:
            assert (await anyone.get("/metrics")).json()["error"]["code"] == "unauthorized"
        async with gateway.http(ALICE) as alice:
            refused = await alice.get("/metrics")
            assert refused.status_code == 403 and "agents:admin" in refused.json()["error"]["message"]
        async with gateway.http(ADMIN_TOKEN) as admin:
            assert "react_gateway_requests_total" in (await admin.get("/metrics")).text
    async with running_gateway(agents, tokens=TOKENS, metrics="off") as gateway, gateway.http(ALICE) as http:
        assert (await http.get("/metrics")).status_code == 404


def test_an_unknown_metrics_setting_is_refused_naming_it() -> None:
    with pytest.raises(SettingsError, match="REACT_GATEWAY_METRICS must be one of public, admin, off"):
        load_settings(environ={"REACT_GATEWAY_METRICS": "yes"}, agents={})
