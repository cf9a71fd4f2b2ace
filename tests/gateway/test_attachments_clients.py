"""An image and a PDF through every front end, with each protocol's official client, end to end.

The AI SDK (`ai`'s `DefaultChatTransport`, file parts as `convertFileListToFileUIParts` makes them)
and AG-UI (`@ag-ui/client`'s `HttpAgent`, `image` and `document` parts with `data` sources) run in
node (tests/js/attachments_client.mjs); A2A (`a2a-sdk`, `raw` parts with `filename` and
`media_type`), MCP (the `mcp` client, `ask` with base64 attachments) and the typed client (paths
and bytes) run here. For each, the request is answered, and `tests.attachment_delivery.delivered`
checks the thread's user message carries the references, `GET /api/files/{id}` gives the same bytes
to their owner only, and no workflow history holds the bytes. The gateway is the real one on a real
dev server and worker (`tests.gateway_helpers`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from a2a.types.a2a_pb2 import Part, TaskState

from clients.attachment_intake import AttachmentSource
from conversation.attachments import Attachment
from tests.a2a_helpers import a2a_client, final_task, message, stream_events
from tests.attachment_delivery import File, delivered, no_bytes_in_histories, pdf, png, thread_messages
from tests.gateway_helpers import ALICE, GatewayServer, installed_js_clients, module_gateway
from tests.mcp_helpers import mcp_client, result_of

gateway = module_gateway()

IMAGE = File("photo.png", "image/png", png())
DOCUMENT = File("report.pdf", "application/pdf", pdf())
ANSWER = "Hello from the gateway, streamed in small pieces."


@pytest.fixture(scope="module")
def js_clients() -> Path:
    """tests/js, installed."""
    return installed_js_clients()


async def js(js_clients: Path, **request: Any) -> dict[str, Any]:
    """What tests/js/attachments_client.mjs saw for one request."""
    process = await asyncio.create_subprocess_exec(
        "node",
        "attachments_client.mjs",
        cwd=js_clients,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(json.dumps(request).encode()), 180)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


def _thread() -> str:
    return f"files-{uuid.uuid4().hex[:10]}"


async def sdk_sends_an_image_and_a_pdf(
    gateway: GatewayServer, js_clients: Path, thread: str, message_id: str
) -> list[dict[str, Any]]:
    """The AI SDK's client sends both files in `thread`, answered and delivered: their references."""
    seen = await js(
        js_clients,
        protocol="aisdk",
        url=f"{gateway.url}/ai-sdk/default",
        token=ALICE,
        threadId=thread,
        messageId=message_id,
        text="What is in these?",
        files=[IMAGE.js(), DOCUMENT.js()],
    )
    assert seen["status"] == 200, seen
    assert seen["errors"] == [] and seen["text"] == ANSWER
    return await delivered(gateway, ALICE, "alice", "default", thread, [IMAGE, DOCUMENT])


async def test_the_ai_sdk_sends_an_image_and_a_pdf(gateway: GatewayServer, js_clients: Path) -> None:
    await sdk_sends_an_image_and_a_pdf(gateway, js_clients, _thread(), f"u{uuid.uuid4().hex[:15]}")


async def test_an_sdk_regenerate_asks_the_message_again_with_its_files(
    gateway: GatewayServer, js_clients: Path
) -> None:
    thread, message_id = _thread(), f"u{uuid.uuid4().hex[:15]}"
    first = await sdk_sends_an_image_and_a_pdf(gateway, js_clients, thread, message_id)
    # What useChat's regenerate() sends: the trigger and the answer's id (the files are the thread's).
    answer_id = f"{message_id}:answer"
    body: dict[str, Any] = {
        "id": thread,
        "trigger": "regenerate-message",
        "messageId": answer_id,
        "messages": [],
    }
    async with gateway.http(ALICE) as http:
        response = await http.post("/ai-sdk/default", json=body, timeout=120)
    assert response.status_code == 200 and '"type":"finish"' in response.text, response.text
    branch = f"{thread}-fork-1"
    again = await delivered(gateway, ALICE, "alice", "default", branch, [IMAGE, DOCUMENT])
    assert [r["id"] for r in again] == [r["id"] for r in first]  # the same files, not copies
    messages = await thread_messages(gateway, ALICE, "default", branch)
    assert [m["content"] for m in messages if m.get("role") == "assistant"] == [ANSWER]


async def test_ag_ui_sends_an_image_and_a_pdf(gateway: GatewayServer, js_clients: Path) -> None:
    thread = _thread()
    seen = await js(
        js_clients,
        protocol="agui",
        url=f"{gateway.url}/agui/default",
        token=ALICE,
        threadId=thread,
        messageId=f"run-{uuid.uuid4().hex[:10]}",
        text="What is in these?",
        files=[IMAGE.js(), DOCUMENT.js()],
    )
    assert seen["status"] == 200, seen
    assert seen["text"] == ANSWER and seen["types"][-1] == "RUN_FINISHED", seen
    await delivered(gateway, ALICE, "alice", "default", thread, [IMAGE, DOCUMENT])


