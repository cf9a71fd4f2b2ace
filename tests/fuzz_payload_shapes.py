"""The fields of the payloads the fuzz tests break, each with how to break it (`tests.fuzz_values.Spec`).

As the contracts define them (README "The control surface", `contracts/`); the handlers that
take them, with their base payloads and refusals, are in `tests/fuzz_payloads.py`.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from tests.fuzz_values import (
    KIB,
    NOT_NUMBER,
    NOT_OBJECT,
    NOT_TEXT,
    Spec,
    ident,
    integer,
    json_object,
    model,
    real,
    string_map,
    text,
)

MODEL_SETTINGS = {
    "temperature": real(0, 2),
    "max_tokens": integer(1, 10_000_000, optional=True),
    "top_p": real(0, 1),
    "extra": json_object(64 * KIB),
}
POLICY = {
    "max_input_tokens": integer(1, 10_000_000),
    "keep_last_turns": integer(0, 10_000),
    "max_messages": integer(0, 1_000_000),
    "summarization": text(None, required=True),
}
NOT_LIST = NOT_OBJECT.filter(lambda v: not isinstance(v, list))
SCRIPT_TURN = {"delay_s": real(0, 3_600), "error_times": integer(0, 1_000), "tool_calls": Spec(NOT_LIST)}
AGENT_CONFIG: dict[str, Spec] = {
    "model": text(200, required=True),
    "model_settings": model(MODEL_SETTINGS, {}),
    "system_prompt": text(100_000),
    "tools": Spec(NOT_LIST | st.lists(NOT_TEXT, min_size=1, max_size=2), st.just(["t" * 65])),
    "max_iterations": integer(1, 1_000),
    "tool_timeout_s": real(0, 86_400, above_low=True),
    "tool_max_retries": integer(0, 100),
    "tool_retry_backoff_s": real(0, 3_600),
    "tool_concurrency": integer(1, 64),
    "tool_context": json_object(64 * KIB),
    "llm_timeout_s": real(0, 86_400, above_low=True),
    "llm_max_attempts": integer(1, 100),
    "context_policy": model(POLICY, {}),
    "script": Spec(NOT_LIST | st.lists(model(SCRIPT_TURN, {}).wrong, min_size=1, max_size=2)),
}
CONFIG = {"model": "scripted", "script": [{"content": "never used"}]}
CONTEXT = Spec(NOT_OBJECT | st.sampled_from([{"messages": 5}, {"zz_unknown": 1}]))
OPERATION = {
    "type": text(64, required=True),
    "reason": text(64, required=True),
    "result_context": CONTEXT,
    "base_seq": Spec(NOT_NUMBER | st.floats(0.1, 0.9) | st.just(math.nan)),
    "meta": json_object(16 * KIB),
}
STEER = {
    "content": text(100_000, required=True),
    "expected_request_id": ident(),
    "input_id": ident(),
    "source": text(200),
    "refs": string_map(16, 64, 1_000),
    "reply_to": ident(),
    "mode": Spec(NOT_TEXT | st.none() | st.sampled_from(["", "Interrupt", "shout"])),
}
ASK = {
    "query": text(100_000, required=True),
    "request_id": ident(),
    "overrides": json_object(256 * KIB),
    "context_policy": model(POLICY, {}),
    "on_busy": Spec(NOT_TEXT | st.none() | st.sampled_from(["", "Enqueue", "wait"])),
    "expected_last_request": ident(),
}
RUN_INPUT = {
    "query": text(100_000, required=True),
    "request_id": ident(),
    "config": model(AGENT_CONFIG, CONFIG),
    "context": CONTEXT,
    "context_ref": ident(required=True),
}
SESSION_INPUT = {
    "agent_id": ident(required=True),
    "config": model(AGENT_CONFIG, CONFIG),
    "context_policy": model(POLICY, {}),
    "snapshot": text(None),
    "carry": Spec(NOT_OBJECT | st.just({"conversation": 5})),
}
