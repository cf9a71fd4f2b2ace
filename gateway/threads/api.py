"""A principal's threads over HTTP: list them, read one, fork it, reset it (the chat page's API).

    GET  /api/threads                           this principal's sessions, last used first (at most 100)
    GET  /api/threads/{agent}/{thread}          status, usage and cost, Web UI links, the last entries
    POST /api/threads/{agent}/{thread}/fork     {"seq"?: int, "thread_id"?: str} -> the new thread
                                                {"branch": "edit"|"regenerate", "message_seq": int,
                                                 "text"?: str} -> a new branch of its family
    GET  /api/threads/{agent}/{thread}/branches the branches of its family (docs/branches.md)
    POST /api/threads/{agent}/{thread}/reset    {"reason"?: str} -> the context op's ack
    PUT  /api/threads/{agent}/{thread}/title    {"title": str} -> the name listings show
    GET  /api/threads/{agent}/{thread}/requests/{id}/case  the request as an evaluation case
    DELETE /api/threads/{agent}/{thread}        ?memories=true -> what was erased (docs/erasing-data.md)

A thread is the caller's session `gw/<principal>/<agent>/<thread>` (`gateway.owners`): another
principal's thread, a missing one, and any other workflow all answer the same 404 `not_found`.
Every read and operation is the request core's (`gateway.core`). The rest of the resource,
`.../requests` and `.../webhook`, is `gateway.threads.background` and `.thread_webhook`; the
admin's read of every principal's threads, `gateway.threads.admin`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.branches import user_message
from clients.inputs import new_id
from contracts import Usage
from contracts.branches import BranchKind
from contracts.session import RequestRecord, SessionStatus
from conversation.thread import ContextOpEntry, Entry, MessageEntry
from gateway.context import GatewayContext
from gateway.core import RequestCore, Thread, temporal_reads
from gateway.core.branches import branch, edit_at, thread_of
from gateway.core.inputs import check_request_id
from gateway.core.listing import list_threads
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_object
from gateway.owners import check_thread_id, parse_session_id
from gateway.threads.path_thread import thread_in_path

__all__ = ["OWNER_THREAD_PATH", "routes"]

OWNER_THREAD_PATH = "/api/threads/{agent}/{thread}"
"""The owner's view of one thread (the admin reads it on the owner's behalf: `gateway.threads.admin`)."""
MAX_ENTRIES = 200
"""The last entries `GET /api/threads/{agent}/{thread}` returns (one thread page, about 1 MiB at most)."""


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The routes of a principal's threads."""
    api = _ThreadsApi(ctx)
    return [
        Route("/api/threads", api.threads, methods=["GET"]),
        Route(OWNER_THREAD_PATH, api.thread, methods=["GET"]),
        Route(OWNER_THREAD_PATH, api.erase, methods=["DELETE"]),
        Route("/api/threads/{agent}/{thread}/fork", api.fork, methods=["POST"]),
        Route("/api/threads/{agent}/{thread}/branches", api.branches, methods=["GET"]),
        Route("/api/threads/{agent}/{thread}/reset", api.reset, methods=["POST"]),
        Route("/api/threads/{agent}/{thread}/title", api.rename, methods=["PUT"]),
        Route("/api/threads/{agent}/{thread}/requests/{request_id}/case", api.case, methods=["GET"]),
    ]


