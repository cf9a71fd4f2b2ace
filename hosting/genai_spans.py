"""GenAI spans around the LLM and tool activities, after the OpenTelemetry GenAI semantic conventions.

`GenAISpans` is a worker interceptor (installed by `hosting.plugin.DurableReactPlugin` when
tracing is on, inside Temporal's `TracingInterceptor`, so its spans are children of the
activity's `RunActivity:...` span). It wraps:

* `llm_call` and `summarize` in a span `chat {model}` (kind CLIENT) with
  `gen_ai.operation.name` = `chat`, `gen_ai.request.model`, `gen_ai.provider.name` (the
  model's litellm prefix, e.g. `openai` of `openai/gpt-4o-mini`, when it has one),
  `gen_ai.request.max_tokens`/`temperature`/`top_p` when set, and from the answer
  `gen_ai.response.model`, `gen_ai.response.id`, `gen_ai.response.finish_reasons`,
  `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`;
* `run_tool` in a span `execute_tool {name}` (kind INTERNAL) with `gen_ai.operation.name` =
  `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id` and `gen_ai.tool.type` = `function`.

A call that raises, or a tool outcome that is a failure, sets the span's status to ERROR and
`error.type` (the exception's type name, or the tool error's code). Contents (the system
prompt, messages, tool arguments and results) are left out unless `capture_content` is on;
then they are added as `gen_ai.system_instructions`, `gen_ai.input.messages`,
`gen_ai.output.messages`, `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (JSON
text), every string passed through `payloads.redaction.redact`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue
from pydantic import JsonValue
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from contracts.activities import LLM_ACTIVITY, SUMMARIZE_ACTIVITY, TOOL_ACTIVITY
from contracts.agent import ModelSettings
from contracts.compaction import SummarizeRequest, SummarizeResult
from contracts.llm import LLMRequest, LLMResponse, MessageRef, Usage
from contracts.tools import ToolCallRequest, ToolOutcome
from conversation import Message
from payloads.redaction import redact, redact_json

__all__ = ["GenAISpans"]

_Attributes = dict[str, AttributeValue]


class GenAISpans(Interceptor):
    """Worker interceptor: a GenAI span around each LLM call and tool call (see the module's docstring)."""

    def __init__(self, tracer: Tracer, *, capture_content: bool = False) -> None:
        """Create the interceptor.

        Args:
            tracer: where the spans go.
            capture_content: add (redacted) contents to the spans.
        """
        self.tracer = tracer
        self.capture_content = capture_content

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap the worker's activities (`temporalio.worker.Interceptor`)."""
        return _GenAIActivityInbound(next, self)


class _GenAIActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: GenAISpans) -> None:
        super().__init__(next)
        self._root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        name = activity.info().activity_type
        arg = input.args[0] if len(input.args) == 1 else None
        if name == LLM_ACTIVITY and isinstance(arg, LLMRequest):
            return await self._chat(input, arg.model, arg.settings, self._request_content(arg))
        if name == SUMMARIZE_ACTIVITY and isinstance(arg, SummarizeRequest):
            return await self._chat(input, arg.model, arg.settings, self._summarize_content(arg))
        if name == TOOL_ACTIVITY and isinstance(arg, ToolCallRequest):
            return await self._tool(input, arg)
        return await self.next.execute_activity(input)

    async def _chat(
        self, input: ExecuteActivityInput, model: str, settings: ModelSettings, content: _Attributes
    ) -> Any:
        attributes: _Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            **_optional(
                {
                    "gen_ai.provider.name": model.split("/", 1)[0] if "/" in model else None,
                    "gen_ai.request.max_tokens": settings.max_tokens,
                    "gen_ai.request.temperature": settings.temperature,
                    "gen_ai.request.top_p": settings.top_p,
                }
            ),
            **content,
        }
        with self._span(f"chat {model}", SpanKind.CLIENT, attributes) as span:
            result = await self.next.execute_activity(input)
            if isinstance(result, LLMResponse):
                span.set_attributes(_response_attributes(result))
                if self._root.capture_content:
                    span.set_attribute("gen_ai.output.messages", _json_list([_output_message(result)]))
            elif isinstance(result, SummarizeResult):
                span.set_attributes(_usage_attributes(result.usage))
                if self._root.capture_content:
                    output: JsonValue = {"role": "assistant", "parts": [_text(result.summary)]}
                    span.set_attribute("gen_ai.output.messages", _json_list([output]))
            return result

    async def _tool(self, input: ExecuteActivityInput, request: ToolCallRequest) -> Any:
        call = request.call
        attributes: _Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self._root.capture_content:
            attributes["gen_ai.tool.call.arguments"] = redact(call.arguments)
        with self._span(f"execute_tool {call.name}", SpanKind.INTERNAL, attributes) as span:
            result = await self.next.execute_activity(input)
            if isinstance(result, ToolOutcome):
                if not result.ok:
                    code = result.error.type if result.error else "tool_error"
                    span.set_attribute("error.type", code)
                    span.set_status(Status(StatusCode.ERROR, code))
                if self._root.capture_content:
                    span.set_attribute("gen_ai.tool.call.result", _json(result.for_model()))
            return result

    @contextmanager
    def _span(self, name: str, kind: SpanKind, attributes: _Attributes) -> Iterator[Span]:
        """A current span that records an exception's type (not its text) as ERROR."""
        with self._root.tracer.start_as_current_span(
            name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield span
            except Exception as err:
                span.set_attribute("error.type", type(err).__name__)
                span.set_status(Status(StatusCode.ERROR, redact(f"{type(err).__name__}: {err}")))
                raise

    def _request_content(self, request: LLMRequest) -> _Attributes:
        if not self._root.capture_content:
            return {}
        content: _Attributes = {
            "gen_ai.input.messages": _json_list([_input_message(m) for m in request.messages])
        }
        if request.system_prompt:
            content["gen_ai.system_instructions"] = _json_list([_text(request.system_prompt)])
        return content

    def _summarize_content(self, request: SummarizeRequest) -> _Attributes:
        if not self._root.capture_content:
            return {}
        messages = [_input_message(m) for m in request.messages]
        return {"gen_ai.input.messages": _json_list(messages)}


def _optional(values: dict[str, AttributeValue | None]) -> _Attributes:
    return {key: item for key, item in values.items() if item is not None}


def _usage_attributes(usage: Usage) -> _Attributes:
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }


