"""An AG-UI edit: the messages a client sends differ from the thread before their end (docs/branches.md).

The gateway's own message ids name thread entries (`gateway.agui.snapshot`): `m-<seq>` a
session thread entry, `<request id>-m<n>` a message of that request's run (its user message is
the request's first user message in the thread). A client's user message with such an id and
another text than the thread's is an edit: the first one (in the client's order) is the message
the thread branches at, and it must be the last user message the client sends (an edit asks one
message: `invalid_input` otherwise). An `m-<seq>` naming no user message is
`unknown_message`; a `<x>-m<n>` whose `x` asked nothing in the thread is taken for the client's
own id. Messages with the client's own ids are not compared: they are new.
"""

from __future__ import annotations

import re

from ag_ui.core import RunAgentInput, TextPart, UserMessage

from clients.branches import MessageRef, find_user_message, unknown_message
from contracts.errors import NOT_FOUND
from gateway.core import RequestCore, Thread, temporal_reads
from gateway.errors import GatewayError
from gateway.owners import is_request_id

__all__ = ["edited_message", "message_ref"]

_SESSION_ID = re.compile(r"^m-(?P<seq>[0-9]{1,18})$")
_RUN_ID = re.compile(r"^(?P<request>.+)-m[0-9]{1,18}$")


def message_ref(message_id: str) -> MessageRef | None:
    """The thread message a gateway message id names (a seq or a request id), None for a client's own id."""
    session = _SESSION_ID.fullmatch(message_id)
    if session is not None:
        return int(session["seq"])
    run = _RUN_ID.fullmatch(message_id)
    if run is not None and is_request_id(run["request"]):
        return run["request"]
    return None


def _text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(part.text for part in message.content if isinstance(part, TextPart))


async def edited_message(
    core: RequestCore, thread: Thread, run_input: RunAgentInput
) -> tuple[MessageRef, str] | None:
    """The user message the client edited (its ref) and its new text, or None when it edited nothing.

    Raises:
        GatewayError: `unknown_message` (a gateway id naming no user message), `invalid_input`
            (user messages after the edited one).
    """
    users = [m for m in run_input.messages if isinstance(m, UserMessage)]
    named = [(i, m, ref) for i, m in enumerate(users) if (ref := message_ref(m.id)) is not None]
    if not named:
        return None
    try:
        with temporal_reads():
            entries = [entry async for entry in core.session(thread).thread()]  # once for every message
    except GatewayError as error:
        if error.code == NOT_FOUND:
            return None  # a thread that does not exist yet: nothing to edit
        raise
    for index, message, ref in named:
        entry = find_user_message(entries, ref)
        if entry is None:
            if isinstance(ref, str):
                continue  # not a request of the thread: the client's own id
            refused = unknown_message(ref)
            raise GatewayError.refused(refused.code, f"message {message.id!r}: {refused.message}")
        text = _text(message)
        if text == entry.payload.content:
            continue
        if index != len(users) - 1:
            raise GatewayError.invalid_input(
                f"message {message.id!r} is edited and user messages follow it: an edit asks one message"
            )
        return ref, text
    return None
