"""The agent `run`, `ask` and `chat` use when no model is chosen, and the model choice from the environment.

The model is --model (or the scripted one of --script), else $REACT_MODEL, else the
bundled local model (SmolLM2-135M on a llama.cpp server the worker starts on
loopback). `--model scripted` (or REACT_MODEL=scripted) without a script is the
scripted demo: no LLM at all, the same answer every time.

`web_agents` (`gateway.py --agents cli.demo:web_agents`, as `scripts/demo.sh --web` starts it)
are the same default agent for the chat page, streamed: `default` asks before each calculator
call, `auto` does not.

The bundled model has 135M parameters: it shows the mechanics of a ReAct loop, not
intelligence. It does not choose tools by itself, so its default agent forces a
calculator call on each user turn (`tool_choice`, reset once the turn has a tool
result) and tells it in the system prompt how the call looks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from activities.llm.model_check import configured_model_problem
from activities.llm.models.local_model import BUNDLED_MODEL, DEFAULT_API_BASE, missing_install
from activities.tools.agent_profiles import AgentProfiles
from cli.errors import CliError
from contracts import SCRIPTED_MODEL, AgentConfig, ScriptToolCall, ScriptTurn

DEMO_TOOL = "calculator"
DEMO_QUERY = "What is 17 * 23?"

LOCAL_NOTICE = (
    "Bundled local model SmolLM2-135M (no key, no network): a 135M-parameter model that shows "
    "the mechanics of the loop (LLM turn, tool call, final answer), not intelligence; expect "
    "wrong answers. Choose a real model with REACT_MODEL or --model (docs/models.md)."
)
SCRIPTED_NOTICE = (
    "Demo mode: this run uses a scripted model, no LLM is called (the script calls the "
    f"{DEMO_TOOL} tool on 17 * 23, then answers). To use a real model, set REACT_MODEL or pass "
    "--model, e.g. REACT_MODEL=openai/gpt-4o-mini with OPENAI_API_KEY set, or any litellm model "
    "string such as ollama_chat/llama3.2 (the keys must be in the worker's environment)."
)
LOCAL_SYSTEM_PROMPT = (
    "You are a helpful assistant with a calculator tool. For arithmetic, call the calculator "
    'with the expression, for example {"expression": "6 * 7"}. When the tool answers, reply '
    "with its result in one short sentence."
)
# Enough for a tool call and a sentence; a small model left unbounded can ramble for minutes.
LOCAL_MAX_TOKENS = 96
LOCAL_MAX_ITERATIONS = 4
OLLAMA_URL = "http://127.0.0.1:11434"


def demo_script() -> list[ScriptTurn]:
    """Two turns: call the calculator, then state the result as the final answer."""
    return [
        ScriptTurn(
            thinking="I should compute this with the calculator tool.",
            tool_calls=[ScriptToolCall(name=DEMO_TOOL, arguments={"expression": "17 * 23"})],
        ),
        ScriptTurn(content="17 * 23 = 391."),
    ]


def demo_notice(config: AgentConfig) -> str:
    """The first line a default agent prints: what the user is (not) looking at."""
    return LOCAL_NOTICE if config.model == BUNDLED_MODEL else SCRIPTED_NOTICE


def checked_api_base(value: str, source: str) -> str:
    """An OpenAI-compatible server's base URL, or a CliError naming where the bad value came from."""
    value = value.strip()
    if not value.startswith(("http://", "https://")) or len(value) <= len("https://"):
        raise CliError(f"{source} must be an http(s) URL such as http://127.0.0.1:8000/v1, got {value!r}")
    return value


def env_api_base() -> str | None:
    """$REACT_API_BASE, checked (None when unset or blank)."""
    value = os.environ.get("REACT_API_BASE", "").strip()
    return checked_api_base(value, "REACT_API_BASE") if value else None


def with_api_base(settings: dict[str, JsonValue], api_base: str) -> dict[str, JsonValue]:
    """`settings` with `model_settings.extra.api_base` set (other model settings kept)."""
    model_settings = settings.get("model_settings")
    model_settings = dict(model_settings) if isinstance(model_settings, dict) else {}
    extra = model_settings.get("extra")
    model_settings["extra"] = {**(extra if isinstance(extra, dict) else {}), "api_base": api_base}
    return {**settings, "model_settings": model_settings}


