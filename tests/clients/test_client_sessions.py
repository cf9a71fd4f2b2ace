"""The typed client's sessions (`client.Sessions`) against a real dev server and worker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput
from temporalio.service import RPCError, RPCStatusCode

from client import AgentConfig, ContextPolicy, MessageEntry, ModelSettings, RejectedError, Runs, Sessions
from clients.runs import RunHandle
from contracts import ThreadPage, ThreadQuery
from contracts.limits import MAX_QUERY_CHARS, MAX_SYSTEM_PROMPT_CHARS
from contracts.session import AskInput
from contracts.stream import TraceItem
from payloads.blob_store import BlobStore
from testing import script_overrides
from tests.helpers import call, turn, update_names
from tests.session_helpers import new_session_id, script

SLOW = 1.5


def config(*turns: Any, **fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"model": "scripted", "script": list(turns), **fields})


async def test_a_session_is_asked_configured_read_and_exported(client: Client, task_queue: str) -> None:
    sessions = Sessions(client, task_queue=task_queue)
    session = sessions.get(new_session_id())
    agent = config(
        turn(tool_calls=[call("calculator", {"expression": "17 * 23"})]),
        turn("391"),
        tools=["calculator"],
    )
    policy = ContextPolicy(keep_last_turns=1)
    accepted = await session.ask(
        "What is 17 * 23?", config=agent, agent_id="client-test", session_policy=policy
    )
    first = await session.await_result(accepted.request_id)
    assert (first.status, first.result, first.request_id) == ("completed", "391", accepted.request_id)
    description = await client.get_workflow_handle(session.workflow_id).describe()
    assert await description.static_summary() == "session client-test · scripted: What is 17 * 23?"
    assert "**agent** client-test" in (await description.static_details() or "")

    status = await session.status()
    assert (status.agent_id, status.state, status.thread_length) == ("client-test", "idle", 4)
    [record] = await session.requests()
    assert (record.query_preview, record.run_workflow_id) == ("What is 17 * 23?", accepted.run_workflow_id)
    assert (await session.request(accepted.request_id)) == record
    kinds = [event.kind for event in (await session.trace(accepted.request_id)).events]
    assert kinds[0] == "request_started" and "tool_started" in kinds and kinds[-1] == "request_completed"
    run = await session.run(accepted.request_id)
    assert (await run.state()).outcome.status == "completed"

    assert (await session.compact(op_id="c-0")).reason == "nothing_to_compact"  # one turn: nothing older
    second = await session.ask_sync("And plus one?", overrides=script(turn("392")))
    assert second.result == "392" and second.query_preview == "And plus one?"
    entries = [e async for e in session.thread()]
    assert [e.seq for e in entries] == list(range(6))
    assert [e.payload.content for e in entries if isinstance(e, MessageEntry)][-2:] == [
        "And plus one?",
        "392",
    ]
    compacted = await session.compact(op_id="c-1")
    assert (compacted.status, compacted.op_id) == ("applied", "c-1")
    assert (await session.context()).summary  # the older turn is now a summary
    assert (await session.compact(op_id="c-1")).status == "duplicate"

    # Config for the next run: accepted, or a named rejection that changes nothing.
    assert (await session.set_system_prompt("Be brief.")).status == "accepted"
    assert (await session.register_tool("echo")).status == "accepted"
    unknown = await session.register_tool("no_such_tool")
    assert (unknown.status, unknown.reason) == ("rejected", "unknown_tool")
    assert (await session.unregister_tool("calculator")).status == "accepted"
    assert (await session.set_tool_context({"user": "u-1"})).status == "accepted"
    assert (await session.set_model("scripted", ModelSettings(temperature=0))).status == "accepted"
    huge = await session.set_system_prompt("p" * (MAX_SYSTEM_PROMPT_CHARS + 1))
    assert (huge.status, huge.reason) == ("rejected", "payload_too_large")
    assert (await session.set_model(" ")).reason == "invalid_input"
    config_now = (await session.status()).config
    assert config_now.system_prompt == "Be brief." and config_now.tools == ["echo"]
    assert config_now.tool_context == {"user": "u-1"} and config_now.model_settings.temperature == 0

    idle = await session.steer("anyone there?")
    assert (idle.status, idle.reason) == ("rejected", "idle")
    with pytest.raises(RejectedError) as unknown_request:
        await session.await_result("no-such-request")
    assert unknown_request.value.code == "unknown_request"
    with pytest.raises(RejectedError):
        await session.trace("no-such-request")

    # Export, then a new session starts from the token with the same context.
    exported = await session.export(ttl_s=600)
    assert exported.token.startswith("rt2.") and exported.expires_at is not None
    restored = sessions.get(new_session_id())
    answer = await restored.ask_sync("What did we say?", config=config(turn("391")), snapshot=exported.token)
    assert answer.result == "391"
    assert (await restored.context()).summary == (await session.context()).summary


async def test_a_busy_session_rejects_asks_and_forwards_control_to_its_run(
    client: Client, task_queue: str
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    accepted = await session.ask("Slow one", config=config(turn("late", delay_s=SLOW), turn("unused")))
    with pytest.raises(RejectedError) as busy:
        await session.ask("Another", config=config(turn("x")))
    assert busy.value.code == "busy" and accepted.request_id in busy.value.message
    steered = await session.steer("hurry", expected_request_id=accepted.request_id)
    assert steered.status == "queued"
    mismatch = await session.inject("hi", expected_request_id="other-request")
    assert (mismatch.status, mismatch.reason) == ("rejected", "request_mismatch")
    oversized = await session.steer("x" * (MAX_QUERY_CHARS + 1))
    assert (oversized.status, oversized.reason) == ("rejected", "payload_too_large")
    assert (await session.cancel("stop")).status == "accepted"
    record = await session.await_result(accepted.request_id)
    assert record.status == "cancelled"
    # Only the calls the client let through reached history; the oversized steer did not.
    names = await update_names(client.get_workflow_handle(session.workflow_id))
    assert names.count("steer") == 1 and names.count("inject") == 1 and "cancel" in names


async def test_an_ask_right_after_the_run_s_end_is_not_refused_busy(client: Client, task_queue: str) -> None:
    # The run ends before its session records it: an ask sent as soon as the run's result is in,
    # or as soon as a query says the request ended, can reach the session in the workflow task
    # that applies the run's end, where the ask is checked first. The client retries that `busy`.
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = config(turn("Quick."))
    accepted = await session.ask("Turn 0", config=agent)
    for n in range(1, 6):
        await (await session.run(accepted.request_id)).result()
        accepted = await session.ask(f"Turn {n}", config=agent)  # on_busy: reject
        assert accepted.disposition == "started", accepted
    await (await session.run(accepted.request_id)).result()
    slow = await session.ask("Slow", overrides=script_overrides(turn("Late.", delay_s=SLOW)))
    with pytest.raises(RejectedError) as busy:  # a request that really runs is still refused
        await session.ask("Turn 6", config=agent)
    assert busy.value.code == "busy" and slow.request_id in busy.value.message


class QueryCounter(Interceptor):
    """Counts the queries a client sends."""

    def __init__(self) -> None:
        self.count = 0

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counter = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                counter.count += 1
                return await super().query_workflow(input)

        return Counting(next)


async def test_a_busy_refusal_by_an_ended_run_costs_no_query(client: Client, task_queue: str) -> None:
    # The refusal names the request and its run: the client describes the run (the server answers)
    # and asks again naming the request it saw end; the session then waits for that end.
    queries = QueryCounter()
    settings = client.config()
    settings["interceptors"] = [queries]
    counting = Client(**settings)
    session = Sessions(counting, task_queue=task_queue).get(new_session_id())
    runs = Runs(counting, task_queue=task_queue)
    agent = config(turn("Quick."))
    accepted = await session.ask("Turn 0", config=agent)
    for n in range(1, 6):
        await runs.get(accepted.run_workflow_id).result()
        accepted = await session.ask(f"Turn {n}", config=agent)
        assert accepted.disposition == "started", accepted
    assert queries.count == 0


async def test_an_ask_after_a_request_waits_for_its_end_and_starts(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    slow = await session.ask("Slow", config=config(turn("Late.", delay_s=SLOW)))
    with pytest.raises(RejectedError) as busy:
        await session.ask("Next")
    assert busy.value.code == "busy"
    assert busy.value.details == {"request_id": slow.request_id, "run_workflow_id": slow.run_workflow_id}
    # Naming another request changes nothing: still busy.
    with pytest.raises(RejectedError, match="busy"):
        await session.ask(AskInput(query="Next", after_request_id="another-request"))
    # Naming the active one: accepted once it has ended, as started (the ask waited for the end).
    waiting = asyncio.create_task(session.ask(AskInput(query="Next", after_request_id=slow.request_id)))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    accepted = await asyncio.wait_for(waiting, 30)
    assert accepted.disposition == "started"
    slow_record, next_record = (await session.requests())[-2:]
    assert slow_record.status == "completed" and next_record.request_id == accepted.request_id
    assert (await session.run(accepted.request_id)).workflow_id == accepted.run_workflow_id


async def test_the_run_an_ask_names_answers_at_once(client: Client, task_queue: str) -> None:
    # The documented pattern: ask, then follow or await the run the answer names, at once. Every
    # `RunHandle` method must find the run (it used to raise NOT_FOUND until the session started it).
    # One query at a time per run: the SDK buffers one workflow task per run, so queries sent
    # together while a task runs can be dropped and time out (temporalio/sdk-core#578).
    sessions, runs = Sessions(client, task_queue=task_queue), Runs(client, task_queue=task_queue)
    agent = config(turn("Here."))

    async def conversation(n: int) -> list[str]:
        session = sessions.get(new_session_id())
        answers: list[str] = []
        for i in range(2):
            accepted = await session.ask(f"{n}.{i}", config=agent)
            run = runs.get(accepted.run_workflow_id)
            if i == 0:
                assert (await run.state()).request_id == accepted.request_id
            events, result = await asyncio.gather(collect(run), run.result())
            assert events[-1] == "request_completed", events
            assert (await run.trace()).events[-1].kind == "request_completed"
            answers.append(result.answer or "")
        return answers

    outcomes = await asyncio.gather(*(conversation(n) for n in range(20)))
    assert outcomes == [["Here."] * 2] * 20


async def test_the_run_of_an_enqueued_ask_is_awaited_until_it_starts(client: Client, task_queue: str) -> None:
    sessions, runs = Sessions(client, task_queue=task_queue), Runs(client, task_queue=task_queue)
    session = sessions.get(new_session_id())
    first = await session.ask("first", config=config(turn("One.", delay_s=0.5)))
    queued = await session.ask("second", overrides=script(turn("Two.")), on_busy="enqueue")
    assert queued.disposition == "enqueued"
    run = runs.get(queued.run_workflow_id)  # its run does not exist yet: the handle waits for it
    events, result = await asyncio.gather(collect(run), run.result())
    assert result.answer == "Two." and events[-1] == "request_completed"
    assert (await session.await_result(first.request_id)).result == "One."
    with pytest.raises(RPCError) as missing:  # an id no session names is still NOT_FOUND at once
        await runs.get(f"{session.workflow_id}-run-99").state()
    assert missing.value.status == RPCStatusCode.NOT_FOUND


async def collect(run: RunHandle) -> list[str]:
    return [event.event.kind async for event in run.events() if isinstance(event, TraceItem)]


def text(label: str, size: int) -> str:
    return (label + " " + f"{label} lorem ipsum " * (size // 10))[:size]


async def test_the_thread_pages_across_archived_segments(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    session = Sessions(client, task_queue=task_queue, store=store).get(new_session_id())
    turns = 5  # 300 KB a turn: the fifth ask's run starts with over 1 MiB in memory and archives it
    for i in range(turns):
        answer = await session.ask_sync(
            text(f"question {i}", 50_000),
            config=config(),
            overrides=script(turn(text(f"answer {i}", 250_000))),
        )
        assert answer.status == "completed"
    status = await session.status()
    assert status.archived_entries > 0 and status.thread_length == 2 * turns
    raw = await client.get_workflow_handle(session.workflow_id).query(
        "thread", ThreadQuery(since_seq=0), result_type=ThreadPage
    )
    assert raw.segment is not None and not raw.entries  # the session hands out a reference

    page = await session.thread_page(0, limit=3)
    assert [e.seq for e in page.entries] == [0, 1, 2] and page.next_seq == 3 and page.segment is None
    entries = [e async for e in session.thread(page_size=3)]
    assert [e.seq for e in entries] == list(range(2 * turns))
    expected = [
        text(f"{kind} {i}", size)
        for i in range(turns)
        for kind, size in (("question", 50_000), ("answer", 250_000))
    ]
    assert [e.payload.content for e in entries if isinstance(e, MessageEntry)] == expected
    crossing = [e.seq async for e in session.thread(since_seq=status.archived_entries - 1)]
    assert crossing == list(range(status.archived_entries - 1, 2 * turns))
    # The answer of an archived request is still read back (by the session, from the store).
    first = (await session.requests())[0]
    assert (await session.await_result(first.request_id)).result == text("answer 0", 250_000)