class _ThreadsApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._ctx = ctx
        self._core = RequestCore(ctx)

    async def threads(self, request: Request) -> Response:
        listed = await list_threads(self._ctx, principal_of(request).name)
        return JSONResponse({"threads": [thread.json(with_principal=False) for thread in listed]})

    async def thread(self, request: Request) -> Response:
        thread = await self._owned(request)
        status = await self._core.reads.status(thread)
        records = await self._core.reads.records(thread)
        usage = Usage()
        for record in records:
            usage = usage.plus(record.outcome.usage)
        with temporal_reads():
            entries = await _last_entries(self._core, thread, status.thread_length)
        forked = status.forked_from
        parent = parse_session_id(thread.principal, forked.parent_id) if forked else None
        body = {
            "agent": thread.agent,
            "thread_id": thread.thread_id,
            "session_id": thread.session_id,
            "status": status.state,
            "active_request_id": status.active_request_id,
            "waiting_requests": status.waiting_requests,
            "thread_length": status.thread_length,
            "requests": len(records),
            "request_records": [_record_json(record) for record in records],
            "usage": usage.model_dump(mode="json"),
            "forked_from": {"agent": parent[0], "thread_id": parent[1], "seq": forked.seq}
            if parent and forked
            else None,
            "web_ui": self._web_ui(thread.session_id, status, records),
            "messages": [_entry_json(entry) for entry in entries],
        }
        return JSONResponse(body)

    async def fork(self, request: Request) -> Response:
        thread = await self._owned(request)
        body = await _object(request)
        if "branch" in body:
            return await self._branch(thread, body)
        seq = body.get("seq")
        if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 0):
            raise GatewayError.invalid_input("`seq` must be a thread entry's number (an integer >= 0)")
        new_thread = body.get("thread_id")
        if new_thread is not None and not isinstance(new_thread, str):
            raise GatewayError.invalid_input("`thread_id` must be a string")
        forked = await self._core.threads.fork(
            thread, seq=seq, new_thread_id=check_thread_id(new_thread) if new_thread else None
        )
        return JSONResponse(
            {
                "agent": forked.thread.agent,
                "thread_id": forked.thread.thread_id,
                "session_id": forked.thread.session_id,
                "seq": forked.seq,
            }
        )

    async def _branch(self, thread: Thread, body: dict[str, Any]) -> Response:
        """Fork before user message `message_seq` as a branch of the family, recorded at its root.

        Nothing is asked: the caller asks the branch's first message (`text`, default the
        message's own) with the answer's `request_id` (docs/branches.md).
        """
        kind = body.get("branch")
        if kind not in ("edit", "regenerate"):
            raise GatewayError.invalid_input("`branch` must be `edit` or `regenerate`")
        chosen: BranchKind = "edit" if kind == "edit" else "regenerate"
        if "seq" in body or "thread_id" in body:
            raise GatewayError.invalid_input("a branch forks before its message and is named by the gateway")
        message_seq = body.get("message_seq")
        if not isinstance(message_seq, int) or isinstance(message_seq, bool) or message_seq < 0:
            raise GatewayError.invalid_input("`message_seq` must be a user message's seq (an integer >= 0)")
        text = body.get("text")
        if text is not None and not isinstance(text, str):
            raise GatewayError.invalid_input("`text` must be a string")
        if text is None:
            with temporal_reads():
                text = (await user_message(self._core.session(thread), message_seq)).payload.content
        point = await edit_at(self._core, thread, message_seq, text)
        asked = new_id()
        made = await branch(self._ctx, self._core, thread, point, chosen, asked)
        return JSONResponse(
            {
                "agent": made.agent,
                "thread_id": made.thread_id,
                "session_id": made.session_id,
                "seq": point.seq,
                "kind": chosen,
                "message_seq": point.message_seq,
                "request_id": asked,
                "text": point.text,
            }
        )

    async def branches(self, request: Request) -> Response:
        thread = await self._owned(request)
        await self._core.reads.status(thread)  # another principal's thread, or none: 404 `not_found`
        with temporal_reads():
            family = await self._core.session(thread).branches()
        root = thread_of(thread, family.root_id)
        if root is None:
            raise not_found()
        records = await self._core.reads.records(root)

        def thread_id(session: str) -> str | None:
            named = thread_of(thread, session)
            return named.thread_id if named is not None else None

        first = {
            "thread_id": root.thread_id,
            "kind": "root",
            "first_message": records[0].query_preview if records else None,
        }
        listed = [
            {
                "thread_id": thread_id(b.session_id),
                "kind": b.kind,
                "forked_from": thread_id(b.parent_id),
                "seq": b.seq,
                "message_seq": b.message_seq,
                "message_id": b.request_id,
                "agui_message_id": f"m-{b.message_seq}",
                "request_id": b.asked_request_id,
                "first_message": b.text,
            }
            for b in family.branches
        ]
        head = thread_id(family.branches[-1].session_id) if family.branches else root.thread_id
        body = {
            "agent": thread.agent,
            "thread_id": root.thread_id,
            "head": head,
            "branches": [first, *listed],
        }
        return JSONResponse(body)

    async def reset(self, request: Request) -> Response:
        thread = await self._owned(request)
        body = await _object(request)
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise GatewayError.invalid_input("`reason` must be a string")
        ack = await self._core.threads.reset(thread, reason=reason)
        return JSONResponse(ack.model_dump(mode="json", exclude_none=True))

    async def rename(self, request: Request) -> Response:
        thread = await self._owned(request)
        title = (await _object(request)).get("title")
        if not isinstance(title, str):
            raise GatewayError.invalid_input("`title` must be a string")
        kept = await self._core.threads.rename(thread, title)
        return JSONResponse({"agent": thread.agent, "thread_id": thread.thread_id, "title": kept})

    async def case(self, request: Request) -> Response:
        thread = await self._owned(request)
        request_id = check_request_id(request.path_params["request_id"], "request_id")
        return JSONResponse(await self._core.reads.eval_case(thread, request_id))

    async def erase(self, request: Request) -> Response:
        thread = await self._owned(request)
        memories = request.query_params.get("memories", "false")
        if memories not in ("true", "false"):
            raise GatewayError.invalid_input("`memories` must be `true` or `false`")
        erased = await self._core.threads.erase(thread, memories=memories == "true")
        return JSONResponse(
            {
                "agent": thread.agent,
                "thread_id": thread.thread_id,
                "session_id": thread.session_id,
                "deleted": erased.json(),
            }
        )

    async def _owned(self, request: Request) -> Thread:
        return await thread_in_path(self._ctx, request)

    def _web_ui(
        self, workflow_id: str, status: SessionStatus, records: list[RequestRecord]
    ) -> dict[str, str] | None:
        base = self._ctx.settings.web_ui_url
        if base is None:
            return None
        namespace = quote(self._ctx.client.namespace, safe="")

        def link(target: str) -> str:
            return f"{base}/namespaces/{namespace}/workflows/{quote(target, safe='')}"

        run = status.active_run_workflow_id or (records[-1].run_workflow_id if records else None)
        return {"session": link(workflow_id), **({"run": link(run)} if run else {})}


