"""The worker's metrics endpoint, `worker.py --metrics-port N`: its and the Temporal SDK's metrics.

The SDK's core exports its metrics (`temporal_*`: task slots, poll and schedule-to-start latencies,
sticky cache, workflow and activity outcomes) through its runtime's Prometheus setting, on an
address of its own; `sdk_runtime` binds that to a free loopback port, and `MetricsServer` serves
`GET /metrics` as the product's metrics (`activities.worker_metrics`) followed by the SDK's, read
from that port at each scrape. The server is a small threaded HTTP server: a scrape never waits
on the worker's event loop. See docs/metrics.md.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from activities.worker_metrics import REGISTRY

__all__ = ["METRICS_PATH", "MetricsServer", "sdk_runtime"]

METRICS_PATH: Final = "/metrics"
_log = logging.getLogger(__name__)
SDK_READ_TIMEOUT_S = 2.0
"""How long a scrape waits for the SDK's own metrics; past it they are left out of that scrape."""


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sdk_runtime() -> tuple[Runtime, str]:
    """A Temporal runtime exporting the SDK's metrics on a free loopback port, and that address.

    Durations are in seconds with unit suffixes and counters end in `_total`, as Prometheus
    names them (`temporal_activity_execution_latency_seconds`, `temporal_workflow_completed_total`).
    """
    address = f"127.0.0.1:{_free_loopback_port()}"
    telemetry = TelemetryConfig(
        metrics=PrometheusConfig(
            bind_address=address, counters_total_suffix=True, unit_suffix=True, durations_as_seconds=True
        )
    )
    return Runtime(telemetry=telemetry), address


class _QuietServer(ThreadingHTTPServer):
    """A threaded server that lets a scraper hang up (its scrape timeout) without a traceback."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """Log a failed request in one line; a scraper that left is not worth one."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            _log.warning("metrics: a request from %s failed: %r", client_address, error)


class MetricsServer:
    """`GET /metrics` on `host:port`, in a daemon thread, until `close()`."""

    def __init__(self, host: str, port: int, sdk_address: str | None = None) -> None:
        """Listen on `host:port` (0: a free port, see `port`); `sdk_address` is the SDK's exporter.

        Raises:
            OSError: the address cannot be bound.
        """
        sdk_url = f"http://{sdk_address}{METRICS_PATH}" if sdk_address else None

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != METRICS_PATH:
                    self.send_error(404, "no such endpoint: the metrics are at /metrics")
                    return
                body = generate_latest(REGISTRY) + _sdk_metrics(sdk_url)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # a scrape every few seconds is not worth a log line

        self._server = _QuietServer((host, port), Handler)
        self.port: int = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()


def _sdk_metrics(url: str | None) -> bytes:
    """The SDK's exposition text (empty without an exporter; a comment when it cannot be read)."""
    if url is None:
        return b""
    try:
        with urllib.request.urlopen(url, timeout=SDK_READ_TIMEOUT_S) as response:
            text: bytes = response.read()
    except OSError as error:
        return f"# the Temporal SDK's metrics could not be read: {error}\n".encode()
    return text if text.endswith(b"\n") or not text else text + b"\n"
