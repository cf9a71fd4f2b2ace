"""The local-disk payload store: content addressing, verification, atomic writes (also under kill -9)."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from payloads.blob_store import (
    BlobMissingError,
    BlobStoreError,
    LocalDiskBlobStore,
    blob_store_from_env,
    digest_of,
    open_blob_store,
)
from payloads.codec import SealedBlobStore
from settings.deployment import EncryptionKey, FileStoreSetting

REPO = Path(__file__).resolve().parents[2]
K1 = EncryptionKey("k1", b"\x01" * 32)
K2 = EncryptionKey("k2", b"\x02" * 32)


def blob_files(root: Path) -> list[Path]:
    """Every finished blob under `root` (temporary files excluded)."""
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".tmp-")]


async def test_put_get_has_and_identical_blobs_stored_once(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path)
    data = b"hello payload store" * 1000
    digest = await store.put(data)
    assert digest == digest_of(data)
    assert await store.put(data) == digest
    assert await store.get(digest) == data
    assert await store.has(digest)
    assert blob_files(tmp_path) == [tmp_path / "sha256" / digest[:2] / digest]
    assert (tmp_path / "sha256" / digest[:2] / digest).stat().st_mode & 0o077 == 0, "owner-only files"


async def test_missing_blob_error_names_digest_store_and_setting(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path)
    digest = digest_of(b"never stored")
    assert not await store.has(digest)
    with pytest.raises(BlobMissingError) as caught:
        await store.get(digest)
    message = str(caught.value)
    assert digest in message and f"file:{tmp_path}" in message and "REACT_PAYLOAD_STORE" in message


async def test_corrupted_blob_is_detected_and_a_truncated_one_is_rewritten(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path)
    data = os.urandom(10_000)
    digest = await store.put(data)
    path = store.path_of(digest)
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(BlobMissingError, match="do not match the digest"):
        await store.get(digest)
    path.write_bytes(data[:5000])
    assert await store.put(data) == digest
    assert await store.get(digest) == data


@pytest.mark.parametrize("bad", ["../../etc/passwd", "A" * 64, "abc", "g" * 64, "0" * 63 + "/"])
async def test_anything_but_a_digest_is_refused_before_touching_the_disk(tmp_path: Path, bad: str) -> None:
    store = LocalDiskBlobStore(tmp_path)
    with pytest.raises(ValueError, match="not a sha256 hex digest"):
        await store.get(bad)
    with pytest.raises(ValueError, match="not a sha256 hex digest"):
        await store.has(bad)
    assert not any(tmp_path.iterdir())


async def test_readers_never_see_a_partial_blob_during_concurrent_writes(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path)
    data = os.urandom(8 * 1024 * 1024)
    path = store.path_of(digest_of(data))
    seen_sizes: set[int] = set()
    stop = threading.Event()

    def read_while_writing() -> None:
        while not stop.is_set():
            try:
                seen_sizes.add(len(path.read_bytes()))
            except FileNotFoundError:
                continue

    reader = threading.Thread(target=read_while_writing)
    reader.start()
    try:
        for _ in range(3):
            path.unlink(missing_ok=True)
            digests = await asyncio.gather(*(store.put(data) for _ in range(6)))
            assert set(digests) == {digest_of(data)}
    finally:
        stop.set()
        reader.join()
    assert seen_sizes == {len(data)}, "a reader saw a blob of another size than the whole"
    assert len(blob_files(tmp_path)) == 1
    assert not list(tmp_path.rglob(".tmp-*")), "temporary files are cleaned up"


WRITER = """
import asyncio, sys
from pathlib import Path
from payloads.blob_store import LocalDiskBlobStore
asyncio.run(LocalDiskBlobStore(Path(sys.argv[1])).put(b"x" * (256 * 1024 * 1024)))
"""


def test_a_writer_killed_mid_write_leaves_no_blob(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], cwd=REPO)
    deadline = time.monotonic() + 60
    while not list(tmp_path.rglob(".tmp-*")):
        assert writer.poll() is None, "the writer finished before it could be killed"
        assert time.monotonic() < deadline, "the writer never started writing"
        time.sleep(0.005)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    digest = digest_of(b"x" * (256 * 1024 * 1024))
    assert not LocalDiskBlobStore(tmp_path).path_of(digest).exists()
    assert blob_files(tmp_path) == []
    assert list(tmp_path.rglob(".tmp-*")), "killed mid-write: only the temporary file is left"
    with pytest.raises(BlobMissingError):
        asyncio.run(LocalDiskBlobStore(tmp_path).get(digest))


async def test_check_reports_an_unusable_folder(tmp_path: Path) -> None:
    await LocalDiskBlobStore(tmp_path / "new" / "folder").check()
    assert (tmp_path / "new" / "folder").is_dir()
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(BlobStoreError, match=r"is not writable .*REACT_PAYLOAD_STORE"):
        await LocalDiskBlobStore(tmp_path / "a-file" / "payloads").check()


def test_the_environment_names_one_shared_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REACT_PAYLOAD_STORE", f"file:{tmp_path}")
    store = blob_store_from_env()
    assert store is blob_store_from_env()
    assert store.describe() == f"file:{tmp_path}"
    assert open_blob_store(FileStoreSetting(tmp_path)) is not store


def test_the_default_store_never_imports_an_s3_library() -> None:
    probe = (
        "import sys; from hosting.data_converter import build_data_converter; build_data_converter(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiobotocore', 'botocore', 'boto3')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "REACT_PAYLOAD_STORE"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---- the encrypting store (blobs written directly while encryption is on) ------------------------


async def test_sealed_store_keeps_plaintext_digests_but_stores_only_ciphertext(tmp_path: Path) -> None:
    inner = LocalDiskBlobStore(tmp_path)
    sealed = SealedBlobStore(inner, [K1])
    message = b'{"role": "user", "content": "SENTINEL-7d1e"}'
    digest = await sealed.put(message)
    assert digest == digest_of(message), "callers keep addressing blobs by the plaintext digest"
    assert await sealed.get(digest) == message and await sealed.has(digest)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].parent.parent.name == "sealed"
    assert digest not in str(files[0]), "the name is keyed: the store cannot confirm a guessed message"
    assert b"SENTINEL" not in files[0].read_bytes()
    with pytest.raises(BlobMissingError):
        await inner.get(digest)


async def test_sealed_store_rotation_tampering_and_unknown_keys(tmp_path: Path) -> None:
    inner = LocalDiskBlobStore(tmp_path)
    old = await SealedBlobStore(inner, [K1]).put(b"written with k1")
    rotated = SealedBlobStore(inner, [K2, K1])
    assert await rotated.get(old) == b"written with k1"
    new = await rotated.put(b"written with k2")
    with pytest.raises(BlobMissingError, match="not stored under any key of REACT_ENCRYPTION_KEYS"):
        await SealedBlobStore(inner, [K1]).get(new)
    before = set(tmp_path.rglob("*"))
    tampered = await rotated.put(b"to be altered")
    [path] = [p for p in set(tmp_path.rglob("*")) - before if p.is_file()]
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(BlobMissingError, match="do not decrypt"):
        await rotated.get(tampered)


def test_the_environment_store_encrypts_when_keys_are_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REACT_PAYLOAD_STORE", f"file:{tmp_path}")
    monkeypatch.setenv("REACT_ENCRYPTION_KEYS", "k1:" + base64.b64encode(K1.material).decode())
    store = blob_store_from_env()
    assert isinstance(store, SealedBlobStore) and store is blob_store_from_env()
    assert store.describe() == f"file:{tmp_path} (encrypted)"
