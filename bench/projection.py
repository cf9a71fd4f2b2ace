"""Benchmark of the budgeted projection: time per call and bytes per LLM call.

Run: `.venv/bin/python -m bench.projection`. Synthetic lanes of 1k, 10k and 100k
messages (user turns, answers, tool groups with 1-3 results) are projected with the
default `ContextPolicy`, for the last turn of each lane. It reports, side by side:

* the projection time per call (median of several runs): the projector runs before
  EVERY LLM call, in workflow code, so it must stay cheap as the lane grows;
* the input bytes one LLM call sends (JSON of the OpenAI-format messages, system
  prompt included) with the policy and without one (the whole lane), and their ratio.

A markdown table is printed at the end, ready for the README.
"""

from __future__ import annotations

import json
import random
import statistics
import time

from activities.llm._litellm import openai_message
from conversation.budget import project_for_model
from conversation.messages import Context, Message, ToolCall
from conversation.policy import ContextPolicy

SIZES = (1_000, 10_000, 100_000)
SEED = 7
RUNS = 25
SYSTEM_PROMPT = "You are a careful assistant. Use the tools when a computation is needed."


def synthetic_lane(size: int, seed: int = SEED) -> Context:
    """A lane of exactly `size` messages ending with a complete turn (question, tools, answer)."""
    rng = random.Random(seed)
    messages: list[Message] = []
    tail = [
        Message(role="user", content="Final question?"),
        Message(role="assistant", content="Final answer."),
    ]
    n = 0
    while True:
        turn = [Message(role="user", content=f"Question {n}: " + "q" * rng.randint(40, 400))]
        if rng.random() < 0.6:
            ids = [f"call-{n}-{r}" for r in range(rng.randint(1, 3))]
            calls = [ToolCall(id=i, name="calculator", arguments='{"expression": "6*7"}') for i in ids]
            turn.append(Message(role="assistant", tool_calls=calls))
            turn.extend(
                Message(role="tool", tool_call_id=i, name="calculator", content="r" * rng.randint(100, 2_000))
                for i in ids
            )
        turn.append(Message(role="assistant", content=f"Answer {n}: " + "a" * rng.randint(100, 1_000)))
        if len(messages) + len(turn) > size - len(tail):
            break
        messages.extend(turn)
        n += 1
    while len(messages) < size - len(tail):  # pad with short exchanges to the exact size
        messages.append(Message(role="user" if len(messages) % 2 else "assistant", content="ok"))
    messages.extend(tail)
    return Context(system_prompt=SYSTEM_PROMPT, messages=messages)


def request_bytes(system_prompt: str | None, messages: list[Message]) -> int:
    """Bytes of the messages part of one chat request, as the LLM activity would build it."""
    wire = [{"role": "system", "content": system_prompt}] if system_prompt else []
    wire.extend(openai_message(m) for m in messages)
    return len(json.dumps(wire).encode())


def median_ms(context: Context, policy: ContextPolicy, runs: int) -> float:
    """Median wall time of one `project_for_model` call, in milliseconds."""
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        project_for_model(context, policy)
        samples.append((time.perf_counter() - start) * 1_000)
    return statistics.median(samples)


def main() -> None:
    """Measure every size and print one markdown table."""
    policy = ContextPolicy()
    rows: list[str] = []
    for size in SIZES:
        context = synthetic_lane(size)
        view = project_for_model(context, policy)
        elapsed = median_ms(context, policy, RUNS)
        whole = request_bytes(context.system_prompt, context.messages)
        projected = request_bytes(view.system_prompt, view.messages)
        rows.append(
            f"| {len(context.messages):>7,} | {elapsed:>9.2f} | {len(view.messages):>5} "
            f"| {view.meta.estimated_tokens:>6,} | {projected:>9,} | {whole:>12,} "
            f"| {whole / projected:>9,.0f}x |"
        )
        print(f"measured {size:,} messages", flush=True)
    print(
        f"\nDefault policy: {policy.max_input_tokens:,} input tokens, "
        f"{policy.reserve_output_tokens:,} reserved.\n"
    )
    print(
        "| lane msgs | proj. ms (median) | sent msgs | est. tokens | bytes/call (policy) "
        "| bytes/call (whole lane) | reduction |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
