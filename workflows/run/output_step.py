"""Structured output in the run: the schema check at the start, and each final answer's verdict.

With `AgentConfig.output` set, the run first asks the worker whether the schema is a
valid JSON Schema (`check_output_schema`); a problem fails the workflow with
`invalid_schema` (non-retryable) before any LLM call. Every LLM request carries the
spec, and the LLM activity parses a final answer against it (`activities.output.output_parsing`).

At the answer that would end the run (nothing queued: a queued steer continues the run
first, and only the answer that ends it is checked), a valid one is kept as
`RunResult.output` (trace `output_parsed`); an invalid one is recorded (`output_invalid`)
and, while repairs remain (`OutputSpec.repairs` per run) and an iteration is left, a user
message showing the errors asks for only the JSON and the loop calls the model again (a
repair call is an iteration and an LLM call like any). Otherwise the run fails with
`invalid_output`, its message carrying the last errors.

A run without `output` issues no command of this module.
"""

from __future__ import annotations

import json

from pydantic import JsonValue
from temporalio.exceptions import ApplicationError

from contracts.activities import CHECK_OUTPUT_SCHEMA
from contracts.errors import INVALID_OUTPUT, INVALID_SCHEMA
from contracts.llm import LLMResponse
from contracts.output import OutputSpec
from workflows.activity_calls import call_activity
from workflows.run.ledger import RunFailedError
from workflows.run.record import RunRecord
from workflows.run.trace_log import preview

MAX_SCHEMA_IN_REPAIR_CHARS = 16_000
"""A schema longer than this (compact JSON) is not repeated in a repair message."""
MAX_FAILURE_CHARS = 4_000
"""Characters of the last errors in an `invalid_output` failure's message."""
TRACE_ERRORS = 5
"""Errors previewed in an `output_invalid` trace event."""
REPAIR_SOURCE = "output_repair"


class OutputStep:
    """The run's structured output: the schema check, the verdict on final answers, the repairs."""

    def __init__(self, spec: OutputSpec | None, record: RunRecord) -> None:
        """Bind the run's output spec (None: the run has no structured output) and its record."""
        self._spec = spec
        self._record = record
        self._repairs = 0
        self.value: JsonValue = None
        """The parsed output of the final answer (None until one validated)."""

    async def prepare(self) -> None:
        """Check the schema with the worker (before the first LLM call); nothing without a spec.

        Raises:
            ApplicationError: `invalid_schema` (non-retryable), naming the schema's problem.
        """
        if self._spec is None:
            return
        check = await call_activity(CHECK_OUTPUT_SCHEMA, self._spec)
        if check.problem is not None:
            message = f"output.json_schema is not a valid JSON Schema: {check.problem}"
            raise ApplicationError(message, type=INVALID_SCHEMA, non_retryable=True)

    def accept(self, response: LLMResponse, *, iteration_left: bool) -> bool:
        """Whether the final answer ends the run (True) or a repair request was appended (False).

        Args:
            response: the final answer (already appended to the thread).
            iteration_left: whether `max_iterations` allows one more LLM call.

        Raises:
            RunFailedError: `invalid_output`, when the answer does not validate and no repair is left.
        """
        spec = self._spec
        if spec is None:
            return True
        if response.output_ok:
            self.value = response.output
            self._record.event("output_parsed", data={"method": response.output_method})
            return True
        errors = response.output_errors or ["$: the answer does not match the schema"]
        repair = self._repairs + 1 if self._repairs < spec.repairs and iteration_left else None
        self._record.event(
            "output_invalid",
            data={
                "method": response.output_method,
                "errors": [preview(error) for error in errors[:TRACE_ERRORS]],
                "error_count": len(errors),
                "repair": repair,
                "repairs": spec.repairs,
            },
        )
        if repair is None:
            why = "no repair left" if self._repairs >= spec.repairs else "no iteration left for a repair"
            listed = "; ".join(errors)
            if len(listed) > MAX_FAILURE_CHARS:
                listed = listed[: MAX_FAILURE_CHARS - 1] + "…"
            raise RunFailedError(
                INVALID_OUTPUT,
                f"the final answer does not match output.json_schema "
                f"({self._repairs} repair(s) made, {why}): {listed}",
            )
        self._repairs = repair
        self._record.append("user", repair_message(spec, errors), refs={"source": REPAIR_SOURCE})
        return False


def repair_message(spec: OutputSpec, errors: list[str]) -> str:
    """What a repair call shows the model: the validation errors, the schema, and the ask for only JSON."""
    lines = ["Your answer does not match the required JSON Schema:"]
    lines += [f"- {error}" for error in errors]
    schema = json.dumps(spec.json_schema, separators=(",", ":"), sort_keys=True)
    if len(schema) <= MAX_SCHEMA_IN_REPAIR_CHARS:
        lines += ["", f"The schema: {schema}"]
    lines += ["", "Reply with only the corrected JSON value: no explanation and no code fences."]
    return "\n".join(lines)
