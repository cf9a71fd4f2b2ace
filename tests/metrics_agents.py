"""The agents of `tests/worker/test_prometheus_scrape.py`'s gateway (`--agents tests.metrics_agents`).

`default` adds 2 and 3 with the calculator, then streams its answer in pieces: an ask makes an
LLM call stream (a first token), a tool call and a second LLM call, in well under a second.
"""

from __future__ import annotations

from activities.tools.agent_profiles import AgentProfiles
from testing import answer, call_tools, scripted_agent, tool_call

ANSWER = "2 + 3 is 5."

agents = AgentProfiles()
agents.register(
    "default",
    scripted_agent(
        call_tools(tool_call("calculator", {"expression": "2 + 3"}, call_id="call-add")),
        answer(ANSWER).model_copy(update={"chunk_chars": 3, "chunk_delay_s": 0.01}),
        tools=["calculator"],
        stream=True,
        stream_interval_s=0.05,
    ),
    description="Adds 2 and 3",
)
