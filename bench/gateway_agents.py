"""The agents `bench.gateway` runs the gateway with (`python gateway.py --agents bench.gateway_agents`).

`default`: a streamed scripted answer of 400 characters, 4 every 5 ms (no provider: what is
measured is the product and the gateway).
"""

from __future__ import annotations

from activities.tools.agent_profiles import AgentProfiles
from contracts import AgentConfig, ScriptTurn

ANSWER = "word " * 80


def streamed_agent() -> AgentConfig:
    """400 characters, 4 every 5 ms, streamed."""
    turn = ScriptTurn(content=ANSWER, chunk_chars=4, chunk_delay_s=0.005)
    return AgentConfig(model="scripted", script=[turn], stream=True)


agents = AgentProfiles()
agents.register("default", streamed_agent(), description="the benchmark's streamed scripted answer")
