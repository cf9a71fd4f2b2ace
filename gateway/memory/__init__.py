"""One's long-term memory through the gateway: `GatewayMemory` (every surface's rules) and its HTTP `routes`.

docs/memory.md.
"""

from gateway.memory.routes import routes
from gateway.memory.service import GatewayMemory

__all__ = ["GatewayMemory", "routes"]
