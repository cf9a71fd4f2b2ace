"""Tracing is off unless configured: the `OTEL_*` variables turn it on and export over OTLP/HTTP.

The export test runs a real OTLP/HTTP receiver (aiohttp on 127.0.0.1) and a worker whose
plugin reads only the environment; the receiver decodes what the exporter posted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import Worker

from contracts import TASK_QUEUE
from hosting.connection import connect
from hosting.genai_spans import GenAISpans
from hosting.plugin import DurableReactPlugin
from hosting.tracing import TracingSettings, tracing_settings
from payloads.blob_store import BlobStore
from settings.env_values import SettingsError
from testing import answer, call_tools, tool_call
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run

ROOT = Path(__file__).resolve().parents[2]
OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "REACT_OTEL_CAPTURE_CONTENT",
)


@pytest.fixture(autouse=True)
def no_tracing_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


def tracing_interceptors(interceptors: Sequence[object]) -> list[object]:
    return [i for i in interceptors if isinstance(i, TracingInterceptor | GenAISpans)]


def client_tracing(client: Client) -> list[object]:
    """The tracing interceptors of a client (which its workers run first, outermost)."""
    return tracing_interceptors(client.config(active_config=True)["interceptors"])


def worker_tracing(worker: Worker) -> list[object]:
    """The tracing interceptors a worker adds to its client's."""
    config = cast(dict[str, Any], worker.config(active_config=True))  # WorkerConfig.get is partly untyped
    return tracing_interceptors(config.get("interceptors") or [])


async def test_tracing_is_off_by_default_and_adds_no_interceptor(client: Client, store: BlobStore) -> None:
    plugin = DurableReactPlugin(store=store)
    assert plugin.tracing is None
    plain = await connect(address_of(client), client.namespace, plugin=plugin)
    assert client_tracing(plain) == []
    assert worker_tracing(Worker(plain, task_queue=f"react-untraced-{uuid.uuid4().hex[:8]}")) == []
    # The tests' own client (from the environment, which names no exporter) has none either.
    assert client_tracing(client) == []


async def test_a_tracer_provider_installs_temporal_s_interceptor_once_and_the_genai_spans(
    client: Client, store: BlobStore
) -> None:
    plugin = DurableReactPlugin(store=store, tracer_provider=TracerProvider())
    assert plugin.tracing is not None
    traced = await Client.connect(address_of(client), namespace=client.namespace, plugins=[plugin])
    assert client_tracing(traced) == [plugin.tracing.temporal]
    # Temporal's interceptor comes from the client (run first); the worker adds the GenAI spans only.
    worker = Worker(traced, task_queue=f"react-traced-{uuid.uuid4().hex[:8]}")
    assert worker_tracing(worker) == [plugin.tracing.genai]
    # A worker given the plugin over an untraced client gets both.
    plain = await Client.connect(
        address_of(client), namespace=client.namespace, data_converter=plugin.build_data_converter()
    )
    own = Worker(plain, task_queue=f"react-traced-{uuid.uuid4().hex[:8]}", plugins=[plugin])
    assert client_tracing(plain) == []
    assert worker_tracing(own) == [plugin.tracing.temporal, plugin.tracing.genai]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, TracingSettings()),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, TracingSettings(("otlp",))),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, TracingSettings(("otlp",))),
        ({"OTEL_TRACES_EXPORTER": "console"}, TracingSettings(("console",))),
        ({"OTEL_TRACES_EXPORTER": "otlp, console"}, TracingSettings(("otlp", "console"))),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://j:4318"}, TracingSettings()),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, TracingSettings()),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            TracingSettings(("otlp",)),
        ),
        ({"REACT_OTEL_CAPTURE_CONTENT": "yes"}, TracingSettings(capture_content=True)),
    ],
)
def test_the_otel_variables_configure_tracing(environ: dict[str, str], expected: TracingSettings) -> None:
    assert tracing_settings(environ) == expected


@pytest.mark.parametrize(
    ("variable", "environ"),
    [
        ("OTEL_TRACES_EXPORTER", {"OTEL_TRACES_EXPORTER": "zipkin"}),
        ("OTEL_TRACES_EXPORTER", {"OTEL_TRACES_EXPORTER": " , "}),
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"},
        ),
        ("OTEL_SDK_DISABLED", {"OTEL_SDK_DISABLED": "maybe"}),
        ("REACT_OTEL_CAPTURE_CONTENT", {"REACT_OTEL_CAPTURE_CONTENT": "sometimes"}),
    ],
)
def test_unusable_tracing_values_are_refused_by_name(
    variable: str, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SettingsError) as refused:
        tracing_settings(environ)
    assert refused.value.variable == variable
    for name, text in environ.items():
        monkeypatch.setenv(name, text)
    with pytest.raises(SettingsError, match=variable):
        DurableReactPlugin()


