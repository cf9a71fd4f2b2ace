"""Input and output of the LLM activity.

Each message reaches the activity inline once per run: later calls refer to what the
activity has already seen, by content digest (`conversation.digest`). `prefix` names
a run of messages of an earlier call's list; `MessageRef` names a single message. The
activity caches every message it is sent or produces in the payload store and
resolves references from there; a reference it cannot resolve fails the call with
the non-retryable `message_cache_miss`, and the run resends the call inline.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue

from contracts.agent import ModelSettings, ScriptTurn
from contracts.limits import DEFAULT_STREAM_INTERVAL_S
from contracts.omit import IS_EMPTY
from contracts.output import OutputMethod, OutputSpec
from conversation import Message, Role, ToolCall
from conversation.media import SCRIPTED_MODEL as SCRIPTED
from conversation.messages import OmitDefaults

SCRIPTED_MODEL = SCRIPTED  # one definition: `conversation.media` decides what it takes


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] = {}


class ScriptedCall(OmitDefaults):
    """What the scripted model needs for one call: its turn (None past the script's end)."""

    index: int
    length: int
    turn: ScriptTurn | None = None


class Usage(BaseModel):
    """Token usage and cost, summed across LLM calls.

    `cost_usd` is priced from litellm's model prices (offline with
    `LITELLM_LOCAL_MODEL_COST_MAP=True`); calls of a model without a known price add
    nothing to it and count in `unpriced_calls`. `agent_runs` counts the agent runs (agents
    called as tools) a run and its agents started.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_calls: int = 0
    cost_usd: float = Field(default=0.0, exclude_if=IS_EMPTY)
    unpriced_calls: int = Field(default=0, exclude_if=IS_EMPTY)
    agent_runs: int = Field(default=0, exclude_if=IS_EMPTY)

    def plus(self, other: Usage) -> Usage:
        """The sum of two usages."""
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            llm_calls=self.llm_calls + other.llm_calls,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            agent_runs=self.agent_runs + other.agent_runs,
        )


class MessageRef(BaseModel):
    """A message the activity has seen before in this run: its digest and role."""

    ref: str
    role: Role


class PrefixRef(BaseModel):
    """Messages `start` .. `start + count - 1` of the message list an earlier call was sent.

    `digest` is that list's digest (`conversation.digest.list_digest`).
    """

    digest: str
    start: int
    count: int


class StreamTarget(OmitDefaults):
    """Set on an `LLMRequest` whose call streams (see `contracts.stream`): the call's index and interval.

    `token` is the publisher id the run accepts this call's deltas from (only its activity
    knows it); `max_bytes` is how much it may stream (`contracts.limits.MAX_STREAMED_BYTES_PER_CALL`,
    less when the run's budget is nearly spent). Both are set by the run.
    """

    call: int
    interval_s: float = DEFAULT_STREAM_INTERVAL_S
    token: str = ""
    max_bytes: int | None = None


class CutStreamedCall(BaseModel):
    """An interrupting steer cut LLM call `call` of the run: close it in the live channel, read its text."""

    call: int


class StreamedText(BaseModel):
    """What a cut call had published to the live channel (its latest attempt's text).

    `cut` says the text was cut to the run's `MAX_PARTIAL_CHARS`; `found` is False when the
    worker has no channel or the channel holds nothing of the call.
    """

    text: str = ""
    cut: bool = False
    found: bool = False


class LLMRequest(OmitDefaults):
    """One LLM call: the projected context (new messages inline, the rest by reference) and tool names.

    `tools` are names from the worker's registry; the activity sends their specs, then
    `tool_specs` as given (the agents the run offers as tools). No
    secret is ever part of a request. Fields at their default are left out of the JSON.
    """

    model: str
    system_prompt: str | None = None
    prefix: PrefixRef | None = None
    messages: list[Message | MessageRef] = []
    tools: list[str] = []
    tool_specs: list[ToolSpec] = []
    settings: ModelSettings = ModelSettings()
    timeout_s: float = 120.0
    iteration: int = 0
    scripted: ScriptedCall | None = None
    stream: StreamTarget | None = None
    output: OutputSpec | None = None


class LLMResponse(OmitDefaults):
    """The assistant's answer: text and/or tool calls, with usage and provider ids.

    `local_tools` names the requested tools that the worker's registry marks as fast
    and pure: the run may execute those as local activities; `approval_tools` those it
    marks as requiring approval. With `LLMRequest.output`, a final answer (no tool
    calls) is parsed: `output_ok` and `output` (the parsed value, by `output_method`),
    or `output_errors` saying why it does not match the schema.
    """

    content: str = ""
    tool_calls: list[ToolCall] = []
    thinking: str | None = None
    finish_reason: str | None = None
    usage: Usage = Usage()
    response_id: str | None = None
    model: str | None = None
    local_tools: list[str] = []
    approval_tools: list[str] = []
    output: JsonValue = None
    output_ok: bool = False
    output_errors: list[str] = []
    output_method: OutputMethod | None = None

    def assistant_message(self) -> Message:
        """The assistant message this answer adds to the context (run and activity digest the same one)."""
        return Message(
            role="assistant",
            content=self.content,
            tool_calls=list(self.tool_calls) or None,
            thinking=self.thinking,
        )


class ModelMediaRequest(BaseModel):
    """Which attachment kinds beyond text a model takes (the `model_media` activity's input)."""

    model: str


class ModelMedia(BaseModel):
    """What a model takes beyond text, as litellm's model map says (`model_media`)."""

    images: bool
    pdfs: bool


class CountTokensRequest(BaseModel):
    """Messages to count with the model's own tokenizer (`token_estimator: exact`)."""

    model: str
    messages: list[Message]
