"""What an AG-UI `RunAgentInput` asks of the gateway, checked before anything reaches a workflow.

The last user message is the ask: its text, and its media parts (`image`, `audio`, `video`,
`document`) its attachments, as sources the intake reads after (`gateway.core.attachments`): a
`data` source is base64 with its `mimeType`, a `url` source a data URL or an http(s) URL, a
`file` source the id of a file taken in before (`f-...`); the part's `metadata.filename` (or
`name`) names it. `forwardedProps` may carry `on_busy`, `mode` (the
steer mode, `queue` or `interrupt`) and `expected_last_request`; `resume` entries decide tool
calls awaiting approval (interrupt id = call id; payload `{"approved": bool, "reason"?: str,
"arguments"?: object}`; a `cancelled` entry denies). Everything else a client sends (tools,
context, state, model settings) is ignored: the gateway's agent config decides those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ag_ui.core import DataSource, FileSource, RunAgentInput, TextPart, UrlSource, UserMessage
from pydantic import ValidationError

from clients.attachment_intake import AttachmentRefusedError, AttachmentSource
from contracts.errors import INVALID_ATTACHMENT
from contracts.session import OnBusy
from contracts.signals import SteerMode
from gateway.core import Decision, check_request_id, parse_decision, parse_mode, parse_on_busy
from gateway.core.inputs import first_problem
from gateway.errors import GatewayError

__all__ = ["AskProps", "ask_props", "decisions", "last_user_files", "last_user_text", "parse_run_input"]


@dataclass(frozen=True)
class AskProps:
    """The session's busy policy for this ask, from `forwardedProps`."""

    on_busy: OnBusy = "reject"
    mode: SteerMode = "queue"
    expected_last_request: str | None = None


def parse_run_input(raw: object) -> RunAgentInput:
    """The request body as a `RunAgentInput`.

    Raises:
        GatewayError: 400 `invalid_input` naming the first problem.
    """
    try:
        return RunAgentInput.model_validate(raw)
    except ValidationError as err:
        raise GatewayError.invalid_input(f"not an AG-UI RunAgentInput: {first_problem(err)}") from None


def _last_user(run_input: RunAgentInput) -> UserMessage:
    message = next((m for m in reversed(run_input.messages) if isinstance(m, UserMessage)), None)
    if message is None:
        raise GatewayError.invalid_input("the run has no user message to answer (and no resume entries)")
    return message


def last_user_text(run_input: RunAgentInput) -> str:
    """The text of the last user message (its text parts, joined).

    Raises:
        GatewayError: 400 `invalid_input` when there is none.
    """
    message = _last_user(run_input)
    if isinstance(message.content, str):
        return message.content
    return "".join(part.text for part in message.content if isinstance(part, TextPart))


def last_user_files(run_input: RunAgentInput) -> list[AttachmentSource]:
    """The media parts of the last user message, as sources (the module docstring).

    Raises:
        GatewayError: 400 `invalid_input` when there is no user message; `invalid_attachment` for a
            `file` source that names no file of this gateway, or a URL that is not one.
    """
    message = _last_user(run_input)
    if isinstance(message.content, str):
        return []
    files: list[AttachmentSource] = []
    for part in message.content:
        if isinstance(part, TextPart):
            continue
        name = _part_name(part.metadata)
        source = part.source
        try:
            if isinstance(source, DataSource):
                files.append(AttachmentSource(name=name, media_type=source.mime_type, base64=source.value))
            elif isinstance(source, UrlSource):
                files.append(AttachmentSource.of_url(source.value, name=name, media_type=source.mime_type))
            elif isinstance(source, FileSource):  # pyright: ignore[reportUnnecessaryIsInstance]
                found = AttachmentSource.of_url(source.value, name=name, media_type=source.mime_type)
                if found.file_id is None:
                    raise AttachmentRefusedError(
                        INVALID_ATTACHMENT,
                        f"a {part.type} part's file source must name a file of this gateway (f-...)",
                    )
                files.append(found)
        except AttachmentRefusedError as refused:
            raise GatewayError.refused(refused.code, refused.message) from None
    return files


def _part_name(metadata: object) -> str | None:
    """A media part's file name: its metadata's `filename` or `name`, if a string."""
    if not isinstance(metadata, dict):
        return None
    fields = cast("dict[str, object]", metadata)
    name = fields.get("filename", fields.get("name"))
    return name if isinstance(name, str) and name else None


def ask_props(run_input: RunAgentInput) -> AskProps:
    """`on_busy`, `mode` and `expected_last_request` from `forwardedProps` (other keys are ignored).

    Raises:
        GatewayError: 400 `invalid_input` for a value outside its choices.
    """
    raw: object = run_input.forwarded_props or {}
    if not isinstance(raw, dict):
        raise GatewayError.invalid_input("forwardedProps must be an object")
    props = cast("dict[str, object]", raw)
    expected = props.get("expected_last_request")
    return AskProps(
        parse_on_busy(props.get("on_busy")),
        parse_mode(props.get("mode")),
        None if expected is None else check_request_id(expected, "expected_last_request"),
    )


def decisions(run_input: RunAgentInput) -> list[Decision]:
    """The resume entries as decisions (the interrupt id is the call id; `cancelled` denies).

    Raises:
        GatewayError: 400 `invalid_input` for a payload that is not `{"approved": bool, ...}`.
    """
    found: list[Decision] = []
    for entry in run_input.resume or []:
        if entry.status == "cancelled":
            found.append(Decision(approved=False, reason="cancelled by the user", call_id=entry.interrupt_id))
            continue
        decision = parse_decision(entry.payload, f"the payload of resume entry {entry.interrupt_id!r}")
        found.append(decision.model_copy(update={"call_id": entry.interrupt_id}))
    return found
