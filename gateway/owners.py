"""Owners live in the session's workflow id (`gw/<principal>/<agent>/<thread>`): no state is needed.

A thread id is the caller's name for a conversation; the session of a principal's thread with an
agent is `session_id(...)`. Anything else (another principal's session, a session the gateway did
not create) is not this principal's, and looks exactly like one that does not exist.
"""

from __future__ import annotations

import hashlib
import re

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from contracts.ids import AGENT_NAME_PATTERN
from gateway.errors import GatewayError
from gateway.identity.principal import Principal

__all__ = [
    "MAX_THREAD_ID_CHARS",
    "PREFIX",
    "REQUEST_ID_PATTERN",
    "THREAD_ID_PATTERN",
    "check_thread_id",
    "fork_session_id",
    "fork_thread_id",
    "is_request_id",
    "parse_session_id",
    "request_id_for",
    "session_id",
]

PREFIX = "gw"
# At most 100 characters, and not `-run-<n>` at the end: that is a session's run (`<session>-run-<n>`).
# With a principal and an agent of at most 32 each, a session id has at most 169 characters, under
# the 200 a session id may have (`contracts.workflow_ids.MAX_SESSION_ID_CHARS`).
THREAD_ID_PATTERN = re.compile(r"^(?!.*-run-[0-9]+$)[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_THREAD_ID_CHARS = 100
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
"""A request id of a thread (an ask's idempotency key; `gateway.core.inputs` checks every protocol's)."""
_DIGEST_CHARS = 16
MAX_FORK_NUMBER = 1 << 20
"""The highest n of a fork's default thread id (`<thread>-fork-<n>`) the gateway looks for."""
_AGENT_PATTERN = AGENT_NAME_PATTERN
# A fork's default id from before the gateway chose its forks' ids (`fork_session_id`): the
# session's `<id>-fork-<n>`, or `<start of id>~<16 hex digits>-fork-<n>`, which may be too long.
_FORK_THREAD = re.compile(r"^(?P<base>[^~]+?)(?:~[0-9a-f]{16})?(?:-fork-[0-9]+)+$")


def check_thread_id(thread_id: str) -> str:
    """`thread_id`, if it matches `THREAD_ID_PATTERN`.

    Raises:
        GatewayError: 400 `invalid_input` naming the pattern.
    """
    if not THREAD_ID_PATTERN.fullmatch(thread_id):
        raise GatewayError.invalid_input(f"a thread id must match {THREAD_ID_PATTERN.pattern}")
    return thread_id


def is_request_id(value: str) -> bool:
    """Whether `value` matches `REQUEST_ID_PATTERN`."""
    return REQUEST_ID_PATTERN.fullmatch(value) is not None


def request_id_for(external_id: str) -> str:
    """The request id of an id a protocol gives (itself when it is a request id, else a hash of it)."""
    if is_request_id(external_id):
        return external_id
    # JSON may carry a lone surrogate (`"\ud800"`): hashed as it is, never an error.
    return "r-" + hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_id(principal: Principal, agent: str, thread_id: str) -> str:
    """The session workflow id of `principal`'s thread `thread_id` with `agent`.

    Raises:
        GatewayError: 400 `invalid_input` for a thread id (or agent name) that does not match its pattern.
    """
    if not _AGENT_PATTERN.fullmatch(agent):
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
    fork = None if THREAD_ID_PATTERN.fullmatch(thread) else _FORK_THREAD.fullmatch(thread)
    base = fork["base"] if fork is not None else thread
    if not sep or not _AGENT_PATTERN.fullmatch(agent) or not THREAD_ID_PATTERN.fullmatch(base):
        return None
    return agent, thread


def fork_thread_id(thread_id: str, n: int) -> str:
    """The default thread id of fork `n` of `thread_id`: `<thread_id>-fork-<n>`, cut to fit a thread id.

    When that is over `MAX_THREAD_ID_CHARS`, the start of `thread_id` is kept, then `.` and 16 hex
    digits of its SHA-256, then `-fork-<n>`: a fork of a fork of a long thread id fits too.
    """
    suffix = f"-fork-{n}"
    plain = thread_id + suffix
    if len(plain) <= MAX_THREAD_ID_CHARS:
        return plain
    digest = "." + hashlib.sha256(thread_id.encode()).hexdigest()[:_DIGEST_CHARS]
    return thread_id[: MAX_THREAD_ID_CHARS - len(digest) - len(suffix)] + digest + suffix


async def fork_session_id(
    client: Client, principal: Principal, agent: str, thread_id: str, new_thread_id: str | None = None
) -> str:
    """The session id of a new fork of `principal`'s `thread_id`: of `new_thread_id`, else a default one.

    The gateway names its forks itself, so every fork's thread id fits the thread-id rule (the
    session's own default, `<session id>-fork-<n>`, may not: a thread id of 94 characters and
    more made forks no route would take). The default is `fork_thread_id(thread_id, n)` with the
    lowest n no workflow has taken (found in a few reads: n doubles, then halves back). Two forks
    racing for one n: the second is refused by the session (`invalid_input`, the id is taken).

    Raises:
        GatewayError: 400 `invalid_input` for a thread id (or agent name) that does not match its pattern.
    """
    if new_thread_id is not None:
        return session_id(principal, agent, new_thread_id)
    session_id(principal, agent, thread_id)  # the parent's id is checked first

    async def taken(n: int) -> bool:
        return await _workflow_exists(client, session_id(principal, agent, fork_thread_id(thread_id, n)))

    high = 1
    while await taken(high):
        if high >= MAX_FORK_NUMBER:
            raise GatewayError.invalid_input("this thread has too many forks: pass the fork's thread id")
        high *= 2
    low = high // 2  # taken (or 0); high is free: the lowest free n above low is found in between
    while high - low > 1:
        middle = (low + high) // 2
        if await taken(middle):
            low = middle
        else:
            high = middle
    return session_id(principal, agent, fork_thread_id(thread_id, high))


async def _workflow_exists(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
