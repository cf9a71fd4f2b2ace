"""Agent profiles: named agents registered on the worker, which other agents may call as tools.

    profiles = AgentProfiles()
    profiles.register(
        "researcher",
        AgentConfig(model="gpt-4o-mini", system_prompt="You research.", tools=["web_search"]),
        description="Finds facts on the web and cites them",
    )
    worker = build_worker(client, agents=profiles)     # or DurableReactPlugin(agents=profiles)

A run whose config lists `agents=[AgentTool(name="researcher")]` offers the model a tool
`researcher` that takes `{"query": "..."}`; the `resolve_agents` activity gives the run
each named profile (its description and config), and calling the tool starts a child run
with that config. A profile's name follows the rules of tool names.

A profile's `config.webhook_url` is its default webhook: a session started with the profile's
config (the gateway's `--agents`, a schedule's agent) sends its requests' webhooks there when
neither the ask nor the session names one. It is checked against `REACT_WEBHOOK_ALLOW` here.
"""

from __future__ import annotations

from pydantic import JsonValue
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.tools._tool_definition import TOOL_NAME
from contracts.activities import RESOLVE_AGENTS_ACTIVITY
from contracts.agent import AgentConfig
from contracts.agent_profiles import AgentProfile, ResolveAgentsRequest
from contracts.errors import UNKNOWN_AGENT
from payloads.redaction import redact, redact_json
from settings.webhook_policy import WebhookPolicy

__all__ = ["AgentProfiles", "ResolveAgentsActivity"]

MAX_DESCRIPTION_CHARS = 4_000
"""Longest description the calling model reads (as for an inline `AgentTool`)."""


class AgentProfiles:
    """Named agent profiles (a config and the description the calling model reads)."""

    def __init__(self) -> None:
        self._profiles: dict[str, AgentProfile] = {}

    def register(self, name: str, config: AgentConfig, *, description: str = "") -> None:
        """Register the agent `name` with its config.

        Args:
            name: What runs call it by (`AgentTool.profile`, default the tool's name);
                letters, digits, `_` and `-`, at most 64 characters, like a tool's name.
            config: The child run's agent config.
            description: What the calling model reads of it, at most 4,000 characters
                (default: "Ask the <name> agent").

        Raises:
            ValueError: The name is invalid or already registered, the description too long,
                or `config.webhook_url` refused by the deployment's allow-list (named so).
            TypeError: `config` is not an `AgentConfig`.
        """
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(f"agent profile name {name!r} must match {TOOL_NAME.pattern}")
        if not isinstance(config, AgentConfig):  # pyright: ignore[reportUnnecessaryIsInstance] - users' code
            raise TypeError(
                f"agent profile {name!r}: config must be an AgentConfig, not {type(config).__name__}"
            )
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise ValueError(
                f"agent profile {name!r}: description is over {MAX_DESCRIPTION_CHARS:,} characters"
            )
        if name in self._profiles:
            raise ValueError(f"agent profile {name!r} is already registered")
        problem = config.webhook_url and WebhookPolicy.from_env().url_problem(config.webhook_url)
        if problem:
            raise ValueError(f"agent profile {name!r}: invalid_input: config.webhook_url: {problem}")
        self._profiles[name] = AgentProfile(name=name, description=description, config=config)

    def include(self, other: AgentProfiles) -> None:
        """Add every profile of `other`, or none of them if a name is already registered here.

        Raises:
            ValueError: Names that both have, all listed.
        """
        clashes = sorted(set(self._profiles) & set(other._profiles))
        if clashes:
            raise ValueError(f"agent profiles already registered: {', '.join(map(repr, clashes))}")
        self._profiles.update(other._profiles)

    def names(self) -> list[str]:
        """The registered profile names, sorted."""
        return sorted(self._profiles)

    def __contains__(self, name: object) -> bool:
        return name in self._profiles

    def __len__(self) -> int:
        return len(self._profiles)

    def __getitem__(self, name: str) -> AgentProfile:
        return self._profiles[name]

    def get(self, name: str) -> AgentProfile | None:
        """The profile registered as `name`, or None."""
        return self._profiles.get(name)


class ResolveAgentsActivity:
    """The `resolve_agents` activity, bound to the worker's `AgentProfiles`."""

    def __init__(self, profiles: AgentProfiles) -> None:
        self._profiles = profiles

    @activity.defn(name=RESOLVE_AGENTS_ACTIVITY)
    async def resolve_agents(self, request: ResolveAgentsRequest) -> list[AgentProfile]:
        """The profiles of the named agents, in the order asked.

        Raises:
            ApplicationError: Non-retryable, type `unknown_agent`, naming the unknown
                profiles and the available ones (redacted), if a name is not registered.
        """
        unknown = list(dict.fromkeys(name for name in request.names if name not in self._profiles))
        if unknown:
            available = ", ".join(self._profiles.names()) or "(none)"
            what = "unknown agent profile" if len(unknown) == 1 else "unknown agent profiles"
            message = f"{what}: {', '.join(map(repr, unknown))}; available profiles: {available}"
            details = {"unknown": redact_json(list[JsonValue](unknown))}
            raise ApplicationError(redact(message), details, type=UNKNOWN_AGENT, non_retryable=True)
        return [self._profiles[name] for name in request.names]
