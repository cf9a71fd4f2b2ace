"""What an incoming A2A message asks for: a query, an approval decision or steer input, and the busy policy.

Text parts make the query (joined by newlines); a data part `{"approved": bool, "reason"?,
"arguments"?, "call_id"?}` is an approval decision for a task awaiting input; other data parts
are added to the query as JSON. File parts (bytes or URLs) are refused: the product's asks are
text (`unsupported_content`). The message's metadata may carry the session's busy policy:
`on_busy` (`reject`, `enqueue`, `steer`, `interrupt`, `rollback`), `expected_last_request`, and
for steer input to a working task `mode` (`queue` or `interrupt`).

Refusals are A2A errors whose `data.code` is the product's error code (docs/errors.md).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import Message
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from pydantic import JsonValue
from temporalio.service import RPCError

from clients.errors import RejectedError
from contracts.errors import INVALID_INPUT, PAYLOAD_TOO_LARGE, UNSUPPORTED_CONTENT
from gateway.errors import GatewayError

__all__ = ["Decision", "Incoming", "a2a_errors", "parse_message", "refusal"]

INPUT_CODES = frozenset({INVALID_INPUT, PAYLOAD_TOO_LARGE, "blank_content", "invalid_arguments"})
"""Product codes that say the request itself is wrong (A2A `InvalidParamsError`)."""
DECISION_KEYS = frozenset({"approved", "reason", "arguments", "call_id"})


@dataclass(frozen=True)
class Decision:
    """An approval decision sent as a data part."""

    approved: bool
    reason: str | None = None
    arguments: dict[str, JsonValue] | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Incoming:
    """A message's query text, approval decision and metadata."""

    text: str
    decision: Decision | None
    metadata: Mapping[str, Any]

    def option(self, name: str) -> str | None:
        """A string option of the metadata (`on_busy`, `expected_last_request`, `mode`).

        Raises:
            InvalidParamsError: the option is there but not a string.
        """
        value = self.metadata.get(name)
        if value is None or isinstance(value, str):
            return value
        raise refusal(INVALID_INPUT, f"metadata `{name}` must be a string")


def refusal(code: str, message: str) -> A2AError:
    """The A2A error for a refusal with a product error code (in `data.code`)."""
    kind = InvalidParamsError if code in INPUT_CODES else UnsupportedOperationError
    if code == UNSUPPORTED_CONTENT:
        kind = ContentTypeNotSupportedError
    return kind(message=message, data={"code": code})


def parse_message(message: Message, request_metadata: Mapping[str, Any]) -> Incoming:
    """The query, decision and options of `message`.

    Raises:
        ContentTypeNotSupportedError: a file part (`unsupported_content`).
        InvalidParamsError: no text and no decision, or a malformed decision (`invalid_input`).
    """
    texts: list[str] = []
    decision: Decision | None = None
    for part in message.parts:
        content = part.WhichOneof("content")
        if content == "text":
            texts.append(part.text)
        elif content == "data":
            value = _plain(MessageToDict(part)["data"])
            if isinstance(value, dict) and "approved" in value:
                decision = _decision(value)  # pyright: ignore[reportUnknownArgumentType]
            else:
                texts.append(json.dumps(value, ensure_ascii=False))
        else:
            raise refusal(
                UNSUPPORTED_CONTENT,
                f"this agent takes text and data parts only, not a {content or 'empty'} part",
            )
    text = "\n".join(texts)
    if decision is None and not text.strip():
        raise refusal(INVALID_INPUT, "the message has no text (and no approval decision)")
    metadata = {**request_metadata, **MessageToDict(message.metadata)}
    return Incoming(text, decision, metadata)


def _decision(value: dict[str, Any]) -> Decision:
    unknown = set(value) - DECISION_KEYS
    approved = value.get("approved")
    reason = value.get("reason")
    arguments = value.get("arguments")
    call_id = value.get("call_id")
    if (
        unknown
        or not isinstance(approved, bool)
        or not (reason is None or isinstance(reason, str))
        or not (arguments is None or isinstance(arguments, dict))
        or not (call_id is None or isinstance(call_id, str))
    ):
        raise refusal(
            INVALID_INPUT,
            'a decision is {"approved": true|false, "reason"?: string, "arguments"?: object, '
            '"call_id"?: string}',
        )
    return Decision(approved, reason, arguments, call_id)  # pyright: ignore[reportUnknownArgumentType]


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
    """Turn the product's refusals into A2A errors; anything else is an internal error without details."""
    try:
        yield
    except A2AError:
        raise
    except RejectedError as rejection:
        raise refusal(rejection.code, str(rejection)) from None
    except GatewayError as error:
        raise refusal(error.code, error.message) from None
    except RPCError:
        raise InternalError(
            message="the task could not be reached; try again", data={"code": "unavailable"}
        ) from None
