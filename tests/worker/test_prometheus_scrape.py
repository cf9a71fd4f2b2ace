"""A real Prometheus scrapes the real `gateway.py` and `worker.py --metrics-port` (issue 39, item 4).

The test starts Debian's `prometheus` with a config naming both processes' `/metrics`, asks once
through the gateway, and reads through Prometheus' HTTP API that the series moved: the gateway's
requests (protocol `api`, operation `ask`) and refusals (`unauthorized`), the worker's activities,
time to first token and queue waits, and the Temporal SDK's own metrics on the worker's endpoint.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx

from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, TEST_TOKENS, auth
from tests.helpers import ROOT, spawn_gateway
from tests.metrics_agents import ANSWER
from tests.project.test_monitoring_files import SDK_METRICS
from tests.s3_server import free_port

READY_WAIT_S = 120.0
SCRAPE_INTERVAL_S = 2
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
"""Debian's `prometheus` (scripts/setup.sh installs it)."""


def prometheus_config(gateway_port: int, worker_port: int) -> str:
    """A scrape config naming the two processes, as `hosting/prometheus.yml` does in docker-compose."""
    return f"""
global:
  scrape_interval: {SCRAPE_INTERVAL_S}s
  scrape_timeout: {SCRAPE_INTERVAL_S}s
scrape_configs:
  - job_name: gateway
    static_configs: [{{targets: ["127.0.0.1:{gateway_port}"]}}]
  - job_name: worker
    static_configs: [{{targets: ["127.0.0.1:{worker_port}"]}}]
"""


@contextmanager
def running(
    command: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=20)


async def until_answers(
    http: httpx.AsyncClient, url: str, process: subprocess.Popen[bytes], log: Path
) -> None:
    async with asyncio.timeout(READY_WAIT_S):
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if (await http.get(url)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)


class PrometheusApi:
    """Prometheus' HTTP API: instant queries."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url

    async def value(self, query: str) -> float | None:
        """The query's single value now (None: no series)."""
        answer = (await self.http.get(f"{self.url}/api/v1/query", params={"query": query})).json()
        assert answer["status"] == "success", answer
        results = answer["data"]["result"]
        return float(results[0]["value"][1]) if results else None

    async def until(self, query: str, above: float = 0.0) -> float:
        """Wait until the query's value is over `above` (Prometheus scrapes every `SCRAPE_INTERVAL_S`)."""
        async with asyncio.timeout(60):
            while True:
                value = await self.value(query)
                if value is not None and value > above:
                    return value
                await asyncio.sleep(0.25)


@asynccontextmanager
async def stack(agents: AgentTestEnvironment, tmp_path: Path) -> AsyncIterator[tuple[str, PrometheusApi]]:
    """A worker process, a gateway process and Prometheus scraping both: the gateway's URL and the API."""
    address = agents.client.service_client.config.target_host
    queue = f"metrics-{uuid.uuid4().hex[:6]}"
    gateway_port, worker_port, prometheus_port = free_port(), free_port(), free_port()
    env = {**os.environ, "REACT_GATEWAY_TOKENS": TEST_TOKENS, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    worker_command = [sys.executable, "worker.py", "--address", address, "--task-queue", queue]
    (tmp_path / "prometheus.yml").write_text(prometheus_config(gateway_port, worker_port), encoding="utf-8")
    prometheus_command = [
        PROMETHEUS,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
    ]
    gateway_args = ("--agents", "tests.metrics_agents", "--log-level", "warning")
    gateway_log = tmp_path / "gateway.log"
    with (
        running(
            [*worker_command, "--metrics-port", str(worker_port)], tmp_path / "worker.log", env
        ) as worker,
        running(prometheus_command, tmp_path / "prometheus.log") as prometheus,
    ):
        gateway = spawn_gateway(address, queue, gateway_port, *gateway_args, log=gateway_log, env=env)
        try:
            async with httpx.AsyncClient(timeout=10) as http:
                gateway_url = f"http://127.0.0.1:{gateway_port}"
                prometheus_url = f"http://127.0.0.1:{prometheus_port}"
                await until_answers(http, f"{gateway_url}/readyz", gateway, gateway_log)
                await until_answers(
                    http, f"http://127.0.0.1:{worker_port}/metrics", worker, tmp_path / "worker.log"
                )
                await until_answers(
                    http, f"{prometheus_url}/-/ready", prometheus, tmp_path / "prometheus.log"
                )
                api = PrometheusApi(http, prometheus_url)
                assert await api.until('min(up{job=~"gateway|worker"})') == 1.0
                yield gateway_url, api
        finally:
            if gateway.poll() is None:
                gateway.terminate()
                gateway.wait(timeout=20)


def total(selector: str) -> str:
    """The sum of a selector's series, 0 while it has none."""
    return f"sum({selector}) or vector(0)"


async def test_prometheus_sees_an_ask_on_the_gateway_and_the_worker(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    async with stack(agents, tmp_path) as (gateway_url, prometheus):
        asks = total('react_gateway_requests_total{job="gateway",protocol="api",operation="ask"}')
        llm_calls = total('react_worker_activities_total{activity="llm_call",outcome="completed"}')
        unauthorized = total('react_gateway_refusals_total{job="gateway",code="unauthorized"}')
        assert await prometheus.value(asks) == 0.0
        assert await prometheus.value(llm_calls) == 0.0
        async with httpx.AsyncClient(base_url=gateway_url, headers=auth(ALICE), timeout=60) as http:
            thread = f"t-{uuid.uuid4().hex[:8]}"
            posted = await http.post(f"/api/threads/default/{thread}/requests", json={"message": "2 + 3?"})
            assert posted.status_code == 202, posted.text
            request_id = posted.json()["request_id"]
            done = await http.get(
                f"/api/threads/default/{thread}/requests/{request_id}", params={"wait_s": 30}
            )
            assert done.json()["status"] == "completed" and done.json()["answer"] == ANSWER, done.text
            refused = await http.get("/api/threads", headers=auth("not-a-token-at-all"))
            assert refused.status_code == 401
        assert await prometheus.until(asks) == 1.0
        assert await prometheus.until(llm_calls, above=1.0) == 2.0  # the tool call's, then the answer's
        assert await prometheus.until(unauthorized) >= 1.0
        first_tokens = 'sum(react_llm_time_to_first_token_seconds_count{job="worker"})'
        assert await prometheus.until(first_tokens) >= 1.0
        waits = 'sum(react_worker_activity_queue_wait_seconds_count{job="worker",activity="run_tool"})'
        assert await prometheus.until(waits) >= 1.0
        # The Temporal SDK's own metrics, through the same endpoint (its runtime's Prometheus exporter).
        sdk = 'sum(temporal_activity_execution_latency_seconds_count{job="worker"})'
        assert await prometheus.until(sdk, above=1.0) >= 2.0
        assert await prometheus.value('react_active_runs{job="gateway"}') is not None
        for name in SDK_METRICS - {"temporal_workflow_failed_total"}:  # the dashboard's (no run failed)
            assert await prometheus.until(f'count({name}{{job="worker"}})') >= 1, name
        assert await prometheus.until('count(temporal_worker_task_slots_used{worker_type!=""})') >= 1
