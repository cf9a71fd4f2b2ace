"""The chat page's REST API (`gateway/threads/api.py`) and its files, over real HTTP on a real gateway.

Sessions are made as the AG-UI endpoint makes them (the owner's workflow id,
`gateway.owners.session_id`), through the typed client, on the `agents` fixture's dev server
and worker; the gateway runs in-process (`tests.gateway_helpers`) with alice's and bob's tokens.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest_asyncio

from clients.session_handle import SessionHandle
from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, running_gateway

NOT_FOUND = {"error": {"code": "not_found", "message": "no such thread"}}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, tokens=TEST_TOKENS) as server:
        yield server


async def asked(
    gateway: GatewayServer, owner: str, question: str, thread: str | None = None
) -> tuple[str, SessionHandle]:
    """A finished ask of `owner`'s new thread with the default agent: (thread id, session)."""
    thread = thread or f"t-{uuid.uuid4().hex[:8]}"
    session = gateway.ctx.sessions.get(session_id(Principal(owner), "default", thread))
    accepted = await session.ask(question, config=TEST_AGENTS["default"], agent_id="default")
    await session.await_result(accepted.request_id)
    return thread, session


async def listed(gateway: GatewayServer, token: str, wanted: set[str]) -> list[dict[str, Any]]:
    """`GET /api/threads` once it lists every thread of `wanted` (visibility is eventually consistent)."""
    threads: list[dict[str, Any]] = []
    async with gateway.http(token) as http:
        for _ in range(100):
            response = await http.get("/api/threads")
            assert response.status_code == 200, response.text
            threads = response.json()["threads"]
            if wanted <= {t["thread_id"] for t in threads}:
                return threads
            await asyncio.sleep(0.1)
    raise AssertionError(f"{wanted} never listed; last: {threads}")


async def test_each_principal_lists_only_its_own_sessions(gateway: GatewayServer) -> None:
    alice_1, _ = await asked(gateway, "alice", "First?")
    alice_2, _ = await asked(gateway, "alice", "Second?")
    bob_1, _ = await asked(gateway, "bob", "Bob's?")

    alice = await listed(gateway, ALICE, {alice_1, alice_2})
    assert all(t["session_id"] == f"gw/alice/{t['agent']}/{t['thread_id']}" for t in alice)
    assert bob_1 not in {t["thread_id"] for t in alice}
    bob = await listed(gateway, BOB, {bob_1})
    assert {t["thread_id"] for t in bob}.isdisjoint({alice_1, alice_2})
    assert all(t["session_id"] == f"gw/bob/{t['agent']}/{t['thread_id']}" for t in bob)
    async with gateway.http() as anonymous:
        refused = await anonymous.get("/api/threads")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"


async def test_a_thread_shows_its_messages_usage_and_web_ui_links(gateway: GatewayServer) -> None:
    thread, session = await asked(gateway, "alice", "What is new?")
    async with gateway.http(ALICE) as http:
        details = (await http.get(f"/api/threads/default/{thread}")).json()
    assert details["status"] == "idle"
    assert details["session_id"] == session.workflow_id
    assert details["requests"] == 1
    assert details["usage"]["llm_calls"] == 1
    assert details["usage"]["total_tokens"] > 0
    assert [(m["seq"], m["role"], m["content"]) for m in details["messages"]] == [
        (0, "user", "What is new?"),
        (1, "assistant", "Hello from the gateway, streamed in small pieces."),
    ]
    encoded = f"gw%2Falice%2Fdefault%2F{thread}"
    assert details["web_ui"] == {
        "session": f"http://localhost:8233/namespaces/default/workflows/{encoded}",
        "run": f"http://localhost:8233/namespaces/default/workflows/{encoded}-run-1",
    }


