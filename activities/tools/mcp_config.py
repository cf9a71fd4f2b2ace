"""The MCP servers a worker uses: a JSON file in the common `mcpServers` shape.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
                   "tools": ["read_text_file", "list_directory"]},
        "search": {"url": "https://search.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}, "tools": ["*"]}
    }}

A server is a stdio `command` (with `args`, `env`, `cwd`) or a streamable-HTTP `url`
(with `headers`). `tools` is required: the names the model may call, or `["*"]` for all.
`approval_required` (optional) makes calls wait for a human's `approve`: `true` for every
tool of the server, or a list of its tool names.
`${VAR}` and `${VAR:-default}` in any string value are read from the worker's environment,
so secrets stay out of the file. Every problem is a `McpConfigError`, one line naming the
file and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError, model_validator

SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?=[A-Za-z0-9-]))*$")
"""A server name: letters, digits, `-` and single `_` (a double `__` separates server and tool)."""
MAX_SERVER_NAME = 32
ALL_TOOLS = "*"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpStartError(RuntimeError):
    """A configured MCP server could not be used at start-up; the message is one line."""


class McpConfigError(ValueError):
    """An MCP configuration that cannot be used; the message is one line."""


class McpServerConfig(BaseModel):
    """One MCP server: how to reach it and which of its tools the model may call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    command: str | None = Field(default=None, min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    tools: list[str] = Field(min_length=1)
    approval_required: StrictBool | list[StrictStr] = False
    disabled: bool = False
    connect_timeout_s: float = Field(default=30.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP), not both or neither")
        if self.command is not None and self.type not in (None, "stdio"):
            raise ValueError(f"`type` {self.type!r} does not go with `command`")
        if self.url is not None:
            if self.type == "stdio":
                raise ValueError("`type` 'stdio' does not go with `url`")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"`url` must start with http:// or https://, not {self.url[:40]!r}")
            if self.args or self.env or self.cwd is not None:
                raise ValueError("`args`, `env` and `cwd` are for stdio servers (`command`)")
        if self.command is not None and self.headers:
            raise ValueError("`headers` are for HTTP servers (`url`)")
        if len(set(self.tools)) != len(self.tools):
            raise ValueError("`tools` lists a name twice")
        if ALL_TOOLS in self.tools and len(self.tools) > 1:
            raise ValueError('`tools` is either ["*"] or a list of names')
        self._check_approval_list()
        return self

    def _check_approval_list(self) -> None:
        names = self.approval_required
        if isinstance(names, bool):
            return
        if len(set(names)) != len(names):
            raise ValueError("`approval_required` lists a name twice")
        if ALL_TOOLS in names:
            raise ValueError('`approval_required` is true (every tool) or a list of tool names, not ["*"]')
        if not self.all_tools:
            unlisted = [name for name in names if name not in self.tools]
            if unlisted:
                raise ValueError(
                    f"`approval_required` names {', '.join(map(repr, unlisted))}, "
                    "which `tools` does not offer"
                )

    def needs_approval(self, tool: str) -> bool:
        """Whether calls of the server's tool `tool` wait for an `approve` decision."""
        names = self.approval_required
        return names if isinstance(names, bool) else tool in names

    @property
    def all_tools(self) -> bool:
        """Whether every tool of the server is offered (`tools: ["*"]`)."""
        return self.tools == [ALL_TOOLS]

    def describe(self) -> str:
        """Where the server is, for messages (never the headers or environment, which may hold secrets)."""
        if self.url is not None:
            parts = urlsplit(self.url)  # without user:password@, query and fragment
            return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
        return " ".join([str(self.command), *self.args])[:200]


def load_mcp_config(path: str | Path) -> dict[str, McpServerConfig]:
    """The enabled servers of one config file, by name, with `${VAR}` expanded.

    Raises:
        McpConfigError: The file cannot be read, is not JSON, or a server is invalid.
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"MCP config {where}: cannot read it ({exc.strerror or exc})") from None
    try:
        document: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"MCP config {where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    return parse_mcp_config(document, where)


def parse_mcp_config(
    document: object, where: str = "MCP config", environ: Mapping[str, str] | None = None
) -> dict[str, McpServerConfig]:
    """The enabled servers of a parsed `{"mcpServers": {...}}` document.

    Raises:
        McpConfigError: The document or a server is invalid, or names an unset variable.
    """
    env = os.environ if environ is None else environ
    if not isinstance(document, dict) or set(document) != {"mcpServers"}:  # pyright: ignore[reportUnknownArgumentType]
        raise McpConfigError(f'{where}: expected an object {{"mcpServers": {{"<name>": {{...}}}}}}')
    servers = cast(dict[str, object], document)["mcpServers"]
    if not isinstance(servers, dict):
        raise McpConfigError(f"{where}: mcpServers must be an object of servers by name")
    configs: dict[str, McpServerConfig] = {}
    for name, raw in servers.items():  # pyright: ignore[reportUnknownVariableType]
        label = f"{where}: mcpServers.{name}"
        if not isinstance(name, str) or not SERVER_NAME.fullmatch(name) or len(name) > MAX_SERVER_NAME:
            raise McpConfigError(
                f"{label}: a server name is 1-{MAX_SERVER_NAME} letters, digits, '-' or single '_'"
            )
        if not isinstance(raw, dict):
            raise McpConfigError(f"{label}: expected an object")
        expanded = _expand(raw, label, env)
        try:
            config = McpServerConfig.model_validate(expanded)
        except ValidationError as exc:
            raise McpConfigError(f"{label}: {_first_problem(exc)}") from None
        if not config.disabled:
            configs[name] = config
    return configs


def merge_configs(parts: list[dict[str, McpServerConfig]]) -> dict[str, McpServerConfig]:
    """Servers from several files; a name given twice is an error.

    Raises:
        McpConfigError: Two files configure the same server name.
    """
    merged: dict[str, McpServerConfig] = {}
    for part in parts:
        for name, config in part.items():
            if name in merged:
                raise McpConfigError(f"MCP server {name!r} is configured twice")
            merged[name] = config
    return merged


def _expand(value: Any, label: str, env: Mapping[str, str]) -> Any:
    """`value` with `${VAR}` / `${VAR:-default}` replaced in every string (keys excepted)."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise McpConfigError(f"{label}: environment variable {name} is not set")

        return _VARIABLE.sub(substitute, value)
    if isinstance(value, list):
        return [_expand(item, label, env) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {key: _expand(item, label, env) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    return value


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    if error["loc"][:1] == ("approval_required",):
        return "approval_required: expected true, false or a list of the server's tool names"
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown field (see docs/tools.md for the fields a server takes)"
    return f"{where}: {message}" if where else message
