"""Record workflow histories of real runs and sessions for the replay tests (docs/replay.md).

    .venv/bin/python scripts/record_histories.py tests/histories/v5

Starts a dev server and a worker (no workflow cache, the product's data converter), runs
every scenario of `SCENARIOS`, checks that its histories show what the scenario is for
(`REQUIRED`, read by `tests.replay.test_replay.features_of`), and writes them (every run of a
session, children included) to the folder as `<workflow id>@<run id suffix>.json` (a `/` in
an id, as in an agent's run, written `~`). Claim-checked payloads are copied under
`payloads/`, so the folder is self-contained. Record a new folder for a new workflow version
only: never re-record a released version's folder. Scenarios send plain JSON, so they stay
valid as models evolve. The scenarios are in `scripts/replay_scenarios.py`, the recording
setup they drive (`Lab`, `Session`) in `scripts/_replay_lab.py`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts._replay_lab import Lab
from scripts.replay_scenarios import REQUIRED, SCENARIOS

__all__ = ["REQUIRED", "SCENARIOS", "record"]

USAGE = "usage: record_histories.py FOLDER [SCENARIO ...]   (e.g. tests/histories/v3)"


async def _settled(client: Any, workflow_id: str, run_id: str) -> Any:
    """The run's history once no workflow task is in flight (an idle session's ends with a completed one)."""
    from temporalio.api.enums.v1 import EventType

    in_flight = (EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    for _ in range(100):
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        if history.events[-1].event_type not in in_flight:
            return history
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{workflow_id} (run {run_id}) still has a workflow task in flight after 20 s")


async def _histories_of(client: Any, workflow_id: str) -> list[tuple[str, Any]]:
    """(run id, history) of every run of a workflow id, oldest first, following continue-as-new."""
    run_id: str = (await client.get_workflow_handle(workflow_id).describe()).run_id
    runs: list[tuple[str, Any]] = []
    while run_id:
        history = await _settled(client, workflow_id, run_id)
        runs.append((run_id, history))
        run_id = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
    return runs[::-1]


async def record(folder: Path, only: set[str]) -> None:
    """Record the scenarios (all, or those in `only`) into `folder`."""
    from payloads.blob_store import LocalDiskBlobStore
    from tests.replay.test_replay import PAYLOADS_FOLDER, claim_digest, features_of, payloads_in

    if any(folder.glob("*.json")):
        raise SystemExit(f"{folder} already holds histories: record a new version's folder (docs/replay.md)")
    work = Path(tempfile.mkdtemp(prefix="record-histories-"))
    os.environ["REACT_PAYLOAD_STORE"] = f"file:{work / 'claims'}"
    for name in ("REACT_PAYLOAD_THRESHOLD", "REACT_ENCRYPTION_KEYS", "REACT_CODEC_ENDPOINT"):
        os.environ.pop(name, None)
    claims, copies = LocalDiskBlobStore(work / "claims"), LocalDiskBlobStore(folder / PAYLOADS_FOLDER)
    try:
        async with Lab.start(work) as lab:
            for name, scenario in SCENARIOS.items():
                if only and name not in only:
                    continue
                runs = [run for wid in await scenario(lab) for run in await _histories_of(lab.client, wid)]
                found = set[str]().union(*(features_of(history) for _, history in runs))
                missing = REQUIRED[name] - found
                if missing:
                    raise SystemExit(f"scenario {name} did not record {sorted(missing)}")
                folder.mkdir(parents=True, exist_ok=True)
                for run_id, history in runs:
                    name = history.workflow_id.replace("/", "~")  # an agent's run: `<caller>/agent-<n>`
                    path = folder / f"{name}@{run_id[-12:]}.json"
                    path.write_text(json.dumps(json.loads(history.to_json())) + "\n")
                    for event in history.events:
                        for digest in filter(None, map(claim_digest, payloads_in(event))):
                            await copies.put(await claims.get(digest))
                print(f"{name}: {len(runs)} histories")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    logging.getLogger("temporalio").setLevel(logging.ERROR)  # the scenarios' expected failures
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__}\nScenarios: {', '.join(SCENARIOS)}")
        raise SystemExit(0)
    if len(sys.argv) < 2:
        raise SystemExit(USAGE)
    asyncio.run(record(Path(sys.argv[1]), set(sys.argv[2:])))
