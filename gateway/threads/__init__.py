"""A principal's threads over HTTP, the whole `/api/threads` resource: one room.

`api` (list, view, fork, reset: the chat page's API), `background` (`POST .../requests` → 202
and its `GET .../requests/{id}?wait_s=N`), `thread_webhook` (`GET`/`PUT .../webhook`), `admin`
(what `agents:admin` reads: every principal's threads), `listing` (the one listing both views
use), `path_thread` (the thread a path names). Every operation is the request core's
(`gateway.core`). docs/gateway.md, docs/schedules-and-webhooks.md.
"""

from gateway.threads.routes import routes

__all__ = ["routes"]
