"""The worker's Prometheus metrics, in one registry that `worker.py --metrics-port` serves (docs/metrics.md).

They are kept whether or not anyone scrapes them (a few counters and histograms, no per-run
state). Every label has a bounded set of values: activity types (the product's and the ones a
deployment registers), fixed outcomes; never a workflow, run, thread or request id.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

__all__ = [
    "ACTIVITIES",
    "ACTIVITIES_ACTIVE",
    "ACTIVITY_QUEUE_WAIT",
    "ACTIVITY_SECONDS",
    "FIRST_TOKEN",
    "LIVE_DROPPED",
    "LIVE_PENDING",
    "LIVE_WRITE_LAG",
    "REGISTRY",
    "WEBHOOK_DELIVERIES",
]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The worker's metrics (and its process's CPU, memory and open files)."""
ProcessCollector(registry=REGISTRY)

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

ACTIVITIES = Counter(
    "react_worker_activities",
    "Activity attempts this worker ran, by activity type and outcome (completed, failed, cancelled).",
    ["activity", "outcome"],
    registry=REGISTRY,
)
ACTIVITY_SECONDS = Histogram(
    "react_worker_activity_seconds",
    "How long one activity attempt ran on this worker, by activity type.",
    ["activity"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
ACTIVITY_QUEUE_WAIT = Histogram(
    "react_worker_activity_queue_wait_seconds",
    "How long an activity attempt waited in its task queue: scheduled to started on this worker.",
    ["activity"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
ACTIVITIES_ACTIVE = Gauge(
    "react_worker_activities_active",
    "Activity attempts running on this worker now (llm_call: the LLM calls of active runs).",
    ["activity"],
    registry=REGISTRY,
)
FIRST_TOKEN = Histogram(
    "react_llm_time_to_first_token_seconds",
    "A streamed LLM call's time from its attempt's start to its first text, thinking or tool-call piece.",
    buckets=_SECONDS,
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "react_webhook_deliveries",
    "Webhook delivery attempts by outcome: delivered, retried (Temporal tries again), given_up.",
    ["outcome"],
    registry=REGISTRY,
)
LIVE_WRITE_LAG = Histogram(
    "react_live_write_lag_seconds",
    "Live-channel lag: from a run's live item reaching the worker's sink to its batch being written.",
    buckets=_SECONDS,
    registry=REGISTRY,
)
LIVE_PENDING = Gauge(
    "react_live_pending_items",
    "Live items waiting in the worker's sink for the live channel.",
    registry=REGISTRY,
)
LIVE_DROPPED = Counter(
    "react_live_dropped_items",
    "Live items the worker's sink dropped (the channel failed, or the sink was full).",
    registry=REGISTRY,
)
