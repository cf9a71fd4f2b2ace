"""The product's data converter: pydantic JSON, optional encryption, claim check into the payload store.

Every client the product builds gets it, through `hosting.plugin.DurableReactPlugin` (or
directly, for a client made from another's service client).
"""

from __future__ import annotations

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
from settings.deployment import Settings, load_settings


def build_data_converter(
    settings: Settings | None = None, *, store: BlobStore | None = None
) -> DataConverter:
    """The product's data converter: pydantic JSON, optional encryption, claim check.

    Order matters and is Temporal's: on the way out a payload is converted, encrypted, then
    (if large) stored, so the store only ever holds ciphertext when encryption is on; on the
    way in it is fetched, decrypted, then converted.

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
