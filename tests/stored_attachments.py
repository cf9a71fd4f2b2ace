"""Attachments for tests: bytes put in a payload store, and the references a user message carries."""

from __future__ import annotations

import io
import uuid

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from conversation.attachments import Attachment
from payloads.blob_store import BlobStore, digest_of

# A 1 x 1 PNG (a real one: signature, IHDR, IDAT, IEND), with a distinctive trailer so a
# search of histories for its bytes (or their base64) finds nothing else.
PNG = (
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c6360f8cfc0f01f0005000201e221bc330000000049454e44ae426082"
    )
    + b"ATTACHMENT-MARKER-7f3a9c"
)


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF whose page shows `text` (pypdf extracts it again)."""
    writer = PdfWriter()
    page = writer.add_blank_page(width=300, height=100)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}  # pyright: ignore[reportPrivateUsage]
    )
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 10 50 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)  # pyright: ignore[reportPrivateUsage]
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def stored(store: BlobStore, data: bytes, name: str, media_type: str) -> Attachment:
    """Put `data` in `store`; the reference a user message carries."""
    await store.put(data)
    return Attachment(
        id=f"f-{uuid.uuid4().hex}", name=name, media_type=media_type, size=len(data), sha256=digest_of(data)
    )
