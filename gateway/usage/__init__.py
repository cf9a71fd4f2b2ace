"""Usage an organization can see over HTTP: `GET /api/usage` on the store's usage rows (`routes`).

docs/usage.md.
"""

from gateway.usage.routes import UsageApi, routes

__all__ = ["UsageApi", "routes"]