async def test_a2a_sends_raw_image_and_pdf_parts(gateway: GatewayServer) -> None:
    context = _thread()
    parts = [Part(raw=f.data, filename=f.name, media_type=f.media_type) for f in (IMAGE, DOCUMENT)]
    async with a2a_client(gateway, "default", ALICE) as client:
        events = await stream_events(
            client.send_message(message("What is in these?", context_id=context, parts=parts))
        )
    task = final_task(events)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    await delivered(gateway, ALICE, "alice", "default", context, [IMAGE, DOCUMENT])


async def test_the_agent_card_names_the_media_types_taken(gateway: GatewayServer) -> None:
    async with gateway.http() as http:
        card = (await http.get("/a2a/default/.well-known/agent-card.json")).json()
    assert {"text/plain", "image/png", "application/pdf"} <= set(card["defaultInputModes"])


async def test_mcp_ask_takes_base64_attachments(gateway: GatewayServer) -> None:
    thread = _thread()
    files = [{"name": f.name, "media_type": f.media_type, "data": f.base64} for f in (IMAGE, DOCUMENT)]
    async with mcp_client(gateway, ALICE) as client:
        result = await client.call_tool(
            "ask", {"query": "What is in these?", "session": thread, "attachments": files, "wait_s": 60}
        )
    body = result_of(result)
    assert not result.is_error, body
    assert body["status"] == "completed" and body["answer"] == ANSWER
    refs = await delivered(gateway, ALICE, "alice", "default", thread, [IMAGE, DOCUMENT])
    # Erasing the thread erases its file records: the files route no longer finds them.
    async with gateway.http(ALICE) as http:
        erased = await http.delete(f"/api/threads/default/{thread}")
        assert erased.status_code == 200, erased.text
        assert erased.json()["deleted"]["files"] == 2
        for ref in refs:
            assert (await http.get(f"/api/files/{ref['id']}")).status_code == 404


async def test_a_file_id_given_before_is_sent_again_by_reference(gateway: GatewayServer) -> None:
    async with gateway.http(ALICE) as http:
        uploaded = await http.post(
            "/api/files",
            params={"name": IMAGE.name},
            content=IMAGE.data,
            headers={"content-type": "image/png"},
        )
    assert uploaded.status_code == 201, uploaded.text
    ref = Attachment.model_validate(uploaded.json())
    assert ref.sha256 == IMAGE.sha256 and ref.media_type == "image/png"
    thread = _thread()
    async with mcp_client(gateway, ALICE) as client:
        result = await client.call_tool(
            "ask", {"query": "Again?", "session": thread, "attachments": [{"file_id": ref.id}], "wait_s": 60}
        )
    assert not result.is_error, result_of(result)
    [sent] = await delivered(gateway, ALICE, "alice", "default", thread, [IMAGE])
    assert sent["id"] == ref.id


async def test_the_typed_client_asks_with_a_path_and_bytes(gateway: GatewayServer, tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(DOCUMENT.data)
    session = f"typed-{uuid.uuid4().hex[:10]}"
    handle = gateway.ctx.sessions.get(session)
    config = gateway.ctx.settings.agents["default"]
    accepted = await handle.ask(
        "What is in these?",
        config=config,
        attachments=[
            path,
            IMAGE.data,
            AttachmentSource(name="notes.md", media_type="text/markdown", data=b"# Hi"),
        ],
    )
    result = await handle.await_result(accepted.request_id)
    assert result.result == ANSWER
    context = await handle.context()
    [user] = [m for m in context.messages if m.role == "user"]
    assert user.attachments is not None
    assert [(a.name, a.media_type, a.sha256) for a in user.attachments] == [
        ("report.pdf", "application/pdf", DOCUMENT.sha256),
        ("attachment-2", "image/png", IMAGE.sha256),
        ("notes.md", "text/markdown", File("notes.md", "text/markdown", b"# Hi").sha256),
    ]
    # The same references again (an `Attachment` is sent as it is): the same bytes, nothing copied.
    again = await handle.ask("And now?", attachments=list(user.attachments))
    await handle.await_result(again.request_id)
    assert await gateway.ctx.intake.blobs.get(user.attachments[1].sha256) == IMAGE.data
    await no_bytes_in_histories(gateway, session, [IMAGE, DOCUMENT])
    erased = await handle.delete()
    assert erased.files == 3  # the typed client's records of the session go with it
