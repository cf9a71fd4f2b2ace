"""litellm's one door (`activities.llm._litellm`) and what its bundled model map knows.

The OpenAI format and call kwargs, the OpenAI path against a fake server, loading litellm
lazily, token counts and context windows.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from temporalio.exceptions import ApplicationError

from activities import policy_for_model
from activities.llm import _litellm
from activities.llm.llm_call import warm_litellm
from activities.llm.summarize import summarize
from contracts import LLMRequest, ModelSettings, ScriptTurn
from contracts.activities import activity_summary
from contracts.compaction import SummarizeRequest
from conversation import ContextPolicy, Message, ToolCall, estimate_tokens
from tests.fake_openai import FakeOpenAI, chat_completion, error_body, tool_call
from tests.llm_activity_helpers import ROOT, environment, openai_request, run_llm, scripted


def test_openai_messages() -> None:
    messages = [
        Message(role="user", content="hi"),
        Message(
            role="assistant",
            content="",
            thinking="secret reasoning",
            tool_calls=[ToolCall(id="c1", name="calculator", arguments='{"expression": "1"}')],
        ),
        Message(role="tool", content='{"ok": true}', tool_call_id="c1", name="calculator"),
        Message(role="assistant", content="1", thinking="more reasoning"),
    ]
    assert _litellm.to_openai_messages("Be brief.", messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "calculator", "content": '{"ok": true}'},
        {"role": "assistant", "content": "1"},
    ]


def test_completion_kwargs() -> None:
    request = LLMRequest(
        model="openai/gpt-4o-mini",
        messages=[Message(role="user", content="hi")],
        settings=ModelSettings(
            temperature=None, max_tokens=50, extra={"api_base": "http://x", "model": "evil"}
        ),
        timeout_s=7.5,
        iteration=3,
    )
    kwargs = _litellm.completion_kwargs(request, attempt=1)
    assert kwargs["model"] == "openai/gpt-4o-mini"
    assert kwargs["api_base"] == "http://x"
    assert (kwargs["max_tokens"], kwargs["num_retries"], kwargs["timeout"]) == (50, 0, 7.5)
    assert "temperature" not in kwargs and "top_p" not in kwargs
    assert "tools" not in kwargs and "metadata" not in kwargs
    assert activity_summary(request) == "llm openai/gpt-4o-mini #3"


async def test_openai_path_against_fake_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    async with FakeOpenAI() as server:
        server.reply(
            chat_completion(tool_calls=[tool_call("calculator", '{"expression": "6 * 7"}', "call_x")])
        )
        response = await run_llm(openai_request(server.base_url))
    assert response.tool_calls == [
        ToolCall(id="call_x", name="calculator", arguments='{"expression": "6 * 7"}')
    ]
    assert response.finish_reason == "tool_calls"
    assert response.response_id == "chatcmpl-fake"
    assert response.usage.model_dump() == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "llm_calls": 1,
        "cost_usd": 11 * 0.15e-6 + 7 * 0.6e-6,  # gpt-4o-mini's price in litellm's bundled map
    }  # `unpriced_calls` 0 is left out of the JSON, like any zero of the cost fields
    assert response.usage.unpriced_calls == 0
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert {k.lower(): v for k, v in seen.headers.items()}["authorization"] == "Bearer sk-test-123"
    assert seen.body["model"] == "gpt-4o-mini"
    assert seen.body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert seen.body["tools"][0]["function"]["name"] == "calculator"
    assert seen.body["temperature"] == 0.2
    assert "sk-test-123" not in json.dumps(seen.body)


async def test_summarize_through_the_openai_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    async with FakeOpenAI() as server:
        server.reply(chat_completion("  the user asked 6 * 7  "))
        server.reply(error_body("Invalid Authorization header"), status=401)
        request = SummarizeRequest(
            model="openai/gpt-4o-mini",
            messages=[Message(role="user", content="What is 6 * 7?")],
            settings=ModelSettings(extra={"api_base": server.base_url}),
            timeout_s=10,
        )
        result = await environment().run(summarize, request)
        with pytest.raises(ApplicationError) as caught:
            await environment().run(summarize, request)
    assert result.summary == "the user asked 6 * 7" and result.usage.total_tokens == 18
    assert server.requests[0].body["messages"][1] == {"role": "user", "content": "user: What is 6 * 7?"}
    assert caught.value.type == "authentication" and caught.value.__cause__ is None


def test_the_worker_the_gateway_and_the_demo_check_start_without_litellm_or_pydantic_evals() -> None:
    probe = (
        "import sys, worker, activities, activities.llm.llm_call, activities.llm.summarize\n"
        "import activities.llm.token_count\n"
        "import gateway.app  # the gateway reads a dataset at its first evaluation, in a thread\n"
        "from hosting.plugin import DurableReactPlugin\n"
        "assert len(DurableReactPlugin()._agent_activities()) > 10  # every activity, as a worker registers\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported at start-up'\n"
        "assert 'pydantic_evals' not in sys.modules, 'pydantic-evals was imported at start-up'\n"
        "import cli.demo, cli.render\n"
        "assert 'cli.session_commands' not in sys.modules, 'the demo check and renderers loaded the CLI'\n"
        "from activities.llm import _litellm\n"
        "assert 'litellm' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_warm_up_loads_litellm_and_calls_the_scripted_model() -> None:
    await asyncio.to_thread(warm_litellm)  # in a thread, as the worker runs it
    assert _litellm.is_configured()
    assert (await run_llm(scripted(ScriptTurn(content="after warm-up")))).content == "after warm-up"


def test_token_counts_use_the_tokenizer_and_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [ToolCall(id="c-0", name="calculator", arguments='{"expression": "1"}')]
    messages = [
        Message(role="user", content="hello world"),
        Message(role="assistant", content="", tool_calls=calls),
        Message(role="tool", content="1", tool_call_id="c-0", name="calculator"),
        Message(role="assistant", content="x" * 400),
    ]
    exact = _litellm.token_counts("gpt-4o-mini", messages)
    assert len(exact) == 4 and all(count > 0 for count in exact)
    assert exact[3] < estimate_tokens(messages[3])  # 400 x's are far fewer than 100 tokens

    def broken(**_: object) -> int:
        raise RuntimeError("no tokenizer")

    monkeypatch.setattr(_litellm.litellm, "token_counter", broken)
    assert _litellm.token_counts("gpt-4o-mini", messages) == [estimate_tokens(m) for m in messages]


def test_policy_for_model_reads_the_real_window_and_defaults_for_unknown_models() -> None:
    policy = policy_for_model("gpt-4o-mini")
    assert policy.max_input_tokens == 128_000
    assert policy.reserve_output_tokens == 16_384  # its max output, under a quarter of the window
    assert policy_for_model("no-such-provider/no-such-model-xyz") == ContextPolicy()
