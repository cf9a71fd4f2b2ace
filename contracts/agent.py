"""Agent configuration: model, settings, tools, limits and the scripted model's script.

Every number has real bounds and every text a size limit (`contracts.limits`), so a
config that decodes is one a run can use: nothing out of range reaches a timer, a
retry policy or a payload.
"""

from __future__ import annotations

from typing import Annotated, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, model_validator

from contracts.bounds import Seconds, json_size_at_most
from contracts.limits import (
    DEFAULT_POLL_UPDATES,
    DEFAULT_STREAM_INTERVAL_S,
    MAX_AGENT_DEPTH,
    MAX_AGENT_RUNS,
    MAX_AGENTS,
    MAX_EXTRA_SETTINGS_BYTES,
    MAX_ITERATIONS,
    MAX_MODEL_CHARS,
    MAX_QUERY_CHARS,
    MAX_SCRIPT_BYTES,
    MAX_SYSTEM_PROMPT_CHARS,
    MAX_TOOL_CONTEXT_BYTES,
    MAX_TOOLS,
)
from contracts.memory import MemoryConfig
from contracts.output import OutputSpec
from contracts.webhooks import WebhookUrl
from conversation.messages import OmitDefaults
from conversation.policy import ContextPolicy

ScriptedError = Literal["rate_limit", "timeout", "auth", "server", "context_window"]
ToolName = Annotated[str, StringConstraints(max_length=64)]
ApprovalTimeoutAction = Literal["deny", "approve"]
MAX_AGENTS_BYTES = 1024 * 1024
"""The JSON size of one config's `agents` (inline configs included)."""

_CHECKED = ConfigDict(allow_inf_nan=False, extra="forbid")
"""A config is checked whole: a field it does not have (a misspelt `system_promt`) is refused by name."""

RETIRED_CONFIG_FIELDS: frozenset[str] = frozenset()
"""Fields `AgentConfig` once had and no longer has. Recorded histories still carry them, so they
are dropped before the check instead of refused: a field removed from `AgentConfig` goes here, so
old histories keep replaying (`tests/replay/test_replay.py`). None has been removed yet."""


class ModelSettings(OmitDefaults):
    """Sampling settings sent to the model.

    `extra` is passed to `litellm.acompletion` as keyword arguments (for example
    `api_base` for a local server). Secrets never go here: API keys are read by
    the LLM activity from the worker's environment, and keys that look like
    credentials are rejected when the run starts.
    """

    model_config = _CHECKED

    temperature: Annotated[float, Field(ge=0, le=2)] | None = 0.2
    max_tokens: Annotated[int, Field(ge=1, le=10_000_000)] | None = 4096
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    extra: Annotated[
        dict[str, JsonValue], json_size_at_most(MAX_EXTRA_SETTINGS_BYTES, "model_settings.extra")
    ] = {}


