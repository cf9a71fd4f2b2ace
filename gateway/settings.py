"""The gateway's settings: address, tokens, CORS, body limit, and the agents clients may choose.

    REACT_GATEWAY_TOKENS="s3cret=alice,t0ken=bob"     # or "@/etc/react/tokens" (one token=principal a line)
    REACT_GATEWAY_TOKENS="s3cret=ci-bot:agents:ask"   # a token with fewer scopes: principal:scope+scope
    REACT_GATEWAY_CORS_ORIGINS="https://app.example.com,http://localhost:3000"
    REACT_GATEWAY_MAX_BODY_BYTES=1048576
    REACT_GATEWAY_MAX_CONNECTIONS=4096                # open connections (lowered to fit the open-file limit)
    REACT_GATEWAY_HEADER_TIMEOUT_S=10                 # a request's headers must be whole within this
    REACT_GATEWAY_KEEPALIVE_S=5                       # an idle kept-alive connection is closed after this
    REACT_GATEWAY_BODY_TIMEOUT_S=30                   # a request's body must be whole within this
    REACT_WEB_UI_URL="http://localhost:8233"          # links to runs in the Temporal Web UI
    REACT_GATEWAY_METRICS=public                      # GET /metrics: public (default), admin, off
    REACT_ATTACHMENT_MAX_BYTES=20MiB                  # and the other limits of settings.attachment_policy

The agents are the `--agents MODULE[:ATTR]` profiles (as `worker.py --agents`); `default` is the
profile of that name if one is registered, else the deployment's default agent: `$REACT_MODEL`
(with `$REACT_API_BASE`), else the bundled local model with the calculator. Clients pick an agent
by name and nothing else: no model, api_base, key, tool, approval or usage setting comes from them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeVar

from pydantic import JsonValue

from activities.llm.models.local_model import BUNDLED_MODEL, DEFAULT_API_BASE
from activities.tools.tool_loading import AGENTS_ENV, build_agent_profiles, option_values
from contracts import TASK_QUEUE, AgentConfig, ModelSettings
from gateway.identity.principal import static_name_problem
from gateway.identity.settings import IdentitySettings, load_identity, parse_static_scopes
from settings.attachment_policy import AttachmentPolicy
from settings.env_values import SettingsError, value

__all__ = [
    "DEFAULT_AGENT",
    "GatewaySettings",
    "default_agent_config",
    "load_settings",
    "parse_tokens",
    "token_entries",
]

DEFAULT_AGENT = "default"
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 4096
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEPALIVE_S = 5
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_UPLOAD_MEMORY_BYTES = 16 * 1024 * 1024
TOKENS_ENV = "REACT_GATEWAY_TOKENS"
CORS_ENV = "REACT_GATEWAY_CORS_ORIGINS"
MAX_BODY_ENV = "REACT_GATEWAY_MAX_BODY_BYTES"
WEB_UI_ENV = "REACT_WEB_UI_URL"
MAX_CONNECTIONS_ENV = "REACT_GATEWAY_MAX_CONNECTIONS"
HEADER_TIMEOUT_ENV = "REACT_GATEWAY_HEADER_TIMEOUT_S"
KEEPALIVE_ENV = "REACT_GATEWAY_KEEPALIVE_S"
BODY_TIMEOUT_ENV = "REACT_GATEWAY_BODY_TIMEOUT_S"
UPLOAD_MEMORY_ENV = "REACT_GATEWAY_UPLOAD_MEMORY_BYTES"
METRICS_ENV = "REACT_GATEWAY_METRICS"
MetricsAccess = Literal["public", "admin", "off"]
METRICS_ACCESS: tuple[MetricsAccess, ...] = ("public", "admin", "off")
MIN_TOKEN_CHARS = 8


@dataclass(frozen=True)
class GatewaySettings:
    """Everything the gateway is configured with (`load_settings` reads it from flags and environment)."""

    host: str = "127.0.0.1"
    port: int = 8400
    tokens: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Bearer token -> principal name; empty: no tokens (loopback only, every caller is `local`)."""
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    agents: Mapping[str, AgentConfig] = field(
        default_factory=lambda: MappingProxyType({DEFAULT_AGENT: default_agent_config()})
    )
    web_ui_url: str | None = None
    task_queue: str = TASK_QUEUE
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    """The OpenID provider, the static tokens' scopes, the quotas (`gateway.identity.settings`)."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Open connections at most (`gateway.server.connections`); `gateway.py` lowers it to fit the fd limit."""
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    """A request's headers must be whole this long after the connection opened (or its last response)."""
    keepalive_s: int = DEFAULT_KEEPALIVE_S
    """A kept-alive connection idle this long after a response is closed (uvicorn's `timeout_keep_alive`)."""
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    """A request's body must be whole this long after its headers (else 408 `invalid_input`)."""
    upload_memory_bytes: int = DEFAULT_UPLOAD_MEMORY_BYTES
    """Upload bodies (`POST /api/files`) held in memory at once; more wait (`server.upload_budget`)."""
    memory_store_url: str | None = None
    """The long-term store `/api/memory` reads and writes (default `REACT_STORE_URL`: `store.settings`)."""
    metrics: MetricsAccess = "public"
    """Who may read `GET /metrics`: anyone (`public`, as `/healthz`), a token with `agents:admin`
    (`admin`), or nobody (`off`: 404); docs/metrics.md."""
    attachments: AttachmentPolicy = field(default_factory=AttachmentPolicy)
    """The attachment limits, media types and URL allow-list (`settings.attachment_policy`)."""

    @property
    def attachment_body_bytes(self) -> int:
        """The body limit of the routes that carry attachments (every other route keeps `max_body_bytes`)."""
        return self.attachments.body_bytes(self.max_body_bytes)

    def check_bind(self) -> None:
        """Refuse a non-loopback address when no token is configured.

        Raises:
            SettingsError: tokens are needed to listen on `host`.
        """
        if not self.tokens and self.identity.oidc is None and not is_loopback(self.host):
            raise SettingsError(
                TOKENS_ENV,
                f"refusing to listen on {self.host} without tokens: set {TOKENS_ENV} "
                "(token=principal pairs), or listen on 127.0.0.1",
                sentence=True,
            )


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or `localhost`)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_tokens(value: str) -> Mapping[str, str]:
    """Token -> principal of `token_entries(value)`.

    Raises:
        SettingsError: see `token_entries`.
    """
    return MappingProxyType({token: principal for token, principal, _ in token_entries(value)})


