"""How an attachment reaches the model, by its media type: one rule for the LLM activity and the budget.

Pure and deterministic (workflow code imports it). Three kinds:

- `text`: `text/*` and the structured text types of `TEXT_TYPES` (JSON, NDJSON, XML, YAML,
  TOML, `+json` and `+xml` types). Every model takes them: the LLM activity inlines them as
  text, headed by the file's name.
- `image`: the raster types providers take (`IMAGE_TYPES`: PNG, JPEG, GIF, WebP), sent as
  image parts to a model that takes images.
- `pdf`: `application/pdf`, sent as a file part to a model that takes PDFs, else as its
  text (extracted with `pypdf`).

Anything else is `other`: no model is sent it.

Token estimates (`attachment_tokens`), deterministic and from the reference alone (the
workflow never reads the bytes): an image counts `IMAGE_TOKENS` (OpenAI's tile rule for
a 1024 x 1024 image at `detail: auto`: 85 + 170 x 4 tiles = 765; dimensions are unknown
to the workflow, and providers scale larger images down to about that size); text and a
PDF count their size at `BYTES_PER_TOKEN` bytes a token (a PDF's text is smaller than its
bytes, so this is pessimistic), plus `ATTACHMENT_OVERHEAD_TOKENS` for the name header.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from conversation.attachments import Attachment

SCRIPTED_MODEL: Final = "scripted"
"""The scripted model (`contracts.llm.SCRIPTED_MODEL`): it takes every kind."""

MediaKind = Literal["text", "image", "pdf", "other"]

PDF_TYPE: Final = "application/pdf"
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPES: Final = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
    }
)
IMAGE_TOKENS: Final = 765
"""An image's estimate: OpenAI's tile rule (85 base + 170 per 512 px tile) for 1024 x 1024."""
BYTES_PER_TOKEN: Final = 4
ATTACHMENT_OVERHEAD_TOKENS: Final = 10


def media_kind(media_type: str) -> MediaKind:
    """The kind of `media_type` (lower case, without parameters)."""
    if media_type.startswith("text/") or media_type in TEXT_TYPES:
        return "text"
    if media_type.endswith(("+json", "+xml")):
        return "text"
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type == PDF_TYPE:
        return "pdf"
    return "other"


def attachment_tokens(attachment: Attachment) -> int:
    """The deterministic token estimate of one attachment (see the module's rule)."""
    if media_kind(attachment.media_type) == "image":
        return IMAGE_TOKENS
    return attachment.size // BYTES_PER_TOKEN + ATTACHMENT_OVERHEAD_TOKENS


def needs_image_check(model: str, attachments: Sequence[Attachment]) -> bool:
    """Whether deciding on `attachments` for `model` needs to know if it takes images (`model_media`)."""
    return model != SCRIPTED_MODEL and any(media_kind(a.media_type) == "image" for a in attachments)


def media_problem(
    model: str, attachments: Sequence[Attachment], takes_images: bool | None = None
) -> str | None:
    """Why `model` cannot be sent `attachments` (None: no reason known), from the references alone.

    The rule workflow code applies at ask time (a session's `ask`, a run's start), so the
    refusal comes with nothing asked: a type no model takes (`other`) is refused for every
    model, an image for a model that does not take images (`takes_images`, resolved by the
    `model_media` activity from litellm's model map, which workflow code cannot read; None:
    not known, and the LLM activity refuses it before any provider call). PDFs and text go to
    every model (a PDF as its text when the model takes no PDFs).
    """
    for attachment in attachments:
        kind = media_kind(attachment.media_type)
        if kind == "image" and takes_images is False:
            return (
                f"model {model} cannot take {attachment.media_type} ({attachment.name!r}): it takes no images"
            )
        if kind == "other":
            name = attachment.name
            return f"model {model} cannot take {attachment.media_type} ({name!r}): no model is sent it"
    return None
