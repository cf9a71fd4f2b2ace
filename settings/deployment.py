"""Deployment settings from environment variables: payload store, encryption, TLS and API key.

`load_settings()` reads them all at once; a bad value raises `SettingsError`, one line
naming the variable (never echoing a secret). The worker, the CLI and the Python API
build their clients from the same settings (`hosting.connection.connect`), so they agree
on where large payloads live and how payloads are encrypted.

- `REACT_PAYLOAD_STORE`: `file:<absolute path>` (default `<repo>/.temporal/payloads`) or
  `s3://bucket[/prefix]`; `REACT_S3_ENDPOINT_URL` for an S3-compatible server (MinIO...),
  `AWS_REGION`/`AWS_DEFAULT_REGION` (default us-east-1), credentials from the AWS chain.
- `REACT_PAYLOAD_THRESHOLD`: payloads of at least this size are claim-checked (default
  128KiB, at most 1MiB).
- `REACT_ENCRYPTION_KEYS`: `id:base64key[,id:base64key...]`, AES-256-GCM, the first encrypts.
- `REACT_CODEC_ENDPOINT`: the codec server the dev server's Web UI uses (default
  http://localhost:8081 when encryption is on).
- `TEMPORAL_TLS_CERT` + `TEMPORAL_TLS_KEY` (mTLS), `TEMPORAL_TLS_CA`: a path or inline PEM
  (the `temporal` CLI's `TEMPORAL_TLS_CLIENT_CERT_PATH`... names work too);
  `TEMPORAL_TLS` forces TLS on or off, `TEMPORAL_TLS_SERVER_NAME` the name to verify.
- `TEMPORAL_API_KEY`: an API key (Temporal Cloud); turns TLS on unless `TEMPORAL_TLS=false`.
- `REACT_WORKFLOW_SANDBOX`: `on` runs the worker's workflows in Temporal's sandbox (default
  off; see `hosting.sandbox.workflow_runner`).
- `REACT_ACTIVITY_OPTIONS`: the deployment's activity option overrides, JSON (`settings.activity_overrides`).
- `REACT_MODEL_MEDIA`: what models take beyond text, over litellm's model map (a local or
  unmapped model that reads images, a mapped one to keep text-only): `model=kinds[,...]`,
  kinds `images`, `pdfs` joined by `+`, or `none`; e.g.
  `openai/llava=images,openai/gpt-4o=images+pdfs,ollama/llama3=none`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from temporalio.service import TLSConfig

from contracts.activities import ActivityOverride
from contracts.llm import ModelMedia
from settings.activity_overrides import parse_activity_overrides
from settings.env_values import SettingsError, flag, value
from settings.env_values import size as size_bytes
from settings.tls import tls_from_env

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PAYLOAD_ROOT = REPO_ROOT / ".temporal" / "payloads"
KIB = 1024
MIB = 1024 * KIB
DEFAULT_PAYLOAD_THRESHOLD = 128 * KIB
# Inline payloads count against Temporal's 2 MB payload and 4 MB gRPC message limits,
# and one workflow task can carry several: a threshold above 1 MiB only invites failures.
MAX_PAYLOAD_THRESHOLD = 1 * MIB
DEFAULT_CODEC_ENDPOINT = "http://localhost:8081"
DEFAULT_S3_REGION = "us-east-1"
KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class FileStoreSetting:
    """The local-disk payload store under `root`."""

    root: Path


@dataclass(frozen=True)
class S3StoreSetting:
    """An S3-compatible payload store: objects `<prefix>/sha256/<digest>` in `bucket`."""

    bucket: str
    prefix: str
    endpoint_url: str | None
    region: str


@dataclass(frozen=True)
class EncryptionKey:
    """An AES-256 key and the id written next to every payload it encrypts."""

    key_id: str
    material: bytes = field(repr=False)


@dataclass(frozen=True)
class Settings:
    """Everything the product's clients and worker need beyond the server address."""

    payload_store: FileStoreSetting | S3StoreSetting = field(
        default_factory=lambda: FileStoreSetting(DEFAULT_PAYLOAD_ROOT)
    )
    payload_threshold: int = DEFAULT_PAYLOAD_THRESHOLD
    encryption_keys: tuple[EncryptionKey, ...] = ()
    codec_endpoint: str | None = None
    tls: TLSConfig | bool = False
    api_key: str | None = field(default=None, repr=False)
    workflow_sandbox: bool = False
    activity_options: Mapping[str, ActivityOverride] = field(
        default_factory=dict[str, ActivityOverride], hash=False
    )
    model_media: Mapping[str, ModelMedia] = field(default_factory=dict[str, ModelMedia], hash=False)
    """What models take beyond text, over litellm's model map (`REACT_MODEL_MEDIA`)."""

    @property
    def encryption_on(self) -> bool:
        """Whether payloads are encrypted (some key is configured)."""
        return bool(self.encryption_keys)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the settings from `environ` (default: this process's environment).

    Raises:
        SettingsError: a variable has a value that cannot be used.
    """
    env = os.environ if environ is None else environ
    keys = _encryption_keys(env)
    codec_endpoint = _url(env, "REACT_CODEC_ENDPOINT")
    if codec_endpoint is None and keys:
        codec_endpoint = DEFAULT_CODEC_ENDPOINT
    api_key = _api_key(env)
    return Settings(
        payload_store=_payload_store(env),
        payload_threshold=_threshold(env),
        encryption_keys=keys,
        codec_endpoint=codec_endpoint,
        tls=tls_from_env(env, api_key is not None),
        api_key=api_key,
        workflow_sandbox=bool(flag(env, "REACT_WORKFLOW_SANDBOX")),
        activity_options=_activity_options(env),
        model_media=_model_media(env),
    )


def _payload_store(env: Mapping[str, str]) -> FileStoreSetting | S3StoreSetting:
    name = "REACT_PAYLOAD_STORE"
    spec = value(env, name)
    if spec is None:
        return FileStoreSetting(DEFAULT_PAYLOAD_ROOT)
    if spec.startswith("s3://"):
        bucket, _, prefix = spec.removeprefix("s3://").partition("/")
        if not BUCKET.fullmatch(bucket) or ".." in bucket:
            raise SettingsError(name, f"{bucket!r} is not a valid S3 bucket name (3-63 of a-z 0-9 . -)")
        region = value(env, "AWS_REGION") or value(env, "AWS_DEFAULT_REGION") or DEFAULT_S3_REGION
        return S3StoreSetting(bucket, prefix.strip("/"), _url(env, "REACT_S3_ENDPOINT_URL"), region)
    if spec.startswith("file:"):
        path = spec.removeprefix("file:")
        path = path.removeprefix("//") if path.startswith("///") else path
        root = Path(path).expanduser()
        if not path or not root.is_absolute():
            raise SettingsError(
                name,
                f"the path of {spec!r} must be absolute, so the worker and every client "
                "use the same folder whatever their working directory",
            )
        return FileStoreSetting(root)
    raise SettingsError(name, f"expected file:<absolute path> or s3://bucket[/prefix], got {spec!r}")


def _threshold(env: Mapping[str, str]) -> int:
    name = "REACT_PAYLOAD_THRESHOLD"
    size = size_bytes(env, name, "131072 or 128KiB")
    if size is None:
        return DEFAULT_PAYLOAD_THRESHOLD
    if size > MAX_PAYLOAD_THRESHOLD:
        raise SettingsError(
            name,
            f"{value(env, name)} is above the maximum of 1MiB (inline payloads must stay far below 2 MB)",
        )
    return size


def _url(env: Mapping[str, str], name: str) -> str | None:
    text = value(env, name)
    if text is None:
        return None
    parts = urlsplit(text)
    try:
        _ = parts.port
    except ValueError:
        raise SettingsError(name, f"{text!r} has an invalid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(name, f"expected an http(s) URL such as http://localhost:9000, got {text!r}")
    return text.rstrip("/")


def _encryption_keys(env: Mapping[str, str]) -> tuple[EncryptionKey, ...]:
    name = "REACT_ENCRYPTION_KEYS"
    text = value(env, name)
    if text is None:
        return ()
    keys: list[EncryptionKey] = []
    for position, item in enumerate(text.split(","), start=1):
        if not item.strip():
            continue  # a trailing or doubled comma
        key_id, sep, encoded = item.strip().partition(":")
        # Messages name the key's id or position, never its material.
        if not sep or not KEY_ID.fullmatch(key_id):
            raise SettingsError(
                name, f"entry {position} is not <id>:<base64 key> with an id of 1-64 of A-Z a-z 0-9 . _ -"
            )
        if any(k.key_id == key_id for k in keys):
            raise SettingsError(name, f"key id {key_id!r} appears twice")
        try:
            # Standard or URL-safe base64 alike.
            material = base64.b64decode(encoded.strip().replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            raise SettingsError(name, f"the key of {key_id!r} is not valid base64") from None
        if len(material) != 32:
            raise SettingsError(
                name,
                f"the key of {key_id!r} is {len(material)} bytes; "
                "AES-256 needs 32 (the base64 of 32 random bytes)",
            )
        keys.append(EncryptionKey(key_id, material))
    return tuple(keys)


def _api_key(env: Mapping[str, str]) -> str | None:
    key = value(env, "TEMPORAL_API_KEY")
    if key is not None and any(c.isspace() for c in key):
        raise SettingsError(
            "TEMPORAL_API_KEY", "contains blanks or line breaks (was more than the key pasted?)"
        )
    return key


def _activity_options(env: Mapping[str, str]) -> dict[str, ActivityOverride]:
    name = "REACT_ACTIVITY_OPTIONS"
    text = value(env, name)
    try:
        return {} if text is None else parse_activity_overrides(text)
    except ValueError as error:
        raise SettingsError(name, str(error)) from None


MEDIA_KINDS = frozenset({"images", "pdfs"})


def _model_media(env: Mapping[str, str]) -> dict[str, ModelMedia]:
    name = "REACT_MODEL_MEDIA"
    text = value(env, name)
    media: dict[str, ModelMedia] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        model, equals, kinds_text = item.strip().rpartition("=")
        kinds = {k.strip() for k in kinds_text.split("+")}
        if not equals or not model.strip():
            raise SettingsError(name, f"expected model=kinds, got {item.strip()!r}")
        if kinds != {"none"} and not kinds <= MEDIA_KINDS:
            raise SettingsError(name, f"{model.strip()}: kinds are images, pdfs (joined by +) or none")
        if model.strip() in media:
            raise SettingsError(name, f"{model.strip()} is named twice")
        media[model.strip()] = ModelMedia(images="images" in kinds, pdfs="pdfs" in kinds)
    return media