def token_entries(value: str) -> list[tuple[str, str, frozenset[str] | None]]:
    """(token, principal, scopes or None) of `token=principal[:scope+scope]` entries.

    Entries are comma-separated, or `@path` names a file of one entry a line (`#` comments).
    A principal name never holds `:`, so what follows the first one is the token's scopes.

    Raises:
        SettingsError: an entry without `=`, a short or repeated token, a principal name
            that does not match `PRINCIPAL_PATTERN`, or scopes that are not the gateway's.
    """
    value = value.strip()
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise SettingsError(TOKENS_ENV, f"cannot read {path}: {err.strerror}") from None
        items = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    else:
        items = [item.strip() for item in value.split(",")]
    tokens: dict[str, tuple[str, str, frozenset[str] | None]] = {}
    for number, item in enumerate((i for i in items if i), start=1):
        token, sep, principal = (part.strip() for part in item.partition("="))
        principal, colon, scope_text = principal.partition(":")
        scopes = parse_static_scopes(scope_text, TOKENS_ENV, f"entry {number}") if colon else None
        if not sep or not token:
            raise SettingsError(TOKENS_ENV, f"entry {number} is not token=principal")
        if len(token) < MIN_TOKEN_CHARS:
            raise SettingsError(
                TOKENS_ENV, f"entry {number}'s token is shorter than {MIN_TOKEN_CHARS} characters"
            )
        if (problem := static_name_problem(principal)) is not None:
            raise SettingsError(TOKENS_ENV, problem)
        if token in tokens:
            raise SettingsError(TOKENS_ENV, f"entry {number} repeats a token")
        tokens[token] = (token, principal, scopes)
    return list(tokens.values())


def default_agent_config() -> AgentConfig:
    """The deployment's default agent: `$REACT_MODEL` (and `$REACT_API_BASE`), else the bundled model."""
    model = os.environ.get("REACT_MODEL", "").strip()
    api_base = os.environ.get("REACT_API_BASE", "").strip() or None
    if model:
        extra: dict[str, JsonValue] = {"api_base": api_base} if api_base else {}
        return AgentConfig(model=model, stream=True, model_settings=ModelSettings(extra=extra))
    return AgentConfig(
        model=BUNDLED_MODEL,
        tools=["calculator"],
        stream=True,
        model_settings=ModelSettings(temperature=0.0, extra={"api_base": api_base or DEFAULT_API_BASE}),
    )


