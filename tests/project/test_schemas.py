"""The published JSON Schemas (`schemas/`): current, complete, and true of real payloads on the wire."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from client import AgentConfig, Runs, Sessions
from clients.api import STREAM_HANDLER_PREFIX, WORKFLOWS
from clients.schemas import SCHEMA_FOLDER, manifest, stale_files
from contracts.errors import DESCRIPTIONS
from contracts.stream import EVENTS_TOPIC
from conversation import Context
from payloads.blob_store import BlobStore
from tests.helpers import call, payload_data, turn
from tests.llm_gate import answer_llm_call, held, held_llm_call
from tests.session_helpers import new_session_id, script


def schema(name: str) -> Draft202012Validator:
    document = json.loads((SCHEMA_FOLDER / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


def problems(name: str, value: Any) -> list[str]:
    """Where and why `value` does not match the schema file `name` (empty: it matches)."""
    found: Iterable[ValidationError] = schema(name).iter_errors(value)  # pyright: ignore[reportUnknownMemberType]
    return [f"{list(error.absolute_path)}: {error.message}" for error in found]


def assert_valid(name: str, value: Any) -> None:
    assert problems(name, value) == [], f"{name}: {problems(name, value)[:3]}"


def test_the_committed_schemas_are_current() -> None:
    stale = stale_files()
    assert stale == [], f"stale schemas {stale}: run .venv/bin/python scripts/export_schemas.py"


async def test_the_manifest_names_every_handler_of_the_workflows(client: Client, task_queue: str) -> None:
    # Controls are registered at run time, so ask live workflows (the SDK's metadata query).
    config = AgentConfig(model="scripted", script=[turn("42")])
    run = await Runs(client, task_queue=task_queue).start("What is 6 * 7?", config)
    await run.result()
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("What is 6 * 7?", config=config)
    for api, workflow_id in zip(WORKFLOWS, (run.workflow_id, session.workflow_id), strict=True):
        metadata = await client.get_workflow_handle(workflow_id).query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
        definition = metadata.definition
        assert definition.type == api.name
        signals = {h.name for h in api.handlers if h.kind in ("signal", "signal_and_update")}
        updates = {h.name for h in api.handlers if h.kind in ("update", "signal_and_update")}
        queries = {h.name for h in api.handlers if h.kind == "query"}
        streamed = {d.name for d in definition.signal_definitions if d.name.startswith(STREAM_HANDLER_PREFIX)}
        assert bool(streamed) == (api.stream is not None)
        own_signals = {d.name for d in definition.signal_definitions if d.name not in streamed}
        assert own_signals == signals
        own_updates = {
            d.name for d in definition.update_definitions if not d.name.startswith(STREAM_HANDLER_PREFIX)
        }
        assert own_updates == updates
        own_queries = {d.name for d in definition.query_definitions if not d.name.startswith("__")}
        assert own_queries == queries
    files = json.loads((SCHEMA_FOLDER / "api.json").read_text(encoding="utf-8"))
    assert files == manifest()
    for api in files["workflows"].values():
        for handler in api["handlers"].values():
            for name in (handler["argument"], handler["result"]):
                assert name is None or (SCHEMA_FOLDER / name).is_file(), name


def test_every_error_code_is_published() -> None:
    codes = {
        entry["const"] for entry in json.loads((SCHEMA_FOLDER / "error_codes.json").read_text())["oneOf"]
    }
    assert set(DESCRIPTIONS) <= codes and "snapshot_expired" in codes
    assert_valid("error_codes.json", "payload_too_large")
    assert problems("error_codes.json", "no_such_code")


# ---- every schema against payloads of real runs and sessions -------------------------------------

API: dict[str, Any] = json.loads((SCHEMA_FOLDER / "api.json").read_text(encoding="utf-8"))
MODEL_FILES = sorted(
    path.name for path in SCHEMA_FOLDER.glob("*.json") if path.name not in ("api.json", "error_codes.json")
)


class SentQueries(Interceptor, OutboundInterceptor):
    """Records the argument of every query the product's client sends (queries leave no history)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        OutboundInterceptor.__init__(self, next)
        return self

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        self.sent.extend((input.query, arg) for arg in input.args)
        return await super().query_workflow(input)


