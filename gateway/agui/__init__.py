"""AG-UI 1.0 over resumable SSE, over the request core.

`routes` (`POST /agui/{agent}` and the re-attaching GET), `input` (what a `RunAgentInput` asks,
checked first), `stream` (one AG-UI run as SSE), `render` (a run as AG-UI events with positions
made of durable facts: pure), `snapshot` (`MESSAGES_SNAPSHOT` and the interrupts of pending
approvals).
"""

from gateway.agui.routes import routes

__all__ = ["routes"]
