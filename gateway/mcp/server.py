"""The agents as an MCP server (`/mcp`): ask, status, steer, approve, cancel, history, fork, delete_thread.

The caller's long-term memory too: `memory_search`, `memory_get`, `memory_put`, `memory_delete`.

Stateless streamable HTTP (the SDK's `StreamableHTTPSessionManager`): the gateway keeps no MCP
session, so any gateway answers any call. `ask` returns the answer when the run ends within the
call (`wait_s`), else a handle that `status` and `history` accept; while it waits, progress
notifications carry the streamed text (when the caller sent a progress token). The pinned `mcp`
SDK (2.3) has no MCP tasks on the server side (`tasks/*` are absent from its methods), so a long
run is followed with `status(handle, wait_s=...)`, which streams progress the same way.

Every tool is one call of the request core (`gateway.core.RequestCore`): `cancel(handle)`
cancels a request's run (the request ends `cancelled`); a host's `notifications/cancelled` for
an `ask` or `status` in flight only stops that call's wait: the durable run goes on (hosts
cancel calls on their own timeouts), and its handle still follows it.

The memory tools are the `/api/memory` routes' operations (`gateway.core.memory.GatewayMemory`, the
same namespace, fields, refusals and principal isolation: another principal's item is `not_found`);
their scopes are `memory:read` and `memory:write`.

Every tool call is authenticated by the gateway's guard, which also checks the tool's scope
(`gateway.identity.scopes.MCP_TOOL_SCOPES`, 403 `insufficient_scope` before the SDK sees it); the
tool takes the guard's principal (it owns the sessions, exactly as for AG-UI and A2A) and checks
its scope again (`require`). A refusal (`gateway.errors.GatewayError`) is the tool's error result
(`isError`), its structured content `{"error": {"code", "message"}}` with a product code.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from starlette.routing import Route
from temporalio.service import RPCError

from clients.attachment_intake import AttachmentSource
from conversation import MessageEntry
from gateway.context import GatewayContext
from gateway.core import RequestCore, open_thread, parse_decision, parse_mode, parse_on_busy, temporal_reads
from gateway.core.attachments import take_attachments
from gateway.core.memory import GatewayMemory
from gateway.errors import GatewayError
from gateway.identity.principal import Principal
from gateway.identity.scopes import MCP_TOOL_SCOPES, require
from gateway.mcp.progress import ProgressText
from gateway.mcp.views import Handle, history_item, parse_handle, state_view
from gateway.settings import DEFAULT_AGENT

__all__ = ["AskAttachment", "McpEndpoint"]


class AskAttachment(BaseModel):
    """A file of an MCP `ask`: its name, media type and base64 bytes, or the id of a file given before."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="The file's name (e.g. photo.png)")
    media_type: str | None = Field(default=None, description="Its media type (e.g. image/png)")
    data: str | None = Field(default=None, description="Its bytes, base64")
    file_id: str | None = Field(default=None, description="Instead of `data`: a file given before (f-...)")

    def source(self) -> AttachmentSource:
        """The intake's source (`clients.attachment_intake`) of this file."""
        if self.file_id is not None:
            return AttachmentSource(name=self.name, media_type=self.media_type, file_id=self.file_id)
        return AttachmentSource(name=self.name, media_type=self.media_type, base64=self.data or "")


DEFAULT_WAIT_S = 60.0
MAX_HISTORY = 500
Call = Callable[[Principal], Awaitable[dict[str, Any]]]
DESCRIPTIONS = {
    "ask": "Ask an agent. Returns the answer if the run ends within `wait_s` seconds, else a `handle` for "
    "`status` and `history` (`input_required` with the calls awaiting `approve`). Progress notifications "
    "carry the text as it streams. `attachments`: files the message carries, each "
    "`{name, media_type, data: <base64>}` (or `{file_id}` of a file given before).",
    "status": "Where a request stands; with `wait_s`, wait for it to end or await approval.",
    "approve": "Approve (or deny: `approved: false`) a call awaiting approval; `arguments` edits it, "
    "`reason` is shown to the model; `call_id` defaults to the oldest.",
    "cancel": "Cancel a running request (`handle`): its run stops and the request ends `cancelled`.",
    "steer": "Steer a running request: `text` reaches the agent before its next step (`mode: interrupt` "
    "cuts the model call in flight).",
    "history": "The last `limit` messages of a session (give `session` and `agent`, or a `handle`).",
    "fork": "Fork a session at message `seq` (default: its latest): a new session to ask.",
    "delete_thread": "Erase a session for good: it and its runs are deleted (its forks are kept); "
    "`memories: true` also deletes the memories its requests saved (needs `memory:write`).",
    "memory_search": "What an agent remembers of you: the items best matching `query` (at most `limit`), "
    "or without `query` a page of them by key (`cursor` continues it from `next_cursor`).",
    "memory_get": "One memory item of an agent's, by `key`.",
    "memory_put": "Remember `text` (and a JSON `value`) under `key` in an agent's memory, for `ttl_s` "
    "seconds if given.",
    "memory_delete": "Forget the memory item `key` of an agent's.",
}


