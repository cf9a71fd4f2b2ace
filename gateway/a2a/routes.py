"""A2A routes: per agent of the gateway, JSON-RPC at `/a2a/{agent}` and its card at the well-known path.

The JSON-RPC endpoint is the SDK's dispatcher (A2A 1.0 methods, and the 0.3 names
`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe` on the same
URL) over `gateway.a2a.handler.DurableRequestHandler`. The card is generated from the agent's
config: its name, a description, a skill per tool and per agent offered as a tool, the
JSON-RPC interface, streaming, and the HTTP bearer scheme of the gateway's tokens. Cards are
public (a client reads the security scheme before it authenticates); the guard in
`gateway.app` authenticates every JSON-RPC call and puts the principal in `request.state`.
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from contracts import AgentConfig
from contracts.errors import UNKNOWN_AGENT
from gateway.a2a.agent_card import declare_openid_connect
from gateway.a2a.handler import DurableRequestHandler
from gateway.context import GatewayContext
from gateway.errors import GatewayError, error_body
from gateway.http_input import principal_of
from gateway.jsonrpc import METHOD_NOT_FOUND, jsonrpc_error_body

__all__ = ["agent_card", "routes"]

BEARER = "bearer"
MEDIA_TYPES = ["text/plain", "application/json"]


def agent_card(agent: str, config: AgentConfig, url: str, file_types: tuple[str, ...] = ()) -> AgentCard:
    """The card of `agent` served at `url` (its JSON-RPC endpoint).

    Its `default_input_modes` are text and JSON and `file_types`, the media types the deployment
    takes as attachments (`REACT_ATTACHMENT_MEDIA_TYPES`, `type/*` for a family).
    """
    skills = [
        AgentSkill(
            id="ask",
            name="ask",
            description="Answers a request durably: it survives worker crashes, can be steered, cancelled "
            "and held for approval (input-required).",
            tags=["durable", "react"],
        )
    ]
    approval = set(config.approval_required)
    for tool in config.tools:
        note = " Each call awaits approval (input-required)." if tool in approval else ""
        skills.append(
            AgentSkill(
                id=f"tool:{tool}", name=tool, description=f"Calls the `{tool}` tool.{note}", tags=["tool"]
            )
        )
    for other in config.agents:
        description = other.description or f"Asks the `{other.name}` agent."
        skills.append(
            AgentSkill(id=f"agent:{other.name}", name=other.name, description=description, tags=["agent"])
        )
    card = AgentCard(
        name=agent,
        description=_description(agent, config),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_1_0),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_0_3),
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=[*MEDIA_TYPES, *(t for t in file_types if t not in MEDIA_TYPES)],
        default_output_modes=MEDIA_TYPES,
        skills=skills,
    )
    card.security_schemes[BEARER].CopyFrom(
        SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer", description="A token of the gateway's REACT_GATEWAY_TOKENS"
            )
        )
    )
    requirement = SecurityRequirement()
    requirement.schemes[BEARER].CopyFrom(StringList())
    card.security_requirements.append(requirement)
    return card


def _description(agent: str, config: AgentConfig) -> str:
    prompt = (config.system_prompt or "").strip().split("\n", 1)[0][:300]
    base = f"The `{agent}` agent of a Durable ReAct gateway (durable runs on Temporal)."
    return f"{base} {prompt}" if prompt else base


class _PrincipalContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context plus the principal the gateway's guard authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["principal"] = principal_of(request)
        return context


def _agent_routes(ctx: GatewayContext, agent: str) -> list[BaseRoute]:
    config = ctx.settings.agents[agent]
    dispatcher = JsonRpcDispatcher(
        DurableRequestHandler(ctx, agent), context_builder=_PrincipalContextBuilder(), enable_v0_3_compat=True
    )
    path = f"/a2a/{agent}"

    async def rpc(request: Request) -> Response:
        response = await dispatcher.handle_requests(request)
        if isinstance(response, EventSourceResponse):
            response.sep = "\n"
        return response

    async def card(request: Request) -> Response:
        url = str(request.url.replace(path=path, query="", fragment=""))
        card = declare_openid_connect(
            agent_card(agent, config, url, ctx.settings.attachments.media_types), ctx.settings.identity.oidc
        )
        return JSONResponse(agent_card_to_dict(card))

    return [
        Route(path, rpc, methods=["POST"]),
        Route(f"{path}{AGENT_CARD_WELL_KNOWN_PATH}", card, methods=["GET"]),
    ]


async def _unknown_agent(request: Request) -> Response:
    err = GatewayError.refused(UNKNOWN_AGENT, "this gateway offers no such agent")
    if request.method == "POST":
        return JSONResponse(jsonrpc_error_body(err, METHOD_NOT_FOUND), status_code=404)
    return JSONResponse(error_body(err), status_code=404)


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """Every agent's A2A routes, then a 404 `unknown_agent` for any other `/a2a/...` path."""
    found: list[BaseRoute] = []
    for agent in ctx.settings.agents:
        found.extend(_agent_routes(ctx, agent))
    found.append(Route("/a2a/{rest:path}", _unknown_agent, methods=["GET", "POST"]))
    return found
