"""Agents made at run time over HTTP (`gateway/agents`, `gateway/agent_catalog.py`): versions, latest, pins.

A real gateway in-process on the tests' dev server and worker, its store a fresh SQLite file: a
manager (a static token with `agents:manage`) makes an agent, publishes a second version with a
new prompt and script, alice asks `name` and `name@1` in one thread, the answers and the system
prompts the runs used differ by version, every request says which version answered, and moving
`latest` back (the roll back) moves what `name` answers. Bad input is refused by name and
changes nothing; a principal without `agents:manage` gets 403 naming the scope.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import ALICE, BOB, GatewayServer, running_gateway

MANAGER = "carol-token-0123456789"
TOKENS = f"{ALICE}=alice,{BOB}=bob,{MANAGER}=carol:agents:ask+agents:manage"


def config(prompt: str, said: str, **fields: Any) -> dict[str, Any]:
    """A scripted agent's config as JSON: its system prompt and the answer it gives."""
    made = scripted_agent(answer(said), system_prompt=prompt, **fields)
    return made.model_dump(mode="json", exclude_defaults=True)


@pytest_asyncio.fixture(loop_scope="session")
async def gateway(agents: AgentTestEnvironment, tmp_path: Path) -> AsyncIterator[GatewayServer]:
    async with running_gateway(
        agents, tokens=TOKENS, memory_store_url=f"sqlite:///{tmp_path / 'store.db'}"
    ) as server:
        yield server


async def ask(http: httpx.AsyncClient, agent: str, thread: str, message: str) -> dict[str, Any]:
    """Ask in the background and wait for the end; the request's status."""
    posted = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": message})
    assert posted.status_code == 202, posted.text
    request_id = posted.json()["request_id"]
    done = (await http.get(f"/api/threads/{agent}/{thread}/requests/{request_id}?wait_s=30")).json()
    assert done.get("status") == "completed", done
    return done


async def test_versions_pins_and_roll_back(gateway: GatewayServer) -> None:
    name = f"helper-{uuid.uuid4().hex[:6]}"
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with gateway.http(MANAGER) as manager, gateway.http(ALICE) as alice:
        made = await manager.post(
            "/api/agents", json={"name": name, "config": config("You are v1.", "one"), "note": "first"}
        )
        assert (made.status_code, made.json()) == (201, {"name": name, "version": 1})
        published = await manager.post(
            f"/api/agents/{name}/versions",
            json={"config": config("You are v2.", "two"), "note": "new prompt"},
        )
        assert (published.status_code, published.json()) == (201, {"version": 2})

        listed = (await alice.get("/api/agents")).json()
        assert name in listed["agents"] and "default" in listed["agents"]
        details = {d["name"]: d for d in listed["details"]}
        assert details[name] == {"name": name, "kind": "runtime", "read_only": False, "latest": 2}
        assert details["default"]["read_only"] is True
        shown = (await alice.get(f"/api/agents/{name}")).json()
        assert shown["latest"] == 2
        assert [(v["version"], v["note"], v["created_by"]) for v in shown["versions"]] == [
            (1, "first", "carol"),
            (2, "new prompt", "carol"),
        ]

        latest = await ask(alice, name, thread, "Who are you?")  # `name`: the latest, v2
        pinned = await ask(alice, f"{name}@1", thread, "And now?")  # the same thread, pinned to v1
        assert (latest["answer"], latest["agent_version"]) == ("two", 2)
        assert (pinned["answer"], pinned["agent_version"]) == ("one", 1)

        runs = gateway.ctx.runs
        records = (await alice.get(f"/api/threads/{name}/{thread}")).json()["request_records"]
        assert [(r["request_id"], r["agent_version"]) for r in records] == [
            (latest["request_id"], 2),
            (pinned["request_id"], 1),
        ]
        status = await gateway.ctx.sessions.get(f"gw/alice/{name}/{thread}").requests()
        prompts = [(await runs.get(r.run_workflow_id).context()).system_prompt for r in status]
        assert prompts == ["You are v2.", "You are v1."]  # each run had its version's prompt
        # Each run names its version in its trace and in what the Web UI lists it by.
        for record, version in zip(status, (2, 1), strict=True):
            trace = await runs.get(record.run_workflow_id).trace()
            assert trace.events[0].kind == "request_started", trace.events[0]
            assert trace.events[0].data["agent_version"] == version
            described = await gateway.ctx.client.get_workflow_handle(record.run_workflow_id).describe()
            assert (await described.static_summary() or "").startswith(f"v{version} · scripted: ")
            assert f"**agent version** {version}" in (await described.static_details() or "")

        rolled = await manager.put(f"/api/agents/{name}/latest", json={"version": 1})
        assert (rolled.status_code, rolled.json()) == (200, {"name": name, "latest": 1})
        after = await ask(alice, name, thread, "After the roll back?")  # `name` follows latest
        assert (after["answer"], after["agent_version"]) == ("one", 1)
        assert (await alice.get(f"/api/agents/{name}")).json()["latest"] == 1


