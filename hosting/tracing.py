"""Tracing with OpenTelemetry: off unless configured, by the standard `OTEL_*` variables.

When tracing is on, `hosting.plugin.DurableReactPlugin` installs Temporal's
`TracingInterceptor` (`temporalio.contrib.opentelemetry`) on the client and its workers,
and `hosting.genai_spans.GenAISpans` on the workers. One trace then goes from the client's
start call through the workflow to every activity and child workflow, and each LLM call
and tool call gets a span after the OpenTelemetry GenAI semantic conventions.

Tracing is on when:

* a `TracerProvider` is given to the plugin (`DurableReactPlugin(tracer_provider=...)`), or
* `OTEL_TRACES_EXPORTER` names `otlp` and/or `console`, or, with `OTEL_TRACES_EXPORTER`
  unset, `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set;

and never when `OTEL_SDK_DISABLED` is true or `OTEL_TRACES_EXPORTER` is `none`. The OTLP
exporter speaks OTLP/HTTP (protobuf) and reads its own variables (endpoint, headers,
timeout, compression, certificate). The resource's `service.name` is `OTEL_SERVICE_NAME`,
else `durable-react`; `OTEL_RESOURCE_ATTRIBUTES` adds attributes.

`REACT_OTEL_CAPTURE_CONTENT` (true/false, default false) adds message contents, tool
arguments and tool results to the GenAI spans, each passed through
`payloads.redaction.redact` first.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from settings.env_values import SettingsError, flag, value

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import TracerProvider as AnyTracerProvider
    from temporalio.client import Client
    from temporalio.contrib.opentelemetry import TracingInterceptor
    from temporalio.worker import Interceptor as WorkerInterceptor

    from hosting.genai_spans import GenAISpans

__all__ = [
    "CAPTURE_CONTENT_VARIABLE",
    "DEFAULT_SERVICE_NAME",
    "EXPORTERS",
    "Tracing",
    "TracingSettings",
    "build_tracer_provider",
    "configured_tracer_provider",
    "flush_tracing",
    "tracing_settings",
]

CAPTURE_CONTENT_VARIABLE = "REACT_OTEL_CAPTURE_CONTENT"
DEFAULT_SERVICE_NAME = "durable-react"
EXPORTERS = ("otlp", "console")
"""The span exporters `OTEL_TRACES_EXPORTER` may name (comma-separated), besides `none`."""
_OTLP_PROTOCOL = "http/protobuf"
_INSTRUMENTATION = "durable_react"


@dataclass(frozen=True)
class TracingSettings:
    """How tracing is configured: the exporters to use (none: off) and whether spans carry contents."""

    exporters: tuple[str, ...] = ()
    capture_content: bool = False

    @property
    def enabled(self) -> bool:
        """Whether the environment turns tracing on (an exporter is configured)."""
        return bool(self.exporters)


def tracing_settings(environ: Mapping[str, str] | None = None) -> TracingSettings:
    """The tracing settings of `environ` (default: this process's environment).

    Raises:
        SettingsError: `OTEL_TRACES_EXPORTER` names an exporter other than `otlp`, `console`
            or `none`; the OTLP protocol is not `http/protobuf`; `OTEL_SDK_DISABLED` or
            `REACT_OTEL_CAPTURE_CONTENT` is not true or false.
    """
    import os

    env = os.environ if environ is None else environ
    capture = bool(flag(env, CAPTURE_CONTENT_VARIABLE))
    disabled = _otel_flag(env, "OTEL_SDK_DISABLED")
    exporters = _exporters(env)
    if "otlp" in exporters:
        for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            protocol = value(env, variable)
            if protocol is not None and protocol != _OTLP_PROTOCOL:
                raise SettingsError(
                    variable, f"only {_OTLP_PROTOCOL} is supported (OTLP/HTTP), got {protocol!r}"
                )
            if protocol is not None:
                break
    return TracingSettings(exporters=() if disabled else exporters, capture_content=capture)


def _otel_flag(env: Mapping[str, str], name: str) -> bool:
    """An OpenTelemetry boolean: `true` (any case) is true; unset, blank or `false` false."""
    text = value(env, name)
    if text is None or text.lower() == "false":
        return False
    if text.lower() == "true":
        return True
    raise SettingsError(name, f"expected true or false, got {text!r}")


def _exporters(env: Mapping[str, str]) -> tuple[str, ...]:
    text = value(env, "OTEL_TRACES_EXPORTER")
    if text is None:
        endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        return ("otlp",) if any(value(env, name) for name in endpoints) else ()
    names = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    if names == ("none",):
        return ()
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown or not names:
        raise SettingsError(
            "OTEL_TRACES_EXPORTER", f"expected otlp, console or none (comma-separated), got {text!r}"
        )
    return names


def build_tracer_provider(settings: TracingSettings) -> TracerProvider:
    """A new SDK `TracerProvider` exporting (in batches) to `settings.exporters`.

    The OTLP exporter reads `OTEL_EXPORTER_OTLP_*` itself. The provider flushes and shuts
    down when the process exits.
    """
    import os

    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    attributes = {} if value(os.environ, "OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    for name in settings.exporters:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


_providers: dict[tuple[tuple[str, str], ...], TracerProvider] = {}
_providers_lock = threading.Lock()


def configured_tracer_provider(
    settings: TracingSettings, environ: Mapping[str, str] | None = None
) -> TracerProvider | None:
    """The process's tracer provider for this configuration, shared by its clients and workers.

    Built once per set of `OTEL_*` values; None when `settings` turn tracing off.
    """
    if not settings.enabled:
        return None
    import os

    env = os.environ if environ is None else environ
    key = (
        ("", ",".join(settings.exporters)),
        *sorted((k, v) for k, v in env.items() if k.startswith("OTEL_")),
    )
    with _providers_lock:
        if key not in _providers:
            _providers[key] = build_tracer_provider(settings)
        return _providers[key]


def flush_tracing(timeout_ms: int = 5_000) -> None:
    """Export the spans the process's configured providers still hold (before an `os._exit`).

    A process that exits normally needs no call: each provider flushes when the process exits.
    """
    with _providers_lock:
        providers = list(_providers.values())
    for provider in providers:
        provider.force_flush(timeout_ms)


class Tracing:
    """The interceptors a plugin installs when tracing is on, over one tracer provider."""

    def __init__(self, provider: AnyTracerProvider, *, capture_content: bool) -> None:
        """Build Temporal's `TracingInterceptor` and the GenAI spans over `provider`.

        Args:
            provider: where the spans go (any OpenTelemetry `TracerProvider`).
            capture_content: add (redacted) message contents, tool arguments and results.
        """
        from temporalio.contrib.opentelemetry import TracingInterceptor

        from hosting.genai_spans import GenAISpans

        self.provider = provider
        self.capture_content = capture_content
        self.temporal: TracingInterceptor = TracingInterceptor(
            provider.get_tracer("temporalio.contrib.opentelemetry")
        )
        self.genai: GenAISpans = GenAISpans(
            provider.get_tracer(_INSTRUMENTATION), capture_content=capture_content
        )

    def worker_interceptors(
        self, client: Client, interceptors: Sequence[WorkerInterceptor]
    ) -> list[WorkerInterceptor]:
        """A worker's `interceptors` with the tracing ones added (Temporal's only if the worker has none yet).

        A worker runs its client's interceptors first (outermost), then its own; the GenAI spans
        come last, so that they nest inside Temporal's `RunActivity` span.
        """
        from temporalio.contrib.opentelemetry import TracingInterceptor

        inherited = [*client.config(active_config=True)["interceptors"], *interceptors]
        if any(isinstance(item, TracingInterceptor) for item in inherited):
            return [*interceptors, self.genai]
        return [*interceptors, self.temporal, self.genai]

    @classmethod
    def resolve(
        cls,
        provider: AnyTracerProvider | None,
        capture_content: bool | None,
        environ: Mapping[str, str] | None = None,
    ) -> Tracing | None:
        """Tracing over `provider`, else over the environment's configuration; None when it is off.

        Args:
            provider: a tracer provider of the caller's (tracing on, whatever the environment says).
            capture_content: add contents to the spans (default: `REACT_OTEL_CAPTURE_CONTENT`).
            environ: the environment (default: this process's).

        Raises:
            SettingsError: a tracing variable has a value that cannot be used (`tracing_settings`).
        """
        settings = tracing_settings(environ)
        chosen = provider if provider is not None else configured_tracer_provider(settings, environ)
        if chosen is None:
            return None
        capture = settings.capture_content if capture_content is None else capture_content
        return cls(chosen, capture_content=capture)
