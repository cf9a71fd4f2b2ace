"""A2A: JSON-RPC at `/a2a/{agent}` and the agent cards, over the request core.

`routes` (the routes and agent cards), `handler` (one agent's request handler: every operation
is the core's), `messages` (what an incoming message asks; refusals as A2A errors), `tasks` (a
task is one request of a thread: the core's state as a task), `stream` (a task's live events).
"""

from gateway.a2a.routes import routes

__all__ = ["routes"]
