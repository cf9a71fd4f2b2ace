"""Reading protected payloads: `client.py codec-server` (for the Web UI) and `client.py payload`.

The codec server speaks Temporal's remote codec protocol: `POST /encode`, `/decode` and
`/download` take and return `{"payloads": [{"metadata": {...}, "data": "<base64>"}]}`
(also under any path prefix, e.g. `/default/decode`). `/decode` decrypts with
`REACT_ENCRYPTION_KEYS` and, unless `--keep-references` or `?preserveStorageRefs=true`,
replaces claim-checked references by the payloads they name (fetched from
`REACT_PAYLOAD_STORE`), so a person who runs it sees every payload in full; `/download`
(the Web UI's download button) fetches referenced payloads only. CORS lets the Web UI's
origin call it. Anyone who can reach it can decrypt: it listens on 127.0.0.1 by default;
put it behind the same access control as the UI when shared.

`client.py payload <sha256>` prints one stored payload, decrypted and decoded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated

import typer
from aiohttp import web
from aiohttp.typedefs import Handler
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.sdk.v1 import ExternalStorageReference

from cli.common import say
from cli.errors import CliError, err_console, reported
from cli.params import argument, option
from payloads.blob_store import BlobMissingError, BlobStoreError, check_digest, shared_blob_store
from payloads.claim_check import DRIVER_NAME, BlobStoreDriver, PayloadClaimError
from payloads.codec import AesGcmCodec
from settings.deployment import load_settings
from settings.env_values import SettingsError

DEFAULT_PORT = 8081
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233", "http://localhost:8080")
MAX_REQUEST_BYTES = 16 * 1024 * 1024
REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()
CORS_HEADERS = {
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, X-Namespace, Authorization",
    "Access-Control-Allow-Credentials": "true",
    "Access-Control-Max-Age": "600",
}
log = logging.getLogger("codec-server")

_Transform = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


class CodecService:
    """The codec server's behaviour, apart from HTTP: encode, decode, fetch claim-checked payloads."""

    def __init__(
        self, codec: AesGcmCodec | None, driver: BlobStoreDriver, resolve_on_decode: bool = True
    ) -> None:
        """Decrypt with `codec` (None: pass through); fetch references from `driver`.

        `resolve_on_decode` False keeps references in `/decode` answers (they stay downloadable).
        """
        self.codec = codec
        self.driver = driver
        self.resolve_on_decode = resolve_on_decode

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt with the current key (unchanged without keys)."""
        return await self.codec.encode(payloads) if self.codec else list(payloads)

    async def decode(self, payloads: Sequence[Payload], keep_references: bool = False) -> list[Payload]:
        """Fetch claim-checked payloads (unless kept; a missing one stays a reference), then decrypt."""
        if self.resolve_on_decode and not keep_references:
            payloads = [await self._fetch_or_keep(payload) for payload in payloads]
        return await self._decrypt(payloads)

    async def download(self, payloads: Sequence[Payload]) -> list[Payload]:
        """The payloads that references name, decrypted (the Web UI's download button).

        Raises:
            NotAReferenceError: a payload is not a claim-check reference of this product.
            BlobMissingError: a referenced blob is not in the store.
        """
        digests = [reference_digest(payload) for payload in payloads]
        if None in digests:
            raise NotAReferenceError("all payloads must be storage references")
        return await self._decrypt([await self.driver.load(digest) for digest in digests if digest])

    async def _fetch_or_keep(self, payload: Payload) -> Payload:
        digest = reference_digest(payload)
        if digest is None:
            return payload
        try:
            return await self.driver.load(digest)
        except (BlobMissingError, BlobStoreError, PayloadClaimError) as error:
            log.warning("kept a reference as is: %s", error)
            return payload

    async def _decrypt(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await self.codec.decode(payloads) if self.codec else list(payloads)


class NotAReferenceError(ValueError):
    """`/download` was given a payload that is not a reference to the payload store."""


def reference_digest(payload: Payload) -> str | None:
    """The digest a claim-check reference of this product names; None for any other payload."""
    if payload.metadata.get("messageType") != REFERENCE_TYPE:
        return None
    reference = ExternalStorageReference()
    try:
        json_format.Parse(payload.data, reference)
        return (
            check_digest(reference.claim_data.get("sha256", ""))
            if reference.driver_name == DRIVER_NAME
            else None
        )
    except (json_format.ParseError, ValueError):
        return None


def build_app(service: CodecService, allowed_origins: Sequence[str]) -> web.Application:
    """The aiohttp application: the codec routes (also under any path prefix), CORS, and /health."""
    origins = {origin.rstrip("/") for origin in allowed_origins}

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if request.method == "OPTIONS":
            if origin not in origins:
                return web.Response(status=403, text=f"origin {origin!r} is not allowed (--allow-origin)")
            response: web.StreamResponse = web.Response(status=204)
        else:
            response = await handler(request)
        if origin in origins:
            response.headers.update({"Access-Control-Allow-Origin": origin, "Vary": "Origin", **CORS_HEADERS})
        return response

    async def encode(request: web.Request) -> web.Response:
        return await _transcode(request, service.encode)

    async def decode(request: web.Request) -> web.Response:
        keep = request.query.get("preserveStorageRefs", "").lower() == "true"
        return await _transcode(request, lambda payloads: service.decode(payloads, keep_references=keep))

    async def download(request: web.Request) -> web.Response:
        return await _transcode(request, service.download)

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[cors], client_max_size=MAX_REQUEST_BYTES)
    # The protocol routes on the last path segment, so `--codec-endpoint http://host/{namespace}` works too.
    for name, route in (("encode", encode), ("decode", decode), ("download", download)):
        for path in (f"/{name}", f"/{{prefix:.+}}/{name}"):
            app.router.add_post(path, route)
            app.router.add_route("OPTIONS", path, health)
    app.router.add_get("/health", health)
    return app


async def _transcode(request: web.Request, transform: _Transform) -> web.Response:
    try:
        payloads = Payloads()
        json_format.Parse(await request.text(), payloads)
    except (json_format.ParseError, UnicodeDecodeError) as error:
        return _error(400, f"expected {{'payloads': [...]}} as JSON: {error}")
    try:
        result = Payloads(payloads=await transform(payloads.payloads))
    except BlobMissingError as error:
        return _error(404, str(error))
    except (ValueError, BlobStoreError) as error:
        # 4xx, never 5xx: a browser retries a 5xx, which would only repeat the failure.
        return _error(400 if isinstance(error, NotAReferenceError) else 422, str(error))
    return web.Response(text=json_format.MessageToJson(result), content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _service(keep_references: bool) -> CodecService:
    """The codec service the environment's settings describe."""
    settings = load_settings()
    codec = AesGcmCodec(settings.encryption_keys) if settings.encryption_on else None
    driver = BlobStoreDriver(shared_blob_store(settings.payload_store))
    return CodecService(codec, driver, resolve_on_decode=not keep_references)


def codec_server(
    host: Annotated[
        str, option(help="Interface to listen on (0.0.0.0 exposes it to the network).")
    ] = "127.0.0.1",
    port: Annotated[int, option(help="Port to listen on.")] = DEFAULT_PORT,
    allow_origin: Annotated[
        list[str] | None,
        option(help="A Web UI origin allowed to call it (repeatable; default: the dev UI's and compose's)."),
    ] = None,
    keep_references: Annotated[
        bool, option("--keep-references", help="Do not replace claim-checked references by their payloads.")
    ] = False,
) -> None:
    """Serve Temporal's codec protocol so the Web UI can show encrypted and claim-checked payloads.

    Keys come from REACT_ENCRYPTION_KEYS and the payload store from REACT_PAYLOAD_STORE,
    as for the worker. Point the UI at it with `temporal server start-dev
    --ui-codec-endpoint http://localhost:8081` (the worker's --dev does this when
    encryption is on) or in the UI's Data Encoder settings.
    """
    with reported(f"{host}:{port}", resume="the codec server stopped"):
        try:
            service = _service(keep_references)
        except SettingsError as error:
            raise CliError(str(error)) from None
        origins = list(allow_origin or DEFAULT_ORIGINS)
        if service.codec is None:
            say("note: REACT_ENCRYPTION_KEYS is not set: payloads are not decrypted, references are resolved")
        if host not in ("127.0.0.1", "localhost", "::1"):
            say(f"warning: listening on {host}: anyone who reaches it can decrypt payloads")
        say(f"codec server on http://{host}:{port} (POST /encode, /decode, /download)")
        say(f"allowed Web UI origins: {', '.join(origins)}")
        logging.basicConfig(level=logging.WARNING)
        web.run_app(build_app(service, origins), host=host, port=port, print=None)


def payload(
    digest: Annotated[str, argument(help="The payload's SHA-256 (the claimData.sha256 of its reference).")],
    raw: Annotated[bool, option("--raw", help="Write the payload's data bytes as they are.")] = False,
) -> None:
    """Print a claim-checked payload from the payload store, decrypted and decoded.

    In the Web UI a large payload appears as a reference, {"driverName":
    "react.payload-store", "claimData": {"sha256": "..."}}: pass that digest.
    """
    with reported("", resume="nothing was changed"):
        text = digest.strip().removeprefix("sha256:").lower()
        try:
            check_digest(text)
        except ValueError:
            raise CliError(f"{digest!r} is not a SHA-256 digest (64 hex digits)") from None
        try:
            service = _service(keep_references=False)
        except SettingsError as error:
            raise CliError(str(error)) from None
        stored = asyncio.run(_load(service, text))
        encoding = stored.metadata.get("encoding", b"").decode(errors="replace")
        if raw:
            sys.stdout.buffer.write(stored.data)
        elif encoding == "binary/encrypted":
            raise CliError("the payload is encrypted: set REACT_ENCRYPTION_KEYS to the worker's keys")
        elif encoding.startswith("json/"):
            typer.echo(json.dumps(json.loads(stored.data), indent=2, ensure_ascii=False))
        else:
            err_console.print(
                f"encoding {encoding or '(none)'}, {len(stored.data)} bytes: use --raw", markup=False
            )


async def _load(service: CodecService, digest: str) -> Payload:
    try:
        stored = await service.driver.load(digest)
        return (await service.codec.decode([stored]))[0] if service.codec else stored
    finally:
        await service.driver.blobs.aclose()
