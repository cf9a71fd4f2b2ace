"""`client.py ask --attach FILE` (repeatable): the files stored first, the user message carrying them.

The CLI runs as a user runs it (a separate `client.py` process) against the dev server, with a worker
on the product's task queue in this process. A file the intake refuses (an empty one) is refused by
name, exit 1, and nothing is asked: the session does not exist.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from clients.sessions import Sessions
from payloads.blob_store import BlobStore
from tests.attachment_delivery import pdf, png
from tests.cli.test_cli_follow import cli, script_file
from tests.cli.test_cli_output import product_queue

__all__ = ["product_queue"]


async def test_ask_attaches_files(
    client: Client, store: BlobStore, product_queue: str, tmp_path: Path
) -> None:
    image, document = tmp_path / "photo.png", tmp_path / "report.pdf"
    image.write_bytes(png(20_000))
    document.write_bytes(pdf(5_000))
    session = f"cli-attach-{uuid.uuid4().hex[:8]}"
    script = script_file(tmp_path, [{"content": "Seen."}])
    done = await cli(
        client, "ask", session, "What are these?", "--script", script, "--no-stream",
        "--attach", str(image), "--attach", str(document),
    )  # fmt: skip
    assert done.code == 0, done.err
    context = await Sessions(client, task_queue=product_queue).get(session).context()
    [user] = [m for m in context.messages if m.role == "user"]
    assert user.attachments is not None
    assert [(a.name, a.media_type, a.size) for a in user.attachments] == [
        ("photo.png", "image/png", image.stat().st_size),
        ("report.pdf", "application/pdf", document.stat().st_size),
    ]
    assert await store.get(user.attachments[0].sha256) == image.read_bytes()


async def test_a_refused_file_asks_nothing(client: Client, product_queue: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    session = f"cli-attach-{uuid.uuid4().hex[:8]}"
    script = script_file(tmp_path, [{"content": "Seen."}])
    done = await cli(
        client, "ask", session, "Look", "--script", script, "--no-stream", "--attach", str(empty)
    )
    assert done.code == 1
    assert "invalid_attachment" in done.out + done.err and "empty" in done.out + done.err
    with pytest.raises(RPCError):
        await client.get_workflow_handle(session).describe()
