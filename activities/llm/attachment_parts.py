"""A user message's attachments as litellm content parts, their bytes read from the payload store.

The LLM activity calls `AttachmentParts.load` after resolving the call's messages: it reads
the bytes of every attachment of the call (`Attachment.sha256` is the key) from the payload
store the worker's message cache uses, and checks that they hash to the reference's `sha256`
and have its `size` (a missing blob or a mismatch is the non-retryable `blob_missing`:
retrying cannot bring the same bytes back). The bytes never leave the activity: not in its
input, not in its result. Content-addressed bytes make every retry send the same parts.

`content` then renders one message as the OpenAI chat content litellm takes
(`conversation.media` decides the kind):

- its text first, then, for each attachment, a text part naming it (`Attachment <name>
  (<media type>):`) followed by
- an image: an `image_url` part with a base64 data URL, for a model that takes images
  (`litellm.supports_vision`, unless the deployment says otherwise: `REACT_MODEL_MEDIA`);
- a PDF: a `file` part (`file_data` data URL and `filename`) for a model that takes PDFs
  (`litellm.supports_pdf_input`, or `REACT_MODEL_MEDIA`), else its text extracted with `pypdf`;
- a text-like file: its text (UTF-8, undecodable bytes replaced), for every model.

A kind the model cannot take (an image for a text-only model, a type no model takes) is
the non-retryable `unsupported_media_type`, naming the model and the type, before any
provider call: never a provider 400. The scripted model takes every kind.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.llm.litellm_loading import load_litellm
from contracts.activities import MODEL_MEDIA_ACTIVITY
from contracts.errors import BLOB_MISSING, UNSUPPORTED_MEDIA_TYPE
from contracts.llm import SCRIPTED_MODEL, ModelMedia, ModelMediaRequest
from conversation import Message
from conversation.attachments import Attachment
from conversation.media import media_kind
from payloads.blob_store import BlobMissingError, BlobStore, digest_of

ALL_MEDIA = ModelMedia(images=True, pdfs=True)


def model_media(model: str, overrides: Mapping[str, ModelMedia] | None = None) -> ModelMedia:
    """What `model` takes: the deployment's word (`overrides`, `REACT_MODEL_MEDIA`), else litellm's map.

    The scripted model takes everything. Loads litellm for a provider model: call it once
    litellm is loaded (`load_litellm`).
    """
    if model == SCRIPTED_MODEL:
        return ALL_MEDIA
    if overrides and model in overrides:
        return overrides[model]
    from activities.llm._litellm import litellm

    def asked(name: str) -> bool:
        try:
            return bool(getattr(litellm.utils, name)(model=model))
        except Exception:  # an unmapped model: litellm raises; it takes text only
            return False

    return ModelMedia(images=asked("supports_vision"), pdfs=asked("supports_pdf_input"))


class ModelMediaActivity:
    """The `model_media` activity, with the deployment's overrides (`Settings.model_media`)."""

    def __init__(self, overrides: Mapping[str, ModelMedia]) -> None:
        """Answer with `overrides` first, then litellm's model map."""
        self._overrides = overrides

    @activity.defn(name=MODEL_MEDIA_ACTIVITY)
    async def model_media(self, request: ModelMediaRequest) -> ModelMedia:
        """What `request.model` takes beyond text (`model_media`): for the ask-time refusal in workflows."""
        if request.model != SCRIPTED_MODEL and request.model not in self._overrides:
            await load_litellm()
        return model_media(request.model, self._overrides)


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def pdf_text(data: bytes) -> str:
    """The text of a PDF, page by page (`pypdf`); a PDF it cannot read gives a note saying so."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages).strip()
    except Exception as exc:  # a damaged PDF: the model reads that it could not be read
        return f"(the PDF could not be read: {type(exc).__name__})"


def _unsupported(model: str, attachment: Attachment) -> ApplicationError:
    return ApplicationError(
        f"model {model} cannot take {attachment.media_type} ({attachment.name!r})",
        {"model": model, "media_type": attachment.media_type},
        type=UNSUPPORTED_MEDIA_TYPE,
        non_retryable=True,
    )


class AttachmentParts:
    """The bytes of one call's attachments, and the rule that renders a message with them."""

    def __init__(self, model: str, media: ModelMedia, files: dict[str, bytes]) -> None:
        """Render for `model`, which takes `media`, from `files` (bytes by sha256)."""
        self._model = model
        self._media = media
        self._files = files

    @classmethod
    async def load(
        cls,
        store: BlobStore,
        model: str,
        messages: Sequence[Message],
        overrides: Mapping[str, ModelMedia] | None = None,
    ) -> AttachmentParts | None:
        """The parts of `messages`' attachments, read from `store`; None when they have none.

        What the model takes is `model_media(model, overrides)`.

        Raises:
            ApplicationError: non-retryable `blob_missing` (a blob missing, or bytes that do
                not match the reference), or `unsupported_media_type`.
        """
        attachments = [a for m in messages for a in m.attachments or ()]
        if not attachments:
            return None
        media = model_media(model, overrides)
        files: dict[str, bytes] = {}
        for attachment in attachments:
            _check_kind(model, media, attachment)
            if attachment.sha256 not in files:
                files[attachment.sha256] = await _read(store, attachment)
        return cls(model, media, files)

    def content(self, message: Message) -> str | list[dict[str, Any]]:
        """The OpenAI chat content of `message`: its text, or content parts with its attachments."""
        if not message.attachments:
            return message.content
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
        for attachment in message.attachments:
            parts.extend(self._parts(attachment))
        return parts

    def _parts(self, attachment: Attachment) -> list[dict[str, Any]]:
        data = self._files[attachment.sha256]
        header = f"Attachment {attachment.name} ({attachment.media_type}):"
        kind = media_kind(attachment.media_type)
        if kind == "text":
            return [{"type": "text", "text": f"{header}\n{data.decode('utf-8', errors='replace')}"}]
        if kind == "image":
            url = _data_url(attachment.media_type, data)
            return [{"type": "text", "text": header}, {"type": "image_url", "image_url": {"url": url}}]
        if self._media.pdfs:
            file = {"file_data": _data_url(attachment.media_type, data), "filename": attachment.name}
            return [{"type": "text", "text": header}, {"type": "file", "file": file}]
        return [{"type": "text", "text": f"{header}\n{pdf_text(data)}"}]


def _check_kind(model: str, media: ModelMedia, attachment: Attachment) -> None:
    kind = media_kind(attachment.media_type)
    if kind == "other" or (kind == "image" and not media.images):
        raise _unsupported(model, attachment)


async def _read(store: BlobStore, attachment: Attachment) -> bytes:
    """The attachment's bytes, checked against its reference.

    Raises:
        ApplicationError: non-retryable `blob_missing`, naming the attachment and its digest.
    """
    try:
        data = await store.get(attachment.sha256)
    except (BlobMissingError, ValueError) as err:
        raise _missing(attachment, str(err)) from None
    if digest_of(data) != attachment.sha256 or len(data) != attachment.size:
        raise _missing(attachment, f"the stored bytes ({len(data)}) do not match the reference")
    return data


def _missing(attachment: Attachment, detail: str) -> ApplicationError:
    return ApplicationError(
        f"attachment {attachment.id} ({attachment.name!r}, sha256:{attachment.sha256}) "
        f"cannot be read from the payload store: {detail}",
        type=BLOB_MISSING,
        non_retryable=True,
    )
