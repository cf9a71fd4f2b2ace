"""One's long-term memory over HTTP: `/api/memory/{agent}` on `gateway.core.memory.GatewayMemory` (`routes`).

docs/memory.md.
"""

from gateway.memory.routes import routes

__all__ = ["routes"]
