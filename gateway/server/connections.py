"""The gateway's connections, bounded: how long a request's headers may take, and how many may be open.

uvicorn closes a connection idle after a response (`timeout_keep_alive`) but never one that has not
finished its first request's headers: a client that connects and sends nothing (or a byte now and
then) holds a socket and a file descriptor for as long as it likes, and with enough of them
`accept()` fails for everyone, health checks included. `guarded_h11` is uvicorn's h11 protocol with
two bounds added:

- **Header time**: every request's headers, the first and each kept-alive one, must be whole within
  `header_timeout_s` of the connection opening (or of the previous response's end); else the
  connection is closed. A request whose headers came is never cut by this (an SSE stream lasts as
  long as it lasts).
- **Open connections**: at most `max_connections`. One more closes the connection that has waited
  longest for a request's headers (an idle or slow one); when every connection is busy with a
  request, the newcomer gets an immediate `503` and is closed. Health checks keep answering while
  idle connections pile up.

`raise_open_file_limit` lifts the process's soft limit of open files to its hard limit at start-up,
and `connection_budget` keeps `max_connections` under it, with room for the gateway's own files.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import OrderedDict
from dataclasses import dataclass

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "FILES_RESERVED",
    "ConnectionLimits",
    "connection_budget",
    "guarded_h11",
    "raise_open_file_limit",
]

FILES_RESERVED = 128
"""Open files kept for the gateway's own use (Temporal, logs, the payload store) under the limit."""
_REFUSAL_BODY = b'{"error": {"code": "unavailable", "message": "too many open connections: try again"}}'
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_REFUSAL_BODY), _REFUSAL_BODY)
)
_log = logging.getLogger("gateway.server.connections")


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a request's headers may take, and how many connections may be open at once."""

    header_timeout_s: float
    max_connections: int


class _IdleConnections:
    """The connections waiting for a request's headers, oldest first (the ones to close when full)."""

    def __init__(self) -> None:
        self._waiting: OrderedDict[asyncio.Transport, None] = OrderedDict()

    def add(self, transport: asyncio.Transport) -> None:
        self._waiting[transport] = None
        self._waiting.move_to_end(transport)

    def discard(self, transport: asyncio.Transport) -> None:
        self._waiting.pop(transport, None)

    def close_oldest(self) -> bool:
        """Close the connection that has waited longest; False when none waits."""
        while self._waiting:
            transport, _ = self._waiting.popitem(last=False)
            if not transport.is_closing():
                transport.close()
                return True
        return False


def guarded_h11(limits: ConnectionLimits) -> type[H11Protocol]:
    """The h11 protocol of uvicorn with `limits` (one class per server: its idle connections are its own)."""
    idle = _IdleConnections()

    class GuardedH11Protocol(H11Protocol):
        _header_deadline: asyncio.TimerHandle | None = None
        _awaited_scope: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections and not idle.close_oldest():
                _log.warning("refused a connection: %d open, every one busy", limits.max_connections)
                transport.write(_REFUSAL)
                transport.close()
                return
            self._await_headers()

        def handle_events(self) -> None:
            super().handle_events()
            if self.scope is not self._awaited_scope:  # a request's headers came: it is not idle
                self._stop_waiting()

        def on_response_complete(self) -> None:
            if not self.transport.is_closing():
                self._await_headers()  # first: a pipelined request's headers, already here, stop the wait
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            self._stop_waiting()
            self._awaited_scope = self.scope
            self._header_deadline = self.loop.call_later(limits.header_timeout_s, self._headers_late)
            idle.add(self.transport)

        def _stop_waiting(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None
            idle.discard(self.transport)

        def _headers_late(self) -> None:
            self._header_deadline = None
            idle.discard(self.transport)
            if self.scope is self._awaited_scope and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol


def raise_open_file_limit() -> int:
    """Lift the soft limit of open files to the hard limit; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return soft
    return hard


def connection_budget(max_connections: int, open_files: int) -> int:
    """`max_connections`, lowered to fit `open_files` with `FILES_RESERVED` to spare (at least 16)."""
    if open_files == resource.RLIM_INFINITY:
        return max_connections
    return max(16, min(max_connections, open_files - FILES_RESERVED))
