"""The agents of a `python gateway.py --agents tests.gateway_agents` process in the tests.

`default` adds 2 and 3 with the calculator, then streams `SLOW_ANSWER` for about 26 seconds (4
characters a second): time enough to kill a gateway mid answer and start another, also on a busy
machine where a new `gateway.py` takes 10 s and more to answer `/readyz` (at 0.3 s a chunk, CI once
saw the run end before the successor was up).
"""

from __future__ import annotations

from activities.tools.agent_profiles import AgentProfiles
from contracts import AgentConfig
from testing import answer, call_tools, scripted_agent, tool_call

SLOW_ANSWER = "Five, counted slowly and durably. " * 3


def slow_adder(chunk_delay_s: float) -> AgentConfig:
    """Adds 2 and 3 (`call-add`), then streams `SLOW_ANSWER`, 4 characters every `chunk_delay_s`."""
    return scripted_agent(
        call_tools(tool_call("calculator", {"expression": "2 + 3"}, call_id="call-add")),
        answer(SLOW_ANSWER).model_copy(update={"chunk_chars": 4, "chunk_delay_s": chunk_delay_s}),
        tools=["calculator"],
        stream=True,
        stream_interval_s=0.05,
        llm_timeout_s=60.0,
    )


agents = AgentProfiles()
agents.register("default", slow_adder(1.0), description="Adds slowly")
