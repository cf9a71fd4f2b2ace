"""The request transformer, workflow side: before every LLM call, ask it for changes and apply them.

When `config.request_transformer` names one, each LLM call first runs `transform_request`
as a LOCAL activity. A transformer is meant to be pure and fast, and a local activity
suits that: it runs in the worker that runs the workflow task (no task-queue round trip,
no scheduled/started/completed events), and its result is recorded in history as a
marker, so a replay reads the recorded changes and never calls the function again:
the run stays deterministic whatever the function does. It is tried once
(`maximum_attempts=1`): a transformer that fails, times out or answers changes that
cannot be applied ends the run `failed` with `transformer_error` (or
`unknown_transformer` when the worker has no transformer of that name).

The changes apply to the request only, never to the thread: `model`, `settings`,
`system_prompt`, `tools` (a subset of what the config offers: its tools and agents; a
transformer cannot grant a tool) and `messages` (the request then carries every
message inline). A `request_transformed` trace event names the fields that changed and
the transformer's reason, so a person can see why a call differed.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ActivityError, CancelledError

from contracts import AgentConfig, LLMRequest
from contracts.activities import TRANSFORM_REQUEST
from contracts.errors import TRANSFORMER_ERROR, UNKNOWN_TRANSFORMER
from contracts.llm import ToolSpec
from contracts.transform import RequestChanges, TransformInput
from conversation import ModelView
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.run.ledger import RunFailedError, RunLedger
from workflows.run.record import RunRecord
from workflows.run.trace_log import preview
from workflows.validation import config_problems


def apply_changes(request: LLMRequest, changes: RequestChanges) -> LLMRequest:
    """`request` with `changes` applied (new messages go inline, without the prefix reference)."""
    update: dict[str, Any] = {}
    if changes.model is not None:
        update["model"] = changes.model
    if changes.settings is not None:
        update["settings"] = changes.settings
    if changes.system_prompt is not None:
        update["system_prompt"] = changes.system_prompt
    if changes.tools is not None:
        kept = set(changes.tools)
        update["tools"] = [name for name in request.tools if name in kept]
        update["tool_specs"] = [spec for spec in request.tool_specs if spec.name in kept]
    if changes.messages is not None:
        update["messages"] = list(changes.messages)
        update["prefix"] = None
    return request.model_copy(update=update)


class RequestTransform:
    """Runs the config's request transformer before each call; its changes go with that call."""

    def __init__(self, config: AgentConfig, request_id: str, record: RunRecord, ledger: RunLedger) -> None:
        """Bind the run's config and parts."""
        self._config = config
        self._request_id = request_id
        self._record = record
        self._ledger = ledger

    async def prepare(self, view: ModelView, tool_specs: list[ToolSpec]) -> RequestChanges | None:
        """The transformer's changes to the call for `view` (None: no transformer, or nothing changed).

        `tool_specs` are the specs the call offers besides the config's tools (its agents).
        The changes apply to that call only.

        Raises:
            RunFailedError: `unknown_transformer` or `transformer_error` (the run ends `failed`).
        """
        name = self._config.request_transformer
        if name is None:
            return None
        config = self._config
        offered = [*config.tools, *(spec.name for spec in tool_specs)]
        request = TransformInput(
            transformer=name,
            request_id=self._request_id,
            iteration=self._ledger.iteration,
            llm_calls=self._ledger.llm_calls,
            usage=self._ledger.usage,
            model=config.model,
            settings=config.model_settings,
            system_prompt=view.system_prompt,
            tools=offered,
            messages=view.messages,
        )
        try:
            changes = await call_activity(TRANSFORM_REQUEST, request, config=config, local=True)
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise  # the run is being cancelled
            error = run_error(err)
            code = error.type if error.type in (UNKNOWN_TRANSFORMER, TRANSFORMER_ERROR) else TRANSFORMER_ERROR
            raise RunFailedError(code, f"request transformer {name!r}: {error.message}") from None
        self._check(name, changes, offered)
        changed = _changed(request, changes)
        if not changed:
            return None
        data: dict[str, Any] = {"transformer": name, "call": self._ledger.llm_calls, "changed": changed}
        if changes.reason:
            data["reason"] = preview(changes.reason)
        if "model" in changed:
            data["model"] = changes.model
        if "tools" in changed and changes.tools is not None:
            data["tools"] = [preview(tool) for tool in changes.tools][:20]
        if "messages" in changed and changes.messages is not None:
            data["messages"] = len(changes.messages)
        self._record.event("request_transformed", data=data)
        return changes

    def _check(self, name: str, changes: RequestChanges, offered: list[str]) -> None:
        granted = sorted(set(changes.tools or ()) - set(offered))
        problems: list[str] = []
        if granted:
            problems.append(
                f"offered tools the config does not offer ({', '.join(map(repr, granted))}): "
                "a transformer may only narrow the config's tools"
            )
        if changes.model is not None or changes.settings is not None:
            probe = self._config.model_copy(
                update={
                    "model": changes.model or self._config.model,
                    "model_settings": changes.settings or self._config.model_settings,
                    "agents": [],
                }
            )
            problems.extend(config_problems(probe, "changes"))
        if problems:
            raise RunFailedError(TRANSFORMER_ERROR, f"request transformer {name!r}: {'; '.join(problems)}")


def _changed(request: TransformInput, changes: RequestChanges) -> list[str]:
    """The fields `changes` sets to something other than the request's."""
    current: dict[str, object] = {
        "model": request.model,
        "settings": request.settings,
        "system_prompt": request.system_prompt,
        "tools": request.tools,
        "messages": request.messages,
    }
    return [field for field, value in current.items() if getattr(changes, field) not in (None, value)]
