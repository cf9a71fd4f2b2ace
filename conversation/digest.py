"""Content digests of messages and message lists, shared by workflows and the LLM activity.

The LLM activity caches every message it sees in the payload store under the SHA-256
of the message's canonical JSON (`message_bytes`), and every message list it was sent
under the SHA-256 of its digests joined by newlines (`list_bytes`). The workflow
computes the same digests (pure hashing, no I/O) to send references instead of
messages the activity has already seen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from conversation.messages import Message


def message_bytes(message: Message) -> bytes:
    """The canonical JSON of a message: what the cache stores and hashes."""
    return message.model_dump_json().encode()


def message_digest(message: Message) -> str:
    """The SHA-256 hex digest of `message_bytes(message)`."""
    return hashlib.sha256(message_bytes(message)).hexdigest()


def list_bytes(digests: Sequence[str]) -> bytes:
    """The canonical form of a message list: its message digests, one per line."""
    return "\n".join(digests).encode()


def list_digest(digests: Sequence[str]) -> str:
    """The SHA-256 hex digest of `list_bytes(digests)`."""
    return hashlib.sha256(list_bytes(digests)).hexdigest()
