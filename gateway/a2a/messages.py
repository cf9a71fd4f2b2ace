"""What an incoming A2A message asks for: a query, an approval decision or steer input, and the busy policy.

Text parts make the query (joined by newlines); a data part `{"approved": bool, "reason"?,
"arguments"?, "call_id"?}` is an approval decision for a task awaiting input; other data parts
are added to the query as JSON. File parts (`raw` bytes or a `url`, with `filename` and
`media_type`) are the message's attachments, as sources the intake reads after
(`gateway.core.attachments`); a `url` is a data URL, an http(s) URL or a file id (`f-...`).
The message's metadata may carry the session's busy policy:
`on_busy` (`reject`, `enqueue`, `steer`, `interrupt`, `rollback`), `expected_last_request`, and
`mode` (`queue` or `interrupt`: how steer input reaches a working task), checked by the core's
rules (`gateway.core.inputs`). A decision is the core's `Decision`.

Refusals (`gateway.errors.GatewayError`) become A2A errors whose `data.code` is the product's
error code (docs/errors.md): `a2a_errors`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import Message, Part
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from temporalio.service import RPCError

from clients.attachment_intake import AttachmentRefusedError, AttachmentSource
from contracts.errors import (
    BLANK_CONTENT,
    INVALID_ARGUMENTS,
    INVALID_ATTACHMENT,
    INVALID_INPUT,
    MEDIA_TYPE_MISMATCH,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    TOO_MANY_ATTACHMENTS,
    UNAVAILABLE,
    UNSUPPORTED_CONTENT,
    UNSUPPORTED_MEDIA_TYPE,
    URL_REFUSED,
)
from gateway.core import Decision, parse_decision
from gateway.errors import GatewayError

__all__ = ["Incoming", "a2a_errors", "parse_message", "refusal"]

INPUT_CODES = frozenset(
    {
        INVALID_INPUT,
        PAYLOAD_TOO_LARGE,
        BLANK_CONTENT,
        INVALID_ARGUMENTS,
        TOO_MANY_ATTACHMENTS,
        MEDIA_TYPE_MISMATCH,
        INVALID_ATTACHMENT,
        URL_REFUSED,
    }
)
"""Product codes that say the request itself is wrong (A2A `InvalidParamsError`)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Incoming:
    """A message's query text, approval decision and metadata."""

    text: str
    decision: Decision | None
    metadata: Mapping[str, Any]
    files: tuple[AttachmentSource, ...] = ()

    def option(self, name: str) -> object:
        """An option of the metadata (`on_busy`, `expected_last_request`, `mode`), as sent."""
        return self.metadata.get(name)


def refusal(code: str, message: str) -> A2AError:
    """The A2A error for a refusal with a product error code (in `data.code`)."""
    if code == NOT_FOUND:
        return TaskNotFoundError(message=message, data={"code": code})
    if code == UNAVAILABLE:
        return InternalError(message=message, data={"code": code})
    kind = InvalidParamsError if code in INPUT_CODES else UnsupportedOperationError
    if code in (UNSUPPORTED_CONTENT, UNSUPPORTED_MEDIA_TYPE):
        kind = ContentTypeNotSupportedError
    return kind(message=message, data={"code": code})


def parse_message(message: Message, request_metadata: Mapping[str, Any]) -> Incoming:
    """The query, decision and options of `message`.

    Raises:
        ContentTypeNotSupportedError: an empty part (`unsupported_content`).
        GatewayError: no text and no decision, or a malformed decision (`invalid_input`); a file
            part's `url` that is not one (`invalid_attachment`).
    """
    texts: list[str] = []
    files: list[AttachmentSource] = []
    decision: Decision | None = None
    for part in message.parts:
        content = part.WhichOneof("content")
        if content == "text":
            texts.append(part.text)
        elif content in ("raw", "url"):
            files.append(_file(part, content))
        elif content == "data":
            value = _plain(MessageToDict(part)["data"])
            if isinstance(value, dict) and "approved" in value:
                decision = parse_decision(value, "a decision")  # pyright: ignore[reportUnknownArgumentType]
            else:
                texts.append(json.dumps(value, ensure_ascii=False))
        else:
            raise refusal(
                UNSUPPORTED_CONTENT,
                f"this agent takes text and data parts only, not a {content or 'empty'} part",
            )
    text = "\n".join(texts)
    if decision is None and not text.strip():
        raise GatewayError.invalid_input("the message has no text (and no approval decision)")
    metadata = {**request_metadata, **MessageToDict(message.metadata)}
    return Incoming(text, decision, metadata, tuple(files))


def _file(part: Part, content: str) -> AttachmentSource:
    """A file part as a source (`raw` bytes as they are; a `url` sorted by `AttachmentSource.of_url`)."""
    name, media_type = part.filename or None, part.media_type or None
    if content == "raw":
        return AttachmentSource(name=name, media_type=media_type, data=part.raw)
    try:
        return AttachmentSource.of_url(part.url, name=name, media_type=media_type)
    except AttachmentRefusedError as refused:
        raise GatewayError.refused(refused.code, refused.message) from None


def _plain(value: Any) -> Any:
    """A protobuf Value's JSON with whole floats back as ints (protobuf keeps every number a double)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


@contextlib.contextmanager
def a2a_errors() -> Iterator[None]:
    """Turn the product's refusals into A2A errors (`refusal`)."""
    try:
        yield
    except GatewayError as error:
        raise refusal(error.code, error.message) from None
    except RPCError as error:
        log.warning("Temporal did not answer an A2A call: %s %s", error.status.name, error.message)
        raise refusal(UNAVAILABLE, GatewayError.unavailable().message) from None