class Payloads:
    """Real payloads by the schema file the manifest names for them."""

    def __init__(self, client: Client, store: BlobStore) -> None:
        self.client, self.store = client, store
        self.by_schema: dict[str, list[Any]] = {}

    def add(self, schema_file: str | None, value: Any) -> None:
        if schema_file is not None:
            self.by_schema.setdefault(schema_file, []).append(value)

    async def decode(self, payloads: Any) -> Any:
        return json.loads(await payload_data(payloads.payloads[0], self.store))

    async def history(self, workflow_type: str, workflow_id: str) -> None:
        """Start input, result, Update inputs and answers, and signals, of every run of a workflow."""
        api = API["workflows"][workflow_type]
        handlers: dict[str, Any] = api["handlers"]
        run_id: str | None = None
        while True:
            history = await self.client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            updates: dict[str, str] = {}
            for event in history.events:
                await self.event(event, api, handlers, updates)
            started = history.events[0].workflow_execution_started_event_attributes
            if not started.continued_execution_run_id:
                return
            run_id = started.continued_execution_run_id

    async def event(
        self, event: HistoryEvent, api: dict[str, Any], handlers: dict[str, Any], updates: dict[str, str]
    ) -> None:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            self.add(
                api["argument"], await self.decode(event.workflow_execution_started_event_attributes.input)
            )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            result = event.workflow_execution_completed_event_attributes.result
            self.add(api["result"], await self.decode(result))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal = event.workflow_execution_signaled_event_attributes
            self.add(handlers[signal.signal_name]["argument"], await self.decode(signal.input))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            updates[request.meta.update_id] = request.input.name
            self.add(handlers[request.input.name]["argument"], await self.decode(request.input.args))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            completed = event.workflow_execution_update_completed_event_attributes
            name = updates[completed.meta.update_id]
            self.add(handlers[name]["result"], await self.decode(completed.outcome.success))

    async def queries(self, workflow_type: str, workflow_id: str, arguments: dict[str, Any]) -> None:
        """Every query of the workflow, answered as JSON (a plain client's view)."""
        handle = self.client.get_workflow_handle(workflow_id)
        for name, handler in API["workflows"][workflow_type]["handlers"].items():
            if handler["kind"] == "query":
                arg = arguments.get(name)
                answer = await (handle.query(name, arg) if arg is not None else handle.query(name))
                self.add(handler["result"], answer)

    async def sent_queries(self, workflow_type: str, sent: list[tuple[str, Any]]) -> None:
        """The query arguments the product's client sent, as the JSON it put on the wire."""
        handlers = API["workflows"][workflow_type]["handlers"]
        for name, arg in sent:
            [payload] = await self.client.data_converter.encode([arg])
            self.add(handlers[name]["argument"], json.loads(payload.data))


async def a_run(client: Client, task_queue: str, store: BlobStore) -> str:
    """A run steered, injected into and given a context op while its LLM call is held."""
    config = AgentConfig.model_validate(
        {
            "model": "scripted",
            "tools": ["calculator"],
            "script": [turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]), held(), turn("42")],
        }
    )
    run = await Runs(client, task_queue=task_queue).start("What is 6 * 7?", config)
    await held_llm_call(client, store, run.workflow_id)
    await run.steer("Show your work.")
    await run.inject("In French, please.")
    await run.replace_context(Context.model_validate({"messages": [{"role": "user", "content": "6 * 7?"}]}))
    await answer_llm_call(client, store, run.workflow_id, "draft")
    await run.result()
    return run.workflow_id


async def a_streamed_runs_items(client: Client, task_queue: str) -> list[Any]:
    """The items of a streamed run's stream (trace items and deltas), as plain JSON."""
    config = AgentConfig(model="scripted", stream=True, script=[turn("Forty-two.", chunk_chars=3)])
    run = await Runs(client, task_queue=task_queue).start("What is 6 * 7?", config)
    await run.result()
    stream = WorkflowStreamClient.create(client, run.workflow_id)
    items: list[Any] = [item.data async for item in stream.subscribe(EVENTS_TOPIC)]
    assert any(item["type"] == "delta" for item in items) and any(item["type"] == "trace" for item in items)
    return items


