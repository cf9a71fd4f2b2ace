"""Attachments through the gateway, measured side by side in one run: history bytes, time to first token, RSS.

    .venv/bin/python -m bench.attachments                  # 10 samples each, 20 concurrent uploads of 10 MiB
    .venv/bin/python -m bench.attachments --samples 5 --uploads 10

Real and on 127.0.0.1 only: a `temporal server start-dev` (SQLite), the product's `worker.py` and
`gateway.py` each as its own process (the gateway's RSS is read from /proc), a payload store and a
file-record store (SQLite) in a temporary folder, and the clients here. The agent is
`bench.gateway_agents`' `default`: the scripted model streaming 400 characters, 4 every 5 ms. The
images are real PNGs of noise pixels (so they do not compress), a different one for every request,
so the content-addressed store never finds one already written. Two parts:

1. **One ask with a 10 MiB image, next to the same ask without it.** Each round (the order rotates,
   so no variant always follows another) asks AG-UI `POST /agui/default` on a new thread, streaming:
   without an attachment; with the image inline (an `image` part, `data` source: base64 in the
   body); and the chat page's way: the image uploaded on its own (`POST /api/files`, the upload
   time), then asked by its id (a `file` source). For each ask: the time to the first
   TEXT_MESSAGE_CONTENT, and once the session is idle again the serialized bytes of the session's
   and its run's histories (read with the Temporal client). Targets: at most 2 KB of history per
   attachment beyond the ask without it; the ask with the image inline has its first token no
   later than the ask without it plus the upload of the same bytes (medians).
2. **20 concurrent 10 MiB uploads through one gateway process** (a fresh one, warmed up with one
   small upload): its VmRSS before, its VmHWM (peak, reset through `/proc/<pid>/clear_refs` before
   the uploads) and VmRSS after; target: growth under 50 MiB. Nothing lost: every upload answered
   201 and `GET /api/files/{id}` gives bytes of the same sha256 (the peak of those 20 GETs,
   concurrent, is printed too, with no target).

The attachment limits are the gateway's defaults (a file at most 20 MiB, a request's files 50
MiB) except the quota per principal, set to `QUOTA` so that every file of the run fits whatever
the default; the output says so. The exit code is 1 when a target is missed or a file was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import random
import struct
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.history.v1 import History
from temporalio.client import Client

from bench._dev_server import BenchError
from bench._harness import median, p90
from bench._process_stack import Stack, machine
from bench.gateway import start_gateway
from bench.gateway_agents import ANSWER
from clients.sessions import Sessions
from gateway.identity.principal import LOCAL
from gateway.owners import session_id
from hosting.connection import connect
from payloads.claim_check import DRIVER_NAME
from settings.attachment_policy import DEFAULT_MAX_BYTES, DEFAULT_QUOTA_BYTES, DEFAULT_REQUEST_BYTES, MIB

AGENT = "default"
TARGET_HISTORY_BYTES = 2_000
"""At most this many history bytes per attachment beyond the same ask without it."""
TARGET_RSS_MIB = 50.0
"""The gateway's RSS growth for the concurrent uploads stays under this."""
QUOTA = "4GiB"
"""`REACT_ATTACHMENT_QUOTA_BYTES` of the run: every file of it fits (the default is 1 GiB)."""
SAMPLE_S = 0.005


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def png(size: int, seed: int) -> bytes:
    """A real PNG of noise pixels (stored, not compressed), about `size` bytes.

    The idea of `tests/attachments_helpers.png`: an RGB image whose rows are random bytes in an
    uncompressed zlib stream, so the file is as big as its pixels.
    """
    side = max(8, int((size / 3) ** 0.5))
    row = side * 3
    pixels = random.Random(seed).randbytes(side * row)
    rows = b"".join(b"\x00" + pixels[i * row : (i + 1) * row] for i in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, 0))
        + _chunk(b"IEND", b"")
    )


def proc_kib(pid: int, key: str) -> int:
    """A `/proc/<pid>/status` figure in KiB (`VmRSS`, `VmHWM`)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise BenchError(f"/proc/{pid}/status has no {key}")


def reset_peak(pid: int) -> bool:
    """Reset the process's VmHWM to its current RSS (`clear_refs` 5); whether that was allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def verdict(ok: bool) -> str:
    """`met` or `NOT met`."""
    return "met" if ok else "NOT met"


def mib(kib: int) -> float:
    """KiB as MiB."""
    return kib / 1024


# -- part 1: one ask with and without the image ---------------------------------------------------


@dataclass
class Variant:
    """What one kind of ask measured."""

    label: str
    ttfts: list[float] = field(default_factory=list[float])
    session_bytes: list[int] = field(default_factory=list[int])
    run_bytes: list[int] = field(default_factory=list[int])
    problems: list[str] = field(default_factory=list[str])

    def totals(self) -> list[int]:
        """The session's and the run's history bytes of each ask."""
        return [s + r for s, r in zip(self.session_bytes, self.run_bytes, strict=True)]


