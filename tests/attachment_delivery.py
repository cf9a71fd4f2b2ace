"""What the attachment tests share: real image and PDF bytes, and the checks every front end must pass.

`png(size)` is a real PNG (noise pixels, so it does not compress) of about `size` bytes; `pdf(size)` a
real one-page PDF padded to about `size`. Both are over the claim check's threshold (128 KiB), so a
file's bytes that travelled through a workflow would show there as a claimed payload.
`delivered(gw, token, agent, thread, files)` checks one thread end to end: its user message
carries the files' references (name, type, size, sha256), `GET /api/files/{id}` gives the same
bytes back with the download headers, another principal gets 404, and no history of the session
or its runs holds the bytes (raw, base64, or as a claim-checked payload).
"""

from __future__ import annotations

import base64
import hashlib
import random
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from gateway.identity.principal import Principal
from gateway.owners import session_id
from payloads.claim_check import DRIVER_NAME
from tests.gateway_helpers import BOB, GatewayServer

__all__ = ["File", "delivered", "pdf", "png", "thread_messages"]


@dataclass(frozen=True)
class File:
    """A file a test sends: its name, media type and bytes."""

    name: str
    media_type: str
    data: bytes

    @property
    def base64(self) -> str:
        """Its bytes, base64."""
        return base64.b64encode(self.data).decode()

    @property
    def sha256(self) -> str:
        """The digest of its bytes."""
        return hashlib.sha256(self.data).hexdigest()

    def js(self) -> dict[str, str]:
        """As tests/js/attachments_client.mjs takes it."""
        return {"name": self.name, "type": self.media_type, "base64": self.base64}


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    )


def png(size: int = 160_000, seed: int = 1) -> bytes:
    """A real PNG of noise, about `size` bytes."""
    noise = random.Random(seed)
    side = max(8, int((size / 3) ** 0.5))
    rows = b"".join(b"\x00" + noise.randbytes(side * 3) for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, 0))
        + _chunk(b"IEND", b"")
    )


def pdf(size: int = 140_000) -> bytes:
    """A one-page PDF saying hello, padded with a comment to about `size` bytes."""
    page = b"BT /F1 24 Tf 72 720 Td (Hello, attachments) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(page), page),
    ]
    out = b"%PDF-1.4\n"
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    padding = max(0, size - len(out))
    return out + b"%" + b"x" * padding + b"\n"


async def thread_messages(gw: GatewayServer, token: str, agent: str, thread: str) -> list[dict[str, Any]]:
    """The thread's messages as `GET /api/threads/{agent}/{thread}` shows them ([] for no thread)."""
    async with gw.http(token) as http:
        answer = await http.get(f"/api/threads/{agent}/{thread}")
    if answer.status_code == 404:
        return []
    assert answer.status_code == 200, answer.text
    return answer.json()["messages"]


async def delivered(
    gw: GatewayServer, token: str, principal: str, agent: str, thread: str, files: list[File]
) -> list[dict[str, Any]]:
    """Check the thread end to end (the module docstring); the references its user message carries."""
    messages = await thread_messages(gw, token, agent, thread)
    users = [m for m in messages if m.get("role") == "user"]
    assert len(users) == 1, messages
    refs: list[dict[str, Any]] = users[0]["attachments"]
    assert [(r["name"], r["media_type"], r["size"], r["sha256"]) for r in refs] == [
        (f.name, f.media_type, len(f.data), f.sha256) for f in files
    ]
    async with gw.http(token) as http, gw.http(BOB) as bob:
        for ref, file in zip(refs, files, strict=True):
            got = await http.get(f"/api/files/{ref['id']}")
            assert got.status_code == 200, got.text
            assert hashlib.sha256(got.content).hexdigest() == file.sha256
            assert got.headers["content-type"].split(";")[0] == file.media_type
            assert got.headers["content-disposition"].startswith("attachment;")
            assert got.headers["x-content-type-options"] == "nosniff"
            other = await bob.get(f"/api/files/{ref['id']}")
            assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    await no_bytes_in_histories(gw, session_id(Principal(principal, frozenset()), agent, thread), files)
    return refs


async def no_bytes_in_histories(gw: GatewayServer, session: str, files: list[File]) -> None:
    """No history of the session or of what it started holds a file's bytes (nor a claimed payload)."""
    handle = gw.ctx.sessions.get(session)
    workflows = [session, *(await handle.erasable())]
    for workflow_id in workflows:
        history = await gw.ctx.client.get_workflow_handle(workflow_id).fetch_history()
        raw = b"".join(event.SerializeToString() for event in history.events)
        assert DRIVER_NAME.encode() not in raw, f"{workflow_id} holds a claim-checked payload"
        for file in files:
            assert file.data[:4096] not in raw, f"{workflow_id} holds the bytes of {file.name}"
            assert file.base64[:4096].encode() not in raw, f"{workflow_id} holds the base64 of {file.name}"
