"""A principal's thread with an agent, as the request core addresses it, and how Temporal's answers map.

`open_thread` is the one rule from a principal, an agent and a thread id to a session
(`gateway.owners`: the session's workflow id names its owner, so no table of owners exists).
`temporal_reads` is the one rule for what a read's failure means: a missing workflow, one that
is not a session, a request the session does not keep and another principal's thread all answer
`not_found`; Temporal not answering is `unavailable`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from contracts import Ack, AgentConfig
from contracts.errors import NOT_RUNNING, UNKNOWN_REQUEST
from gateway.context import GatewayContext, resolve_agent
from gateway.errors import GatewayError, not_found
from gateway.identity.principal import Principal
from gateway.owners import session_id

__all__ = ["Thread", "accepted", "open_thread", "temporal_reads"]

log = logging.getLogger(__name__)
_GONE = (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT)


@dataclass(frozen=True)
class Thread:
    """One of a principal's conversations with an agent: its session and the agent's config.

    `agent` is the agent's name (a route's `name@N` included: the thread is the agent's, whichever
    version asks); `agent_version` the version an ask of this thread runs now (None: a code
    profile), and `config` that version's config.
    """

    principal: Principal
    agent: str
    thread_id: str
    session_id: str
    config: AgentConfig
    agent_version: int | None = None


async def open_thread(ctx: GatewayContext, principal: Principal, agent: str, thread_id: str) -> Thread:
    """`principal`'s thread `thread_id` with `agent` (`name` or `name@N`; nothing is read of the session).

    Raises:
        GatewayError: 404 `unknown_agent` / `unknown_version`; 400 `invalid_input` for an agent or a
            thread id off its pattern; 503 `unavailable` (the store of agents did not answer).
    """
    found = await resolve_agent(ctx, agent)
    return Thread(
        principal,
        found.name,
        thread_id,
        session_id(principal, found.name, thread_id),
        found.config,
        found.version,
    )


@contextmanager
def temporal_reads(what: str = "thread") -> Iterator[None]:
    """Map a read's failures: gone or not the caller's is `not_found` (`what`), no answer `unavailable`.

    Raises:
        GatewayError: 404 `not_found`, 503 `unavailable`.
    """
    try:
        yield
    except RPCError as error:
        if error.status in _GONE:
            raise not_found(what) from None
        log.warning("a read of a %s failed: %s %s", what, error.status.name, error.message)
        raise GatewayError.unavailable() from None
    except WorkflowQueryFailedError:
        raise not_found(what) from None  # a workflow that is not a session (a run's id looks like one)
    except RejectedError as rejection:
        if rejection.code == UNKNOWN_REQUEST:
            raise not_found(what) from None
        raise GatewayError.refused(rejection.code, rejection.message) from None


def accepted(ack: Ack, refused: str) -> Ack:
    """`ack`, unless it is a refusal (then raised as a `GatewayError` with its code)."""
    if ack.status == "rejected":
        raise GatewayError.refused(ack.reason or NOT_RUNNING, ack.message or refused)
    return ack
