"""The evaluation report page: its files (`static/`); its data is `/api/evals` and `/api/usage`."""

from gateway.report.page import routes

__all__ = ["routes"]
