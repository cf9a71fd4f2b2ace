"""Connecting to Temporal the product's way: one data converter, TLS and API key from the environment.

Every client the product builds (the worker, `client.py`, the Python API, the tests)
goes through `build_data_converter` and `connect`, so they all read and write payloads
alike: pydantic models as JSON (readable in the Web UI), optionally encrypted
(`REACT_ENCRYPTION_KEYS`), and claim-checked into the payload store once they reach
`REACT_PAYLOAD_THRESHOLD` (`REACT_PAYLOAD_STORE`). See `payloads.settings` for the variables.

Order matters and is Temporal's: on the way out a payload is converted, encrypted, then
(if large) stored, so the store only ever holds ciphertext when encryption is on; on the
way in it is fetched, decrypted, then converted.
"""

from __future__ import annotations

import os

from temporalio.client import Client
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
    ExternalStorage,
)

from payloads.blob_store import BlobStore, shared_blob_store
from payloads.claim_check import BlobStoreDriver
from payloads.codec import AesGcmCodec
from payloads.converter import ProductPayloadConverter
from payloads.settings import Settings, load_settings

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


def temporal_address() -> str:
    """The server address: `TEMPORAL_ADDRESS`, else localhost:7233."""
    return os.environ.get("TEMPORAL_ADDRESS", DEFAULT_ADDRESS)


def temporal_namespace() -> str:
    """The namespace: `TEMPORAL_NAMESPACE`, else default."""
    return os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE)


def build_data_converter(
    settings: Settings | None = None, *, store: BlobStore | None = None
) -> DataConverter:
    """The product's data converter: pydantic JSON, optional encryption, claim check.

    Args:
        settings: the deployment settings (default: `load_settings()` from the environment).
        store: the payload store (default: the process's store for `settings.payload_store`).

    Raises:
        SettingsError: (with the default settings) a variable has a value that cannot be used.
    """
    settings = settings or load_settings()
    store = store or shared_blob_store(settings.payload_store)
    codec = AesGcmCodec(settings.encryption_keys) if settings.encryption_on else None
    return DataConverter(
        payload_converter_class=ProductPayloadConverter,
        payload_codec=codec,
        # With encryption on, failure messages and stack traces (which can quote user
        # content) travel as an encrypted payload too instead of as plain text.
        failure_converter_class=(
            DefaultFailureConverterWithEncodedAttributes if codec else DefaultFailureConverter
        ),
        external_storage=ExternalStorage(
            drivers=[BlobStoreDriver(store)], payload_size_threshold=settings.payload_threshold
        ),
    )


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    settings: Settings | None = None,
    store: BlobStore | None = None,
) -> Client:
    """A client with the product's data converter, TLS and API key.

    Args:
        address: host:port (default `TEMPORAL_ADDRESS`, else localhost:7233).
        namespace: the namespace (default `TEMPORAL_NAMESPACE`, else default).
        settings: the deployment settings (default: from the environment).
        store: the payload store (default: the one `settings` names).

    Raises:
        SettingsError: a variable has a value that cannot be used (checked before connecting).
        RuntimeError: the server cannot be reached or refuses the connection.
    """
    settings = settings or load_settings()
    return await Client.connect(
        address or temporal_address(),
        namespace=namespace or temporal_namespace(),
        data_converter=build_data_converter(settings, store=store),
        tls=settings.tls,
        api_key=settings.api_key,
    )
