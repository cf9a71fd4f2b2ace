"""The request core: what a caller can do with a thread's requests, in product terms, for every protocol.

Each operation has one place, in one of the core's five parts, and every protocol adapter
(AG-UI, the AI SDK, A2A, MCP, the chat page) calls it through `RequestCore`; refusals are
`gateway.errors.GatewayError` with a product code, which each adapter maps to its own shape.

- `reads` (`gateway.core.request_reads`): the session's status, its requests' records, where a
  request stands (`state`, one model: `gateway.core.request_state.RequestState`), a run's
  pending approvals and the one rule of "still awaiting approval" (`awaiting`).
- `asks` (`gateway.core.request_asks`): `ask`, under the busy policy, the principal's
  active-request slots and the reused-request-id check.
- `controls` (`gateway.core.request_controls`): `steer`, `approve`, `cancel` of the running request.
- `threads` (`gateway.core.thread_operations`): `fork`, `rename`, `reset`, `erase`,
  `erase_principal`, `set_webhook`.
- `waits` (`gateway.core.request_waits`): `follow` (every stream of a request, until it pauses
  or ends), `until_started`, `wait`, `settled`, `state_at`, `recorded`.

The parts share nothing but the reads they are built on: each holds its own state (the asks the
active-request slots' client, the thread operations the memory-store client).
"""

from __future__ import annotations

from clients.session_handle import SessionHandle
from gateway.context import GatewayContext
from gateway.core.request_asks import RequestAsks
from gateway.core.request_controls import RequestControls
from gateway.core.request_reads import RequestReads
from gateway.core.request_waits import RequestWaits
from gateway.core.thread_operations import ThreadOperations
from gateway.core.threads import Thread

__all__ = ["RequestCore"]


class RequestCore:
    """The operations on a thread's requests (see the module docstring), over the typed client and the hub."""

    def __init__(self, ctx: GatewayContext) -> None:
        """The core of the gateway `ctx`: its five parts, built once."""
        self.reads = RequestReads(ctx)
        self.asks = RequestAsks(ctx, self.reads)
        self.waits = RequestWaits(ctx, self.reads)
        self.controls = RequestControls(ctx, self.reads, self.waits)
        self.threads = ThreadOperations(ctx, self.reads)

    def session(self, thread: Thread) -> SessionHandle:
        """The typed client's handle of the thread's session."""
        return self.reads.session(thread)
