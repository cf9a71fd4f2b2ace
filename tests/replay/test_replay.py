"""Replay every recorded history with today's workflows: a change that breaks determinism fails here.

Each folder of `tests/histories/` holds the histories of one workflow version, recorded
by `scripts/record_histories.py` with the product's data converter (claim-checked
payloads copied under `payloads/`). Every history must still replay, without a
workflow task failure or a nondeterminism error, with `ReActRun` and `AgentSession` as
they are now. See docs/replay.md for when and how to record a new folder.
"""

from __future__ import annotations

import gc
import re
import shutil
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from contracts import RunResult
from contracts.activities import COUNT_TOKENS_ACTIVITY
from contracts.llm import CountTokensRequest
from hosting.data_converter import build_data_converter
from hosting.sandbox import SHARED_WITH_THE_SANDBOX, WORKFLOW_PACKAGES, workflow_runner
from payloads.blob_store import LocalDiskBlobStore
from scripts.record_histories import REQUIRED
from settings.deployment import FileStoreSetting, Settings
from workflows.run.react_run import ReActRun
from workflows.session.agent_session import AgentSession

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
PAYLOADS_FOLDER = "payloads"
"""Where a version's folder keeps the blobs of its claim-checked payloads (the disk store's layout)."""
LATEST = "v5"
"""The folder recorded with the current workflows: it must show everything the recorder checks."""
_CLAIM_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()


def payloads_in(message: ProtoMessage) -> Iterator[Payload]:
    """Every `Payload` inside a protobuf message (maps and repeated fields included)."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE or field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items: Any = value.values()
        elif field.is_repeated:
            items = value
        else:
            items = [value]
        for item in items:
            if isinstance(item, ProtoMessage):
                yield from payloads_in(item)


def claim_digest(payload: Payload) -> str | None:
    """The payload-store digest a claim-checked payload refers to (None: the payload is inline)."""
    if payload.metadata.get("messageType") != _CLAIM_TYPE:
        return None
    reference = json_format.Parse(payload.data, ExternalStorageReference())
    return str(reference.claim_data["sha256"])


def features_of(history: WorkflowHistory) -> set[str]:
    """What a history shows: activities, failures, markers, signals, updates, children, continue-as-new."""
    found: set[str] = set()
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            found.add(f"activity:{event.activity_task_scheduled_event_attributes.activity_type.name}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            if event.activity_task_started_event_attributes.attempt > 1:
                found.add("activity_retried")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            info = event.activity_task_failed_event_attributes.failure.application_failure_info
            found.add(f"activity_failed:{info.type}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
            found.add("activity_cancel_requested")
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            found.add(f"marker:{event.marker_recorded_event_attributes.marker_name}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            found.add(f"signal:{event.workflow_execution_signaled_event_attributes.signal_name}")
        elif kind == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            attrs = event.signal_external_workflow_execution_initiated_event_attributes
            found.add(f"signal_sent:{attrs.signal_name}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            found.add(f"update:{request.input.name}")
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            found.add("child")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            found.add("continued_as_new")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            if event.workflow_execution_started_event_attributes.continued_execution_run_id:
                found.add("continued_from")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            found.add("completed")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            found.add("failed")
        if any(claim_digest(payload) for payload in payloads_in(event)):
            found.add("claim_checked")
    return found


def workflow_id_of(path: Path) -> str:
    """The workflow id a recorded history belongs to: its file name up to the last `@`.

    Replay needs it: a session derives its children's ids from its own (a run its agents'). A `~`
    stands for the `/` of an agent's run id (`<caller>/agent-<n>`), which a file name cannot hold.
    """
    return path.name.removesuffix(".json").rsplit("@", 1)[0].replace("~", "/")


def read_history(path: Path) -> WorkflowHistory:
    """A recorded history, with the workflow id its file name carries."""
    return WorkflowHistory.from_json(workflow_id_of(path), path.read_text())


def _history_files() -> list[Path]:
    return sorted(HISTORIES.glob("*/*.json"))


def version_replayer(
    version: Path, scratch: Path, workflows: list[type] | None = None, **options: Any
) -> Replayer:
    """A replayer of today's workflows with the product's data converter.

    Claim-checked payloads are read from a copy of the version's `payloads/` folder:
    replaying encodes the workflow's commands again, and their blobs must not be
    written into the repository.
    """
    store_root = scratch / "payloads"
    if (version / PAYLOADS_FOLDER).is_dir():
        shutil.copytree(version / PAYLOADS_FOLDER, store_root)
    converter: DataConverter = build_data_converter(
        Settings(payload_store=FileStoreSetting(store_root)), store=LocalDiskBlobStore(store_root)
    )
    return Replayer(workflows=workflows or [ReActRun, AgentSession], data_converter=converter, **options)


def test_there_are_histories_of_every_version() -> None:
    versions = sorted(path.parent.name for path in _history_files())
    assert {"v1", LATEST} <= set(versions), f"history folders found: {sorted(set(versions))}"


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "production-runner"])
@pytest.mark.parametrize("path", _history_files(), ids=lambda path: f"{path.parent.name}/{path.name}")
async def test_history_replays(path: Path, sandboxed: bool, tmp_path: Path) -> None:
    # Both runners a worker can use (`hosting.sandbox.workflow_runner`): the full sandbox and the default.
    replayer = version_replayer(path.parent, tmp_path, workflow_runner=workflow_runner(sandboxed=sandboxed))
    result = await replayer.replay_workflow(read_history(path), raise_on_replay_failure=False)
    if result.replay_failure is not None:
        pytest.fail(
            f"{path.relative_to(HISTORIES.parent.parent)} no longer replays with today's workflows:\n"
            f"  {_reason(result.replay_failure)}\n"
            "A workflow change altered the commands this recorded execution issued: keep the old "
            "commands for it behind workflow.patched; never re-record a released version (docs/replay.md).",
            pytrace=False,
        )


def test_the_sandboxed_replays_import_the_product_afresh() -> None:
    # With no `imports_passed_through` in workflow code (tests/project/test_workflow_rules.py), this is
    # what decides which product modules a sandboxed replay shares with the test process.
    runner = workflow_runner(sandboxed=True)
    assert isinstance(runner, SandboxedWorkflowRunner)
    passed = {m for m in runner.restrictions.passthrough_modules if m.split(".")[0] in WORKFLOW_PACKAGES}
    assert passed == set(SHARED_WITH_THE_SANDBOX)
    assert not runner.restrictions.passthrough_all_modules


async def test_sandboxed_runs_leave_no_copies_of_the_product_behind(tmp_path: Path) -> None:
    # The sandbox imports the product's modules afresh for every run; once a run is done they must
    # be freed. Two things kept every run's copy alive before (about 10,000 objects each): an
    # `exclude_if` lambda (pydantic-core hides it from the collector; `contracts.omit`) and a
    # `RootModel[...]` of the product's classes, which pydantic registers in its own module.
    path = sorted((HISTORIES / LATEST).glob("replay-approvals-*.json"))[0]

    async def replay(times: int) -> int:
        for n in range(times):
            scratch = tmp_path / f"{times}-{n}"
            replayer = version_replayer(path.parent, scratch, workflow_runner=workflow_runner(sandboxed=True))
            result = await replayer.replay_workflow(read_history(path), raise_on_replay_failure=False)
            assert result.replay_failure is None
        gc.collect()
        return _stale_product_models()

    warmed = await replay(3)
    assert await replay(6) <= warmed + 10, "each sandboxed run left its model classes behind"


def _stale_product_models() -> int:
    """Model classes of the product that are not the ones the test process imported: sandbox copies."""
    count = 0
    for obj in gc.get_objects():
        # `type(obj)`, never `isinstance`: a class another test's sandbox derived from a restricted
        # proxy (httpx's `urllib.request.Request` subclass) is a proxy whose `__class__` raises.
        if (
            issubclass(type(obj), type)
            and issubclass(cast(type, obj), BaseModel)
            and obj.__module__.split(".")[0] in WORKFLOW_PACKAGES
        ):
            module = sys.modules.get(obj.__module__)
            count += getattr(module, obj.__name__, None) is not obj
    return count


def _reason(failure: Exception) -> str:
    """The SDK's own words (its nondeterminism message is buried in a long Rust debug string)."""
    text = str(failure)
    match = re.search(r"Nondeterminism error: (.*?)(?:\\?[\"'], |$)", text)
    return f"{type(failure).__name__}: {match.group(1) if match else text[:600]}"


