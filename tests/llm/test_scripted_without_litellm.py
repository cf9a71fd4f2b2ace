"""The scripted model answers without litellm (issue 23: a fresh worker's first call waited 5.5-6.7 s).

Each check runs in a fresh interpreter, as a freshly started worker is: the LLM activity's
`complete` answers scripted calls (plain, streamed, with tool calls) and litellm is still not
imported afterwards; a turn that injects a provider error loads it, and is classified as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import asyncio, json, sys
from activities.llm.llm_call import complete
from contracts import LLMRequest, ScriptedCall, ScriptTurn
from conversation import Message

def request(turn):
    return LLMRequest(model="scripted", messages=[Message(role="user", content="hi")], iteration=0,
                      scripted=ScriptedCall(index=0, length=1, turn=ScriptTurn.model_validate(turn)))

async def main():
    seen = []
    def sink(fragment):
        seen.append(fragment)
    plain = await complete(request({"content": "plain"}), attempt=1)
    calls = await complete(request({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}, "id": "c"}]}),
                           attempt=1)
    streamed = await complete(request({"content": "streamed", "chunk_chars": 3}), attempt=1, sink=sink)
    before_error = "litellm" in sys.modules
    try:
        await complete(request({"content": "x", "error": "rate_limit"}), attempt=1)
        error = None
    except Exception as exc:
        error = getattr(exc, "type", repr(exc))
    print(json.dumps({
        "answers": [plain.content, calls.tool_calls[0].id, streamed.content],
        "pieces": len(seen), "litellm_before_error": before_error,
        "litellm_after_error": "litellm" in sys.modules, "error": error,
        "usage": plain.usage.model_dump(),
    }))

asyncio.run(main())
"""


def test_scripted_calls_never_import_litellm_until_a_turn_needs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,  # a loaded machine: litellm's import alone is seconds of CPU
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answers"] == ["plain", "c", "streamed"]
    assert report["pieces"] == 3
    assert report["litellm_before_error"] is False
    assert report["litellm_after_error"] is True and report["error"] == "rate_limit"
    assert report["usage"]["llm_calls"] == 1 and report["usage"]["total_tokens"] > 0