class ScriptToolCall(OmitDefaults):
    """A tool call the scripted model makes. `arguments` may be a raw (even malformed) string."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, JsonValue] | str = {}
    id: str | None = None


class ScriptTurn(OmitDefaults):
    """One scripted LLM response, consumed one per LLM call, in order.

    `delay_s` is waited first; then, if `error` is set, the first `error_times`
    attempts of this call raise that provider error and later attempts answer.
    A streamed call sends `thinking`, then `content`, then each tool call's arguments
    (its first piece carries the call's id and name) in pieces of `chunk_chars`
    characters, waiting `chunk_delay_s` before each piece. An attempt that fails with
    `error` streams the first half of its pieces, then raises. With `describe_input`, the
    answer's content is JSON describing the messages the call received, as the provider
    call got them (`activities.llm.models._scripted_turns.describe_messages`): tests check
    with it that attachments' bytes arrived intact.
    """

    model_config = _CHECKED

    content: str | None = None
    describe_input: bool = False
    tool_calls: list[ScriptToolCall] = []
    thinking: str | None = None
    finish_reason: str | None = None
    delay_s: Annotated[float, Field(ge=0, le=3_600)] = 0.0
    error: ScriptedError | None = None
    error_times: Annotated[int, Field(ge=0, le=1_000)] = 1
    chunk_chars: Annotated[int, Field(ge=1, le=1_000_000)] = 8
    chunk_delay_s: Annotated[float, Field(ge=0, le=60)] = 0.0


class AgentTool(OmitDefaults):
    """Another agent offered to the model as a tool named `name` (the tool takes `{"query": "..."}`).

    Either `config` is given inline, or `profile` (default: `name`) names an agent
    profile registered on the worker (`AgentProfiles`). `description` is what the
    model reads (default: the profile's description, or "Ask the <name> agent").
    Calling it starts a child `ReActRun` with that config; its answer is the result.
    """

    model_config = ConfigDict(extra="forbid")

    name: ToolName
    description: Annotated[str, StringConstraints(max_length=4_000)] | None = None
    profile: ToolName | None = None
    config: AgentConfig | None = None


class UsageBudget(OmitDefaults):
    """Caps on usage; a field left out (None) is no cap; an unknown field is refused (a typo is no cap)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    max_total_tokens: Annotated[int, Field(ge=1)] | None = None
    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    max_llm_calls: Annotated[int, Field(ge=1)] | None = None


class UsageLimits(OmitDefaults):
    """Usage caps per request (one run, agents it calls included) and per session (all its requests).

    Checked before every LLM call: the run ends `failed` with `usage_limit_exceeded`
    before a call that would exceed a cap (see the README for how a call's tokens are
    estimated before it is made).
    """

    model_config = ConfigDict(extra="forbid")

    per_request: UsageBudget = UsageBudget()
    per_session: UsageBudget = UsageBudget()


class AgentConfig(BaseModel):
    """The agent: which model, what it may call, and the run's limits (see the README for each field).

    `approval_required` lists tools (or agents) whose calls wait for an `approve`
    decision, besides the tools the worker registered with `requires_approval`;
    `approval_timeout_s` is how long a call waits, `approval_on_timeout` what happens
    then. `agents` offers other agents as tools; `max_agent_depth` bounds how deep
    agents may call agents (a top-level run is depth 0; its children are depth 1),
    `max_agent_runs` how many agent runs the run's whole tree of agents may start.
    `output` is the final answer's JSON Schema (`contracts.output`);
    `request_transformer` names a transformer registered on the worker
    (`contracts.transform`); `effect_policy` lists the state paths tools may change
    (`contracts.effects`); `usage_limits` caps tokens, cost and LLM calls.
    `webhook_url` is the agent's (an agent profile's) default webhook: a session's requests
    call back there when neither the ask nor the session names one
    (`workflows.session.settings.webhook_for`); a run started on its own ignores it.

    A field it does not have is refused, naming it (`extra_forbidden`), here and in every model
    inside it; only the `RETIRED_CONFIG_FIELDS` of recorded histories are dropped instead.
    """

    model_config = _CHECKED

    @model_validator(mode="before")
    @classmethod
    def _drop_retired(cls, data: object) -> object:
        return without_fields(data, RETIRED_CONFIG_FIELDS)

    model: Annotated[str, StringConstraints(max_length=MAX_MODEL_CHARS)]
    model_settings: ModelSettings = ModelSettings()
    system_prompt: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_PROMPT_CHARS)] | None = None
    tools: Annotated[list[ToolName], Field(max_length=MAX_TOOLS)] = []
    max_iterations: Annotated[int, Field(ge=1, le=MAX_ITERATIONS)] = 10
    tool_timeout_s: Seconds = 15.0
    tool_max_retries: Annotated[int, Field(ge=0, le=100)] = 1
    tool_retry_backoff_s: Annotated[float, Field(ge=0, le=3_600)] = 0.2
    tool_concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    tool_context: Annotated[
        dict[str, JsonValue], json_size_at_most(MAX_TOOL_CONTEXT_BYTES, "tool_context")
    ] = {}
    llm_timeout_s: Seconds = 120.0
    llm_max_attempts: Annotated[int, Field(ge=1, le=100)] = 5
    context_policy: ContextPolicy | None = None
    stream: bool = False
    stream_interval_s: Annotated[float, Field(ge=0.01, le=10)] = DEFAULT_STREAM_INTERVAL_S
    stream_poll_updates: Annotated[int, Field(ge=0, le=DEFAULT_POLL_UPDATES)] = DEFAULT_POLL_UPDATES
    """Stream polls the run answers by Update (history); past them followers poll by query (none)."""
    approval_required: Annotated[list[ToolName], Field(max_length=MAX_TOOLS)] = []
    approval_timeout_s: Annotated[float, Field(gt=0, le=30 * 86_400)] = 3_600.0
    approval_on_timeout: ApprovalTimeoutAction = "deny"
    agents: Annotated[
        list[AgentTool], Field(max_length=MAX_AGENTS), json_size_at_most(MAX_AGENTS_BYTES, "agents")
    ] = []
    max_agent_depth: Annotated[int, Field(ge=0, le=MAX_AGENT_DEPTH)] = 2
    max_agent_runs: Annotated[int, Field(ge=0, le=MAX_AGENT_RUNS)] = 32
    output: OutputSpec | None = None
    request_transformer: ToolName | None = None
    effect_policy: Annotated[
        list[Annotated[str, StringConstraints(max_length=256)]], Field(max_length=64)
    ] = []
    usage_limits: UsageLimits | None = None
    script: Annotated[list[ScriptTurn], json_size_at_most(MAX_SCRIPT_BYTES, "script")] = []
    webhook_url: WebhookUrl | None = None
    memory: MemoryConfig | None = None


def without_fields(data: object, retired: frozenset[str]) -> object:
    """`data` without the `retired` keys when it is a mapping that has any (else `data` itself)."""
    if not retired or not isinstance(data, dict):
        return data
    fields = cast(dict[str, object], data)
    if retired.isdisjoint(fields):
        return fields
    return {key: value for key, value in fields.items() if key not in retired}


QueryText = Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)]
"""A user's query or steer/inject content."""


AgentTool.model_rebuild()
