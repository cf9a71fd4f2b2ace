"""Where a long streamed turn's worker CPU goes: cProfile of the event-loop thread over streamed turns.

    .venv/bin/python -m bench.profile_stream              # 2 turns of 8,000 characters on a live channel
    .venv/bin/python -m bench.profile_stream --turns 3 --top 40

One process: a `redis-server` (the live channel), a dev server, a worker in this process
(`testing.AgentTestEnvironment`, with `REACT_LIVE_URL`) and the typed client. The scripted model
streams 8,000 characters, 4 every 5 ms, as `bench.turn_cost`'s long rows do. The profile covers the
event loop's thread (the activities, the SDK's Python side, the client); the workflows' threads and
the SDK's Rust core are not in it. It prints the process's CPU time and the functions with the most
time of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import time
import uuid

from live.channel import LIVE_URL_ENV
from live.dev_redis import free_port, start_redis

LONG = 8_000


async def main(turns: int, top: int) -> None:
    """Profile `turns` long streamed turns; print the `top` functions by their own time."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    port = free_port()
    server = start_redis(port)
    os.environ[LIVE_URL_ENV] = f"redis://127.0.0.1:{port}/0"
    from clients.runs import Runs
    from clients.sessions import Sessions
    from contracts import AgentConfig, ScriptTurn
    from testing import AgentTestEnvironment

    try:
        async with AgentTestEnvironment() as env:
            sessions = Sessions(env.client, task_queue=env.task_queue)
            runs = Runs(env.client, task_queue=env.task_queue)
            text = ("word " * (LONG // 5 + 1))[:LONG]
            turn = ScriptTurn(content=text, chunk_chars=4, chunk_delay_s=0.005)
            agent = AgentConfig(model="scripted", script=[turn], stream=True)
            session = sessions.get(f"profile-{uuid.uuid4().hex[:6]}")
            warm = await session.ask("Warm up.", config=agent)
            await runs.get(warm.run_workflow_id).result()
            profile = cProfile.Profile()
            began = time.process_time()
            profile.enable()
            for n in range(turns):
                accepted = await session.ask(f"Turn {n}.", config=agent)
                await runs.get(accepted.run_workflow_id).result()
            profile.disable()
            used = time.process_time() - began
            print(f"process CPU for {turns} turns (worker and client in one process): {used:.3f} s")
            pstats.Stats(profile).sort_stats("tottime").print_stats(top)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--top", type=int, default=25)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.turns, arguments.top))
