"""Edit and regenerate through the real gateway: the AI SDK's official client (npm `ai`) and AG-UI.

A regenerate (`regenerate-message`) makes a branch whose answer the SDK folds as it does any
answer; the first answer stays readable; `GET .../branches` lists both; the chat id keeps
working and reaches the new branch. An AG-UI client that sends an edited message of the thread
branches it there, and keeps its `threadId`. Bad input is refused by name with nothing forked.
Real dev server, worker and gateway (`tests.gateway_helpers`), as the protocol tests have them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.aisdk import test_aisdk_js_client as sdk
from tests.aisdk.test_aisdk_js_client import js_clients
from tests.gateway_helpers import ALICE, BOB, GatewayServer, agui_run, module_gateway, run_input

gateway = module_gateway()
__all__ = ["gateway", "js_clients"]
# The AI SDK client test's own helpers (one way to run the SDK's client and read what it folded).
_client = sdk._client  # pyright: ignore[reportPrivateUsage]
_final = sdk._final  # pyright: ignore[reportPrivateUsage]
_texts = sdk._texts  # pyright: ignore[reportPrivateUsage]
_user = sdk._user  # pyright: ignore[reportPrivateUsage]

ANSWER = "Hello from the gateway, streamed in small pieces."


async def _branches(http: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    response = await http.get(f"/api/threads/default/{thread}/branches")
    assert response.status_code == 200, response.text
    return response.json()


async def _messages(http: httpx.AsyncClient, thread: str) -> list[tuple[str, str]]:
    response = await http.get(f"/api/threads/default/{thread}")
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"]) for m in response.json()["messages"] if m["kind"] == "message"]


async def test_an_sdk_regenerate_makes_a_branch_the_chat_id_then_follows(
    gateway: GatewayServer, js_clients: Path
) -> None:
    chat, asked = f"sdk-{uuid.uuid4().hex[:10]}", _user("Hello?")
    first = _final(await _client(gateway, "default", ALICE, chatId=chat, messages=[asked]))
    assert first["id"] == f"{asked['id']}:answer"

    # What useChat's regenerate({messageId}) sends: the messages before the answer, and its id.
    seen = await _client(
        gateway,
        "default",
        ALICE,
        chatId=chat,
        messages=[asked],
        trigger="regenerate-message",
        messageId=first["id"],
    )
    again = _final(seen)
    assert again["id"] == first["id"] and _texts(again) == [ANSWER] and seen["errors"] == []
    assert again["metadata"]["disposition"] == "started"

    async with gateway.http(ALICE) as http:
        listed = await _branches(http, chat)
        branch = f"{chat}-fork-1"
        assert listed["thread_id"] == chat and listed["head"] == branch
        root, made = listed["branches"]
        assert root == {"thread_id": chat, "kind": "root", "first_message": "Hello?"}
        assert made["thread_id"] == branch and made["kind"] == "regenerate" and made["forked_from"] == chat
        assert (made["seq"], made["message_seq"], made["agui_message_id"]) == (-1, 0, "m-0")
        assert made["message_id"] == made["request_id"] == asked["id"] and made["first_message"] == "Hello?"
        assert await _branches(http, branch) == listed, "a branch lists its family too"
        # The first answer stays readable; the branch has its own.
        assert await _messages(http, chat) == [("user", "Hello?"), ("assistant", ANSWER)]
        assert await _messages(http, branch) == [("user", "Hello?"), ("assistant", ANSWER)]

    # The chat id keeps working: the next message reaches the newest branch.
    follow_up = _user("And then?")
    answered = _final(
        await _client(gateway, "default", ALICE, chatId=chat, messages=[asked, again, follow_up])
    )
    assert answered["id"] == f"{follow_up['id']}:answer" and _texts(answered) == [ANSWER]
    async with gateway.http(ALICE) as http:
        assert ("user", "And then?") in await _messages(http, branch)
        assert ("user", "And then?") not in await _messages(http, chat)

    # The SDK's edit (sendMessage with messageId): the earlier message, edited, on a new branch.
    edited = {**follow_up, "parts": [{"type": "text", "text": "And after that?"}]}
    _final(
        await _client(
            gateway, "default", ALICE, chatId=chat, messages=[asked, again, edited], messageId=follow_up["id"]
        )
    )
    async with gateway.http(ALICE) as http:
        listed = await _branches(http, chat)
        assert [b["kind"] for b in listed["branches"]] == ["root", "regenerate", "edit"]
        assert listed["head"] == f"{chat}-fork-2" and listed["branches"][2]["forked_from"] == branch
        assert ("user", "And after that?") in await _messages(http, f"{chat}-fork-2")
        assert ("user", "And after that?") not in await _messages(http, branch)


async def test_bad_regenerates_are_refused_by_name_with_nothing_forked(
    gateway: GatewayServer, js_clients: Path
) -> None:
    chat, asked = f"sdk-{uuid.uuid4().hex[:10]}", _user("Hello?")
    _final(await _client(gateway, "default", ALICE, chatId=chat, messages=[asked]))
    unknown = await _client(
        gateway,
        "default",
        ALICE,
        chatId=chat,
        messages=[asked],
        trigger="regenerate-message",
        messageId="nope:answer",
    )
    assert unknown["status"] == 400 and "unknown_message" in unknown["failed"]
    nothing = await _client(
        gateway,
        "default",
        ALICE,
        chatId=f"sdk-{uuid.uuid4().hex[:10]}",
        messages=[asked],
        trigger="regenerate-message",
    )
    assert nothing["status"] == 404 and "not_found" in nothing["failed"], "no such thread: nothing to fork"
    bobs = await _client(gateway, "default", BOB, chatId=chat, messages=[asked], trigger="regenerate-message")
    assert bobs["status"] == 404 and "not_found" in bobs["failed"]
    async with gateway.http(ALICE) as http:
        listed = await _branches(http, chat)
        assert [b["kind"] for b in listed["branches"]] == ["root"] and listed["head"] == chat
    async with gateway.http(BOB) as http:
        assert (await http.get(f"/api/threads/default/{chat}/branches")).status_code == 404


def _snapshot_users(events: list[Any]) -> list[dict[str, Any]]:
    [*_, snapshot] = [e.event for e in events if e.type == "MESSAGES_SNAPSHOT"]
    return [m for m in snapshot["messages"] if m["role"] == "user"]


async def test_an_agui_client_that_edits_a_message_branches_the_thread_there(gateway: GatewayServer) -> None:
    thread = f"agui-{uuid.uuid4().hex[:10]}"
    async with gateway.http(ALICE) as http:
        first = await agui_run(http, run_input(thread, "r1", "First?"))
        [user] = _snapshot_users(first)
        # The client edits the message it got from the gateway's snapshot and runs again.
        edit: dict[str, object] = {
            "threadId": thread,
            "runId": "r2",
            "messages": [{**user, "content": "First, edited?"}],
        }
        events = await agui_run(http, edit)
        assert events[0].event["threadId"] == thread and events[-1].event["threadId"] == thread
        assert events[-1].type == "RUN_FINISHED"
        users = _snapshot_users(events)
        assert [u["content"] for u in users] == ["First, edited?"]
        branch = f"{thread}-fork-1"
        listed = await _branches(http, thread)
        assert listed["head"] == branch and listed["branches"][1]["kind"] == "edit"
        assert listed["branches"][1]["message_id"] == "r1" and listed["branches"][1]["request_id"] == "r2"
        assert await _messages(http, thread) == [("user", "First?"), ("assistant", ANSWER)]
        assert await _messages(http, branch) == [("user", "First, edited?"), ("assistant", ANSWER)]

        # The same messages again with a new one: no edit, the next ask on the branch.
        more = [*users, {"id": "r3-u", "role": "user", "content": "Next?"}]
        await agui_run(http, {"threadId": thread, "runId": "r3", "messages": more})
        assert ("user", "Next?") in await _messages(http, branch)
        assert len((await _branches(http, thread))["branches"]) == 2

        # Bad input, by name, with nothing forked: an id of the gateway's naming no message, an
        # edited message with user messages after it.
        unknown = {
            "threadId": thread,
            "runId": "r4",
            "messages": [{"id": "m-99", "role": "user", "content": "x"}],
        }
        refused = await http.post("/agui/default", json=unknown)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "unknown_message"
        edited_then_more = [
            {**users[0], "content": "changed"},
            {"id": "r5-u", "role": "user", "content": "y"},
        ]
        body = {"threadId": thread, "runId": "r5", "messages": edited_then_more}
        refused = await http.post("/agui/default", json=body)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input"
        assert len((await _branches(http, thread))["branches"]) == 2


async def test_when_the_head_is_erased_the_thread_id_reaches_the_root_again(gateway: GatewayServer) -> None:
    thread = f"agui-{uuid.uuid4().hex[:10]}"
    async with gateway.http(ALICE) as http:
        [user] = _snapshot_users(await agui_run(http, run_input(thread, "r1", "First?")))
        edit: dict[str, object] = {
            "threadId": thread,
            "runId": "r2",
            "messages": [{**user, "content": "Edited?"}],
        }
        await agui_run(http, edit)
        branch = f"{thread}-fork-1"
        assert (await _branches(http, thread))["head"] == branch
        assert (await http.delete(f"/api/threads/default/{branch}")).status_code == 200
        await agui_run(http, run_input(thread, "r3", "After the erase?"))
        assert ("user", "After the erase?") in await _messages(http, thread)
        assert (await http.get(f"/api/threads/default/{branch}")).status_code == 404, "not started again"