def image_part(source: dict[str, str], name: str) -> dict[str, Any]:
    """An AG-UI `image` part."""
    return {"type": "image", "source": source, "metadata": {"filename": name}}


async def agui_ask(http: httpx.AsyncClient, url: str, thread: str, parts: list[dict[str, Any]]) -> float:
    """One streamed AG-UI ask on a new thread: seconds from sending it to its first text.

    Raises:
        BenchError: the gateway refused it, or the stream was not the scripted answer to RUN_FINISHED.
    """
    run = uuid.uuid4().hex
    content: list[dict[str, Any]] = [{"type": "text", "text": "Go"}, *parts]
    body = {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"{run}-u", "role": "user", "content": content}],
    }
    data = json.dumps(body).encode()
    start, first, text, finished = time.perf_counter(), 0.0, "", False
    headers = {"content-type": "application/json"}
    async with http.stream("POST", f"{url}/agui/{AGENT}", content=data, headers=headers) as response:
        if response.status_code != 200:
            raise BenchError(f"AG-UI ask refused: {response.status_code} {(await response.aread())[:300]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                first = first or time.perf_counter() - start
                text += event["delta"]
            finished = finished or event["type"] == "RUN_FINISHED"
    if text != ANSWER or not finished:
        raise BenchError(f"thread {thread}: the stream was not the scripted answer up to RUN_FINISHED")
    return first


async def upload(
    http: httpx.AsyncClient, url: str, data: bytes, name: str, thread: str | None = None
) -> dict[str, Any]:
    """`POST /api/files` of `data` as image/png; the answered attachment.

    Raises:
        BenchError: the answer was not 201.
    """
    params = {"name": name} | ({"agent": AGENT, "thread": thread} if thread else {})
    answer = await http.post(
        f"{url}/api/files", params=params, content=data, headers={"content-type": "image/png"}
    )
    if answer.status_code != 201:
        raise BenchError(f"upload {name}: {answer.status_code} {answer.text[:300]}")
    return answer.json()


async def histories(client: Client, sessions: Sessions, thread: str) -> tuple[History, History]:
    """The session's and its one run's histories, once the session is idle again."""
    workflow_id = session_id(LOCAL, AGENT, thread)
    session = sessions.get(workflow_id)
    for _ in range(400):
        if (await session.status()).active_request_id is None:
            break
        await asyncio.sleep(0.025)
    else:
        raise BenchError(f"thread {thread}: the session did not become idle")
    [record] = await session.requests()
    session_events = (await client.get_workflow_handle(workflow_id).fetch_history()).events
    run_events = (await client.get_workflow_handle(record.run_workflow_id).fetch_history()).events
    return History(events=session_events), History(events=run_events)


def check_reference(histories_: tuple[History, History], image: bytes) -> str | None:
    """What is wrong with where the image shows in history: its reference must, its bytes must not."""
    blob = b"".join(h.SerializeToString() for h in histories_)
    middle = (len(image) // 2) // 3 * 3
    if hashlib.sha256(image).hexdigest().encode() not in blob:
        return "the image's sha256 (its reference) is not in the histories"
    if image[middle : middle + 64] in blob or base64.b64encode(image[middle : middle + 48]) in blob:
        return "the image's bytes are in a history"
    if DRIVER_NAME.encode() in blob:
        return "a history holds a claim-checked payload"
    return None


async def measure(
    variant: Variant,
    client: Client,
    sessions: Sessions,
    ask: Callable[[str], Awaitable[float]],
    image: bytes | None,
) -> None:
    """One ask of `variant` on a new thread: its first-token time and history bytes."""
    thread = f"att-{uuid.uuid4().hex[:12]}"
    ttft = await ask(thread)
    found = await histories(client, sessions, thread)
    variant.ttfts.append(ttft)
    variant.session_bytes.append(found[0].ByteSize())
    variant.run_bytes.append(found[1].ByteSize())
    if image is not None and (problem := check_reference(found, image)) is not None:
        variant.problems.append(f"{thread}: {problem}")


async def part_one(
    http: httpx.AsyncClient, url: str, client: Client, sessions: Sessions, samples: int, size: int
) -> bool:
    """Asks with and without the image, interleaved; whether every target was met."""
    plain, inline, by_id = Variant("without"), Variant("inline (data source)"), Variant("by id (file source)")
    uploads: list[float] = []
    seeds = iter(range(1000, 2000))

    async def ask_plain(record: bool) -> None:
        async def go(thread: str) -> float:
            return await agui_ask(http, url, thread, [])

        await measure(plain if record else Variant("warm"), client, sessions, go, None)

    async def ask_inline(record: bool) -> None:
        image = png(size, next(seeds))
        source = {"type": "data", "value": base64.b64encode(image).decode(), "mimeType": "image/png"}

        async def go(thread: str) -> float:
            return await agui_ask(http, url, thread, [image_part(source, "noise.png")])

        await measure(inline if record else Variant("warm"), client, sessions, go, image)

    async def upload_then_ask(record: bool) -> None:
        image = png(size, next(seeds))

        async def go(thread: str) -> float:
            start = time.perf_counter()
            answer = await upload(http, url, image, "noise.png", thread)
            if record:
                uploads.append(time.perf_counter() - start)
            return await agui_ask(
                http, url, thread, [image_part({"type": "file", "value": answer["id"]}, "noise.png")]
            )

        await measure(by_id if record else Variant("warm"), client, sessions, go, image)

    kinds = [ask_plain, ask_inline, upload_then_ask]
    for round_ in range(samples + 1):  # round 0 warms every path up
        for index in range(3):
            await kinds[(round_ + index) % 3](round_ > 0)
    mib_ = size / MIB
    print(f"\n1. one ask with a {mib_:.0f} MiB PNG ({size:,} bytes), {samples} samples each, interleaved")
    print(f"   {'ask':<22} {'TTFT p50 ms':>12} {'p90 ms':>8}   history bytes, median: session + run = total")
    for v in (plain, inline, by_id):
        s, r, t = (median([float(x) for x in xs]) for xs in (v.session_bytes, v.run_bytes, v.totals()))
        ttft = f"{median(v.ttfts) * 1e3:12.1f} {p90(v.ttfts) * 1e3:8.1f}"
        print(f"   {v.label:<22} {ttft}   {s:,.0f} + {r:,.0f} = {t:,.0f}")
    up = f"{median(uploads) * 1e3:12.1f} {p90(uploads) * 1e3:8.1f}"
    print(f"   {'upload alone':<22} {up}   (POST /api/files of the same size, before the ask by id)")
    met = True
    base = median([float(x) for x in plain.totals()])
    for v in (inline, by_id):
        extra = [t - base for t in v.totals()]
        ok = max(extra) <= TARGET_HISTORY_BYTES
        met = met and ok
        print(
            f"   history bytes one attachment adds, {v.label}: median {median(extra):+,.0f}, "
            f"max {max(extra):+,.0f}; target at most {TARGET_HISTORY_BYTES:,}: {verdict(ok)}"
        )
        for problem in v.problems:
            print(f"   PROBLEM {problem}")
            met = False
    over = median(inline.ttfts) - median(plain.ttfts)
    over_p90 = p90(inline.ttfts) - p90(plain.ttfts)
    budget = median(uploads)
    ok = over <= budget
    met = met and ok
    print(
        f"   TTFT inline - TTFT without: {over * 1e3:+.1f} ms p50 ({over_p90 * 1e3:+.1f} ms p90), "
        f"{over / budget:.2f} x the upload's p50 {budget * 1e3:.1f} ms"
    )
    print(f"   target TTFT with the image <= TTFT without + the upload (p50): {verdict(ok)}")
    by_id_over = median(by_id.ttfts) - median(plain.ttfts)
    print(
        f"   the chat page's way: upload {budget * 1e3:.1f} ms + TTFT by id - TTFT without "
        f"{by_id_over * 1e3:+.1f} ms = {(budget + by_id_over) * 1e3:+.1f} ms p50"
    )
    return met


# -- part 2: concurrent uploads through one gateway process ---------------------------------------


async def part_two(http: httpx.AsyncClient, url: str, pid: int, count: int, size: int) -> bool:
    """`count` concurrent uploads of `size` bytes: the gateway's RSS growth; whether every file came back."""
    await upload(http, url, png(200_000, 1), "warm.png")  # imports, the file store opened
    images = [png(size, 5000 + i) for i in range(count)]
    digests = [hashlib.sha256(image).hexdigest() for image in images]
    await asyncio.sleep(0.5)
    before = proc_kib(pid, "VmRSS")
    resettable = reset_peak(pid)
    samples: list[int] = []
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            samples.append(proc_kib(pid, "VmRSS"))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_S)

    sampler = asyncio.create_task(sample())
    start = time.perf_counter()

    async def one(index: int) -> tuple[int, str | None]:
        answer = await http.post(
            f"{url}/api/files",
            params={"name": f"noise-{index}.png"},
            content=images[index],
            headers={"content-type": "image/png"},
        )
        return answer.status_code, answer.json().get("id") if answer.status_code == 201 else None

    answers = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
    wall = time.perf_counter() - start
    stop.set()
    await sampler
    peak = proc_kib(pid, "VmHWM") if resettable else max(samples, default=before)
    after = proc_kib(pid, "VmRSS")
    await asyncio.sleep(1.0)
    settled = proc_kib(pid, "VmRSS")
    created = [a[1] if isinstance(a, tuple) and a[0] == 201 else None for a in answers]
    statuses = [a[0] if isinstance(a, tuple) else type(a).__name__ for a in answers]

    get_reset = reset_peak(pid)
    get_before = proc_kib(pid, "VmRSS")

    async def fetch(index: int) -> bool:
        file_id = created[index]
        if file_id is None:
            return False
        answer = await http.get(f"{url}/api/files/{file_id}")
        return answer.status_code == 200 and hashlib.sha256(answer.content).hexdigest() == digests[index]

    same = await asyncio.gather(*(fetch(i) for i in range(count)))
    get_peak = proc_kib(pid, "VmHWM") if get_reset else proc_kib(pid, "VmRSS")
    growth = mib(peak - before)
    sent = count * size / MIB
    print(f"\n2. {count} concurrent uploads of {size / MIB:.0f} MiB (POST /api/files), one gateway process")
    print(f"   all answered in {wall:.2f} s; statuses: {', '.join(sorted({str(s) for s in statuses}))}")
    how = "VmHWM after a clear_refs reset" if resettable else f"VmRSS sampled every {SAMPLE_S * 1e3:.0f} ms"
    print(f"   gateway VmRSS before {mib(before):.0f} MiB, peak {mib(peak):.0f} MiB ({how})")
    print(f"   VmRSS right after {mib(after):.0f} MiB, 1 s later {mib(settled):.0f} MiB")
    print(f"   (VmRSS sampled: max {mib(max(samples, default=before)):.0f} MiB in {len(samples)} samples)")
    ok_rss = growth < TARGET_RSS_MIB
    print(
        f"   RSS growth {growth:+.0f} MiB, {growth / sent:.2f} x the {sent:.0f} MiB sent; "
        f"target under {TARGET_RSS_MIB:.0f} MiB: {verdict(ok_rss)}"
    )
    kept = sum(same)
    created_count = sum(s == 201 for s in statuses)
    ok_kept = kept == count and created_count == count
    print(
        f"   nothing lost: {created_count}/{count} answered 201, {kept}/{count} GET /api/files/{{id}} "
        f"gave the same sha256: {verdict(ok_kept)}"
    )
    print(
        f"   the {count} GETs at once (no target): VmRSS before {mib(get_before):.0f} MiB, "
        f"peak {mib(get_peak):.0f} MiB ({mib(get_peak - get_before):+.0f} MiB)"
    )
    return ok_rss and ok_kept


async def main(samples: int, count: int, size: int) -> int:
    """Both parts on one dev server and worker; a fresh gateway process for each part."""
    print(f"# bench.attachments: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-attachments-") as work:
        stack = Stack(Path(work))
        stack.env["REACT_STORE_URL"] = f"sqlite:///{Path(work) / 'store.db'}"
        stack.env["REACT_ATTACHMENT_QUOTA_BYTES"] = QUOTA
        for name in (
            "REACT_ATTACHMENT_MAX_BYTES",
            "REACT_ATTACHMENT_REQUEST_BYTES",
            "REACT_GATEWAY_MAX_BODY_BYTES",
        ):
            stack.env.pop(name, None)
        files = 2 * (samples + 1) + count + 1
        print(
            f"limits: a file at most {DEFAULT_MAX_BYTES / MIB:.0f} MiB, a request's files "
            f"{DEFAULT_REQUEST_BYTES / MIB:.0f} MiB (the defaults); REACT_ATTACHMENT_QUOTA_BYTES={QUOTA} "
            f"(default {DEFAULT_QUOTA_BYTES / MIB:.0f} MiB): the run's {files} files of "
            f"{size / MIB:.0f} MiB ({files * size / MIB:.0f} MiB) fit"
        )
        gateway: subprocess.Popen[bytes] | None = None
        try:
            await stack.start_server()
            await stack.start_worker()
            client = await connect(stack.address)
            sessions = Sessions(client, task_queue=stack.queue)
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
            async with httpx.AsyncClient(timeout=300, limits=limits) as http:
                gateway, url = await start_gateway(stack)
                met_one = await part_one(http, url, client, sessions, samples, size)
                gateway.terminate()
                gateway.wait(10)
                gateway, url = await start_gateway(stack)
                met_two = await part_two(http, url, gateway.pid, count, size)
        finally:
            if gateway is not None:
                gateway.terminate()
                gateway.wait(10)
            stack.stop()
    return 0 if met_one and met_two else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10, help="asks of each kind (after one warm-up round)")
    parser.add_argument("--uploads", type=int, default=20, help="concurrent uploads of part 2")
    parser.add_argument("--size-mib", type=float, default=10.0, help="each image's size")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.samples, arguments.uploads, int(arguments.size_mib * MIB))))
