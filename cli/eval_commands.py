"""`client.py eval run|show|compare|report`: an agent evaluated on a dataset, as a durable `EvalRun`.

`eval run DATASET --agent name` reads the dataset file (pydantic-evals' YAML or JSON file format),
checks it (a dataset pydantic-evals cannot read, an unknown evaluator or judge model, an unknown
agent: refused by name, exit 1, nothing created), starts the evaluation and prints its id (with
--wait, its result once it ends). The agent is a profile of --agents (else `REACT_AGENTS`);
`name@N` is accepted and recorded (its versions are resolved where agent versions are). The
evaluations are --principal's (default `local`); the store is `REACT_STORE_URL`'s. `eval show`
prints an evaluation as JSON; `eval compare A B` the two side by side (`clients.evals.compare`);
`eval report A [B] --out FILE` writes the one-file HTML report (`clients.eval_report`: the same
bytes as `GET /api/evals/{id}/report.html`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from activities.tools.tool_loading import AGENTS_ENV, build_agent_profiles, option_values
from cli import ops
from cli.common import say, target_of
from cli.errors import reported
from cli.params import argument, option
from clients.attachment_intake import AttachmentRefusedError, owned_file
from clients.eval_report import render_report
from clients.evals import Evals, compare
from contracts import TASK_QUEUE
from contracts.evals import DEFAULT_EVAL_CONCURRENCY
from contracts.memory import LOCAL_PRINCIPAL
from store.files import FileStore

T = TypeVar("T")

eval_app = typer.Typer(
    help="Evaluations: an agent on a pydantic-evals dataset, each case a durable run (docs/evaluations.md).",
    no_args_is_help=True,
)
PrincipalOpt = Annotated[str, option(help="Whose evaluations (a principal).")]
QueueOpt = Annotated[str, option(envvar="REACT_TASK_QUEUE", help="The workers' task queue.")]


def _on_evals(ctx: typer.Context, queue: str, call: Callable[[Evals], Awaitable[T]]) -> T:
    target = target_of(ctx, None, None)

    async def connected() -> T:
        client = await ops.open_client(target.address, target.namespace)
        evals = Evals(client, task_queue=queue)
        try:
            return await call(evals)
        finally:
            await evals.close()

    with reported(target.address):
        return asyncio.run(connected())


def _print(value: Any) -> None:
    say(json.dumps(value, indent=2, ensure_ascii=False))


def _refuse(message: str) -> None:
    say(message, "red")
    raise typer.Exit(1)


@eval_app.command("run")
def run(
    ctx: typer.Context,
    dataset: Annotated[Path, argument(help="The dataset file (pydantic-evals' YAML or JSON format).")],
    agent: Annotated[str, option(help="The agent: name or name@N.")],
    agents: Annotated[list[str] | None, option(help="Agent profiles: module or module:attr.")] = None,
    concurrency: Annotated[int, option(help="Cases run at once.")] = DEFAULT_EVAL_CONCURRENCY,
    wait: Annotated[bool, option(help="Wait for the end and print the evaluation.")] = False,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Start an evaluation of --agent on DATASET; print its id."""
    # pydantic-evals (and pydantic-ai under it) takes about 1.6 s to import: only this command needs it.
    from activities.evals.datasets import DatasetError, read_dataset

    try:
        read = read_dataset(dataset.read_text(encoding="utf-8"))
    except OSError as exc:
        _refuse(f"refused (invalid_dataset): cannot read {dataset}: {exc.strerror}")
        return
    except DatasetError as exc:
        _refuse(f"refused ({exc.code}): {exc}")
        return
    profiles = build_agent_profiles(option_values(list(agents or []), AGENTS_ENV))
    name = agent.split("@", 1)[0]
    if name not in profiles.names():
        _refuse(
            f"refused (unknown_agent): no agent {name!r}; agents: {', '.join(profiles.names()) or 'none'}"
        )
    config = profiles[name].config

    async def start(evals: Evals) -> None:
        files = FileStore()  # the files the cases name: --principal's own, by id
        try:
            cases = await read.attached(partial(owned_file, files, principal))
        except AttachmentRefusedError as refused:
            _refuse(f"refused ({refused.code}): {refused.message}")
            return
        finally:
            await files.close()
        eval_id = await evals.start(principal, agent, read.name, config, cases, concurrency=concurrency)
        say(eval_id)
        if wait:
            await evals.wait(eval_id)
            _print(await evals.show(eval_id, principal))

    _on_evals(ctx, task_queue, start)


@eval_app.command("show")
def show(
    ctx: typer.Context,
    eval_id: Annotated[str, argument(help="The evaluation's id.")],
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Print an evaluation: its status, its scored cases, its summary."""

    async def shown(evals: Evals) -> dict[str, Any] | None:
        return await evals.show(eval_id, principal)

    view = _on_evals(ctx, task_queue, shown)
    if view is None:
        _refuse(f"refused (not_found): no evaluation {eval_id!r} of {principal!r}")
    _print(view)


@eval_app.command("compare")
def compare_command(
    ctx: typer.Context,
    first: Annotated[str, argument(help="An evaluation's id.")],
    second: Annotated[str, argument(help="Another evaluation's id (the same dataset).")],
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Print two evaluations side by side: pass rates per evaluator, cost, latency, the cases that differ."""

    async def both(evals: Evals) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return await evals.show(first, principal), await evals.show(second, principal)

    a, b = _on_evals(ctx, task_queue, both)
    if a is None or b is None:
        _refuse(f"refused (not_found): no evaluation {first if a is None else second!r} of {principal!r}")
        return
    _print(compare(a, b))


@eval_app.command("report")
def report(
    ctx: typer.Context,
    first: Annotated[str, argument(help="An evaluation's id.")],
    out: Annotated[Path, option(help="The HTML file to write.")],
    second: Annotated[str | None, argument(help="Another evaluation's id, shown beside it.")] = None,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Write the evaluation's report (beside another's) as one HTML file: charts, cases, what differs."""
    ids = [first] if second is None else [first, second]

    async def shown(evals: Evals) -> list[dict[str, Any] | None]:
        return [await evals.show(eval_id, principal) for eval_id in ids]

    views = _on_evals(ctx, task_queue, shown)
    missing = [eval_id for eval_id, view in zip(ids, views, strict=True) if view is None]
    if missing:
        _refuse(f"refused (not_found): no evaluation {missing[0]!r} of {principal!r}")
    out.write_bytes(render_report([view for view in views if view is not None]).encode("utf-8"))
    say(str(out))
