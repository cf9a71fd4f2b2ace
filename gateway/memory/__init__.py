"""One's long-term memory over HTTP: `/api/memory/{agent}` on the typed client's `Memory` (`routes`).

docs/memory.md.
"""

from gateway.memory.routes import routes

__all__ = ["routes"]
