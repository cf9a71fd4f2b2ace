"""`/api/evals`: run an agent on a pydantic-evals dataset as a durable `EvalRun`, read it, compare two.

    POST /api/evals                        {"agent": "name" | "name@N", "dataset": <JSON form or YAML text>,
                                            "from_threads"?: [{"thread", "request_id"?}],
                                            "concurrency"?} -> 202 {"eval_id"}
    GET  /api/evals/{id}                   {"status", "cases": [{"name", "passed", "output", "scores"}],
                                            "summary"}
    GET  /api/evals/{id}/compare/{other}   {"a", "b", "differences"}
    GET  /api/evals/{id}/report.html?with=OTHER
                                           the report as one HTML file (`clients.eval_report`), an
                                           attachment `eval-<id>.html`; `with`: another evaluation beside it

`from_threads` adds a case per recorded request of the caller's threads with that agent (default:
a thread's last request), its tool results recorded (`clients.eval_cases`), after the dataset's own
cases. A bad dataset, an unknown evaluator or judge model, an unknown agent, a thread or request
not the caller's (404 `not_found`) are refused by name before anything is created
(`activities.evals.datasets`); an evaluation is its maker's (another
principal's is 404 `not_found`, as a missing one; in the report's `with` too).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from pydantic import JsonValue, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.attachment_intake import AttachmentRefusedError, owned_file
from clients.eval_report import REPORT_CSP, render_report
from clients.evals import Evals, compare
from contracts.agent import AgentConfig
from contracts.evals import DEFAULT_EVAL_CONCURRENCY, MAX_EVAL_CASES
from gateway.context import GatewayContext, resolve_agent
from gateway.core import RequestCore, open_thread
from gateway.core.inputs import check_request_id
from gateway.core.store_calls import store_call
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_object
from gateway.identity.principal import Principal
from gateway.owners import check_thread_id

if TYPE_CHECKING:
    from activities.evals.datasets import ReadDataset

__all__ = ["EvalsApi", "resolve_agent"]

BODY_FIELDS = frozenset({"agent", "dataset", "concurrency", "from_threads"})
THREAD_CASE_FIELDS = frozenset({"thread", "request_id"})


async def evaluated_config(ctx: GatewayContext, agent: str) -> AgentConfig:
    """The config an evaluation of `agent` (`name` or `name@N`) runs: the gateway's one resolver's.

    Raises:
        GatewayError: 404 `unknown_agent` / `unknown_version`, 400 `invalid_input`.
    """
    return (await resolve_agent(ctx, agent)).config


def _read(dataset: object, extra_cases: list[dict[str, JsonValue]]) -> ReadDataset:
    """The dataset read with pydantic-evals (`read_dataset`); its refusal as a 400 `GatewayError`.

    Called in a thread: pydantic-evals (and pydantic-ai under it) is imported at the gateway's first
    evaluation, seconds that would otherwise hold its event loop, and not at its start.

    Raises:
        GatewayError: 400 `invalid_dataset`, `unknown_evaluator` or `unknown_judge_model`.
    """
    from activities.evals.datasets import DatasetError, read_dataset

    try:
        return read_dataset(dataset, extra_cases)
    except DatasetError as exc:
        raise GatewayError(400, exc.code, str(exc)) from None


class EvalsApi:
    """The evaluation routes over one `Evals` client."""

    def __init__(self, ctx: GatewayContext) -> None:
        """Bind the context; the store opens on first use."""
        self._ctx = ctx
        self._core = RequestCore(ctx)
        self._evals = Evals(
            ctx.client, task_queue=ctx.settings.task_queue, store_url=ctx.settings.memory_store_url
        )

    def routes(self) -> list[BaseRoute]:
        """The evaluation routes."""
        return [
            Route("/api/evals", self.create, methods=["POST"]),
            Route("/api/evals/{eval_id}", self.show, methods=["GET"]),
            Route("/api/evals/{eval_id}/compare/{other}", self.compare, methods=["GET"]),
            Route("/api/evals/{eval_id}/report.html", self.report, methods=["GET"]),
        ]

    async def create(self, request: Request) -> Response:
        """Check the body, the agent and the dataset; record and start the evaluation (202)."""
        fields = await read_object(request, BODY_FIELDS)
        agent = fields.get("agent")
        if not isinstance(agent, str) or not agent:
            raise GatewayError.invalid_input("`agent` must name an agent: name or name@N")
        concurrency = fields.get("concurrency", DEFAULT_EVAL_CONCURRENCY)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise GatewayError.invalid_input("`concurrency` must be an integer")
        config = await evaluated_config(self._ctx, agent)
        if "dataset" not in fields:
            raise GatewayError.invalid_input(
                "`dataset` is required: pydantic-evals' JSON form or its YAML text"
            )
        from_threads = await self._thread_cases(principal_of(request), agent, fields.get("from_threads", []))
        read = await asyncio.to_thread(_read, fields["dataset"], from_threads)
        principal = principal_of(request).name
        try:
            cases = await store_call(read.attached(partial(owned_file, self._ctx.files, principal)))
        except AttachmentRefusedError as refused:
            raise GatewayError.refused(refused.code, refused.message) from None
        try:
            eval_id = await store_call(
                self._evals.start(principal, agent, read.name, config, cases, concurrency=concurrency)
            )
        except ValidationError as exc:
            raise GatewayError.invalid_input(f"the evaluation: {exc.errors()[0]['msg']}") from None
        return JSONResponse({"eval_id": eval_id}, status_code=202)

    async def _thread_cases(
        self, principal: Principal, agent: str, asked: object
    ) -> list[dict[str, JsonValue]]:
        """The cases `from_threads` names: each a recorded request of one of the caller's threads."""
        if not isinstance(asked, list):
            raise GatewayError.invalid_input("`from_threads` must be a list of {thread, request_id?}")
        items = cast(list[object], asked)
        if len(items) > MAX_EVAL_CASES:
            raise GatewayError.invalid_input(
                f"`from_threads` names {len(items)} requests; at most {MAX_EVAL_CASES}"
            )
        cases: list[dict[str, JsonValue]] = []
        for item in items:
            if not isinstance(item, dict) or set(cast(dict[str, object], item)) - THREAD_CASE_FIELDS:
                raise GatewayError.invalid_input("each of `from_threads` is {thread, request_id?}")
            named = cast(dict[str, object], item)
            thread_id, request_id = named.get("thread"), named.get("request_id")
            if not isinstance(thread_id, str):
                raise GatewayError.invalid_input("`from_threads[].thread` must be a thread id")
            thread = await open_thread(self._ctx, principal, agent, check_thread_id(thread_id))
            chosen = None if request_id is None else check_request_id(request_id, "from_threads[].request_id")
            cases.append(await self._core.reads.eval_case(thread, chosen))
        return cases

    async def _view(self, request: Request, eval_id: str) -> dict[str, Any]:
        view = await store_call(self._evals.show(eval_id, principal_of(request).name))
        if view is None:
            raise not_found("evaluation")
        return view

    async def show(self, request: Request) -> Response:
        """The evaluation (404 when it is not the caller's)."""
        return JSONResponse(await self._view(request, request.path_params["eval_id"]))

    async def compare(self, request: Request) -> Response:
        """Two of the caller's evaluations compared."""
        first = await self._view(request, request.path_params["eval_id"])
        second = await self._view(request, request.path_params["other"])
        return JSONResponse(compare(first, second))

    async def report(self, request: Request) -> Response:
        """The evaluation's report (beside `?with=`'s, when given) as one HTML file to save and share."""
        views = [await self._view(request, request.path_params["eval_id"])]
        other = request.query_params.get("with")
        if other:
            views.append(await self._view(request, other))
        return Response(
            render_report(views).encode("utf-8"),
            media_type="text/html; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="eval-{views[0]["eval_id"]}.html"',
                "Content-Security-Policy": REPORT_CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-store",
            },
        )

    async def close(self) -> None:
        """Close the store."""
        await self._evals.close()
