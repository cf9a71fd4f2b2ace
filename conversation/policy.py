"""Context policy: how much of a lane's context goes to the model on each LLM call.

The thread stays the complete, append-only record; a `ContextPolicy` only shapes the
budgeted projection that `conversation.budget.project_for_model` computes from the
lane's `Context`. Policies are plain data so that they can travel in workflow inputs
(ask, session and agent configuration) and be resolved deterministically in workflow
code with `resolve_policy`.

Everything here is pure. A policy sized to a model's real context window comes from
`activities.policy_for_model`, which reads litellm's model map (clients and activities only).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

SummarizationMode = Literal["none", "use_existing", "request_new"]
SummaryRole = Literal["system", "user"]
MessageKind = Literal["user", "assistant", "tool", "summary"]
TokenEstimator = Literal["heuristic", "exact"]

ALL_KINDS: tuple[MessageKind, ...] = ("user", "assistant", "tool", "summary")
DEFAULT_MAX_INPUT_TOKENS = 8_000
DEFAULT_RESERVE_OUTPUT_TOKENS = 2_000
MAX_POLICY_TOKENS = 10_000_000
"""No model has a larger window; larger numbers are mistakes (and would overflow budgets)."""


def _all_kinds() -> list[MessageKind]:
    return list(ALL_KINDS)


class ContextPolicy(BaseModel):
    """Budget and shape of the model's view of a lane.

    Attributes:
        max_input_tokens: the model's input window the projection must fit in.
        reserve_output_tokens: tokens kept free for the answer; the input budget is
            `max_input_tokens - reserve_output_tokens`.
        max_messages: at most this many messages beyond the protected turns (0 = unlimited).
            A tool-call group is never split to honour it.
        keep_last_turns: user turns kept verbatim whenever they fit the token budget (even
            past `max_messages`), and kept verbatim by compaction. The newest turn is
            always kept, whatever this says.
        summarization: `none` ignores the lane's summary; `use_existing` sends it;
            `request_new` sends it and asks for automatic compaction when the
            projection would drop messages (see `budget.would_drop`).
        summary_role: where the summary goes: appended to the system prompt, or as a
            first user message (for providers that ignore or restrict system text).
        include_kinds: the message kinds that reach the model. Excluding `tool` drops
            whole tool-call groups (the assistant's call and its results), because
            providers reject a call without its results and vice versa.
        system_prompt: overrides the lane's prompt when set.
        token_estimator: `heuristic` (about 4 bytes a token, plus 10 a message: cheap and
            deterministic, fit for workflow code) or `exact` (the caller counts tokens
            with the model's tokenizer in an activity and passes them in).
        summary_model: the model compaction summarises with (default: the agent's), e.g.
            a cheaper one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_input_tokens: int = Field(default=DEFAULT_MAX_INPUT_TOKENS, gt=0, le=MAX_POLICY_TOKENS)
    reserve_output_tokens: int = Field(default=DEFAULT_RESERVE_OUTPUT_TOKENS, ge=0, le=MAX_POLICY_TOKENS)
    max_messages: int = Field(default=0, ge=0, le=1_000_000)
    keep_last_turns: int = Field(default=3, ge=0, le=10_000)
    summarization: SummarizationMode = "use_existing"
    summary_role: SummaryRole = "system"
    include_kinds: list[MessageKind] = Field(default_factory=_all_kinds)
    system_prompt: str | None = Field(default=None, max_length=100_000)
    token_estimator: TokenEstimator = "heuristic"
    summary_model: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _reserve_leaves_room(self) -> Self:
        """Reject a reserve that leaves no input budget: every call would be 'truncated'."""
        if self.reserve_output_tokens >= self.max_input_tokens:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) must be smaller than "
                f"max_input_tokens ({self.max_input_tokens})"
            )
        return self

    @property
    def input_budget(self) -> int:
        """Tokens available for the whole input (system prompt, summary and messages)."""
        return self.max_input_tokens - self.reserve_output_tokens

    @property
    def uses_summary(self) -> bool:
        """Whether the lane's summary is sent: summarization is on and `summary` is included."""
        return self.summarization != "none" and "summary" in self.include_kinds

    @classmethod
    def short_context(cls) -> ContextPolicy:
        """Small models or cheap calls: 6,000 input tokens, the last 2 turns protected."""
        return cls(max_input_tokens=6_000, keep_last_turns=2)

    @classmethod
    def long_context(cls) -> ContextPolicy:
        """Large-window models: 100,000 input tokens, the last 10 turns protected."""
        return cls(max_input_tokens=100_000, keep_last_turns=10)

    @classmethod
    def tool_focused(cls) -> ContextPolicy:
        """Tool-heavy agents: keep 5 turns of raw tool traffic and never summarise it away."""
        return cls(keep_last_turns=5, summarization="none")


def resolve_policy(*candidates: ContextPolicy | None) -> ContextPolicy:
    """The first policy given, highest priority first (ask, session, agent), else the default."""
    for candidate in candidates:
        if candidate is not None:
            return candidate
    return ContextPolicy()
