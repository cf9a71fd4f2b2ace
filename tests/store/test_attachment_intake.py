"""The intake of attachments and the file records, on SQLite and PostgreSQL, with a real disk payload store.

The media type is checked from the bytes (an image that is not one, text that is not UTF-8 are
refused by name), the limits and the per-principal quota are named when hit, a refused file
records nothing, a retried ask (the same request id) names the same files, records are their
owner's only, and a thread's records are deleted with it. The URL policy: nothing is fetched
unless `REACT_ATTACHMENT_URL_ALLOW` allows it, and a private address needs its entry.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from clients.attachment_intake import AttachmentIntake, AttachmentRefusedError, AttachmentSource
from payloads.blob_store import LocalDiskBlobStore
from payloads.url_fetch import UrlRefusedError, fetch_url
from settings.attachment_policy import AttachmentPolicy
from settings.env_values import SettingsError
from store.files import FileStore
from tests.attachment_delivery import pdf, png

POLICY = AttachmentPolicy(max_bytes=50_000, per_message=3, request_bytes=80_000, quota_bytes=120_000)


@pytest_asyncio.fixture
async def intake(store_url: str, tmp_path: Path) -> AsyncIterator[AttachmentIntake]:
    files = FileStore(store_url)
    try:
        yield AttachmentIntake(POLICY, LocalDiskBlobStore(tmp_path / "payloads"), files)
    finally:
        await files.close()


async def refused(
    intake: AttachmentIntake, *sources: AttachmentSource, owner: str = "alice"
) -> tuple[str, str]:
    with pytest.raises(AttachmentRefusedError) as caught:
        await intake.take(owner, list(sources), agent="default", thread="t1", request_id="r1")
    return caught.value.code, caught.value.message


async def test_files_are_checked_stored_and_recorded(intake: AttachmentIntake) -> None:
    image, document = png(10_000), pdf(5_000)
    taken = await intake.take(
        "alice",
        [
            AttachmentSource(name="a.png", media_type="image/png", data=image),
            AttachmentSource(name="C:\\docs\\b.pdf", base64=base64.b64encode(document).decode()),
            AttachmentSource.of_url("data:text/csv,a%2Cb%0A1%2C2", name="t.csv"),
        ],
        agent="default",
        thread="t1",
        request_id="r1",
    )
    assert [(a.name, a.media_type) for a in taken] == [
        ("a.png", "image/png"),
        ("b.pdf", "application/pdf"),  # its type from its bytes; its name without the path
        ("t.csv", "text/csv"),
    ]
    assert await intake.blobs.get(taken[0].sha256) == image
    again = await intake.take(
        "alice",
        [AttachmentSource(name="a.png", media_type="image/png", data=image)],
        agent="default",
        thread="t1",
        request_id="r1",
    )
    assert again[0].id == taken[0].id  # the same request: the same file
    record = await intake.files.get("alice", taken[0].id)
    assert record is not None and (record.agent, record.thread) == ("default", "t1")
    assert await intake.files.get("bob", taken[0].id) is None
    assert await intake.files.stored_bytes("alice") == sum(a.size for a in taken)
    by_id = await intake.take("alice", [AttachmentSource(file_id=taken[1].id)], thread="t2")
    assert by_id == [taken[1]]
    assert await refused(intake, AttachmentSource(file_id=taken[1].id), owner="bob") == (
        "not_found",
        f"no such file {taken[1].id!r}",
    )
    assert await intake.files.delete_thread("alice", "default", "t1") == 3
    assert await intake.files.get("alice", taken[0].id) is None


async def test_bad_files_are_refused_by_name_and_record_nothing(intake: AttachmentIntake) -> None:
    image = png(10_000)
    cases = {
        "mismatch": (
            AttachmentSource(name="x.png", media_type="image/png", data=pdf(2_000)),
            "media_type_mismatch",
        ),
        "other image": (
            AttachmentSource(name="x.jpg", media_type="image/jpeg", data=image),
            "media_type_mismatch",
        ),
        "not utf-8": (
            AttachmentSource(name="x.txt", media_type="text/plain", data=b"\xff\xfe\x00"),
            "media_type_mismatch",
        ),
        "binary as text": (
            AttachmentSource(name="x.txt", media_type="text/plain", data=image),
            "media_type_mismatch",
        ),
        "bad base64": (
            AttachmentSource(name="x.png", media_type="image/png", base64="@@@"),
            "invalid_attachment",
        ),
        "untyped data URL": (AttachmentSource.of_url("data:;base64,aGk="), "invalid_attachment"),
        "empty": (AttachmentSource(name="x.txt", data=b""), "invalid_attachment"),
        "unsupported": (
            AttachmentSource(name="x.zip", media_type="application/zip", data=b"PK\x03\x04" + b"\0" * 40),
            "unsupported_media_type",
        ),
        "too large": (
            AttachmentSource(name="x.png", media_type="image/png", data=png(60_000)),
            "payload_too_large",
        ),
        "url": (AttachmentSource.of_url("https://example.com/x.png"), "url_refused"),
    }
    for name, (source, code) in cases.items():
        assert (await refused(intake, source))[0] == code, name
    code, message = await refused(intake, *[AttachmentSource(media_type="image/png", data=image)] * 4)
    assert code == "too_many_attachments" and "at most 3" in message
    big = AttachmentSource(media_type="image/png", data=png(45_000))
    code, message = await refused(intake, big, big)
    assert code == "payload_too_large" and "80,000 bytes" in message
    # The second file is refused: the first, stored already, is not recorded either.
    code, _ = await refused(
        intake, AttachmentSource(media_type="image/png", data=image), cases["mismatch"][0]
    )
    assert code == "media_type_mismatch"
    assert await intake.files.stored_bytes("alice") == 0
    for _ in range(2):
        await intake.take("alice", [big], thread="q")
    code, message = await refused(intake, big)
    assert code == "quota_exceeded" and "120,000 bytes" in message


def test_the_url_policy_is_off_by_default_and_private_addresses_need_an_entry() -> None:
    assert AttachmentPolicy.from_env({}).url is None
    public = AttachmentPolicy.from_env({"REACT_ATTACHMENT_URL_ALLOW": "public"}).url
    assert public is not None and public.url_problem("http://127.0.0.1/x") is not None
    listed = AttachmentPolicy.from_env({"REACT_ATTACHMENT_URL_ALLOW": "files.internal:8443"}).url
    assert listed is not None and listed.url_problem("https://files.internal:8443/x") is None
    problem = listed.address_problem("example.com", ipaddress.ip_address("93.184.216.34"), 443)
    assert problem is not None and "REACT_ATTACHMENT_URL_ALLOW" in problem  # no `public`: listed only
    with pytest.raises(SettingsError, match="REACT_ATTACHMENT_MAX_BYTES"):
        AttachmentPolicy.from_env({"REACT_ATTACHMENT_MAX_BYTES": "lots"})
    with pytest.raises(SettingsError, match="REACT_ATTACHMENTS_PER_MESSAGE"):
        AttachmentPolicy.from_env({"REACT_ATTACHMENTS_PER_MESSAGE": "11"})


async def test_no_url_is_fetched_without_an_allow_list() -> None:
    with pytest.raises(UrlRefusedError, match="REACT_ATTACHMENT_URL_ALLOW is unset"):
        await fetch_url(AttachmentPolicy(), "https://example.com/x.png")
    policy = AttachmentPolicy.from_env({"REACT_ATTACHMENT_URL_ALLOW": "public"})
    with pytest.raises(UrlRefusedError, match="not a public address"):
        await fetch_url(policy, "http://10.0.0.1/x.png")
