"""The LLM call's routes: litellm's OpenAI provider called directly, or `litellm.acompletion`.

Both routes run for real against the fake OpenAI server on 127.0.0.1: the direct one must
send what litellm maps for the model and name failures as litellm does. Also: the LLM
modules import one another without a cycle, and the benchmark's provider server answers
the benchmark's script.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm import _litellm, _provider
from bench.provider_server import FINAL_ANSWER, TOOL_ROUNDS, scripted_reply
from contracts import ModelSettings
from tests.fake_openai import FakeOpenAI, chat_completion, error_body
from tests.llm_activity_helpers import llm_error, openai_request, run_llm

ROOT = Path(__file__).resolve().parents[2]
CONTEXT_TOO_LONG = error_body(
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens.",
    code="context_length_exceeded",
)


def kwargs_for(model: str, **extra: Any) -> dict[str, Any]:
    request = openai_request("http://127.0.0.1:9/v1").model_copy(
        update={
            "model": model,
            "settings": ModelSettings(extra={"api_base": "http://127.0.0.1:9/v1", **extra}),
        }
    )
    return _litellm.completion_kwargs(request, attempt=1)


def test_openai_models_take_the_direct_route_and_others_litellms() -> None:
    _litellm.configure()
    assert _provider.direct_route(kwargs_for("openai/gpt-4o-mini"))
    assert _provider.direct_route(kwargs_for("openai/my-local-model", seed=7, tool_choice="auto"))
    assert not _provider.direct_route(kwargs_for("anthropic/claude-3-5-haiku-latest"))
    assert not _provider.direct_route(kwargs_for("hosted_vllm/qwen"))
    # A setting the direct route does not know: litellm's whole path handles it.
    assert not _provider.direct_route(kwargs_for("openai/gpt-4o-mini", mock_response="hi"))


def test_litellm_callbacks_send_openai_calls_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    _litellm.configure()

    def callback(*_: object) -> None:
        return None

    monkeypatch.setattr(_litellm.litellm, "success_callback", [callback])
    assert not _provider.direct_route(kwargs_for("openai/gpt-4o-mini"))


async def test_the_direct_route_sends_litellms_parameters_and_reuses_its_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-route")
    async with FakeOpenAI() as server:
        request = openai_request(server.base_url)
        o_series = request.model_copy(
            update={
                "model": "openai/o3-mini",
                "settings": ModelSettings(
                    temperature=None, max_tokens=50, extra={"api_base": server.base_url}
                ),
            }
        )
        await run_llm(request)
        hits = _provider._client.cache_info().hits  # pyright: ignore[reportPrivateUsage]
        await run_llm(o_series)
        assert _provider._client.cache_info().hits == hits + 1  # pyright: ignore[reportPrivateUsage]
    first, second = (seen.body for seen in server.requests)
    assert (first["model"], first["temperature"], first["tools"][0]["function"]["name"]) == (
        "gpt-4o-mini",
        0.2,
        "calculator",
    )
    # litellm's mapping for o-series models: `max_tokens` is sent as `max_completion_tokens`.
    assert second["model"] == "o3-mini" and second["max_completion_tokens"] == 50
    assert "max_tokens" not in second and "temperature" not in second


async def test_both_routes_name_a_context_window_error_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-route")
    async with FakeOpenAI() as server:
        server.reply(CONTEXT_TOO_LONG, status=400)
        direct = await llm_error(openai_request(server.base_url))
        server.reply(CONTEXT_TOO_LONG, status=400)
        kwargs = _litellm.completion_kwargs(openai_request(server.base_url), attempt=1)
        with pytest.raises(ApplicationError) as caught:
            await _litellm.acompletion(kwargs)
    through_litellm = caught.value
    assert (direct.type, direct.non_retryable) == ("context_window_exceeded", True)
    assert (through_litellm.type, through_litellm.non_retryable) == (direct.type, direct.non_retryable)
    assert direct.details[0]["exception"] == through_litellm.details[0]["exception"]
    assert len(server.requests) == 2


@pytest.mark.parametrize("reasoning_field", ["reasoning_content", "reasoning"])
async def test_the_direct_route_answers_like_litellms(
    monkeypatch: pytest.MonkeyPatch, reasoning_field: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-route")
    body = chat_completion("6 * 7 = 42")
    body["choices"][0]["message"][reasoning_field] = "six sevens"
    async with FakeOpenAI(default=body) as server:
        direct = await run_llm(openai_request(server.base_url))
        kwargs = _litellm.completion_kwargs(openai_request(server.base_url), attempt=1)
        through_litellm = _litellm.parse_response(await _litellm.acompletion(kwargs), openai_request(""))
    # The activity prices every answer (both routes alike); the raw parse does not.
    through_litellm.usage = _litellm.priced(openai_request("").model, through_litellm.usage)
    assert direct.usage.cost_usd > 0
    assert direct.model_dump() == through_litellm.model_dump()
    assert direct.thinking == "six sevens"


# --- the LLM modules' imports ------------------------------------------------------------------

LLM_MODULES = (
    "_litellm",
    "_litellm_setup",
    "_litellm_model_map",
    "_provider",
    "_openai_format",
    "scripted",
    "llm_call",
    "llm_errors",
    "local_model",
    "_local_model_install",
    "_local_model_process",
    "_local_model_serve",
    "model_check",
    "summarize",
    "token_count",
)


def imported_activities(module: str) -> set[str]:
    """The `activities.*` modules `module` imports anywhere in its body (lazy imports count)."""
    [path] = (ROOT / "activities").rglob(f"{module}.py")
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "activities":
            found.add((node.module or "").split(".")[-1])
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[-1] for a in node.names if a.name.startswith("activities."))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            names = [
                arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
            found.update(name.split(".")[-1] for name in names if name.startswith("activities."))
    return found & set(LLM_MODULES)


def test_the_llm_modules_import_one_another_without_a_cycle() -> None:
    graph = {module: imported_activities(module) for module in LLM_MODULES}
    assert "scripted" not in graph["_litellm"] and "local_model" not in graph["_litellm"]
    assert "_litellm" not in graph["local_model"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start] - seen:
            if nxt == goal or reaches(nxt, goal, seen | {nxt}):
                return True
        return False

    cycles = [module for module in LLM_MODULES if reaches(module, module, set())]
    assert cycles == [], {module: sorted(graph[module]) for module in cycles}


# --- the benchmark's provider server ------------------------------------------------------------


def test_the_provider_server_answers_the_benchmark_script() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 10 * 7?"}]
    for round_index in range(TOOL_ROUNDS):
        reply = scripted_reply(messages)
        [call] = reply["choices"][0]["message"]["tool_calls"]
        assert call["function"] == {
            "name": "calculator",
            "arguments": f'{{"expression": "{round_index + 1} * 7"}}',
        }
        messages += [
            reply["choices"][0]["message"],
            {"role": "tool", "tool_call_id": call["id"], "content": "7"},
        ]
    final = scripted_reply(messages)["choices"][0]
    assert (final["message"]["content"], final["finish_reason"]) == (FINAL_ANSWER, "stop")


async def test_unhashable_settings_are_mapped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-route")
    schema: dict[str, Any] = {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}},
    }
    async with FakeOpenAI() as server:
        request = openai_request(server.base_url)
        request = request.model_copy(
            update={
                "settings": ModelSettings(
                    extra={"api_base": server.base_url, "response_format": schema, "seed": 3}
                )
            }
        )
        assert _provider.direct_route(_litellm.completion_kwargs(request, attempt=1))
        await run_llm(request)
    [seen] = server.requests
    assert (seen.body["response_format"], seen.body["seed"]) == (schema, 3)


@pytest.mark.parametrize(("sent", "named"), [("eos", "stop"), (None, "stop"), ("length", "length")])
async def test_the_direct_route_names_finish_reasons_as_litellm_does(
    monkeypatch: pytest.MonkeyPatch, sent: str | None, named: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-route")
    body = chat_completion("42")
    body["choices"][0]["finish_reason"] = sent
    async with FakeOpenAI(default=body) as server:
        assert (await run_llm(openai_request(server.base_url))).finish_reason == named