def _response_attributes(response: LLMResponse) -> _Attributes:
    return {
        **_usage_attributes(response.usage),
        **_optional(
            {
                "gen_ai.response.model": response.model,
                "gen_ai.response.id": response.response_id,
                "gen_ai.response.finish_reasons": [response.finish_reason]
                if response.finish_reason
                else None,
            }
        ),
    }


def _text(text: str) -> dict[str, JsonValue]:
    return {"type": "text", "content": text}


def _input_message(message: Message | MessageRef) -> dict[str, JsonValue]:
    """A message as a GenAI `InputMessage`; one sent by reference is named by its digest only."""
    if isinstance(message, MessageRef):
        return {"role": message.role, "parts": [{"type": "message_ref", "digest": message.ref}]}
    parts: list[JsonValue] = []
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": message.content})
    elif message.content:
        parts.append(_text(message.content))
    for call in message.tool_calls or ():
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
    return {"role": message.role, "parts": parts}


def _output_message(response: LLMResponse) -> dict[str, JsonValue]:
    message = _input_message(response.assistant_message())
    return {**message, "finish_reason": response.finish_reason or ""}


def _json(value: JsonValue) -> str:
    """JSON text of `value` with every string redacted."""
    return json.dumps(redact_json(value), ensure_ascii=False, separators=(",", ":"))


def _json_list(items: Sequence[JsonValue]) -> str:
    return _json(list(items))