async def test_another_principals_thread_and_a_missing_one_are_the_same_404_and_a_run_is_no_thread(
    gateway: GatewayServer,
) -> None:
    thread, _ = await asked(gateway, "alice", "Mine?")
    async with gateway.http(BOB) as bob, gateway.http(ALICE) as alice:
        for http, path in [
            (bob, f"/api/threads/default/{thread}"),
            (alice, "/api/threads/default/never-asked"),
        ]:
            response = await http.get(path)
            assert (response.status_code, response.json()) == (404, NOT_FOUND), path
        # `<thread>-run-<n>` names the thread's run, never a thread (`gateway.owners.THREAD_ID_PATTERN`).
        run = await alice.get(f"/api/threads/default/{thread}-run-1")
        assert (run.status_code, run.json()["error"]["code"]) == (400, "invalid_input")
        for action in ("fork", "reset"):
            response = await bob.post(f"/api/threads/default/{thread}/{action}", json={})
            assert (response.status_code, response.json()) == (404, NOT_FOUND), action
        unknown = await alice.get(f"/api/threads/nobody/{thread}")
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_agent")
        bad = await alice.get("/api/threads/default/bad%20id")
        assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_input")
    # Bob's attempts changed nothing.
    async with gateway.http(ALICE) as alice:
        assert (await alice.get(f"/api/threads/default/{thread}")).json()["thread_length"] == 2