async def test_writes_need_agents_manage(gateway: GatewayServer) -> None:
    name = f"guarded-{uuid.uuid4().hex[:6]}"
    async with gateway.http(ALICE) as alice, gateway.http(MANAGER) as manager:
        refused = [
            await alice.post("/api/agents", json={"name": name, "config": config("p", "a")}),
            await alice.post(f"/api/agents/{name}/versions", json={"config": config("p", "a")}),
            await alice.put(f"/api/agents/{name}/latest", json={"version": 1}),
        ]
        for response in refused:
            assert response.status_code == 403, response.text
            assert response.json()["error"]["code"] == "forbidden"
            assert "agents:manage" in response.json()["error"]["message"]
        assert (await manager.get(f"/api/agents/{name}")).status_code == 404  # nothing was made


BAD = [
    ("misspelt field", "POST", "/api/agents", {"name": "N", "config": {"model": "m", "system_promt": "x"}},
     400, "invalid_input", "system_promt"),
    ("nested unknown field", "POST", "/api/agents",
     {"name": "N", "config": {"model": "m", "model_settings": {"tempreature": 1}}}, 400, "invalid_input",
     "tempreature"),
    ("out of range", "POST", "/api/agents", {"name": "N", "config": {"model": "m", "max_iterations": 0}},
     400, "invalid_input", "max_iterations"),
    ("unknown tool", "POST", "/api/agents",
     {"name": "N", "config": {"model": "m", "tools": ["no_such_tool"]}}, 400, "unknown_tool", "no_such_tool"),
    ("unknown agent profile", "POST", "/api/agents",
     {"name": "N", "config": {"model": "m", "agents": [{"name": "no_such_profile"}]}}, 404, "unknown_agent",
     "no_such_profile"),
    ("name off the rules", "POST", "/api/agents", {"name": "has space", "config": {"model": "m"}},
     400, "invalid_input", "^[A-Za-z0-9_-]{1,32}$"),
    ("name with a newline", "POST", "/api/agents", {"name": "n\n", "config": {"model": "m"}},
     400, "invalid_input", "^[A-Za-z0-9_-]{1,32}$"),
    ("a code profile's name", "POST", "/api/agents", {"name": "default", "config": {"model": "m"}},
     409, "read_only_agent", "code profile"),
    ("publish to a code profile", "POST", "/api/agents/default/versions", {"config": {"model": "m"}},
     409, "read_only_agent", "code profile"),
    ("latest of a code profile", "PUT", "/api/agents/default/latest", {"version": 1},
     409, "read_only_agent", "code profile"),
    ("publish to no agent", "POST", "/api/agents/ghost-agent/versions", {"config": {"model": "m"}},
     404, "unknown_agent", "ghost-agent"),
    ("a version it does not have", "PUT", "/api/agents/E/latest", {"version": 9},
     404, "unknown_version", "no version 9"),
    ("not a version", "PUT", "/api/agents/E/latest", {"version": "1"}, 400, "invalid_input", "version"),
    ("unknown body field", "POST", "/api/agents/E/versions", {"config": {"model": "m"}, "extra": 1},
     400, "invalid_input", "extra"),
    ("already made", "POST", "/api/agents", {"name": "E", "config": {"model": "m"}},
     409, "agent_exists", "E"),
]  # fmt: skip
"""(case, method, path, body, status, code, named): `N` is a name not made, `E` the agent made first."""


@pytest.mark.parametrize(
    ("case", "method", "path", "body", "status", "code", "named"), BAD, ids=[b[0] for b in BAD]
)
async def test_bad_input_is_refused_by_name_and_changes_nothing(
    gateway: GatewayServer, case: str, method: str, path: str, body: dict[str, Any], status: int, code: str,
    named: str,
) -> None:  # fmt: skip
    made, fresh = f"e-{uuid.uuid4().hex[:6]}", f"n-{uuid.uuid4().hex[:6]}"

    def named_(value: Any) -> Any:
        return made if value == "E" else fresh if value == "N" else value

    path = "/".join(named_(part) for part in path.split("/"))
    body = {key: named_(value) for key, value in body.items()}
    named = named_(named)
    async with gateway.http(MANAGER) as manager:
        assert (
            await manager.post("/api/agents", json={"name": made, "config": config("p", "a")})
        ).status_code == 201
        before = (await manager.get("/api/agents")).json()
        refused = await manager.request(method, path, json=body)
        assert (refused.status_code, refused.json()["error"]["code"]) == (status, code), refused.text
        assert named in refused.json()["error"]["message"]
        assert (await manager.get("/api/agents")).json() == before
        shown = (await manager.get(f"/api/agents/{made}")).json()
        assert (shown["latest"], len(shown["versions"])) == (1, 1)


async def test_ask_refusals_name_the_agent_and_version(gateway: GatewayServer) -> None:
    name = f"asked-{uuid.uuid4().hex[:6]}"
    async with gateway.http(MANAGER) as manager, gateway.http(BOB) as bob:
        assert (
            await manager.post("/api/agents", json={"name": name, "config": config("p", "a")})
        ).status_code == 201
        for agent, status, code in [
            (f"{name}@7", 404, "unknown_version"),
            (f"{name}@0", 400, "invalid_input"),
            (f"{name}@x", 400, "invalid_input"),
            ("default@1", 404, "unknown_version"),
            ("nobody-here", 404, "unknown_agent"),
        ]:
            posted = await bob.post(f"/api/threads/{agent}/t1/requests", json={"message": "hi"})
            assert (posted.status_code, posted.json()["error"]["code"]) == (status, code), (
                agent,
                posted.text,
            )
        listed = (await bob.get("/api/threads")).json()["threads"]
        assert not [t for t in listed if t["agent"] == name]  # nothing was asked