async def _object(request: Request) -> dict[str, Any]:
    """The request's JSON object (`read_object`), `{}` for an empty body."""
    return await read_object(request) if await request.body() else {}


async def _last_entries(core: RequestCore, thread: Thread, length: int) -> list[Entry]:
    entries = core.session(thread).thread(max(length - MAX_ENTRIES, 0))
    return [entry async for entry in entries][:MAX_ENTRIES]


def _entry_json(entry: Entry) -> dict[str, Any]:
    """A message entry's payload, or a context op (a fork or restore: with the context it starts from)."""
    if isinstance(entry, ContextOpEntry):
        operation = entry.payload.operation
        meta = operation.meta
        kind = "reset" if meta.get("reset") else "fork" if "forked_from" in meta else operation.type
        reason = meta.get("reason")
        shown: dict[str, Any] = {"seq": entry.seq, "kind": "op", "op": kind}
        if isinstance(reason, str):
            shown["reason"] = reason
        if operation.result_context is not None and (kind == "fork" or operation.reason == "restore"):
            shown["context"] = [_dump(message) for message in operation.result_context.messages]
        return shown
    assert isinstance(entry, MessageEntry)
    return {"seq": entry.seq, "kind": "message", **_dump(entry.payload)}


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _record_json(record: RequestRecord) -> dict[str, Any]:
    """A request of the thread read: its id, status, query preview and the agent version that ran it."""
    return {
        "request_id": record.request_id,
        "status": record.status,
        "query_preview": record.query_preview,
        "agent_version": record.agent_version,
    }