async def test_fork_from_a_message_starts_a_thread_of_the_same_owner(gateway: GatewayServer) -> None:
    thread, session = await asked(gateway, "alice", "Fork me?")
    await session.ask_sync("And then?")
    async with gateway.http(ALICE) as http:
        forked = await http.post(f"/api/threads/default/{thread}/fork", json={"seq": 1})
        assert forked.status_code == 200, forked.text
        fork = forked.json()
        assert fork == {
            "agent": "default",
            "thread_id": f"{thread}-fork-1",
            "session_id": f"gw/alice/default/{thread}-fork-1",
            "seq": 1,
        }
        details = (await http.get(f"/api/threads/default/{fork['thread_id']}")).json()
        # The fork starts from the context as it stood after entry 1 (the second ask is not in it).
        assert details["messages"] == [
            {
                "seq": 0,
                "kind": "op",
                "op": "fork",
                "context": [
                    {"role": "user", "content": "Fork me?"},
                    {"role": "assistant", "content": "Hello from the gateway, streamed in small pieces."},
                ],
            }
        ]
        assert details["forked_from"] == {"agent": "default", "thread_id": thread, "seq": 1}

        named = await http.post(f"/api/threads/default/{thread}/fork", json={"thread_id": "my-fork"})
        assert named.json()["thread_id"] == "my-fork"
        for body, code in [
            ({"seq": -1}, "invalid_input"),
            ({"seq": "1"}, "invalid_input"),
            ({"seq": 99}, "seq_out_of_range"),
        ]:
            refused = await http.post(f"/api/threads/default/{thread}/fork", json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (400, code), body
        not_json = await http.post(f"/api/threads/default/{thread}/fork", content=b"{nope")
        assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_input")
    await listed(gateway, ALICE, {thread, f"{thread}-fork-1", "my-fork"})


async def test_a_branch_fork_is_recorded_in_the_family_and_asks_nothing(gateway: GatewayServer) -> None:
    thread, session = await asked(gateway, "alice", "Fork me?")
    await session.ask_sync("And then?")
    path = f"/api/threads/default/{thread}/fork"
    async with gateway.http(ALICE) as http:
        edited = await http.post(path, json={"branch": "edit", "message_seq": 2, "text": "And after?"})
        assert edited.status_code == 200, edited.text
        made = edited.json()
        asked_id = made.pop("request_id")
        assert len(asked_id) == 32
        assert made == {
            "agent": "default",
            "thread_id": f"{thread}-fork-1",
            "session_id": f"gw/alice/default/{thread}-fork-1",
            "seq": 1,
            "kind": "edit",
            "message_seq": 2,
            "text": "And after?",
        }
        # Nothing asked: the branch holds the conversation before the edited message.
        details = (await http.get(f"/api/threads/default/{thread}-fork-1")).json()
        assert [m["kind"] for m in details["messages"]] == ["op"]
        assert [m["content"] for m in details["messages"][0]["context"]] == [
            "Fork me?",
            "Hello from the gateway, streamed in small pieces.",
        ]
        again = await http.post(path, json={"branch": "regenerate", "message_seq": 0})
        assert again.status_code == 200, again.text
        assert (again.json()["seq"], again.json()["text"]) == (-1, "Fork me?")

        family = (await http.get(f"/api/threads/default/{thread}/branches")).json()
        assert family["head"] == f"{thread}-fork-2"
        _, edit, regenerate = family["branches"]
        assert (edit["kind"], edit["forked_from"], edit["message_seq"]) == ("edit", thread, 2)
        assert (edit["request_id"], edit["first_message"]) == (asked_id, "And after?")
        assert (regenerate["kind"], regenerate["message_seq"], regenerate["first_message"]) == (
            "regenerate",
            0,
            "Fork me?",
        )
        for body, code in [
            ({"branch": "edit", "message_seq": 1, "text": "x"}, "unknown_message"),
            ({"branch": "edit", "message_seq": 2, "text": "  "}, "invalid_input"),
            ({"branch": "merge", "message_seq": 2}, "invalid_input"),
            ({"branch": "edit", "message_seq": "2", "text": "x"}, "invalid_input"),
            ({"branch": "edit", "message_seq": 2, "text": "x", "seq": 1}, "invalid_input"),
        ]:
            refused = await http.post(path, json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (400, code), body
        unchanged = (await http.get(f"/api/threads/default/{thread}/branches")).json()
        assert len(unchanged["branches"]) == 3, "a refused branch forks nothing"
        missing = await http.post(
            f"/api/threads/default/{thread}-nope/fork", json={"branch": "regenerate", "message_seq": 0}
        )
        assert (missing.status_code, missing.json()) == (404, NOT_FOUND)


async def test_reset_starts_the_conversation_afresh(gateway: GatewayServer) -> None:
    thread, session = await asked(gateway, "alice", "Remember me?")
    async with gateway.http(ALICE) as http:
        reset = await http.post(f"/api/threads/default/{thread}/reset", json={"reason": "clean slate"})
        assert reset.status_code == 200, reset.text
        assert reset.json()["status"] == "applied"
        details = (await http.get(f"/api/threads/default/{thread}")).json()
    assert details["messages"][-1] == {"seq": 2, "kind": "op", "op": "reset", "reason": "clean slate"}
    assert (await session.context()).messages == []


async def listed_when(
    gateway: GatewayServer, token: str, done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """`GET /api/threads` once `done` holds of it (a memo reaches visibility a moment later)."""
    threads: list[dict[str, Any]] = []
    async with gateway.http(token) as http:
        for _ in range(100):
            threads = (await http.get("/api/threads")).json()["threads"]
            if done(threads):
                return threads
            await asyncio.sleep(0.1)
    raise AssertionError(f"never listed as wanted; last: {threads}")


def by_id(threads: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["thread_id"]: t for t in threads}


async def test_the_listing_shows_titles_and_last_use_most_recent_first(gateway: GatewayServer) -> None:
    older, session = await asked(gateway, "alice", "Plan my trip to Lisbon\nwith a day in Sintra")
    long_question = "Why " + "very " * 30 + "long?"
    newer, _ = await asked(gateway, "alice", long_question)

    def titled(threads: list[dict[str, Any]]) -> bool:
        found = by_id(threads)
        return all(found.get(t, {}).get("title") for t in (older, newer))

    threads = await listed_when(gateway, ALICE, titled)
    found = by_id(threads)
    assert found[older]["title"] == "Plan my trip to Lisbon"  # the first line
    assert found[newer]["title"] == long_question[:79].rstrip() + "…" and len(found[newer]["title"]) <= 80
    for t in (older, newer):
        assert found[t]["last_used_at"] >= found[t]["started_at"]
    order = [t["thread_id"] for t in threads]
    assert order.index(newer) < order.index(older)

    # Used again, the older thread comes first; its title stays its first message.
    accepted = await session.ask("And the beaches?", config=TEST_AGENTS["default"], agent_id="default")
    await session.await_result(accepted.request_id)

    def older_first(threads: list[dict[str, Any]]) -> bool:
        return next(t["thread_id"] for t in threads if t["thread_id"] in (older, newer)) == older

    threads = await listed_when(gateway, ALICE, older_first)
    assert by_id(threads)[older]["title"] == "Plan my trip to Lisbon"


async def test_a_thread_renamed_keeps_its_name_and_bad_names_change_nothing(gateway: GatewayServer) -> None:
    thread, session = await asked(gateway, "alice", "First question")
    async with gateway.http(ALICE) as http:
        renamed = await http.put(f"/api/threads/default/{thread}/title", json={"title": "  Trip notes  "})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json() == {"agent": "default", "thread_id": thread, "title": "Trip notes"}
        bad: list[tuple[object, int, str]] = [
            ({"title": " "}, 400, "invalid_input"),
            ({"title": "a\nb"}, 400, "invalid_input"),
            ({"title": 3}, 400, "invalid_input"),
            ({}, 400, "invalid_input"),
            ([], 400, "invalid_input"),
            ({"title": "x" * 81}, 413, "payload_too_large"),
        ]
        for body, status, code in bad:
            refused = await http.put(f"/api/threads/default/{thread}/title", json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (status, code), body
        not_json = await http.put(f"/api/threads/default/{thread}/title", content=b"{nope")
        assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_input")
    async with gateway.http(BOB) as http:
        others = await http.put(f"/api/threads/default/{thread}/title", json={"title": "Bob's now"})
        assert (others.status_code, others.json()) == (404, NOT_FOUND)
    accepted = await session.ask("Second question", config=TEST_AGENTS["default"], agent_id="default")
    await session.await_result(accepted.request_id)
    threads = await listed_when(
        gateway, ALICE, lambda ts: by_id(ts).get(thread, {}).get("title") == "Trip notes"
    )
    assert by_id(threads)[thread]["title"] == "Trip notes"
    described = await gateway.ctx.client.get_workflow_handle(session.workflow_id).describe()
    assert (await described.memo())["title"] == "Trip notes"


async def test_the_agents_and_the_page_files(gateway: GatewayServer) -> None:
    async with gateway.http(ALICE) as http:
        listed = (await http.get("/api/agents")).json()
        assert set(TEST_AGENTS) <= set(listed["agents"])  # the code profiles, and any made at run time
        assert all(d["read_only"] for d in listed["details"] if d["name"] in TEST_AGENTS)
    async with gateway.http() as anonymous:  # the page itself needs no token; its API does
        page = await anonymous.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="/static/app.js">' in page.text
        assert page.headers["content-security-policy"].startswith(
            "default-src 'self'; frame-ancestors 'none'"
        )
        assert "img-src 'self' blob:" in page.headers["content-security-policy"]  # the thumbnails
        files = (
            "app.js",
            "api.js",
            "approvals.js",
            "render.js",
            "sse.js",
            "files.js",
            "branches.js",
            "style.css",
        )
        for name in files:
            served = await anonymous.get(f"/static/{name}")
            assert served.status_code == 200, name
        assert "javascript" in (await anonymous.get("/static/app.js")).headers["content-type"]
        assert (await anonymous.get("/api/agents")).status_code == 401


async def test_no_tokens_means_one_local_principal(agents: AgentTestEnvironment) -> None:
    async with running_gateway(agents, TEST_AGENTS) as gateway:
        thread, _ = await asked(gateway, "local", "Local?")
        threads = await listed(gateway, "", {thread})
        assert all(t["session_id"].startswith("gw/local/") for t in threads)
