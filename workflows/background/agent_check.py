"""The `AgentConfigCheck` workflow: whether the worker has every tool and agent profile a config names.

The gateway runs it before it writes a version of an agent made at run time
(`gateway.agent_catalog`), so a config naming a tool no worker registered is refused by name
(`unknown_tool`, `unknown_agent`) and nothing is written. It calls the activities a run calls when
it starts (`resolve_tools`, `resolve_agents`), with their options: the same answer a run would get.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

from contracts import AgentConfig, ResolveToolsRequest
from contracts.activities import RESOLVE_AGENTS, RESOLVE_TOOLS
from contracts.agent_profiles import AGENT_CHECK_WORKFLOW_TYPE, AgentCheckResult, ResolveAgentsRequest
from workflows.activity_calls import call_activity
from workflows.failures import run_error


@workflow.defn(name=AGENT_CHECK_WORKFLOW_TYPE)
class AgentConfigCheck:
    """Resolve a config's tools and agent profiles on the worker; the first refusal, or none."""

    @workflow.run
    async def run(self, config: AgentConfig) -> AgentCheckResult:
        """The first problem the worker finds (`code`, `message`), or an empty result."""
        try:
            if config.tools:
                await call_activity(RESOLVE_TOOLS, ResolveToolsRequest(names=list(config.tools)))
            profiles = [agent.profile or agent.name for agent in config.agents if agent.config is None]
            if profiles:
                await call_activity(RESOLVE_AGENTS, ResolveAgentsRequest(names=profiles))
        except ActivityError as err:
            error = run_error(err)
            return AgentCheckResult(code=error.type, message=error.message)
        return AgentCheckResult()
