"""What freezing start-up's objects saves: the pause of a full garbage collection in a worker process.

    .venv/bin/python -m bench.gc_pause              # 15 rounds
    .venv/bin/python -m bench.gc_pause --rounds 5 --garbage 50000

In this process: import what `worker.py` imports and load litellm as the worker's warm-up does
(`activities.llm.litellm_loading.load_litellm_now`), then, each round, make `--garbage` small reference cycles
(dicts in a list that refers to itself: the kind of garbage only a collection frees) and time one
full `gc.collect()`, once with start-up's objects in the collector's generations and once frozen
(`hosting.warm_up.freeze_start_up_objects`), alternating, so both arms share the machine's
conditions. A full collection holds the GIL: every thread waits for it, a workflow activation and
its 2 s deadlock check included. This measures the collector alone, not a running worker's
activations; how often full collections come depends on how much the worker allocates.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import time

from activities.llm.litellm_loading import load_litellm_now
from hosting.warm_up import freeze_start_up_objects

WORKER_MODULES = ("worker", "hosting.worker_process")


def _garbage(count: int) -> None:
    gc.disable()  # kept for the timed collection, not freed by the young generations' on the way
    for _ in range(count // 100):
        cycle: list[object] = [{"n": n} for n in range(100)]
        cycle.append(cycle)
    gc.enable()


def _full_collection_s(garbage: int) -> float:
    _garbage(garbage)
    started = time.perf_counter()
    gc.collect()
    return time.perf_counter() - started


def main() -> None:
    """Measure both arms, alternating, and print one markdown table."""
    parser = argparse.ArgumentParser(description="The pause of a full garbage collection, frozen or not.")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--garbage", type=int, default=100_000, help="objects of cyclic garbage per collection"
    )
    args = parser.parse_args()
    for module in WORKER_MODULES:  # what the worker process imports
        importlib.import_module(module)
    load_litellm_now()
    gc.collect()
    tracked = len(gc.get_objects())
    thawed: list[float] = []
    frozen: list[float] = []
    frozen_count = 0
    for _ in range(args.rounds):
        gc.unfreeze()
        thawed.append(_full_collection_s(args.garbage))
        frozen_count = freeze_start_up_objects()
        frozen.append(_full_collection_s(args.garbage))
    print(f"objects tracked after start-up: {tracked:,}; frozen: {frozen_count:,}")
    print(f"{args.rounds} rounds, {args.garbage:,} objects of cyclic garbage per collection\n")
    print("| start-up objects | full collection, median (ms) | max (ms) |")
    print("|---|---|---|")
    for name, times in (("in the generations", thawed), ("frozen", frozen)):
        print(f"| {name} | {statistics.median(times) * 1000:.1f} | {max(times) * 1000:.1f} |")
    ratio = statistics.median(frozen) / statistics.median(thawed)
    print(f"\nfrozen / in the generations (medians): x{ratio:.2f}")


if __name__ == "__main__":
    main()
