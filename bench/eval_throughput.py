"""An evaluation's throughput next to the same runs started by hand, at the same concurrency.

    .venv/bin/python -m bench.eval_throughput                  # 200 scripted cases, 20 at once
    .venv/bin/python -m bench.eval_throughput --cases 40 --concurrency 10

Real and on 127.0.0.1: a Temporal dev server and the product's worker in this process
(`testing.AgentTestEnvironment`, caching workflows as a deployed worker does), the scripted model
answering at once. Rows: **plain runs** (the typed client starts `--cases` `ReActRun`s, at most
`--concurrency` at once, and awaits each result) and **evaluation** (one `EvalRun` of as many
cases with that `concurrency`: each case a child run, then its `score_eval_case` activity writing
to the store). Printed: cases per second of each and their ratio (target: at least 0.9x).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("REACT_STORE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='bench-evals-')}/s.db")

from clients.evals import Evals
from contracts.evals import EvalCase
from testing import AgentTestEnvironment, answer, scripted_agent


def _cases(count: int) -> list[EvalCase]:
    def one(i: int) -> str:
        return (
            f'{{"name": "b", "cases": [{{"name": "c{i}", "inputs": "q{i}", "expected_output": "ok"}}], '
            + ('"evaluators": ["EqualsExpected"]}')
        )

    return [EvalCase(name=f"c{i}", query=f"q{i}", dataset=one(i)) for i in range(count)]


async def main(cases: int, concurrency: int) -> int:
    """Run both rows; print them side by side."""
    config = scripted_agent(answer("ok"))
    queue = f"bench-evals-{uuid.uuid4().hex[:8]}"
    # A deployed worker caches its workflows (the SDK's default, as `worker.py`); the tests' 0
    # would replay the evaluation's whole history at each of its workflow tasks.
    async with AgentTestEnvironment(task_queue=queue, live=False, max_cached_workflows=1_000) as env:
        slots = asyncio.Semaphore(concurrency)

        async def plain(i: int) -> None:
            async with slots:
                handle = await env.runs.start(f"q{i}", config)
                await handle.result()

        started = time.perf_counter()
        await asyncio.gather(*(plain(i) for i in range(cases)))
        plain_s = time.perf_counter() - started

        evals = Evals(env.client, task_queue=env.task_queue)
        started = time.perf_counter()
        eval_id = await evals.start("bench", "bench", "bench", config, _cases(cases), concurrency=concurrency)
        result = await evals.wait(eval_id)
        eval_s = time.perf_counter() - started
        await evals.close()
    assert result.passed == cases, result
    plain_rate, eval_rate = cases / plain_s, cases / eval_s
    print(f"{'row':<14}{'cases':>7}{'seconds':>10}{'cases/s':>10}")
    print(f"{'plain runs':<14}{cases:>7}{plain_s:>10.2f}{plain_rate:>10.2f}")
    print(f"{'evaluation':<14}{cases:>7}{eval_s:>10.2f}{eval_rate:>10.2f}")
    print(f"ratio evaluation / plain: {eval_rate / plain_rate:.2f}x (target >= 0.9x)")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.cases, args.concurrency)))
