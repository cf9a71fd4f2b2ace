"""The chat page: its files (`static/`) and the small REST API it needs beside AG-UI (`api`)."""

from gateway.chat.api import routes

__all__ = ["routes"]
