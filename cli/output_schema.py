"""`--output-schema FILE.json` of `run` and `ask`: the final answer must match that JSON Schema.

The file is read and checked before anything is sent (not JSON, not an object, not a
valid JSON Schema: a one-line error naming the file, exit 1). A completed run's parsed
output is printed as JSON after its outcome (for an ask, read from its run's result).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from pydantic import JsonValue
from temporalio.client import Client

from activities.output.output_parsing import schema_problem
from cli import ops
from cli.common import say
from cli.errors import CliError
from cli.inputs import read_json
from cli.params import option
from clients.errors import RejectedError
from clients.output import output_spec
from contracts.output import OutputSpec

OutputSchemaOpt = Annotated[
    Path | None,
    option(
        "--output-schema",
        help="A JSON Schema file the final answer must match; the parsed output is printed as JSON.",
    ),
]
_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def load_output_schema(path: Path | None) -> OutputSpec | None:
    """The `OutputSpec` of a schema file (named after the file), or None without one.

    Raises:
        CliError: the file is unreadable, not JSON, not a JSON object, not a valid JSON Schema,
            or over the schema's size limit.
    """
    if path is None:
        return None
    schema = read_json(path)
    if not isinstance(schema, dict):
        got = type(schema).__name__
        raise CliError(f"--output-schema {path}: a JSON Schema must be a JSON object, got {got}")
    problem = schema_problem(schema)
    if problem is not None:
        raise CliError(f"--output-schema {path} is not a valid JSON Schema: {problem}")
    try:
        spec = output_spec(schema)
    except RejectedError as error:
        raise CliError(f"--output-schema {path}: {error.message}") from None
    name = _NAME_CHARS.sub("_", path.stem)[:64] or spec.name
    return spec.model_copy(update={"name": name})


def print_output(value: JsonValue) -> None:
    """Print a run's parsed output as JSON (on stdout, after a bold `output:` line)."""
    say("output:", "bold")
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


async def print_run_output(client: Client, run_workflow_id: str) -> None:
    """Print the parsed output of a (completed) run, read from its result."""
    result = await ops.runs_of(client).get(run_workflow_id).result()
    print_output(result.output)
