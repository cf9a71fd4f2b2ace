"""A worker process's warm-up once it polls: load litellm, then freeze what start-up allocated.

`worker.py` and `testing.AgentTestEnvironment` run `warm_up_in_background()` once their worker
polls, so start-up never waits for litellm's seconds-long import (3-7 s of CPU). Scripted calls
never wait for it (`activities.llm.models.scripted` answers without litellm); a provider call
that arrives while the import is still running waits for the rest of it
(`activities.llm.litellm_loading.load_litellm`, in a thread while the call heartbeats), and later
ones wait for nothing. pydantic-evals (about 2 s more) is not loaded here: most workers never
score a case, and the first case a worker scores imports it in a thread
(`activities.evals.scoring`).

Why freeze: a full (generation 2) garbage collection holds the GIL, so it stops every thread of
the process, the one running a workflow activation too, and the SDK fails an activation that has
not yielded within 2 s as a potential deadlock ([TMPRL1101]). After importing litellm and the SDK a
worker holds some 340,000 objects, and every full collection walks them all: about 0.2 s on a
quiet machine, 0.5 s seen every few seconds in the test suite's process under load, pauses that
add to every activation and query they overlap. `gc.freeze()` moves them to the permanent
generation, which collections skip (`python -m bench.gc_pause` measures both). The objects frozen
are those alive at that moment; any of them that later becomes cyclic garbage is never collected,
which for start-up's modules, classes and caches is what one wants anyway.
"""

from __future__ import annotations

import gc
import logging
import threading

from activities.llm.llm_call import warm_litellm

_log = logging.getLogger(__name__)


def freeze_start_up_objects() -> int:
    """Collect once, then move every object the collector tracks to the permanent generation.

    Returns:
        How many objects are frozen now.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def warm_up() -> int:
    """Load litellm (one scripted call through it), then `freeze_start_up_objects()` (blocks for seconds).

    Returns:
        How many objects are frozen now.
    """
    warm_litellm()
    frozen = freeze_start_up_objects()
    _log.info("warm-up done: litellm loaded, %d start-up objects frozen out of garbage collection", frozen)
    return frozen


_started: threading.Thread | None = None
_start_lock = threading.Lock()


def warm_up_in_background() -> threading.Thread:
    """Run `warm_up` in a daemon thread, once per process (join the thread returned to wait for it).

    Later calls return the first call's thread: what is worth freezing is what the first
    worker's start-up loaded, not whatever a test suite holds when its next environment starts.
    """
    global _started
    with _start_lock:
        if _started is None:
            _started = threading.Thread(target=warm_up, name="worker-warm-up", daemon=True)
            _started.start()
        return _started
