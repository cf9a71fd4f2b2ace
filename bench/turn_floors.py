"""The two bare-Temporal floors of a conversation turn, and their worker process (`bench.turn_cost`).

    .venv/bin/python -m bench.turn_floors --address 127.0.0.1:7233 --task-queue q   # the worker

- **The bare turn** (`BenchBareTurn`): a long-lived workflow; each turn is one Update (`turn`)
  whose handler runs one activity returning the answer's text (400 characters by default).
- **The session floor** (`BenchSessionFloor`): the design card's shape at its least: a long-lived
  session workflow; each turn is one Update (`ask`) that starts a child run workflow
  (`BenchRunFloor`) running that activity, answers with the child's id once the child exists, and
  the session awaits the child's text (what a session must know to hold the conversation).

Plain Temporal defaults (default data converter, the sandboxed workflow runner, the workflow
cache on). This module is imported again inside the workflow sandbox: it imports only
`temporalio` and the standard library.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta

from temporalio import activity, workflow

BARE_TURN = "BenchBareTurn"
SESSION_FLOOR = "BenchSessionFloor"
RUN_FLOOR = "BenchRunFloor"
FLOOR_ANSWER_ACTIVITY = "bench_turn_answer"
_TIMEOUT = timedelta(seconds=60)


@activity.defn(name=FLOOR_ANSWER_ACTIVITY)
async def answer(size: int) -> str:
    """The answer's text: `size` characters (the same words the product's scripted model writes)."""
    return ("word " * (size // 5 + 1))[:size]


@workflow.defn(name=BARE_TURN)
class BenchBareTurn:
    """Lives until told to end; each `turn` Update runs one activity and answers with its text."""

    def __init__(self) -> None:
        self._done = False

    @workflow.run
    async def run(self) -> None:
        """Wait until `end`, with every turn's handler finished."""
        await workflow.wait_condition(lambda: self._done and workflow.all_handlers_finished())

    @workflow.update
    async def turn(self, size: int) -> str:
        """One turn: the activity's text."""
        return await workflow.execute_activity(answer, size, start_to_close_timeout=_TIMEOUT)

    @workflow.signal
    def end(self) -> None:
        """Let the workflow complete."""
        self._done = True


@workflow.defn(name=RUN_FLOOR)
class BenchRunFloor:
    """One run: the activity, its text as the result."""

    @workflow.run
    async def run(self, size: int) -> str:
        """Run the answer activity."""
        return await workflow.execute_activity(answer, size, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name=SESSION_FLOOR)
class BenchSessionFloor:
    """A session: each `ask` starts a child run; the session keeps each run's answer."""

    def __init__(self) -> None:
        self._done = False
        self._asked = 0
        self.answers: list[str] = []
        self._keeping: set[asyncio.Task[None]] = set()

    @workflow.run
    async def run(self) -> None:
        """Wait until `end`, with every ask's run awaited."""
        await workflow.wait_condition(lambda: self._done and workflow.all_handlers_finished())

    @workflow.update
    async def ask(self, size: int) -> str:
        """Start the turn's child run; answer with its workflow id once it exists."""
        self._asked += 1
        child = await workflow.start_child_workflow(
            RUN_FLOOR, size, id=f"{workflow.info().workflow_id}-run-{self._asked}"
        )
        self._keeping.add(
            asyncio.create_task(self._keep(child))
        )  # the session awaits the answer after answering the ask
        return child.id

    async def _keep(self, child: workflow.ChildWorkflowHandle[object, str]) -> None:
        self.answers.append(await child)
        self._keeping.discard(asyncio.current_task())  # type: ignore[arg-type]

    @workflow.signal
    def end(self) -> None:
        """Let the workflow complete."""
        self._done = True


async def serve(address: str, task_queue: str) -> None:
    """Run the floors' worker until killed."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[BenchBareTurn, BenchSessionFloor, BenchRunFloor],
        activities=[answer],
    )
    print("floor worker polling task queue", task_queue, flush=True)
    await worker.run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    arguments = parser.parse_args()
    asyncio.run(serve(arguments.address, arguments.task_queue))
