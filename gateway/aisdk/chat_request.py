"""The AI SDK's chat request (what `DefaultChatTransport` POSTs), read into a protocol-neutral request.

The SDK sends `{"id": <chat id>, "messages": [UIMessage...], "trigger": "submit-message", "messageId"?,
...the transport's extra body}`. `parse_chat_request` reads:

- `id`: the thread (a thread id, `gateway.owners.THREAD_ID_PATTERN`);
- the last message: a **user** message is the ask: its `text` parts, joined by blank lines, its
  `file` parts (`{"type": "file", "mediaType", "filename"?, "url"}`, the `url` a data URL, an
  http(s) URL or a file id `f-...` / `/api/files/f-...`) its attachments, as sources the intake
  reads after (`gateway.core.attachments`: nothing is decoded here); other part types carry
  nothing to ask. Its `id` is the request's id (a retried POST of the same message is the same
  request, with the same file ids);
- or an **assistant** message whose tool parts are in state `approval-responded` (what
  `addToolApprovalResponse` leaves in the message the SDK sends next): each is a decision on the
  call `approval.id` names (`approved`, `reason`), for the request that message answers (its `id`
  is `<request id>:answer`, as the stream's `start` gave it).

- `trigger: "regenerate-message"` (`regenerate()`): a regenerate (`ChatRequest.regenerate`) of
  the request `messageId` names (an answer's `<request id>:answer`, or a user message's id;
  none: the thread's last request); the messages are not read.
- `messageId` with `submit-message` (`sendMessage({text, messageId})`, the SDK's edit) naming
  the last message: an edit (`ChatRequest.edits`) of that earlier user message when its text
  differs from the thread's (docs/branches.md).

The rest of `messages` is the client's copy of the conversation and is ignored: the session's
thread is the truth. Anything else is refused by name (400 `invalid_input`): a body that is not
an object, no messages, a bad id, another `trigger`, a last message with nothing to ask and no
decision, a blank or over-long ask.

The transport's extra body (`DefaultChatTransport({body: ...})`, or `sendMessage(msg, {body})`)
may carry the busy policy, as AG-UI's `forwardedProps` does: `on_busy` (`reject`, `enqueue`,
`steer`, `interrupt`, `rollback`), `mode` (a steer's: `queue` or `interrupt`) and
`expected_last_request`; a value outside its choices is 400 `invalid_input`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

from clients.attachment_intake import AttachmentRefusedError, AttachmentSource
from contracts.errors import PAYLOAD_TOO_LARGE
from contracts.limits import MAX_QUERY_CHARS
from contracts.session import OnBusy
from contracts.signals import SteerMode
from conversation.attachments import Attachment
from gateway.aisdk.chunks import request_id_of_answer
from gateway.core import check_request_id, parse_mode, parse_on_busy
from gateway.errors import GatewayError
from gateway.owners import check_thread_id

__all__ = ["MESSAGE_ID_PATTERN", "ApprovalAnswer", "ChatRequest", "parse_chat_request"]

MESSAGE_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
"""A message id the gateway takes as a request id (the SDK's own ids are 16 alphanumerics)."""
MAX_REASON_CHARS = 2_000
_TOOL_PART = re.compile(r"^tool-.+$|^dynamic-tool$")


@dataclass(frozen=True)
class ApprovalAnswer:
    """A decision on a tool call waiting for approval."""

    call_id: str
    approved: bool
    reason: str | None = None


@dataclass(frozen=True)
class ChatRequest:
    """What a chat request asks: a new message (`ask`), or decisions on waiting calls (`approvals`).

    `message_id` is the id of the request: the user message's id for an ask, the one the
    assistant message's id names (`<request id>:answer`, as the stream's `start` gave it) for
    decisions.
    """

    thread_id: str
    message_id: str
    ask: str | None = None
    files: tuple[AttachmentSource, ...] = ()
    """The user message's file parts, in order (not read yet)."""
    attached: tuple[Attachment, ...] = ()
    """Files taken in already, asked before `files`: a regenerate's, the regenerated message's."""
    approvals: tuple[ApprovalAnswer, ...] = ()
    on_busy: OnBusy = "reject"
    mode: SteerMode = "queue"
    expected_last_request: str | None = None
    regenerate: bool = False
    """A regenerate of request `message_id` ("": the thread's last request)."""
    edits: bool = False
    """The ask may edit the earlier user message of its id (`messageId` named it)."""


def parse_chat_request(body: object) -> ChatRequest:
    """The chat request of the SDK's JSON `body`.

    Raises:
        GatewayError: 400 `invalid_input` (or `unsupported_content`), naming what is wrong.
    """
    if not isinstance(body, dict):
        raise GatewayError.invalid_input("the chat request must be a JSON object")
    request: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]
    chat_id = request.get("id")
    if not isinstance(chat_id, str):
        raise GatewayError.invalid_input("`id` (the chat's id: the thread) must be a string")
    thread_id = check_thread_id(chat_id)
    trigger = request.get("trigger", "submit-message")
    if trigger not in ("submit-message", "regenerate-message"):
        raise GatewayError.invalid_input("`trigger` must be `submit-message` or `regenerate-message`")
    named = request.get("messageId")
    if named is not None and (not isinstance(named, str) or not MESSAGE_ID_PATTERN.fullmatch(named)):
        raise GatewayError.invalid_input(f"`messageId` must match {MESSAGE_ID_PATTERN.pattern}")
    if trigger == "regenerate-message":
        regenerated = request_id_of_answer(named) if named is not None else ""
        return ChatRequest(thread_id, regenerated, regenerate=True, **_policy(request))
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise GatewayError.invalid_input("`messages` must be a non-empty array of UI messages")
    last: object = messages[-1]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(last, dict):
        raise GatewayError.invalid_input("the last message must be a UI message object")
    message: dict[str, Any] = last  # pyright: ignore[reportUnknownVariableType]
    message_id = message.get("id")
    if not isinstance(message_id, str) or not MESSAGE_ID_PATTERN.fullmatch(message_id):
        raise GatewayError.invalid_input(f"the last message's `id` must match {MESSAGE_ID_PATTERN.pattern}")
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise GatewayError.invalid_input("the last message's `parts` must be an array")
    role = message.get("role")
    if role == "user":
        ask, files = _ask(parts)  # pyright: ignore[reportUnknownArgumentType]
        return ChatRequest(thread_id, message_id, ask, files, edits=named == message_id, **_policy(request))
    if role == "assistant":
        approvals = _approvals(parts)  # pyright: ignore[reportUnknownArgumentType]
        if approvals:
            return ChatRequest(thread_id, request_id_of_answer(message_id), approvals=approvals)
        raise GatewayError.invalid_input("the last message is the assistant's, without approval responses")
    raise GatewayError.invalid_input("the last message must be the user's (or carry approval responses)")


