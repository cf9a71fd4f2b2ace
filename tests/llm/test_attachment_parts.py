"""The LLM activity sends a user message's attachments as content parts, read from the payload store.

Runs the real activity (SDK `ActivityEnvironment`) on the scripted model, whose `describe_input`
turn answers with what the call received, and on litellm's OpenAI route to a fake server.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from contracts import LLMRequest, ModelSettings, ScriptedCall, ScriptTurn
from contracts.errors import BLOB_MISSING, UNSUPPORTED_MEDIA_TYPE
from conversation import Message
from conversation.attachments import Attachment
from conversation.budget import estimate_tokens
from conversation.media import IMAGE_TOKENS
from tests.fake_openai import FakeOpenAI
from tests.llm_activity_helpers import STORE, llm_error, run_llm
from tests.stored_attachments import PNG, pdf_with_text, stored

CSV = b"name,qty\nbolt,7\n"


def described(request: LLMRequest) -> LLMRequest:
    turn = ScriptTurn(describe_input=True)
    return request.model_copy(update={"scripted": ScriptedCall(index=0, length=1, turn=turn)})


def asking(*attachments: Attachment, model: str = "scripted") -> LLMRequest:
    message = Message(role="user", content="What is in these?", attachments=list(attachments))
    return described(LLMRequest(model=model, messages=[message], iteration=0))


async def test_image_pdf_and_text_reach_the_scripted_model_intact() -> None:
    pdf = pdf_with_text("Quarterly revenue 42")
    image = await stored(STORE, PNG, "dot.png", "image/png")
    document = await stored(STORE, pdf, "report.pdf", "application/pdf")
    table = await stored(STORE, CSV, "parts.csv", "text/csv")
    response = await run_llm(asking(image, document, table))
    (message,) = json.loads(response.content)
    parts: list[dict[str, Any]] = message["parts"]
    assert message["role"] == "user"
    assert parts[0] == {"kind": "text", "text": "What is in these?"}
    media = [p for p in parts if p["kind"] != "text"]
    assert media == [
        {
            "kind": "image",
            "media_type": "image/png",
            "bytes": len(PNG),
            "sha256": hashlib.sha256(PNG).hexdigest(),
            "name": None,
        },
        {
            "kind": "file",
            "media_type": "application/pdf",
            "bytes": len(pdf),
            "sha256": hashlib.sha256(pdf).hexdigest(),
            "name": "report.pdf",
        },
    ]
    texts = [p["text"] for p in parts if p["kind"] == "text"]
    assert "Attachment dot.png (image/png):" in texts
    assert f"Attachment parts.csv (text/csv):\n{CSV.decode()}" in texts


async def test_a_missing_blob_is_a_named_non_retryable_error() -> None:
    absent = Attachment(
        id="f-" + "0" * 32,
        name="gone.png",
        media_type="image/png",
        size=3,
        sha256=hashlib.sha256(b"abc").hexdigest(),
    )
    error = await llm_error(asking(absent))
    assert (error.type, error.non_retryable) == (BLOB_MISSING, True)
    assert "gone.png" in str(error)


async def test_bytes_that_differ_from_the_reference_are_refused() -> None:
    image = await stored(STORE, PNG, "dot.png", "image/png")
    wrong_size = image.model_copy(update={"size": image.size + 1})
    error = await llm_error(asking(wrong_size))
    assert (error.type, error.non_retryable) == (BLOB_MISSING, True)


async def test_a_text_only_model_is_refused_an_image_before_any_call() -> None:
    image = await stored(STORE, PNG, "dot.png", "image/png")
    error = await llm_error(asking(image, model="openai/gpt-3.5-turbo"))
    assert (error.type, error.non_retryable) == (UNSUPPORTED_MEDIA_TYPE, True)
    assert "openai/gpt-3.5-turbo" in str(error) and "image/png" in str(error)


async def test_a_type_no_model_takes_is_refused() -> None:
    archive = await stored(STORE, b"PK\x03\x04zip", "a.zip", "application/zip")
    error = await llm_error(asking(archive))
    assert error.type == UNSUPPORTED_MEDIA_TYPE


async def test_the_provider_route_sends_image_and_file_parts_or_the_pdfs_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-attach")
    image = await stored(STORE, PNG, "dot.png", "image/png")
    pdf = await stored(STORE, pdf_with_text("Quarterly revenue 42"), "report.pdf", "application/pdf")
    async with FakeOpenAI() as server:
        for model, attachments in (("openai/gpt-4o-mini", [image, pdf]), ("openai/gpt-3.5-turbo", [pdf])):
            message = Message(role="user", content="Look", attachments=attachments)
            settings = ModelSettings(extra={"api_base": server.base_url})
            await run_llm(
                LLMRequest(model=model, messages=[message], settings=settings, iteration=0, timeout_s=10)
            )
    vision, text_only = (seen.body["messages"][-1]["content"] for seen in server.requests)
    kinds = [part["type"] for part in vision]
    assert kinds == ["text", "text", "image_url", "text", "file"]  # gpt-4o-mini takes images and PDFs
    assert vision[2]["image_url"]["url"].startswith("data:image/png;base64,")
    assert vision[4]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert vision[4]["file"]["filename"] == "report.pdf"
    assert "Quarterly revenue 42" in text_only[-1]["text"]


def test_the_budget_counts_attachments_by_the_reference() -> None:
    image = Attachment(id="f-" + "1" * 32, name="a.png", media_type="image/png", size=4_000, sha256="2" * 64)
    text = image.model_copy(update={"name": "a.txt", "media_type": "text/plain"})
    plain = Message(role="user", content="hi")
    assert (
        estimate_tokens(plain.model_copy(update={"attachments": [image]}))
        == estimate_tokens(plain) + IMAGE_TOKENS
    )
    assert estimate_tokens(plain.model_copy(update={"attachments": [text]})) == estimate_tokens(plain) + 1_010