def test_the_latest_histories_show_every_scenario() -> None:
    found: set[str] = set()
    for path in sorted((HISTORIES / LATEST).glob("*.json")):
        found |= features_of(read_history(path))
    required = set[str]().union(*REQUIRED.values())
    assert required <= found, f"{LATEST} histories miss {sorted(required - found)}"


@workflow.defn(name="ReActRun", sandboxed=False)
class ReActRunWithAnExtraActivity(ReActRun):
    """Today's run with one more activity before its loop: the kind of change replay must catch."""

    @workflow.run
    async def run(self, *args: Any) -> RunResult:
        """Count tokens first (a command the recorded runs never issued), then run as usual."""
        await workflow.execute_activity(
            COUNT_TOKENS_ACTIVITY,
            CountTokensRequest(model="scripted", messages=[]),
            start_to_close_timeout=timedelta(seconds=5),
        )
        return await super().run(*args)


async def test_a_change_of_commands_fails_replay(tmp_path: Path) -> None:
    runs = [path for path in (HISTORIES / LATEST).glob("replay-tool-round-*.json")]
    assert runs, "no recorded tool-round run to replay"
    replayer = version_replayer(
        runs[0].parent,
        tmp_path,
        workflows=[ReActRunWithAnExtraActivity, AgentSession],
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    result = await replayer.replay_workflow(read_history(runs[0]), raise_on_replay_failure=False)
    assert isinstance(result.replay_failure, workflow.NondeterminismError), repr(result.replay_failure)
