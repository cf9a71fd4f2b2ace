"""Building the payloads of a session's own Updates and queries: compaction, config, export, fork, reset.

Checked as `clients.inputs` checks (the payload model the workflow decodes with, the
workflow's codes); each builder also takes a payload built before and checks it again.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from clients.inputs import check_webhook_url, checked, dumped, not_blank
from contracts import ModelSettings
from contracts.compaction import CompactInput
from contracts.session import ContextQuery, ExportInput, ForkInput, ResetInput
from contracts.session_config import (
    ModelInput,
    SystemPromptInput,
    ToolContextInput,
    ToolNameInput,
    WebhookInput,
)
from contracts.session_memo import RenameInput


def compact_input(op_id: str | CompactInput | None = None, model: str | None = None) -> CompactInput:
    """A compaction of a session's active lane (`op_id` may be a compaction built before: checked again)."""
    data = op_id.model_dump() if isinstance(op_id, CompactInput) else {"op_id": op_id, "model": model}
    return checked(CompactInput, data, "compact")


def system_prompt_input(system_prompt: str | None) -> SystemPromptInput:
    """`set_system_prompt` (None clears the prompt)."""
    return checked(SystemPromptInput, {"system_prompt": system_prompt}, "set_system_prompt")


def tool_name_input(name: str, what: str) -> ToolNameInput:
    """`register_tool` / `unregister_tool`."""
    payload = checked(ToolNameInput, {"name": name}, what)
    not_blank(payload.name, "name")
    return payload


def tool_context_input(tool_context: Mapping[str, JsonValue]) -> ToolContextInput:
    """`set_tool_context`."""
    return checked(ToolContextInput, {"tool_context": dict(tool_context)}, "set_tool_context")


def model_input(model: str, settings: ModelSettings | None = None) -> ModelInput:
    """`set_model`."""
    payload = checked(ModelInput, {"model": model, "model_settings": dumped(settings)}, "set_model")
    not_blank(payload.model, "model")
    return payload


def webhook_input(webhook_url: str | None) -> WebhookInput:
    """`set_webhook` (None clears the session's default), checked against the deployment's allow-list."""
    check_webhook_url(webhook_url)  # before the size check: a long URL is named, not 413
    return checked(WebhookInput, {"webhook_url": webhook_url}, "set_webhook")


def context_query(context_ref: str | None) -> ContextQuery:
    """A lane of the session's `context` query (None: the active one)."""
    return checked(ContextQuery, {"context_ref": context_ref}, "context")


def export_input(context_ref: str | None = None, ttl_s: float | None = None) -> ExportInput:
    """An export of a lane (default: the active one), optionally with a lifetime."""
    return checked(ExportInput, {"context_ref": context_ref, "ttl_s": ttl_s}, "export")


def fork_input(seq: int | ForkInput | None = None, session_id: str | None = None) -> ForkInput:
    """A fork after entry `seq` (default: the latest) into the session `session_id` (default: chosen)."""
    data = seq.model_dump() if isinstance(seq, ForkInput) else {"seq": seq, "session_id": session_id}
    return checked(ForkInput, data, "fork")


def reset_input(reason: str | ResetInput | None = None, op_id: str | None = None) -> ResetInput:
    """A reset of the conversation (`reason` is recorded in the op's meta)."""
    data = reason.model_dump() if isinstance(reason, ResetInput) else {"op_id": op_id, "reason": reason}
    return checked(ResetInput, data, "reset_thread")


def rename_input(title: str) -> RenameInput:
    """A name for the thread (not blank, one line, at most `MAX_TITLE_CHARS` characters)."""
    return checked(RenameInput, {"title": title}, "rename")
