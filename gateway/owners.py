"""Owners live in the session's workflow id (`gw/<principal>/<agent>/<thread>`): no state is needed.

A thread id is the caller's name for a conversation; the session of a principal's thread with an
agent is `session_id(...)`. Anything else (another principal's session, a session the gateway did
not create) is not this principal's, and looks exactly like one that does not exist.
"""

from __future__ import annotations

import re

from gateway.auth import Principal
from gateway.errors import GatewayError

__all__ = ["PREFIX", "THREAD_ID_PATTERN", "check_thread_id", "parse_session_id", "session_id"]

PREFIX = "gw"
# At most 100 characters, and not `-run-<n>` at the end: that is a session's run (`<session>-run-<n>`).
# With a principal and an agent of at most 32 each, a session id has at most 169 characters, under
# the 200 a session id may have (`contracts.workflow_ids.MAX_SESSION_ID_CHARS`).
THREAD_ID_PATTERN = re.compile(r"^(?!.*-run-[0-9]+$)[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_AGENT_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
# A fork's default id: `<id>-fork-<n>`, or `<start of id>~<16 hex digits>-fork-<n>` when too long.
_FORK_THREAD = re.compile(r"^(?P<base>[^~]+?)(?:~[0-9a-f]{16})?(?:-fork-[0-9]+)+$")


def check_thread_id(thread_id: str) -> str:
    """`thread_id`, if it matches `THREAD_ID_PATTERN`.

    Raises:
        GatewayError: 400 `invalid_input` naming the pattern.
    """
    if not THREAD_ID_PATTERN.match(thread_id):
        raise GatewayError.invalid_input(f"a thread id must match {THREAD_ID_PATTERN.pattern}")
    return thread_id


def session_id(principal: Principal, agent: str, thread_id: str) -> str:
    """The session workflow id of `principal`'s thread `thread_id` with `agent`.

    Raises:
        GatewayError: 400 `invalid_input` for a thread id (or agent name) that does not match its pattern.
    """
    if not _AGENT_PATTERN.match(agent):
        raise GatewayError.invalid_input(f"an agent name must match {_AGENT_PATTERN.pattern}")
    return f"{PREFIX}/{principal.name}/{agent}/{check_thread_id(thread_id)}"


def parse_session_id(principal: Principal, session_id: str) -> tuple[str, str] | None:
    """(agent, thread id) of one of `principal`'s sessions; None when it is not theirs.

    A fork's default id (`<id>-fork-<n>`) keeps the prefix, so a fork stays its owner's.
    """
    prefix, sep, rest = session_id.partition("/")
    if prefix != PREFIX or not sep:
        return None
    owner, sep, rest = rest.partition("/")
    if owner != principal.name or not sep:
        return None
    agent, sep, thread = rest.partition("/")
    fork = None if THREAD_ID_PATTERN.match(thread) else _FORK_THREAD.match(thread)
    base = fork["base"] if fork is not None else thread
    if not sep or not _AGENT_PATTERN.match(agent) or not THREAD_ID_PATTERN.match(base):
        return None
    return agent, thread
