"""`/api/files`: a principal's attached files over HTTP (`gateway.files.routes`). docs/attachments.md."""

from gateway.files.routes import routes

__all__ = ["routes"]
