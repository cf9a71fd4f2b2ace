"""Helpers for the tracing tests: a traced client and worker, and reading the spans they finished."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.worker import Worker

from hosting.plugin import DurableReactPlugin
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


class Traced:
    """A traced client and worker, and the spans they finished."""

    def __init__(self, client: Client, task_queue: str, exporter: InMemorySpanExporter) -> None:
        self.client = client
        self.task_queue = task_queue
        self.exporter = exporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@asynccontextmanager
async def traced_worker(
    client: Client, store: BlobStore, *, capture_content: bool = False, sandboxed: bool = False
) -> AsyncIterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plugin = DurableReactPlugin(
        store=store,
        registry=registry_for_tests(),
        tracer_provider=provider,
        capture_content=capture_content,
        sandboxed=sandboxed,
    )
    traced_client = await Client.connect(address_of(client), namespace=client.namespace, plugins=[plugin])
    task_queue = f"react-traced-{uuid.uuid4().hex[:8]}"
    async with Worker(traced_client, task_queue=task_queue, max_cached_workflows=0):
        yield Traced(traced_client, task_queue, exporter)
    provider.shutdown()


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def parent_of(spans: Sequence[ReadableSpan], span: ReadableSpan) -> ReadableSpan:
    assert span.parent is not None, span.name
    parents = [s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id]
    assert len(parents) == 1, (span.name, [s.name for s in spans])
    return parents[0]


def chain(spans: Sequence[ReadableSpan], span: ReadableSpan) -> list[str]:
    """The names from `span` up to its trace's root."""
    names = [span.name]
    while span.parent is not None:
        span = parent_of(spans, span)
        names.append(span.name)
    return names


def every_text(spans: Sequence[ReadableSpan]) -> Iterator[str]:
    """Every attribute value, event, status and resource attribute of the spans, as text."""
    for span in spans:
        yield span.name
        yield str(dict(span.attributes or {}))
        yield span.status.description or ""
        yield str(dict(span.resource.attributes))
        for event in span.events:
            yield event.name
            yield str(dict(event.attributes or {}))
        for link in span.links:
            yield str(dict(link.attributes or {}))
