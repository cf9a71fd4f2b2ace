"""Agents that act on their own, over HTTP: `/api/schedules` on the typed client's `Schedules` (`api`).

A thread's background requests and default webhook are the threads' room (`gateway.threads`).
docs/schedules-and-webhooks.md.
"""

from gateway.schedules.api import routes

__all__ = ["routes"]
