"""`/api/agents`: the agents, and those made at run time with their versions (`gateway.agents.routes`)."""

from gateway.agents.routes import routes

__all__ = ["routes"]
