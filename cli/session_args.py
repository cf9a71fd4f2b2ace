"""Which session a session command means: --session, --conversation, or the first positional argument."""

from __future__ import annotations

from cli.errors import CliError
from clients.sessions import session_workflow_id


def session_id_of(session: str | None, conversation: str | None, first: str | None) -> str | None:
    """The session id: --session, --conversation, else the first positional (None: not given)."""
    if session is not None and conversation is not None:
        raise CliError("use --session or --conversation, not both")
    if conversation is not None:
        return session_workflow_id(conversation)
    return session if session is not None else first


def session_and_argument(
    session: str | None, conversation: str | None, first: str | None, second: str | None, name: str
) -> tuple[str, str | None]:
    """(session id, the other positional): with --session/--conversation, the first positional is `name`."""
    named = session_id_of(session, conversation, None)
    if named is None:
        if first is None:
            raise CliError("a SESSION_ID is required (or --session ID, or --conversation ID)")
        return first, second
    extra = second if name else first
    if extra is not None:
        also = f", so {first!r} is {name}" if name else ""
        raise CliError(f"unexpected argument {extra!r}: the session is given by an option{also}")
    return named, first


def resume_hint(session_id: str) -> str:
    """What Ctrl-C says: the session and its request go on without us."""
    return f"the session continues, see `python client.py status {session_id}`"