@pytest_asyncio.fixture(loop_scope="session")
async def otlp_receiver() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """A real OTLP/HTTP endpoint on 127.0.0.1: its URL, and the export requests it received."""
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        received.append(ExportTraceServiceRequest.FromString(await request.read()))
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        await runner.cleanup()


async def test_the_environment_s_otlp_endpoint_receives_the_run_s_spans(
    client: Client,
    store: BlobStore,
    monkeypatch: pytest.MonkeyPatch,
    otlp_receiver: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    endpoint, received = otlp_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "react-test-worker")
    plugin = DurableReactPlugin(store=store, registry=registry_for_tests())
    assert plugin.tracing is not None
    traced = await connect(address_of(client), client.namespace, plugin=plugin)
    task_queue = f"react-otlp-{uuid.uuid4().hex[:8]}"
    script = [call_tools(tool_call("echo", {"text": "hi"})), answer("Done.")]
    async with Worker(traced, task_queue=task_queue, max_cached_workflows=0):
        handle = await start_run(traced, task_queue, script, tools=["echo"])
        assert (await handle.result()).status == "completed"
    provider = plugin.tracing.provider
    assert isinstance(provider, TracerProvider)
    # The batch processor exports from its own thread; the receiver answers on this event loop.
    assert await asyncio.to_thread(provider.force_flush, 10_000)
    await asyncio.to_thread(provider.shutdown)
    spans = [
        (resource.resource, span)
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = {span.name for _, span in spans}
    assert {"StartWorkflow:ReActRun", "RunActivity:llm_call", "chat scripted", "execute_tool echo"} <= names
    assert len({span.trace_id for _, span in spans}) == 1
    services = {
        a.value.string_value for resource, _ in spans for a in resource.attributes if a.key == "service.name"
    }
    assert services == {"react-test-worker"}


async def test_the_cli_s_start_call_is_exported_and_continues_in_the_worker(
    client: Client,
    store: BlobStore,
    tmp_path: Path,
    otlp_receiver: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    """`client.py run` (which leaves with `os._exit`) still exports its span; the worker's join its trace."""
    endpoint, received = otlp_receiver
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plugin = DurableReactPlugin(store=store, registry=registry_for_tests(), tracer_provider=provider)
    traced = await Client.connect(address_of(client), namespace=client.namespace, plugins=[plugin])
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Hello."}]), encoding="utf-8")
    environ = {
        **os.environ,
        "TEMPORAL_ADDRESS": address_of(client),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "react-test-cli",
        # No export on the batch processor's timer: only the CLI's flush before `os._exit` exports.
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
    }
    async with Worker(traced, task_queue=TASK_QUEUE, max_cached_workflows=0):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "client.py",
            "run",
            "Say hello.",
            "--script",
            str(script),
            cwd=ROOT,
            env=environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 120)
        except TimeoutError:
            process.kill()
            out, err = await process.communicate()
            pytest.fail(f"client.py run did not finish: {out.decode()} {err.decode()}")
    assert process.returncode == 0, err.decode()
    assert "answer: Hello." in out.decode()
    starts = [
        (resource.resource, span)
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    # The start, then the stream polls that follow the run (Updates).
    assert [span.name for _, span in starts if span.name == "StartWorkflow:ReActRun"] == [
        "StartWorkflow:ReActRun"
    ]
    resource, start = next((r, span) for r, span in starts if span.name == "StartWorkflow:ReActRun")
    assert {a.value.string_value for a in resource.attributes if a.key == "service.name"} == {
        "react-test-cli"
    }
    worker_spans = [s for s in exporter.get_finished_spans() if s.context is not None]
    chat = [s for s in worker_spans if s.name == "chat scripted"]
    assert len(chat) == 1 and chat[0].context is not None
    assert chat[0].context.trace_id == int.from_bytes(start.trace_id, "big")
    run = [s for s in worker_spans if s.name == "RunWorkflow:ReActRun"]
    assert len(run) == 1 and run[0].parent is not None
    assert run[0].parent.span_id == int.from_bytes(start.span_id, "big")
