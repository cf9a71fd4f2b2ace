"""The run's LLM calls: the budgeted view, each message sent inline once, and the cache-miss fallback.

The first call of a run sends its view inline. Later calls send only what the LLM
activity has not seen in this run: the messages shared with the previous call's list
as one `PrefixRef`, messages seen before as `MessageRef`s, and new ones inline. So a
run's history grows by what is new in each call, not by the whole view again. The
workflow stays the source of truth: when the activity's cache lacks a referenced
message (`message_cache_miss`), the same call is sent again with every message inline.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from contracts import (
    SCRIPTED_MODEL,
    AgentConfig,
    LLMRequest,
    LLMResponse,
    MessageRef,
    PrefixRef,
    ScriptedCall,
)
from contracts.activities import COUNT_TOKENS, LLM_CALL
from contracts.errors import MESSAGE_CACHE_MISS
from contracts.llm import CountTokensRequest, StreamTarget, ToolSpec
from contracts.transform import RequestChanges
from conversation import Context, ContextPolicy, Message, ModelView, project_for_model
from conversation.digest import list_digest, message_digest
from workflows.activity_calls import call_activity
from workflows.run.request_transformer import apply_changes

MAX_CACHE_MISSES = 2
"""After this many misses in one run (e.g. workers without a shared store), stop using references."""


def _shared_prefix(previous: list[str], current: list[str]) -> tuple[int, int]:
    """(start, count): the longest run of `current`'s head found in `previous` at `start`."""
    if not previous or not current:
        return 0, 0
    try:
        start = previous.index(current[0])
    except ValueError:
        return 0, 0
    count = 0
    while (
        count < len(current) and start + count < len(previous) and previous[start + count] == current[count]
    ):
        count += 1
    return start, count


class ModelCalls:
    """Builds and executes a run's LLM calls."""

    def __init__(
        self,
        config: AgentConfig,
        policy: ContextPolicy,
        request_id: str,
        run_id: str,
        stream_grant: Callable[[StreamTarget], StreamTarget],
    ) -> None:
        """Bind the run's config and resolved policy.

        `stream_grant` adds the run stream's publish token and byte budget to a streamed
        call (`RunStream.grant`).
        """
        self._config = config
        self._policy = policy
        self._request_id = request_id
        self._run_id = run_id
        self._digests: dict[int, tuple[Message, str]] = {}
        self._known: set[str] = set()
        self._previous: list[str] = []
        self._misses = 0
        self._token_counts: dict[str, int] = {}
        self._tool_specs: list[ToolSpec] = []
        self._stream_grant = stream_grant

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """Specs sent as given besides the registry's tools (the agents the run offers)."""
        return self._tool_specs

    def offer(self, tool_specs: list[ToolSpec]) -> None:
        """Send `tool_specs` with every call from now on (the agents, once resolved)."""
        self._tool_specs = tool_specs

    def _digest(self, message: Message) -> str:
        # Lane messages are never mutated, so a message object's digest is computed once.
        known = self._digests.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        digest = message_digest(message)
        self._digests[id(message)] = (message, digest)
        return digest

    async def view(self, context: Context) -> ModelView:
        """What the next call sends: the context policy's budgeted projection of the lane."""
        if self._policy.token_estimator != "exact":
            return project_for_model(context, self._policy)
        keys = [self._digest(message) for message in context.messages]
        missing = {k: m for k, m in zip(keys, context.messages, strict=True) if k not in self._token_counts}
        if missing:
            request = CountTokensRequest(model=self._config.model, messages=list(missing.values()))
            counts = await call_activity(COUNT_TOKENS, request)
            self._token_counts.update(zip(missing, counts, strict=True))
        return project_for_model(context, self._policy, token_counts=[self._token_counts[k] for k in keys])

    def shrink_budget(self, overflowed_tokens: int) -> None:
        """The model refused a view of `overflowed_tokens` (estimated): halve the input budget from now on."""
        current = self._policy.max_input_tokens - self._policy.reserve_output_tokens
        budget = max(1, min(overflowed_tokens, current) // 2)
        self._policy = self._policy.model_copy(
            update={"max_input_tokens": self._policy.reserve_output_tokens + budget}
        )

    def request(
        self,
        view: ModelView,
        iteration: int,
        index: int,
        changes: RequestChanges | None = None,
        *,
        inline: bool = False,
    ) -> LLMRequest:
        """The LLM request for `view`: new messages inline, the rest by reference (or all inline).

        `changes` are the request transformer's for this call (`workflows.run.request_transformer`).
        """
        digests = [self._digest(message) for message in view.messages]
        use_refs = not inline and self._misses < MAX_CACHE_MISSES
        prefix: PrefixRef | None = None
        skip = 0
        if use_refs:
            start, skip = _shared_prefix(self._previous, digests)
            if skip:
                prefix = PrefixRef(digest=list_digest(self._previous), start=start, count=skip)
        items: list[Message | MessageRef] = [
            MessageRef(ref=digest, role=message.role) if use_refs and digest in self._known else message
            for message, digest in zip(view.messages[skip:], digests[skip:], strict=True)
        ]
        scripted = None
        if self._config.model == SCRIPTED_MODEL:
            script = self._config.script
            scripted = ScriptedCall(
                index=index, length=len(script), turn=script[index] if index < len(script) else None
            )
        request = LLMRequest(
            model=self._config.model,
            system_prompt=view.system_prompt,
            prefix=prefix,
            messages=items,
            tools=self._config.tools,
            tool_specs=self._tool_specs,
            settings=self._config.model_settings,
            timeout_s=self._config.llm_timeout_s,
            iteration=iteration,
            scripted=scripted,
            stream=self._stream_grant(StreamTarget(call=index, interval_s=self._config.stream_interval_s))
            if self._config.stream
            else None,
            output=self._config.output,
        )
        return request if changes is None else apply_changes(request, changes)

    async def call(
        self, view: ModelView, iteration: int, index: int, changes: RequestChanges | None = None
    ) -> LLMResponse:
        """Execute the call for `view` (with the transformer's `changes`); a cache miss: once more inline."""
        request = self.request(view, iteration, index, changes)
        try:
            response = await self._execute(request)
        except ActivityError as err:
            cause = err.cause
            if not (isinstance(cause, ApplicationError) and cause.type == MESSAGE_CACHE_MISS):
                raise
            self._misses += 1
            self._known.clear()
            self._previous = []
            workflow.logger.warning("LLM message cache miss (%s); resending the call inline", cause.message)
            response = await self._execute(self.request(view, iteration, index, changes, inline=True))
        self._remember(view, response, changes)
        return response

    def _remember(self, view: ModelView, response: LLMResponse, changes: RequestChanges | None) -> None:
        """What the activity has now seen: every message of this call, and the answer it produced."""
        sent = changes.messages if changes is not None else None  # a transformer's, inline
        digests = [self._digest(m) for m in view.messages] if sent is None else [*map(message_digest, sent)]
        self._previous = digests
        self._known.update(digests)
        self._known.add(message_digest(response.assistant_message()))

    async def _execute(self, request: LLMRequest) -> LLMResponse:
        return await call_activity(LLM_CALL, request, config=self._config)
