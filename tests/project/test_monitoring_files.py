"""The monitoring files docker-compose.yml mounts are right (Grafana cannot run here; Prometheus' tools can).

`hosting/monitoring/prometheus.yml` passes `promtool check config`; every expression of the Grafana
dashboard parses as PromQL (`promtool check rules`, each one a recording rule) and names only
metrics the gateway and the worker export; the compose services mount what the files name, and
the workers and the gateway share one long-term store (the `store-postgresql` service).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from activities.worker_metrics import REGISTRY as WORKER_REGISTRY
from gateway.server.metrics import REGISTRY as GATEWAY_REGISTRY

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "hosting" / "monitoring"
DASHBOARD = MONITORING / "grafana" / "dashboards" / "durable-react.json"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
"""Debian's `prometheus` package brings it (scripts/setup.sh installs that)."""
SDK_METRICS = frozenset(
    {
        "temporal_worker_task_slots_used",
        "temporal_workflow_completed_total",
        "temporal_workflow_failed_total",
        "temporal_workflow_task_schedule_to_start_latency_seconds_bucket",
    }
)
"""The Temporal SDK's metrics the dashboard reads (named as `hosting.metrics_server.sdk_runtime` has them)."""
_METRIC = re.compile(r"\b((?:react|temporal)_[a-z0-9_]+)")


def expressions() -> list[str]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def exported_names() -> set[str]:
    """Every sample name the two registries write (`_total`, `_bucket`, `_count`, `_sum` included)."""
    names: set[str] = set()
    for registry in (GATEWAY_REGISTRY, WORKER_REGISTRY):
        for family in registry.collect():
            names |= {sample.name for sample in family.samples}
            names |= {f"{family.name}{suffix}" for suffix in ("", "_total", "_bucket", "_count", "_sum")}
    return names


def test_the_prometheus_config_is_valid() -> None:
    checked = subprocess.run(
        [PROMTOOL, "check", "config", str(MONITORING / "prometheus.yml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_dashboard_expression_parses_and_names_exported_metrics(tmp_path: Path) -> None:
    exprs = expressions()
    assert len(exprs) >= 15
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:expr_{i}", "expr": e.replace("$__rate_interval", "5m")}
                    for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    named = {name for e in exprs for name in _METRIC.findall(e)}
    unknown = {n for n in named if n.startswith("react_")} - exported_names()
    assert not unknown, f"the dashboard reads metrics nobody exports: {sorted(unknown)}"
    assert {n for n in named if n.startswith("temporal_")} <= SDK_METRICS


def test_the_compose_services_mount_the_monitoring_files() -> None:
    compose: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    prometheus_mounts = [v.split(":")[0] for v in services["prometheus"]["volumes"]]
    assert "./hosting/monitoring/prometheus.yml" in prometheus_mounts
    grafana_mounts = [v.split(":")[0] for v in services["grafana"]["volumes"]]
    assert {"./hosting/monitoring/grafana/provisioning", "./hosting/monitoring/grafana/dashboards"} <= set(
        grafana_mounts
    )
    assert services["worker"]["environment"]["REACT_WORKER_METRICS_PORT"] == "9464"
    scrape = yaml.safe_load((MONITORING / "prometheus.yml").read_text(encoding="utf-8"))
    ports = {job["job_name"]: job["dns_sd_configs"][0]["port"] for job in scrape["scrape_configs"]}
    assert ports == {"gateway": 8400, "worker": 9464}
    datasource = yaml.safe_load(
        (MONITORING / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text(
            encoding="utf-8"
        )
    )
    uids = {
        target["datasource"]["uid"]
        for p in json.loads(DASHBOARD.read_text())["panels"]
        for target in p.get("targets", [])
    }
    assert uids == {datasource["datasources"][0]["uid"]}


def test_the_workers_and_the_gateway_share_the_store_service() -> None:
    """`REACT_STORE_URL` of both names the `store-postgresql` service, its user and database, once healthy."""
    compose: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    store = services["store-postgresql"]
    user, database = store["environment"]["POSTGRES_USER"], store["environment"]["POSTGRES_DB"]
    assert "store-data:/var/lib/postgresql/data" in store["volumes"] and "store-data" in compose["volumes"]
    expected = (
        f"postgresql://{user}:${{REACT_STORE_PASSWORD:-react-dev-password}}@store-postgresql:5432/{database}"
    )
    for name in ("worker", "gateway"):
        service = services[name]
        assert service["environment"]["REACT_STORE_URL"] == f"${{REACT_STORE_URL:-{expected}}}", name
        assert service["depends_on"]["store-postgresql"] == {"condition": "service_healthy"}, name
    assert store["environment"]["POSTGRES_PASSWORD"] == "${REACT_STORE_PASSWORD:-react-dev-password}"
