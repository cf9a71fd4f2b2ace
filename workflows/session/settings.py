"""The session's agent config: what the next run gets, how an ask's overrides apply, and the config controls.

Config changes take effect from the next run on. `set_system_prompt` also changes
the conversation's base prompt (lanes whose anchor carries a prompt keep theirs).
`ask_problems` is the one definition of what ask a session accepts, used by the
`ask` validator and, through `input_problems`, shared with the run itself. `webhook_for`
is the one rule for where a request's webhooks go.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ActivityError

from contracts import Ack, AgentConfig, ResolveToolsRequest, RunInput
from contracts.activities import MODEL_MEDIA, RESOLVE_TOOLS
from contracts.decoding import PayloadProblem, problem_of
from contracts.errors import INVALID_INPUT, UNKNOWN_TOOL, UNSUPPORTED_MEDIA_TYPE
from contracts.llm import ModelMediaRequest
from contracts.session import AskInput
from contracts.session_config import (
    ModelInput,
    SystemPromptInput,
    ToolContextInput,
    ToolNameInput,
    WebhookInput,
)
from conversation.media import media_problem, needs_image_check
from conversation.policy import ContextPolicy, resolve_policy
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.validation import input_problems

OVERRIDABLE = frozenset(AgentConfig.model_fields) - {"webhook_url"}
"""An ask names its webhook in `AskInput.webhook_url`, not as an override of the agent's."""
CONFIG_CONTROLS: dict[str, type[BaseModel]] = {
    "set_system_prompt": SystemPromptInput,
    "register_tool": ToolNameInput,
    "unregister_tool": ToolNameInput,
    "set_tool_context": ToolContextInput,
    "set_model": ModelInput,
    "set_webhook": WebhookInput,
}


def effective_config(config: AgentConfig, overrides: Mapping[str, object]) -> AgentConfig:
    """The session's config with this request's overrides applied (raises ValidationError if invalid)."""
    return AgentConfig.model_validate({**config.model_dump(), **overrides})


def webhook_for(ask: AskInput, session_url: str | None, agent_url: str | None) -> str | None:
    """Where a request's webhooks go: the one rule, applied when the session records the ask.

    Highest first: the ask's own `webhook_url` (a schedule's firing asks with the schedule's, so
    for a firing the schedule's comes here), the session's default (`SessionInput.webhook_url`,
    `set_webhook`), the agent's (`AgentConfig.webhook_url`, an agent profile's); None: no webhook.
    An ask with `no_webhook` gets none whatever the defaults say. The request's record keeps the
    URL chosen, so changing a default later does not move a request already asked.
    """
    if ask.no_webhook:
        return None
    return ask.webhook_url or session_url or agent_url


class SessionSettings:
    """The agent config of the next run, the session's own context policy and default webhook."""

    def __init__(
        self, config: AgentConfig, policy: ContextPolicy | None, webhook_url: str | None = None
    ) -> None:
        """Start from the session's config, policy and default webhook."""
        self.config = config
        self.policy = policy
        self.webhook_url = webhook_url
        self._takes_images: dict[str, bool] = {}

    def base_of(self, ask: AskInput) -> AgentConfig:
        """The config an ask's run starts from: its agent version's, else the session's."""
        return ask.version_config if ask.version_config is not None else self.config

    def webhook_of(self, ask: AskInput) -> str | None:
        """Where the webhooks of the request `ask` makes go (`webhook_for`)."""
        return webhook_for(ask, self.webhook_url, self.base_of(ask).webhook_url)

    def ask_problem(self, ask: AskInput) -> PayloadProblem | None:
        """Why an ask cannot run (`invalid_input`, `payload_too_large`, `unsupported_media_type`), or None."""
        unknown = sorted(set(ask.overrides) - OVERRIDABLE)
        if unknown:
            allowed = ", ".join(sorted(OVERRIDABLE))
            return PayloadProblem(
                INVALID_INPUT, f"unknown override(s) {', '.join(unknown)}; allowed: {allowed}"
            )
        try:
            effective = effective_config(self.base_of(ask), ask.overrides)
        except ValidationError as err:
            return problem_of(err, "overrides")
        problems = input_problems(RunInput(query=ask.query, config=effective))
        if problems:
            return PayloadProblem(INVALID_INPUT, "; ".join(problems))
        model = effective.model
        media = media_problem(model, ask.attachments, self._takes_images.get(model))
        return PayloadProblem(UNSUPPORTED_MEDIA_TYPE, media) if media is not None else None

    async def learn_media(self, ask: AskInput) -> None:
        """Learn whether the ask's model takes images (`model_media`), when its images need it.

        Only an ask with images for a provider model calls the activity (once per model and
        session run), so the asks of existing histories replay unchanged; the validator, which
        cannot call it, leaves an unknown model's images to the handler's check.
        """
        try:
            model = effective_config(self.config, ask.overrides).model
        except ValidationError:
            return  # `ask_problem` refuses the overrides
        if model in self._takes_images or not needs_image_check(model, ask.attachments):
            return
        media = await call_activity(MODEL_MEDIA, ModelMediaRequest(model=model))
        self._takes_images[model] = media.images

    def run_input(self, ask: AskInput, request_id: str) -> RunInput:
        """The run an accepted ask starts (its context is added when the run starts)."""
        config = effective_config(self.base_of(ask), ask.overrides)
        policy = resolve_policy(ask.context_policy, self.policy, config.context_policy)
        return RunInput(
            query=ask.query,
            request_id=request_id,
            config=config.model_copy(update={"context_policy": policy}),
            query_refs=ask.refs,
            query_attachments=ask.attachments,
            agent_version=ask.agent_version,
        )

    def session_policy(self) -> ContextPolicy:
        """The policy of the session itself (for `compact`): the session's, the config's, the default."""
        return resolve_policy(self.policy, self.config.context_policy)

    async def apply(self, name: str, payload: BaseModel) -> Ack:
        """Apply a decoded config control (a new system prompt: the caller tells the thread too)."""
        if isinstance(payload, SystemPromptInput):
            self.config = self.config.model_copy(update={"system_prompt": payload.system_prompt})
        elif isinstance(payload, ToolNameInput) and name == "register_tool":
            return await self._register(payload.name)
        elif isinstance(payload, ToolNameInput):
            if payload.name not in self.config.tools:
                return Ack.rejected(UNKNOWN_TOOL, f"{payload.name} is not registered")
            self.config = self.config.model_copy(
                update={"tools": [t for t in self.config.tools if t != payload.name]}
            )
        elif isinstance(payload, WebhookInput):
            self.webhook_url = payload.webhook_url
        elif isinstance(payload, ToolContextInput):
            self.config = self.config.model_copy(update={"tool_context": payload.tool_context})
        elif isinstance(payload, ModelInput):
            if not payload.model.strip():
                return Ack.rejected(INVALID_INPUT, "model must not be blank")
            update: dict[str, object] = {"model": payload.model}
            if payload.model_settings is not None:
                update["model_settings"] = payload.model_settings
            self.config = self.config.model_copy(update=update)
        return Ack(status="accepted")

    async def _register(self, name: str) -> Ack:
        if name in self.config.tools:
            return Ack(status="accepted", message=f"{name} is already registered")
        try:
            await call_activity(RESOLVE_TOOLS, ResolveToolsRequest(names=[name]))
        except ActivityError as err:
            return Ack.rejected(UNKNOWN_TOOL, run_error(err).message)
        self.config = self.config.model_copy(update={"tools": [*self.config.tools, name]})
        return Ack(status="accepted")
