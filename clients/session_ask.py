"""An ask, whole: its payload, the session it may start, update-with-start, a stale `busy`.

`ask_input` builds the payload (checked before it is sent), `session_input` the input of the
session it may start; `ask_with_start` sends it (written once, in `with_start`: a schedule's
firing sends the same); `ended_busy_request` tells a stale `busy` refusal (then
`SessionHandle.ask` retries).

`SessionHandle.ask` (in `clients.session_handle`) documents each option; the checks are those of
`clients.inputs` (the payload model's limits, blank text, the webhook allow-list).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from pydantic import JsonValue
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError

from clients import inputs
from clients.errors import RejectedError
from clients.output import OutputLike, output_override
from clients.session_attachments import AttachmentLike
from clients.stream import SessionReader
from contracts import AgentConfig
from contracts.session import AskInput, OnBusy, SessionInput
from conversation import ContextPolicy
from conversation.attachments import Attachment
from with_start import ask_with_start

__all__ = [
    "ASK_FIELDS",
    "DEFAULT_AGENT_ID",
    "AskOptions",
    "ask_input",
    "ask_payload",
    "ask_with_start",
    "ended_busy_request",
    "session_input",
    "start_payload",
]

DEFAULT_AGENT_ID = "default"
# The options an `AskInput` carries: with a built one, the caller has already chosen them.
ASK_FIELDS = (
    "request_id",
    "overrides",
    "output",
    "context_policy",
    "on_busy",
    "expected_last_request",
    "webhook_url",
    "no_webhook",
    "attachments",
)


class AskOptions(TypedDict, total=False):
    """The keyword arguments of `SessionHandle.ask` and `ask_sync` (each is described there)."""

    config: AgentConfig | None
    agent_id: str
    request_id: str | None
    overrides: Mapping[str, JsonValue] | None
    output: OutputLike | None
    context_policy: ContextPolicy | None
    session_policy: ContextPolicy | None
    snapshot: str | None
    on_busy: OnBusy
    expected_last_request: str | None
    webhook_url: str | None
    no_webhook: bool
    session_webhook_url: str | None
    attachments: Sequence[AttachmentLike]
    attachment_owner: str | None


def session_input(
    agent_id: str,
    config: AgentConfig,
    *,
    context_policy: ContextPolicy | None = None,
    snapshot: str | None = None,
    webhook_url: str | None = None,
) -> SessionInput:
    """The input that starts a session (used only when the session does not run yet).

    `webhook_url` is the session's default webhook; it and the agent's (`config.webhook_url`)
    are checked against the deployment's allow-list.
    """
    inputs.check_webhook_url(webhook_url, "session_webhook_url")  # before the size check: named, not 413
    session = inputs.checked(
        SessionInput,
        {
            "agent_id": agent_id,
            "config": config.model_dump(),
            "context_policy": inputs.dumped(context_policy),
            "snapshot": snapshot,
            "webhook_url": webhook_url,
        },
        "AgentSession input",
    )
    inputs.not_blank(session.config.model, "config.model")
    inputs.check_webhook_url(session.config.webhook_url, "config.webhook_url")
    return session


def ask_input(
    query: str | AskInput,
    *,
    request_id: str | None = None,
    overrides: Mapping[str, JsonValue] | None = None,
    context_policy: ContextPolicy | None = None,
    on_busy: str = "reject",
    expected_last_request: str | None = None,
    webhook_url: str | None = None,
    no_webhook: bool = False,
    attachments: Sequence[Attachment] = (),
) -> AskInput:
    """An ask; without `request_id` the client chooses one, so a retried ask is answered, not run twice.

    `query` may be an ask built before (checked again, the other arguments unused). A
    `webhook_url` is checked against the deployment's allow-list (`webhook_url_problem`).
    """
    data = (
        query.model_dump()
        if isinstance(query, AskInput)
        else {
            "query": query,
            "request_id": request_id or inputs.new_id(),
            "overrides": dict(overrides or {}),
            "context_policy": inputs.dumped(context_policy),
            "on_busy": on_busy,
            "expected_last_request": expected_last_request,
            "webhook_url": webhook_url,
            "no_webhook": no_webhook,
            "attachments": [item.model_dump() for item in attachments],
        }
    )
    inputs.check_webhook_url(data.get("webhook_url"))  # before the size check: named, not 413
    ask = inputs.checked(AskInput, data, "ask")
    inputs.not_blank(ask.query, "query")
    return ask


def ask_payload(
    query: str | AskInput, options: AskOptions, attachments: Sequence[Attachment] = ()
) -> AskInput:
    """The `ask` Update's input: `query` with the options, or a built ask checked again.

    `attachments` are the references of `options["attachments"]`, resolved before
    (`clients.session_attachments.resolve_attachments`: it stores the bytes).

    Raises:
        TypeError: a built ask with options it already carries (`ASK_FIELDS`).
        RejectedError: the ask is over a limit, or blank.
    """
    if isinstance(query, AskInput):
        given = [name for name in ASK_FIELDS if name in options]
        if given:
            raise TypeError(f"a built AskInput already carries {', '.join(given)}: set them when building it")
        return ask_input(query)
    output = options.get("output")
    overrides = {**(options.get("overrides") or {}), **(output_override(output) if output else {})}
    return ask_input(
        query,
        request_id=options.get("request_id"),
        overrides=overrides,
        context_policy=options.get("context_policy"),
        on_busy=options.get("on_busy", "reject"),
        expected_last_request=options.get("expected_last_request"),
        webhook_url=options.get("webhook_url"),
        no_webhook=options.get("no_webhook", False),
        attachments=attachments,
    )


def start_payload(config: AgentConfig, options: AskOptions) -> SessionInput:
    """The input of a session that does not run yet: `config`, agent id, policy, snapshot, webhook."""
    return session_input(
        options.get("agent_id", DEFAULT_AGENT_ID),
        config,
        context_policy=options.get("session_policy"),
        snapshot=options.get("snapshot"),
        webhook_url=options.get("session_webhook_url"),
    )


async def ended_busy_request(client: Client, session: SessionReader, busy: RejectedError) -> str | None:
    """The request a `busy` refusal names, when its run has in fact ended; else None.

    The refusal names the request and its run (`RejectedError.details`): one `describe` of the
    run (the server answers it; no worker, no history) tells whether it has ended. A refusal
    without them (a session of an older version) is read from the session's queries instead.
    """
    request_id, run_workflow_id = busy.details.get("request_id"), busy.details.get("run_workflow_id")
    try:
        if not (isinstance(request_id, str) and isinstance(run_workflow_id, str)):
            request_id = (await session.status()).active_request_id
            if request_id is None:
                return None
            record = next((r for r in await session.requests() if r.request_id == request_id), None)
            if record is None:
                return None
            run_workflow_id = record.run_workflow_id
        described = await client.get_workflow_handle(run_workflow_id).describe()
    except (RejectedError, RPCError, WorkflowQueryFailedError):
        return None
    return request_id if described.status != WorkflowExecutionStatus.RUNNING else None