def _file(part: dict[str, Any]) -> AttachmentSource:
    media_type, name, url = part.get("mediaType"), part.get("filename"), part.get("url")
    if not isinstance(url, str):
        raise GatewayError.invalid_input(
            "a file part's `url` must be a string (a data URL, or an http(s) URL)"
        )
    if not isinstance(media_type, str) or not media_type:
        raise GatewayError.invalid_input("a file part's `mediaType` must be a media type such as image/png")
    if name is not None and not isinstance(name, str):
        raise GatewayError.invalid_input("a file part's `filename` must be a string")
    try:
        return AttachmentSource.of_url(url, name=name, media_type=media_type)
    except AttachmentRefusedError as refused:
        raise GatewayError.refused(refused.code, refused.message) from None


class _Policy(TypedDict):
    on_busy: OnBusy
    mode: SteerMode
    expected_last_request: str | None


def _policy(request: dict[str, Any]) -> _Policy:
    """The busy policy of the transport's extra body."""
    expected = request.get("expected_last_request")
    return {
        "on_busy": parse_on_busy(request.get("on_busy")),
        "mode": parse_mode(request.get("mode")),
        "expected_last_request": None
        if expected is None
        else check_request_id(expected, "expected_last_request"),
    }


def _ask(parts: list[object]) -> tuple[str, tuple[AttachmentSource, ...]]:
    texts: list[str] = []
    files: list[AttachmentSource] = []
    for part in parts:
        if not isinstance(part, dict):
            raise GatewayError.invalid_input("each message part must be an object")
        kind = part.get("type")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if kind == "file":
            files.append(_file(part))  # pyright: ignore[reportUnknownArgumentType]
        if kind == "text":
            text = part.get("text")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if not isinstance(text, str):
                raise GatewayError.invalid_input("a text part's `text` must be a string")
            texts.append(text)
    ask = "\n\n".join(texts)
    if not ask.strip():
        raise GatewayError.invalid_input("the last user message has no text to ask")
    if len(ask) > MAX_QUERY_CHARS:
        message = f"the message is {len(ask):,} characters; the limit is {MAX_QUERY_CHARS:,}"
        raise GatewayError(413, PAYLOAD_TOO_LARGE, message)
    return ask, tuple(files)


def _approvals(parts: list[object]) -> tuple[ApprovalAnswer, ...]:
    found: dict[str, ApprovalAnswer] = {}
    for part in parts:
        if not isinstance(part, dict):
            raise GatewayError.invalid_input("each message part must be an object")
        fields: dict[str, Any] = part  # pyright: ignore[reportUnknownVariableType]
        kind = fields.get("type")
        responded = fields.get("state") == "approval-responded"
        if not responded or not isinstance(kind, str) or not _TOOL_PART.fullmatch(kind):
            continue
        approval = fields.get("approval")
        if not isinstance(approval, dict):
            raise GatewayError.invalid_input("an `approval-responded` tool part must carry `approval`")
        decision: dict[str, Any] = approval  # pyright: ignore[reportUnknownVariableType]
        call_id, approved, reason = decision.get("id"), decision.get("approved"), decision.get("reason")
        if not isinstance(call_id, str) or not MESSAGE_ID_PATTERN.fullmatch(call_id):
            raise GatewayError.invalid_input(f"an approval's `id` must match {MESSAGE_ID_PATTERN.pattern}")
        if not isinstance(approved, bool):
            raise GatewayError.invalid_input("an approval's `approved` must be true or false")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
            message = f"an approval's `reason` must be a string of at most {MAX_REASON_CHARS} characters"
            raise GatewayError.invalid_input(message)
        if call_id in found:
            raise GatewayError.invalid_input(f"call {call_id} is decided twice")
        found[call_id] = ApprovalAnswer(call_id, approved, reason or None)
    return tuple(found.values())