async def a_session(client: Client, task_queue: str, store: BlobStore) -> str:
    """A session driven through every Update: asks, controls of a held run, config, compaction, export."""
    config = AgentConfig.model_validate({"model": "scripted", "tools": ["calculator"]})
    session = Sessions(client, task_queue=task_queue, store=store).get(new_session_id())
    accepted = await session.ask("Hi", config=config, overrides=script(held(), turn("Hello")))
    await held_llm_call(client, store, accepted.run_workflow_id)
    assert (await session.steer("Be brief.")).status == "queued"  # the run answers with `control_ack`
    await answer_llm_call(client, store, accepted.run_workflow_id, "draft")
    await session.await_result(accepted.request_id)
    await session.ask_sync("And now?", overrides=script(turn("Fine")))
    await session.cancel("nothing to cancel")
    await session.approve("no-call", approver="schema-test")  # idle: rejected, but in history
    await session.inject("late")
    await session.replace_context(Context.model_validate({"messages": [{"role": "user", "content": "Hi"}]}))
    await session.compact(op_id="compact-1")
    await session.set_system_prompt("You are terse.")
    await session.register_tool("echo")
    await session.unregister_tool("echo")
    await session.set_tool_context({"tenant": "t-1"})
    await session.set_model("scripted")
    await session.set_webhook(None)
    await session.export()
    await session.reset_thread(reason="schema test")
    await session.fork(seq=0)
    await session.edit(0, "Hi, edited", request_id="edited")  # a branch: `record_branch` at this root
    await session.branches()
    await session.rename("Schema test")
    await session.agent_state()
    await session.thread_page(0, limit=2)
    await session.context("default")
    return session.workflow_id


async def an_archived_segment(client: Client, task_queue: str, store: BlobStore) -> Any:
    """A segment the session archived to the payload store, as stored (over 1 MiB in memory archives)."""
    session = Sessions(client, task_queue=task_queue, store=store).get(new_session_id())
    config = AgentConfig(model="scripted")
    for n in range(5):  # 300 KB a turn: the fifth ask's run starts with over 1 MiB in memory
        question, answer = f"question {n} " * 5_000, f"answer {n} " * 25_000
        await session.ask_sync(question, config=config, overrides=script(turn(answer)))
    assert (await session.status()).archived_entries > 0
    page = await session.thread_page(0)  # the client reads the segment; the raw query names it
    raw = await client.get_workflow_handle(session.workflow_id).query("thread", {"since_seq": 0})
    assert page.entries and raw["segment"] is not None
    return json.loads(await store.get(raw["segment"]["digest"]))


async def test_every_schema_matches_real_payloads(client: Client, task_queue: str, store: BlobStore) -> None:
    sent = SentQueries()
    observed = Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        interceptors=[sent],
    )
    payloads = Payloads(client, store)
    run_id = await a_run(observed, task_queue, store)
    await payloads.history("ReActRun", run_id)
    await payloads.queries("ReActRun", run_id, {"thread": {"since_seq": 0, "limit": 2}})
    session_id = await a_session(observed, task_queue, store)
    await payloads.history("AgentSession", session_id)
    for record in await Sessions(client, task_queue=task_queue).get(session_id).requests():
        await payloads.history("ReActRun", record.run_workflow_id)  # its runs: forwarded controls
    await payloads.queries("AgentSession", session_id, {"thread": {"since_seq": 0}, "context": {}})
    await payloads.sent_queries("AgentSession", sent.sent)
    payloads.add(API["payload_store"]["Segment"], await an_archived_segment(client, task_queue, store))
    for item in await a_streamed_runs_items(client, task_queue):
        payloads.add(API["workflows"]["ReActRun"]["stream"]["item"], item)

    assert sorted(payloads.by_schema) == MODEL_FILES, "a schema without a real payload"
    counts = {name.removesuffix(".json"): len(values) for name, values in sorted(payloads.by_schema.items())}
    print(f"\n{len(MODEL_FILES)} schemas checked against {sum(counts.values())} real payloads: {counts}")
    for name, values in payloads.by_schema.items():
        for value in values:
            assert_valid(name, value)
    # What another service sends: plain JSON, no Python models.
    assert_valid("RunInput.json", {"query": "What is 6 * 7?", "config": {"model": "openai/gpt-4o-mini"}})
    assert problems("SteerInput.json", {"content": "x" * 100_001})
    assert problems("RunInput.json", {"query": "q"})  # no config
