"""The session's config controls: system prompt, tools, tool context and model, for the next run.

A mixin of `AgentSession` (Temporal collects handlers from base classes too); each
control is a signal and a same-named Update that returns an `Ack`.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts import Ack, AgentConfig, ResolveToolsRequest, ToolSpec
    from contracts.activities import RESOLVE_TOOLS_ACTIVITY
    from contracts.session import ModelInput, SystemPromptInput, ToolContextInput, ToolNameInput
    from conversation import ConversationState


def _message(err: ActivityError | ApplicationError) -> str:
    cause = err.cause if isinstance(err, ActivityError) else err
    return cause.message if isinstance(cause, ApplicationError) else str(err)


class SessionConfigControls:
    """Changes to the agent config; they take effect from the next run on."""

    _config: AgentConfig
    _conversation: ConversationState

    def _set_system_prompt(self, payload: SystemPromptInput) -> Ack:
        self._config = self._config.model_copy(update={"system_prompt": payload.system_prompt})
        self._conversation.set_base_system_prompt(payload.system_prompt)
        return Ack(status="accepted")

    async def _register_tool(self, payload: ToolNameInput) -> Ack:
        if payload.name in self._config.tools:
            return Ack(status="accepted", message=f"{payload.name} is already registered")
        try:
            await workflow.execute_activity(
                RESOLVE_TOOLS_ACTIVITY,
                ResolveToolsRequest(names=[payload.name]),
                result_type=list[ToolSpec],
                start_to_close_timeout=timedelta(seconds=10),
                summary=f"resolve tool {payload.name}",
            )
        except (ActivityError, ApplicationError) as err:
            return Ack(status="rejected", reason="unknown_tool", message=_message(err))
        self._config = self._config.model_copy(update={"tools": [*self._config.tools, payload.name]})
        return Ack(status="accepted")

    def _unregister_tool(self, payload: ToolNameInput) -> Ack:
        if payload.name not in self._config.tools:
            return Ack(status="rejected", reason="unknown_tool", message=f"{payload.name} is not registered")
        self._config = self._config.model_copy(
            update={"tools": [t for t in self._config.tools if t != payload.name]}
        )
        return Ack(status="accepted")

    def _set_tool_context(self, payload: ToolContextInput) -> Ack:
        self._config = self._config.model_copy(update={"tool_context": payload.tool_context})
        return Ack(status="accepted")

    def _set_model(self, payload: ModelInput) -> Ack:
        if not payload.model.strip():
            return Ack(status="rejected", reason="invalid_input", message="model must not be blank")
        update: dict[str, object] = {"model": payload.model}
        if payload.model_settings is not None:
            update["model_settings"] = payload.model_settings
        self._config = self._config.model_copy(update=update)
        return Ack(status="accepted")

    @workflow.signal(name="set_system_prompt")
    def set_system_prompt_signal(self, payload: SystemPromptInput) -> None:
        """Set the base system prompt for the next run."""
        self._set_system_prompt(payload)

    @workflow.update(name="set_system_prompt")
    def set_system_prompt_update(self, payload: SystemPromptInput) -> Ack:
        """Set the base system prompt for the next run."""
        return self._set_system_prompt(payload)

    @workflow.signal(name="register_tool")
    async def register_tool_signal(self, payload: ToolNameInput) -> None:
        """Offer a tool of the worker's registry to the next run."""
        ack = await self._register_tool(payload)
        if ack.status == "rejected":
            workflow.logger.warning("register_tool rejected: %s", ack.message)

    @workflow.update(name="register_tool")
    async def register_tool_update(self, payload: ToolNameInput) -> Ack:
        """Offer a tool to the next run; `rejected` when the worker has no such tool."""
        return await self._register_tool(payload)

    @workflow.signal(name="unregister_tool")
    def unregister_tool_signal(self, payload: ToolNameInput) -> None:
        """Stop offering a tool from the next run on."""
        self._unregister_tool(payload)

    @workflow.update(name="unregister_tool")
    def unregister_tool_update(self, payload: ToolNameInput) -> Ack:
        """Stop offering a tool from the next run on."""
        return self._unregister_tool(payload)

    @workflow.signal(name="set_tool_context")
    def set_tool_context_signal(self, payload: ToolContextInput) -> None:
        """Set what tools taking `tool_context` receive, from the next run on."""
        self._set_tool_context(payload)

    @workflow.update(name="set_tool_context")
    def set_tool_context_update(self, payload: ToolContextInput) -> Ack:
        """Set what tools taking `tool_context` receive, from the next run on."""
        return self._set_tool_context(payload)

    @workflow.signal(name="set_model")
    def set_model_signal(self, payload: ModelInput) -> None:
        """Set the model for the next run."""
        self._set_model(payload)

    @workflow.update(name="set_model")
    def set_model_update(self, payload: ModelInput) -> Ack:
        """Set the model for the next run."""
        return self._set_model(payload)
