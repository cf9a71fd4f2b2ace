"""How an activity is declared: its default options, a deployment's override of them, its spec.

The table of every activity (`contracts.activities`) is made of `ActivitySpec`s; the layers
that resolve an activity's options are described there. Pure and light: workflow code imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contracts.agent import AgentConfig

_Timeout = Annotated[float, Field(gt=0, le=7 * 86_400)]
_Interval = Annotated[float, Field(gt=0, le=86_400)]


class ActivityOverride(BaseModel):
    """Options that replace an activity's table defaults; a field left out (None) keeps the default.

    `maximum_attempts` 0 means unlimited (Temporal's convention). Whatever the layers
    give, the maximum retry interval is never below the initial one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    start_to_close_timeout_s: _Timeout | None = None
    heartbeat_timeout_s: _Timeout | None = None
    maximum_attempts: Annotated[int, Field(ge=0, le=10_000)] | None = None
    initial_interval_s: _Interval | None = None
    backoff_coefficient: Annotated[float, Field(ge=1, le=100)] | None = None
    maximum_interval_s: _Interval | None = None

    @model_validator(mode="after")
    def _intervals_in_order(self) -> ActivityOverride:
        initial, maximum = self.initial_interval_s, self.maximum_interval_s
        if initial is not None and maximum is not None and maximum < initial:
            raise ValueError("maximum_interval_s must be at least initial_interval_s")
        return self

    def set_fields(self) -> dict[str, float | int]:
        """The fields this override sets (what it changes in the layer below)."""
        return self.model_dump(exclude_none=True)


class ActivityOptions(BaseModel):
    """An activity's resolved options (`maximum_interval_s` None: Temporal's default, 100 x initial)."""

    model_config = ConfigDict(frozen=True)

    start_to_close_timeout_s: float
    heartbeat_timeout_s: float | None = None
    maximum_attempts: int = 0
    initial_interval_s: float = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval_s: float | None = None

    def layered(self, fields: Mapping[str, Any]) -> ActivityOptions:
        """These options with `fields` (an override's set fields) replacing theirs."""
        options = self.model_copy(update=dict(fields))
        maximum = options.maximum_interval_s
        if maximum is not None and maximum < options.initial_interval_s:
            options = options.model_copy(update={"maximum_interval_s": options.initial_interval_s})
        return options


Cancellation = Literal["try_cancel", "wait_cancellation_completed", "abandon"]
In = TypeVar("In")
Out = TypeVar("Out")


def _no_agent_settings(config: AgentConfig) -> ActivityOverride:
    return ActivityOverride()


@dataclass(frozen=True)
class ActivitySpec(Generic[In, Out]):
    """One activity: name, payload types, default options, Web UI summary and per-agent layer."""

    name: str
    input_type: type[In]
    result_type: type[Out]
    defaults: ActivityOptions
    summary: Callable[[In], str]
    per_agent: Callable[[AgentConfig], ActivityOverride] = _no_agent_settings
    cancellation: Cancellation = "try_cancel"