def _result(value: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(value))], structured_content=value
    )


def _refused(error: GatewayError) -> CallToolResult:
    body = {"error": {"code": error.code, "message": error.message}}
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.code}: {error.message}")],
        structured_content=body,
        is_error=True,
    )


class McpEndpoint:
    """The MCP server of a gateway: its route (`/mcp`) and the lifespan its session manager needs."""

    def __init__(self, ctx: GatewayContext, memory: GatewayMemory) -> None:
        """The tools over `ctx`, the memory tools over `memory` (the `/api/memory` routes' too)."""
        self._ctx = ctx
        self._core = RequestCore(ctx)
        self._memory = memory
        self.server = MCPServer(
            name="durable-react",
            log_level="WARNING",  # the SDK calls logging.basicConfig: no INFO line per request
            instructions="Durable ReAct agents: `ask`, then `status`, `history`, `steer`, `approve`, "
            "`cancel`, `fork`, `delete_thread`; your memory of an agent: `memory_search`, `memory_get`, "
            "`memory_put`, `memory_delete`.",
        )
        self._register()
        self._manager = StreamableHTTPSessionManager(
            self.server._lowlevel_server,  # pyright: ignore[reportPrivateUsage] - what streamable_http_app wraps
            stateless=True,
            max_request_body_size=ctx.settings.attachment_body_bytes,
        )
        self.route = Route(
            "/mcp",
            StreamableHTTPASGIApp(self._manager),
            methods=["GET", "POST", "DELETE"],
            include_in_schema=False,
        )

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run the session manager (inside the app's lifespan)."""
        async with self._manager.run():
            yield

    async def _call(self, context: Context, call: Call, tool: str) -> CallToolResult:
        try:
            principal: Principal | None = getattr(
                getattr(context.request_context.request, "state", None), "principal", None
            )
            if principal is None:
                raise GatewayError.unauthorized()
            require(principal, MCP_TOOL_SCOPES[tool])
            return _result(await call(principal))
        except GatewayError as error:
            return _refused(error)
        except RPCError:  # Temporal did not answer where the core does not map it itself
            return _refused(GatewayError.unavailable())

    async def _handle(self, principal: Principal, handle: str) -> Handle:
        return await parse_handle(self._ctx, principal, handle)

    def _register(self) -> None:
        ctx, core = self._ctx, self._core

        async def ask(
            query: str,
            context: Context,
            agent: str = DEFAULT_AGENT,
            session: str | None = None,
            on_busy: str = "reject",
            wait_s: float = DEFAULT_WAIT_S,
            attachments: list[AskAttachment] | None = None,
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                thread = await open_thread(ctx, principal, agent, session or uuid.uuid4().hex)
                policy = parse_on_busy(on_busy)
                sources = [item.source() for item in attachments or []]
                taken = await take_attachments(ctx, thread, sources, request_id=None)
                accepted = await core.asks.ask(
                    thread, query, on_busy=policy, source=f"mcp:{principal.name}", attachments=taken
                )
                handle = Handle(thread, accepted.request_id)
                started = accepted.run_workflow_id if accepted.disposition != "enqueued" else None
                async with ProgressText(context) as progress:
                    state = await core.waits.wait(
                        thread, handle.request_id, wait_s, progress.report, run_id=started
                    )
                return {**state_view(handle, state), "disposition": accepted.disposition}

            return await self._call(context, call, "ask")

        async def status(handle: str, context: Context, wait_s: float = 0.0) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                parsed = await self._handle(principal, handle)
                async with ProgressText(context) as progress:
                    state = await core.waits.wait(parsed.thread, parsed.request_id, wait_s, progress.report)
                return state_view(parsed, state)

            return await self._call(context, call, "status")

        async def approve_call(
            handle: str,
            context: Context,
            approved: bool = True,
            call_id: str | None = None,
            reason: str | None = None,
            arguments: dict[str, JsonValue] | None = None,
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                parsed = await self._handle(principal, handle)
                decision = parse_decision(
                    {"approved": approved, "call_id": call_id, "reason": reason, "arguments": arguments}
                )
                ack = await core.controls.approve(
                    parsed.thread, parsed.request_id, decision, approver=principal.name
                )
                return {"status": ack.status, "call_id": ack.call_id or call_id, "handle": str(parsed)}

            return await self._call(context, call, "approve")

        async def cancel_request(handle: str, context: Context) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                parsed = await self._handle(principal, handle)
                reason = f"cancelled through MCP by {principal.name}"
                return state_view(
                    parsed, await core.controls.cancel(parsed.thread, parsed.request_id, reason=reason)
                )

            return await self._call(context, call, "cancel")

        async def steer(handle: str, text: str, context: Context, mode: str = "queue") -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                parsed = await self._handle(principal, handle)
                ack = await core.controls.steer(
                    parsed.thread,
                    parsed.request_id,
                    text,
                    mode=parse_mode(mode),
                    source=f"mcp:{principal.name}",
                )
                return {"status": ack.status, "input_id": ack.input_id, "mode": ack.mode}

            return await self._call(context, call, "steer")

        async def history_of(
            context: Context,
            session: str | None = None,
            agent: str = DEFAULT_AGENT,
            handle: str | None = None,
            limit: int = 50,
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                if handle is not None:
                    thread = (await self._handle(principal, handle)).thread
                elif session is not None:
                    thread = await open_thread(ctx, principal, agent, session)
                else:
                    raise GatewayError.invalid_input("give `session` (with `agent`) or `handle`")
                wanted = max(1, min(limit, MAX_HISTORY))
                handle_of_session = core.session(thread)
                with temporal_reads("session"):
                    length = (await handle_of_session.thread_page(0, 1)).length
                    page = await handle_of_session.thread_page(max(0, length - wanted), wanted)
                messages = [history_item(e) for e in page.entries if isinstance(e, MessageEntry)]
                return {"messages": messages}

            return await self._call(context, call, "history")

        async def fork(
            session: str, context: Context, agent: str = DEFAULT_AGENT, seq: int | None = None
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                forked = await core.threads.fork(await open_thread(ctx, principal, agent, session), seq=seq)
                return {"session": forked.thread.thread_id, "agent": agent}

            return await self._call(context, call, "fork")

        async def delete_thread(
            session: str, context: Context, agent: str = DEFAULT_AGENT, memories: bool = False
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                erased = await core.threads.erase(
                    await open_thread(ctx, principal, agent, session), memories=memories
                )
                return {"session": session, "agent": agent, "deleted": erased.json()}

            return await self._call(context, call, "delete_thread")

        for fn, name in ((ask, "ask"), (status, "status"), (approve_call, "approve"), (steer, "steer")):
            self.server.add_tool(fn, name=name, description=DESCRIPTIONS[name])
        for fn, name in ((cancel_request, "cancel"), (history_of, "history"), (fork, "fork")):
            self.server.add_tool(fn, name=name, description=DESCRIPTIONS[name])
        self.server.add_tool(delete_thread, name="delete_thread", description=DESCRIPTIONS["delete_thread"])
        self._register_memory()

    def _register_memory(self) -> None:
        memory = self._memory

        async def memory_search(
            agent: str,
            context: Context,
            query: str | None = None,
            limit: int | None = None,
            cursor: str | None = None,
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                return await memory.find(principal, agent, query, limit=limit, cursor=cursor)

            return await self._call(context, call, "memory_search")

        async def memory_get(agent: str, key: str, context: Context) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                return await memory.show(principal, agent, key)

            return await self._call(context, call, "memory_get")

        async def memory_put(
            agent: str,
            key: str,
            text: str,
            context: Context,
            value: JsonValue = None,
            ttl_s: float | None = None,
        ) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                fields = {"text": text, "value": value, "ttl_s": ttl_s}
                return await memory.put(principal, agent, key, fields)

            return await self._call(context, call, "memory_put")

        async def memory_delete(agent: str, key: str, context: Context) -> CallToolResult:
            async def call(principal: Principal) -> dict[str, Any]:
                return await memory.delete(principal, agent, key)

            return await self._call(context, call, "memory_delete")

        for fn, name in (
            (memory_search, "memory_search"),
            (memory_get, "memory_get"),
            (memory_put, "memory_put"),
            (memory_delete, "memory_delete"),
        ):
            self.server.add_tool(fn, name=name, description=DESCRIPTIONS[name])
