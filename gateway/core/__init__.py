"""The gateway's request core: every operation on a thread's requests, once, for every protocol.

`gateway.core.threads` (a principal's thread: the session it is, and what Temporal's answers mean),
`gateway.core.inputs` (request ids, the busy policy, the decision model, checked once),
`gateway.core.requests` (`RequestCore`, of five parts: its reads, where a request stands included,
its asks, the controls of a running request, the thread operations and the waits),
`gateway.core.follow` (a run's events through the hub, then its result; `RequestWaits.follow` builds
every stream of a request on it), `gateway.core.request_fold` (a request's run as text parts, under
every renderer), `gateway.core.streams` (the streaming ask, and what streaming responses share),
`gateway.core.memory` (`GatewayMemory`: the caller's memory items, for the memory routes and the MCP
memory tools). Refusals are `gateway.errors.GatewayError`. The protocol adapters (`gateway.agui`,
`gateway.a2a`, `gateway.mcp`, `gateway.chat`) import this package, never each other.
"""

from gateway.core.erase import Erased
from gateway.core.follow import RunEnd, follow_run, is_terminal
from gateway.core.inputs import (
    Decision,
    check_request_id,
    is_request_id,
    parse_decision,
    parse_mode,
    parse_on_busy,
    request_id_for,
)
from gateway.core.request_state import ENDED, RequestState, RequestStatus, ended_state
from gateway.core.request_waits import Ended, Paused, RequestView
from gateway.core.requests import RequestCore
from gateway.core.thread_operations import Forked
from gateway.core.threads import Thread, open_thread, temporal_reads

__all__ = [
    "ENDED",
    "Decision",
    "Ended",
    "Erased",
    "Forked",
    "Paused",
    "RequestCore",
    "RequestState",
    "RequestStatus",
    "RequestView",
    "RunEnd",
    "Thread",
    "check_request_id",
    "ended_state",
    "follow_run",
    "is_request_id",
    "is_terminal",
    "open_thread",
    "parse_decision",
    "parse_mode",
    "parse_on_busy",
    "request_id_for",
    "temporal_reads",
]
