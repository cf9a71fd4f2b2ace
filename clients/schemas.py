"""JSON Schemas of the public payloads, generated from the pydantic models (`schemas/*.json`).

`schema_files()` is every file of the `schemas/` folder, by name: `api.json` (the
manifest of `clients.api`: task queue, workflow types, and for each handler its
kind and the schema files of its argument and answer), one `<Model>.json` per payload
model (the shape the workflows accept, in pydantic's validation mode: fields with a
default may be left out), and `error_codes.json` (every code of `contracts.errors`
and the snapshot token's codes, with what each means). `scripts/export_schemas.py`
writes them; `tests/project/test_schemas.py` fails when a committed file is stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, JsonValue, TypeAdapter

from clients.api import PUBLIC_TASK_QUEUE, STORED_MODELS, STREAM_HANDLER_PREFIX, WORKFLOWS, Handler
from contracts.errors import DESCRIPTIONS, SnapshotErrorCode

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FOLDER = Path(__file__).resolve().parent.parent / "schemas"


def _file(model: type[BaseModel], many: bool = False) -> str:
    return f"{model.__name__}{'List' if many else ''}.json"


def _schema(model: type[BaseModel], many: bool = False) -> dict[str, JsonValue]:
    if many:
        schema: dict[str, JsonValue] = TypeAdapter(list[model]).json_schema(mode="validation")
        schema["title"] = f"{model.__name__}List"
    else:
        schema = model.model_json_schema(mode="validation")
    return {"$schema": DRAFT, **schema}


def _handler_entry(handler: Handler) -> dict[str, JsonValue]:
    entry: dict[str, JsonValue] = {
        "kind": handler.kind,
        "argument": _file(handler.argument) if handler.argument else None,
        "result": _file(handler.result, handler.many) if handler.result else None,
        "summary": handler.summary,
    }
    if handler.internal:
        entry["internal"] = True
    return entry


def manifest() -> dict[str, JsonValue]:
    """The content of `api.json`."""
    workflows: dict[str, JsonValue] = {
        api.name: {
            "argument": _file(api.argument),
            "result": _file(api.result) if api.result else None,
            "handlers": {h.name: _handler_entry(h) for h in api.handlers},
            **(
                {
                    "stream": {
                        "topic": api.stream.topic,
                        "item": _file(api.stream.item),
                        "handlers": f"{STREAM_HANDLER_PREFIX}*",
                        "summary": api.stream.summary,
                    }
                }
                if api.stream is not None
                else {}
            ),
        }
        for api in WORKFLOWS
    }
    return {
        "task_queue": PUBLIC_TASK_QUEUE,
        "workflows": workflows,
        "payload_store": {model.__name__: _file(model) for model in STORED_MODELS},
        "error_codes": "error_codes.json",
    }


def error_codes() -> dict[str, JsonValue]:
    """The content of `error_codes.json`: every code with its meaning."""
    codes: list[JsonValue] = [{"const": code, "description": text} for code, text in DESCRIPTIONS.items()]
    for code in get_args(SnapshotErrorCode):
        problem = code.removeprefix("snapshot_").replace("_", " ")
        codes.append({"const": code, "description": f"A snapshot token that cannot be used: {problem}."})
    return {
        "$schema": DRAFT,
        "title": "ErrorCode",
        "description": (
            "The codes of ApplicationError.type, Ack.reason, RunError.type and ToolError.type "
            "(contracts/errors.py)."
        ),
        "type": "string",
        "oneOf": codes,
    }


def _models() -> dict[str, dict[str, JsonValue]]:
    schemas: dict[str, dict[str, JsonValue]] = {}
    for api in WORKFLOWS:
        for model in (api.argument, api.result):
            if model is not None:
                schemas[_file(model)] = _schema(model)
        for handler in api.handlers:
            if handler.argument is not None:
                schemas[_file(handler.argument)] = _schema(handler.argument)
            if handler.result is not None:
                schemas[_file(handler.result, handler.many)] = _schema(handler.result, handler.many)
        if api.stream is not None:
            schemas[_file(api.stream.item)] = _schema(api.stream.item)
    for model in STORED_MODELS:
        schemas[_file(model)] = _schema(model)
    return schemas


def _text(value: dict[str, JsonValue]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def schema_files() -> dict[str, str]:
    """Every file of `schemas/`: name -> text."""
    files = {name: _text(schema) for name, schema in sorted(_models().items())}
    return {"api.json": _text(manifest()), "error_codes.json": _text(error_codes()), **files}


def stale_files(folder: Path = SCHEMA_FOLDER) -> list[str]:
    """Names of the files of `folder` that differ from the generated ones, are missing, or are extra."""
    wanted = schema_files()
    present: set[str] = {path.name for path in folder.glob("*.json")} if folder.is_dir() else set()
    stale = sorted(present - wanted.keys())
    for name, text in wanted.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


def write_schema_files(folder: Path = SCHEMA_FOLDER) -> list[str]:
    """Write every schema file (removing ones no longer generated); return the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = schema_files()
    for path in folder.glob("*.json"):
        if path.name not in wanted:
            path.unlink()
    for name, text in wanted.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(wanted)
