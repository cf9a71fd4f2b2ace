"""`/api/evals`: evaluations of the gateway's agents on pydantic-evals datasets (`gateway.evals.routes`)."""

from gateway.evals.routes import EvalsApi

__all__ = ["EvalsApi"]