def load_agents(specs: Sequence[str]) -> Mapping[str, AgentConfig]:
    """The agents of the `--agents` specs (else `$REACT_AGENTS`), with `default` always present."""
    profiles = build_agent_profiles(option_values(list(specs), AGENTS_ENV))
    agents = {name: profiles[name].config for name in profiles.names()}
    agents.setdefault(DEFAULT_AGENT, default_agent_config())
    return MappingProxyType(agents)


def load_settings(
    *,
    host: str = "127.0.0.1",
    port: int = 8400,
    agent_specs: Sequence[str] = (),
    task_queue: str | None = None,
    environ: Mapping[str, str] | None = None,
    agents: Mapping[str, AgentConfig] | None = None,
) -> GatewaySettings:
    """The settings of flags (`host`, `port`, `agent_specs`) and the environment (`environ`).

    `agents` replaces the `--agents` loading (tests pass their agents directly).

    Raises:
        SettingsError: a setting cannot be used (see `parse_tokens`), or no token is set and
            `host` is not loopback.
        ToolLoadError: an `--agents` module cannot be used.
    """
    env = os.environ if environ is None else environ
    try:
        max_body = int(env.get(MAX_BODY_ENV, "") or DEFAULT_MAX_BODY_BYTES)
    except ValueError:
        raise SettingsError(
            MAX_BODY_ENV, f"{MAX_BODY_ENV} must be a number of bytes", sentence=True
        ) from None
    if max_body < 1024:
        raise SettingsError(MAX_BODY_ENV, f"{MAX_BODY_ENV} must be at least 1024", sentence=True)
    entries = token_entries(env.get(TOKENS_ENV, ""))
    identity = load_identity(env, [(token, scopes) for token, _, scopes in entries if scopes is not None])
    max_connections = _number(env, MAX_CONNECTIONS_ENV, DEFAULT_MAX_CONNECTIONS, int, low=16)
    header_timeout_s = _number(env, HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S, float, low=0.1)
    keepalive_s = _number(env, KEEPALIVE_ENV, DEFAULT_KEEPALIVE_S, int, low=1)
    body_timeout_s = _number(env, BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT_S, float, low=0.1)
    upload_memory = _number(env, UPLOAD_MEMORY_ENV, DEFAULT_UPLOAD_MEMORY_BYTES, int, low=1024 * 1024)
    metrics = value(env, METRICS_ENV) or "public"
    if metrics not in METRICS_ACCESS:
        choices = ", ".join(METRICS_ACCESS)
        raise SettingsError(
            METRICS_ENV, f"{METRICS_ENV} must be one of {choices}, not {metrics!r}", sentence=True
        )
    attachments = AttachmentPolicy.from_env(env)
    chosen = dict(agents) if agents is not None else dict(load_agents(agent_specs))
    chosen.setdefault(DEFAULT_AGENT, default_agent_config())
    settings = GatewaySettings(
        host=host,
        port=port,
        tokens=MappingProxyType({token: principal for token, principal, _ in entries}),
        cors_origins=tuple(o.strip().rstrip("/") for o in env.get(CORS_ENV, "").split(",") if o.strip()),
        max_body_bytes=max_body,
        agents=MappingProxyType(chosen),
        web_ui_url=((value(env, WEB_UI_ENV) or "").rstrip("/") or None),
        task_queue=task_queue or env.get("REACT_TASK_QUEUE", "") or TASK_QUEUE,
        identity=identity,
        max_connections=max_connections,
        header_timeout_s=header_timeout_s,
        keepalive_s=keepalive_s,
        body_timeout_s=body_timeout_s,
        upload_memory_bytes=upload_memory,
        metrics=metrics,
        attachments=attachments,
    )
    settings.check_bind()
    return settings


_N = TypeVar("_N", int, float)


def _number(env: Mapping[str, str], name: str, default: _N, kind: type[_N], *, low: _N) -> _N:
    """The number `name` of `env` (`default` when unset), at least `low`.

    Raises:
        SettingsError: it is not a number of `kind`, or under `low`.
    """
    raw = value(env, name)
    if raw is None:
        return default
    try:
        number = kind(raw)
    except ValueError:
        raise SettingsError(name, f"{name} must be a number", sentence=True) from None
    if not number >= low:  # also refuses nan
        raise SettingsError(name, f"{name} must be at least {low}", sentence=True)
    return number
