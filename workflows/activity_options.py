"""Activity options in one order: table default -> deployment override -> per-agent config.

Each layer wins over the one before it, field by field:

1. **Table default**: `ActivitySpec.defaults` in `contracts.activities`, one per activity.
2. **Deployment override**: an `ActivityOverride` per activity name, from the plugin's
   arguments or the environment, installed on a worker by `ActivityOptionsInterceptor`.
3. **Per-agent config**: the run's `AgentConfig` (`llm_timeout_s`, `llm_max_attempts` for
   `llm_call` and `summarize`; `tool_timeout_s`, `tool_max_retries`, `tool_retry_backoff_s` for
   `run_tool`), for each field the config sets to something other than its default. A session's
   ask overrides are already merged into the config of the run they start.

The interceptor hands its overrides to workflow code as one of the worker's extern functions
(`WorkflowInterceptorClassInput.unsafe_extern_functions`, the SDK's channel from a worker's
interceptors into workflow code, in the sandbox and out of it). So the overrides belong to
the worker, not to a module: two workers in one process with different overrides do not see
each other's, and a workflow reads the same options on every replay of a task. Options are
not part of Temporal's replay check (only the activity types and their order are), so a
changed override never breaks a running workflow; it applies to activities scheduled after
the worker restarts with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import Any, cast

from temporalio import workflow
from temporalio.worker import Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from contracts.activities import ActivityOptions, ActivityOverride, ActivitySpec, check_overrides
from contracts.agent import AgentConfig

OVERRIDES_EXTERN = "durable_react_activity_overrides"
"""The extern function (a worker's) answering an activity name with its override's set fields."""

OverrideLookup = Callable[[str], Mapping[str, Any]]


class ActivityOptionsInterceptor(Interceptor):
    """Deployment overrides of activity options for the workflows of one worker.

    Add it to the worker (`Worker(..., interceptors=[ActivityOptionsInterceptor(...)])`;
    the plugin does). One per worker: a second replaces the first's overrides.
    """

    def __init__(self, overrides: Mapping[str, ActivityOverride]) -> None:
        """Keep `overrides` (activity name -> override).

        Raises:
            UnknownActivityError: if a name is not an activity of `contracts.activities.ACTIVITIES`.
        """
        check_overrides(overrides)
        self._fields = MappingProxyType({name: override.set_fields() for name, override in overrides.items()})

    @property
    def overrides(self) -> Mapping[str, Mapping[str, Any]]:
        """Each overridden activity's name and the option fields it sets."""
        return self._fields

    def _lookup(self, name: str) -> Mapping[str, Any]:
        return self._fields.get(name, {})

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """Expose the overrides to this worker's workflows; no per-workflow interceptor is needed."""
        externs = cast(MutableMapping[str, Any], input.unsafe_extern_functions)  # pyright: ignore[reportUnknownMemberType]
        externs[OVERRIDES_EXTERN] = self._lookup
        return None


def deployment_override(name: str) -> Mapping[str, Any]:
    """The option fields this worker's deployment sets for activity `name` (none without the interceptor)."""
    externs = cast(Mapping[str, Any], workflow.extern_functions())  # pyright: ignore[reportUnknownMemberType]
    lookup = cast(OverrideLookup | None, externs.get(OVERRIDES_EXTERN))
    return lookup(name) if lookup is not None else {}


def options_for(spec: ActivitySpec[Any, Any], config: AgentConfig | None = None) -> ActivityOptions:
    """The options of `spec`'s next call: table default, then deployment override, then the agent's."""
    options = spec.defaults.layered(deployment_override(spec.name))
    if config is not None:
        options = options.layered(spec.per_agent(config).set_fields())
    return options
