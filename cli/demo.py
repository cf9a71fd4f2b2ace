"""The scripted demo agent `run` falls back to when no model is chosen.

A first-time user can watch a full ReAct loop (LLM turn, tool call, final answer)
without an API key; the notice makes it plain that no LLM is involved.
"""

from __future__ import annotations

from contracts import ScriptToolCall, ScriptTurn

DEMO_TOOL = "calculator"
DEMO_QUERY = "What is 17 * 23?"

DEMO_NOTICE = (
    "Demo mode: this run uses a scripted model, no LLM is called (the script calls the "
    f"{DEMO_TOOL} tool on 17 * 23, then answers). To use a real model, set REACT_MODEL or pass "
    "--model, e.g. REACT_MODEL=openai/gpt-4o-mini with OPENAI_API_KEY set, or any litellm model "
    "string such as ollama/llama3.2 (the keys must be in the worker's environment)."
)


def demo_script() -> list[ScriptTurn]:
    """Two turns: call the calculator, then state the result as the final answer."""
    return [
        ScriptTurn(
            thinking="I should compute this with the calculator tool.",
            tool_calls=[ScriptToolCall(name=DEMO_TOOL, arguments={"expression": "17 * 23"})],
        ),
        ScriptTurn(content="17 * 23 = 391."),
    ]
