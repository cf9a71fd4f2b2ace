"""Snapshot tokens: signed by an activity (the secret lives in the worker's environment)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from conversation import DEFAULT_CONTEXT_REF, Context

SNAPSHOT_VERSION = 2
SNAPSHOT_PREFIX = "rt2."


class SnapshotPayload(BaseModel):
    """What a snapshot token carries: one lane's context (format v2: context only, no thread)."""

    version: int = SNAPSHOT_VERSION
    agent_id: str
    context_ref: str = DEFAULT_CONTEXT_REF
    context: Context
    exported_at: datetime
    expires_at: datetime | None = None


class ExportSnapshotRequest(BaseModel):
    """Input of the `export_snapshot` activity."""

    agent_id: str
    context_ref: str
    context: Context
    ttl_s: float | None = None


class RestoreSnapshotRequest(BaseModel):
    """Input of the `restore_snapshot` activity."""

    token: str