def local_model_settings(tools: Sequence[str], api_base: str | None = None) -> dict[str, JsonValue]:
    """The default agent on the bundled model: the calculator (forced once per user turn) and `tools`."""
    forced: JsonValue = {"type": "function", "function": {"name": DEMO_TOOL}}
    return {
        "model": BUNDLED_MODEL,
        "tools": list(dict.fromkeys([DEMO_TOOL, *tools])),
        "system_prompt": LOCAL_SYSTEM_PROMPT,
        "max_iterations": LOCAL_MAX_ITERATIONS,
        "model_settings": {
            "max_tokens": LOCAL_MAX_TOKENS,
            "temperature": 0.0,
            "extra": {"api_base": api_base or DEFAULT_API_BASE, "tool_choice": forced},
        },
    }


def scripted_settings(tools: Sequence[str]) -> dict[str, JsonValue]:
    """The scripted demo agent: no LLM, the calculator on 17 * 23, then the answer."""
    script: list[JsonValue] = [turn.model_dump(mode="json") for turn in demo_script()]
    return {"model": SCRIPTED_MODEL, "script": script, "tools": list(dict.fromkeys([DEMO_TOOL, *tools]))}


def with_defaults(explicit: dict[str, JsonValue], tools: Sequence[str]) -> tuple[dict[str, JsonValue], bool]:
    """The whole agent settings from the user's flags, and whether a default (demo) agent was chosen.

    The model is the flags', else $REACT_MODEL (with $REACT_API_BASE unless --api-base
    was given), else the bundled local model. Flags the user gave win over the defaults.
    """
    settings = dict(explicit)
    if "model" not in settings:
        model = os.environ.get("REACT_MODEL", "").strip()
        base = env_api_base()
        if model:
            settings["model"] = model
            if base and "model_settings" not in settings:
                settings = with_api_base(settings, base)
        else:
            given = settings.pop("model_settings", None)
            extra = given.get("extra") if isinstance(given, dict) else None
            flag_base = extra.get("api_base") if isinstance(extra, dict) else None
            defaults = local_model_settings(tools, flag_base if isinstance(flag_base, str) else base)
            return {**defaults, **settings, "tools": defaults["tools"]}, True
    if settings["model"] == SCRIPTED_MODEL and "script" not in settings:
        return {**settings, **scripted_settings(tools)}, True
    return settings, False


def ollama_models(timeout_s: float = 0.5) -> list[str] | None:
    """The models of an Ollama server on its default port; None when none answers there."""
    import httpx

    try:
        data = httpx.get(f"{OLLAMA_URL}/api/tags", timeout=timeout_s).json()
        return [str(model["name"]) for model in data["models"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def check() -> int:
    """scripts/demo.sh's check: exit 1 with one line if the chosen model cannot be used here.

    The chosen model is $REACT_MODEL, else the bundled local model, which must be
    installed. With no model chosen and an Ollama server answering, say how to use it.
    """
    chosen = os.environ.get("REACT_MODEL", "").strip()
    problem = configured_model_problem() if chosen else missing_install()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    models = None if chosen else ollama_models()
    if models is not None:
        example = models[0] if models else "llama3.2"
        print(
            f"note: Ollama answers on {OLLAMA_URL} (models: {', '.join(models) or 'none pulled'}); "
            f"REACT_MODEL=ollama_chat/{example} scripts/demo.sh uses it",
            file=sys.stderr,
        )
    return 0


WEB_CHUNK_CHARS = 4
WEB_CHUNK_DELAY_S = 0.08  # the scripted demo's answer is written visibly, a few characters at a time


def web_agent_profiles() -> AgentProfiles:
    """The chat page's agents: the default agent streamed, `default` with the calculator approved first."""
    settings, _ = with_defaults({}, [])
    if settings["model"] == SCRIPTED_MODEL:
        pace = {"chunk_chars": WEB_CHUNK_CHARS, "chunk_delay_s": WEB_CHUNK_DELAY_S}
        settings["script"] = [turn.model_copy(update=pace).model_dump(mode="json") for turn in demo_script()]
    streamed = AgentConfig.model_validate({**settings, "stream": True})
    profiles = AgentProfiles()
    profiles.register(
        "default",
        streamed.model_copy(update={"approval_required": [DEMO_TOOL]}),
        description="the demo agent; each calculator call waits for your approval",
    )
    profiles.register("auto", streamed, description="the demo agent, calling the calculator unasked")
    return profiles


def __getattr__(name: str) -> Any:
    """`web_agents`, built on first use from the environment (`REACT_MODEL`, `REACT_API_BASE`)."""
    if name == "web_agents":
        return web_agent_profiles()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
