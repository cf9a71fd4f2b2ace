"""Reading user-supplied files and flags into contract models, with one-line errors.

Files are checked before anything is sent, so a typo in a script or a context
file is reported with its path and the offending field, not as a failed run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError

from cli.demo import checked_api_base, with_api_base, with_defaults
from cli.errors import CliError, validation_message
from contracts import SCRIPTED_MODEL, AgentConfig, ScriptTurn
from conversation import Context, Message, Role

M = TypeVar("M", bound=BaseModel)

SCRIPT = TypeAdapter(list[ScriptTurn])
MESSAGE_ROLES: tuple[Role, ...] = ("user", "assistant")


def read_json(path: Path) -> JsonValue:
    """A JSON file's content; unreadable files and bad JSON become CliErrors naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from error
    try:
        return cast(JsonValue, json.loads(text))
    except json.JSONDecodeError as error:
        raise CliError(f"invalid JSON in {path}: {error}") from error


def json_object(text: str, what: str) -> dict[str, JsonValue]:
    """`text` parsed as a JSON object (tool arguments), or a CliError naming `what`."""
    try:
        value: JsonValue = json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"{what} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise CliError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def load_script(path: Path) -> list[ScriptTurn]:
    """The scripted model's turns from a JSON list of `ScriptTurn` objects."""
    data = read_json(path)
    try:
        return SCRIPT.validate_python(data)
    except ValidationError as error:
        raise CliError(validation_message(error, f"script in {path}")) from error


def load_model(path: Path, model: type[M]) -> M:
    """A pydantic model from a JSON file, with the file named in any error."""
    data = read_json(path)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise CliError(validation_message(error, f"{model.__name__} in {path}")) from error


def agent_config(settings: dict[str, object]) -> AgentConfig:
    """The agent config from the command's flags, with bad values named in one line."""
    try:
        return AgentConfig.model_validate(settings)
    except ValidationError as error:
        raise CliError(validation_message(error, "agent config")) from error


@dataclass(frozen=True)
class AgentFlags:
    """The agent options of `run`, `ask` and `chat`, as the user typed them (`stream`: not --no-stream)."""

    model: str | None = None
    tools: tuple[str, ...] = ()
    system_prompt: str | None = None
    max_iterations: int | None = None
    script: Path | None = None
    api_base: str | None = None
    stream: bool = False
    approval_required: tuple[str, ...] = ()


def explicit_settings(flags: AgentFlags) -> dict[str, JsonValue]:
    """Only the settings the user passed (a session's per-request `overrides`); the script is read here."""
    settings: dict[str, JsonValue] = {}
    if flags.script is not None:
        if flags.model not in (None, SCRIPTED_MODEL):
            raise CliError(f"--script runs the {SCRIPTED_MODEL!r} model: drop --model {flags.model}")
        turns = load_script(flags.script)
        settings |= {"model": SCRIPTED_MODEL, "script": [t.model_dump(mode="json") for t in turns]}
    elif flags.model:
        settings["model"] = flags.model
    if flags.tools:
        settings["tools"] = list(dict.fromkeys(flags.tools))
    if flags.system_prompt is not None:
        settings["system_prompt"] = flags.system_prompt
    if flags.max_iterations is not None:
        settings["max_iterations"] = flags.max_iterations
    if flags.api_base is not None:
        settings = with_api_base(settings, checked_api_base(flags.api_base, "--api-base"))
    if flags.stream:
        settings["stream"] = True
    if flags.approval_required:
        settings["approval_required"] = list(dict.fromkeys(flags.approval_required))
    return settings


def resolve_config(flags: AgentFlags) -> tuple[AgentConfig, bool]:
    """The whole agent config and whether it is a default (demo) agent.

    The model is --model (or the scripted one of --script), else $REACT_MODEL; with
    neither, the bundled local model with its calculator tool (the caller shows the
    notice of `cli.demo.demo_notice`). See `cli.demo.with_defaults`.
    """
    settings, demo = with_defaults(explicit_settings(flags), flags.tools)
    return agent_config(dict(settings)), demo


def parse_message(text: str) -> Message:
    """`role:content` (role user or assistant) as a message; tool messages need a file."""
    role, sep, content = text.partition(":")
    role = role.strip()
    if not sep or role not in MESSAGE_ROLES:
        allowed = " or ".join(MESSAGE_ROLES)
        raise CliError(f"--message must look like role:content with role {allowed}, got {text!r}")
    return Message(role=role, content=content.lstrip())


def replacement_context(file: Path | None, system_prompt: str | None, messages: list[str]) -> Context:
    """The new context of a `replace`: a file, or a prompt and messages, never both."""
    if file is not None:
        if system_prompt is not None or messages:
            raise CliError("use either --file or --system-prompt/--message, not both")
        return load_model(file, Context)
    if system_prompt is None and not messages:
        raise CliError("nothing to replace with: pass --file, or --system-prompt and/or --message")
    return Context(system_prompt=system_prompt, messages=[parse_message(m) for m in messages])
