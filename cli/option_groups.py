"""Option groups: options that several commands share, declared once as a frozen dataclass.

A command takes a group as one keyword-only parameter (`*, agent: AgentOptions`) and is
registered through `with_groups`, which shows Typer the group's fields in that place (each
with its own `Annotated` option and default, so `--help` lists them where the group stands)
and calls the command with the group built from them. A group may hold another group.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

import typer

from cli.common import Target, target_of
from cli.inputs import AgentFlags
from cli.params import (
    AddressOpt,
    AgentIdOpt,
    ApiBaseOpt,
    ApprovalOpt,
    ConversationOpt,
    ExpectedLastOpt,
    IterationsOpt,
    ModelOpt,
    NamespaceOpt,
    NoStreamOpt,
    OnBusyOpt,
    PromptOpt,
    ScriptOpt,
    SessionArg,
    SessionOpt,
    SessionWebhookOpt,
    SnapshotOpt,
    ToolOpt,
)
from clients.sessions import DEFAULT_AGENT_ID

R = TypeVar("R")


class OptionGroup:
    """The base of the option groups (a frozen dataclass whose fields are `Annotated` options)."""


def _is_group(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, OptionGroup)


def _fields(group: type[OptionGroup]) -> list[inspect.Parameter]:
    """The group's options as keyword-only parameters, a nested group's in its place."""
    hints = get_type_hints(group, include_extras=True)
    parameters: list[inspect.Parameter] = []
    for field in dataclasses.fields(group):  # pyright: ignore[reportArgumentType]
        hint = hints[field.name]
        if _is_group(hint):
            parameters += _fields(hint)
        else:
            kind = inspect.Parameter.KEYWORD_ONLY
            parameters.append(inspect.Parameter(field.name, kind, default=field.default, annotation=hint))
    return parameters


def _built(group: type[OptionGroup], values: dict[str, Any]) -> OptionGroup:
    """The group made of its options' values (taken out of `values`)."""
    hints = get_type_hints(group, include_extras=True)
    fields = dataclasses.fields(group)  # pyright: ignore[reportArgumentType]
    return group(
        **{
            f.name: _built(hints[f.name], values) if _is_group(hints[f.name]) else values.pop(f.name)
            for f in fields
        }
    )


def with_groups(command: Callable[..., R]) -> Callable[..., R]:
    """`command` as Typer sees it: each group parameter replaced by the group's options."""
    signature = inspect.signature(command, eval_str=True)
    groups = {p.name: p.annotation for p in signature.parameters.values() if _is_group(p.annotation)}
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        parameters += _fields(parameter.annotation) if parameter.name in groups else [parameter]

    @functools.wraps(command)
    def expanded(**values: Any) -> R:
        built = {name: _built(group, values) for name, group in groups.items()}
        return command(**values, **built)

    expanded.__signature__ = signature.replace(parameters=parameters)  # pyright: ignore[reportAttributeAccessIssue]
    expanded.__annotations__ = {p.name: p.annotation for p in parameters}
    return expanded


@dataclass(frozen=True)
class ServerOptions(OptionGroup):
    """Every command's --address and --namespace: this command's overrides of the global ones."""

    address: AddressOpt = None
    namespace: NamespaceOpt = None

    def target(self, ctx: typer.Context) -> Target:
        """The global target (from the app callback), with these overrides applied."""
        return target_of(ctx, self.address, self.namespace)


@dataclass(frozen=True)
class SessionRef(OptionGroup):
    """Which session a command means: the first positional, --session or --conversation."""

    session_id: SessionArg = None
    session: SessionOpt = None
    conversation: ConversationOpt = None


@dataclass(frozen=True)
class AgentOptions(OptionGroup):
    """The agent options of `run`, `ask` and `chat`, as the user typed them."""

    model: ModelOpt = None
    api_base: ApiBaseOpt = None
    tool: ToolOpt = None
    require_approval: ApprovalOpt = None
    system_prompt: PromptOpt = None
    max_iterations: IterationsOpt = None
    script: ScriptOpt = None

    def flags(self, stream: bool) -> AgentFlags:
        """These options as `AgentFlags` (`stream`: not --no-stream)."""
        return AgentFlags(
            self.model,
            tuple(self.tool or ()),
            self.system_prompt,
            self.max_iterations,
            self.script,
            self.api_base,
            stream,
            tuple(self.require_approval or ()),
        )


@dataclass(frozen=True)
class SessionOptions(OptionGroup):
    """The agent a new session of `ask` and `chat` gets (a running one: the overrides of each ask)."""

    agent: AgentOptions = AgentOptions()
    agent_id: AgentIdOpt = DEFAULT_AGENT_ID
    snapshot: SnapshotOpt = None
    session_webhook_url: SessionWebhookOpt = None


@dataclass(frozen=True)
class AskRules(OptionGroup):
    """How the asks of `ask` and `chat` are made and followed."""

    no_stream: NoStreamOpt = False
    on_busy: OnBusyOpt = "reject"
    expected_last_request: ExpectedLastOpt = None
