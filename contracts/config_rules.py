"""The rules of an agent config beyond its model's bounds: the run's, the session's and a published version's.

`config_problems` is the one definition: a run checks it at its start (`workflows.validation`), a
session before it accepts an ask, and the typed client and the gateway before they write a version
of an agent made at run time (`clients.agents`). Pure: contracts only.
"""

from __future__ import annotations

from contracts.agent import AgentConfig
from contracts.ids import TOOL_NAME_PATTERN

__all__ = ["config_problems"]

# Credentials are read by the LLM activity from the worker's environment; they must
# never travel in workflow input, where they would be stored in history.
_SECRET_SUFFIXES = ("key", "_secret", "secret", "_token", "password", "credentials")


def _looks_secret(name: str) -> bool:
    lowered = name.lower()
    return lowered == "token" or any(lowered.endswith(suffix) for suffix in _SECRET_SUFFIXES)


def config_problems(cfg: AgentConfig, where: str = "config") -> list[str]:
    """Every problem with an agent config (and the configs of its inline agents)."""
    problems: list[str] = []
    if not cfg.model.strip():
        problems.append("config.model must not be blank")
    duplicates = sorted({name for name in cfg.tools if cfg.tools.count(name) > 1})
    if duplicates:
        problems.append(f"{where}.tools lists {', '.join(duplicates)} more than once")
    secrets = sorted(key for key in cfg.model_settings.extra if _looks_secret(key))
    if secrets:
        problems.append(
            f"{where}.model_settings.extra must not carry credentials ({', '.join(secrets)}): "
            "set them in the worker's environment"
        )
    return problems + _agent_problems(cfg, where)


def _agent_problems(cfg: AgentConfig, where: str) -> list[str]:
    problems: list[str] = []
    names = [agent.name for agent in cfg.agents]
    for agent in cfg.agents:
        if not TOOL_NAME_PATTERN.fullmatch(agent.name):
            problems.append(f"{where}.agents: name {agent.name!r} must match {TOOL_NAME_PATTERN.pattern}")
        if agent.config is not None and agent.profile is not None:
            problems.append(f"{where}.agents: {agent.name!r} gives both a profile and an inline config")
        if agent.config is not None:
            problems.extend(config_problems(agent.config, f"{where}.agents[{agent.name}].config"))
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"{where}.agents lists {', '.join(repeated)} more than once")
    clashes = sorted(set(names) & set(cfg.tools))
    if clashes:
        problems.append(f"{where}.agents and {where}.tools both name {', '.join(clashes)}")
    offered = set(names) | set(cfg.tools)
    unknown = sorted(set(cfg.approval_required) - offered)
    if unknown:
        problems.append(
            f"{where}.approval_required names {', '.join(unknown)}, which the config offers "
            "neither as a tool nor as an agent"
        )
    return problems
