"""The chat page: its files (`static/`) and the agents' names (`page`); its API is `gateway.threads`."""

from gateway.chat.page import routes

__all__ = ["routes"]
