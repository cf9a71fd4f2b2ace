"""Agents that act on their own, over HTTP: schedules and background requests.

`routes` (the room's routes), `api` (`/api/schedules` on the typed client's `Schedules`),
`background` (`POST /api/threads/{agent}/{thread}/requests` → 202 and its
`GET .../requests/{id}?wait_s=N`: a thin adapter over the request core, `gateway.core`).
docs/schedules-and-webhooks.md.
"""

from gateway.schedules.routes import routes

__all__ = ["routes"]
