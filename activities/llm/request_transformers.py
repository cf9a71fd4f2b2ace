"""Request transformers: functions registered on the worker that may change a run's next LLM request.

    def cheap_after_three(request: TransformInput) -> RequestChanges | None:
        if request.llm_calls >= 3:
            return RequestChanges(model="openai/gpt-4o-mini", reason="long run: a cheaper model")
        return None

    transformers = RequestTransformers()
    transformers.register("cheap_after_three", cheap_after_three)
    worker = build_worker(client, transformers=transformers)  # or DurableReactPlugin(transformers=...)
    # or: python worker.py --transformers mypackage.transformers   (its `transformers` attribute)

A run whose config sets `request_transformer="cheap_after_three"` runs the
`transform_request` activity before every LLM call (as a local activity: see
`workflows.run.request_transformer`). The function gets a `TransformInput` (where the run
stands, and the request about to be sent, its messages inline) and returns a
`RequestChanges`, a dict of its fields, or None for no change. It may be synchronous
(run in a thread) or a coroutine function. It should be pure and fast: it may run
again when the workflow task is retried, and its answer is what history records.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, cast

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.tools._tool_definition import TOOL_NAME
from activities.tools.tool_loading import ToolLoadError, load_registry, merge_registries
from contracts.activities import TRANSFORM_REQUEST_ACTIVITY
from contracts.errors import TRANSFORMER_ERROR, UNKNOWN_TRANSFORMER
from contracts.transform import RequestChanges, TransformInput
from payloads.redaction import redact

__all__ = [
    "TRANSFORMERS_ATTRIBUTE",
    "TRANSFORMERS_ENV",
    "RequestTransformers",
    "TransformRequestActivity",
    "Transformer",
    "build_transformers",
    "load_transformers",
]


Transformer = Callable[[TransformInput], Any]
"""A transformer: `TransformInput` -> `RequestChanges`, a dict of its fields, or None (maybe awaitable)."""
TRANSFORMERS_ENV = "REACT_TRANSFORMERS"
TRANSFORMERS_ATTRIBUTE = "transformers"
_FLAG = "--transformers"
_SECRET_SUFFIXES = ("key", "secret", "_token", "password", "credentials")  # as `contracts.config_rules`


class RequestTransformers:
    """Named request transformers (the registry the `transform_request` activity serves)."""

    def __init__(self) -> None:
        self._functions: dict[str, Transformer] = {}

    def register(self, name: str, function: Transformer) -> None:
        """Register `function` as the transformer `name`.

        Args:
            name: What configs name it by (`AgentConfig.request_transformer`): letters,
                digits, `_` and `-`, at most 64 characters, like a tool's name.
            function: Takes a `TransformInput`; returns `RequestChanges`, a dict of its
                fields, or None (no change); synchronous or a coroutine function.

        Raises:
            ValueError: The name is invalid or already registered.
            TypeError: `function` is not callable.
        """
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(f"request transformer name {name!r} must match {TOOL_NAME.pattern}")
        if not callable(function):
            raise TypeError(f"request transformer {name!r} must be a function, not {type(function).__name__}")
        if name in self._functions:
            raise ValueError(f"request transformer {name!r} is already registered")
        self._functions[name] = function

    def include(self, other: RequestTransformers) -> None:
        """Add every transformer of `other`, or none if a name is already registered here.

        Raises:
            ValueError: Names that both have, all listed.
        """
        clashes = sorted(set(self._functions) & set(other._functions))
        if clashes:
            raise ValueError(f"request transformers already registered: {', '.join(map(repr, clashes))}")
        self._functions.update(other._functions)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._functions)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __len__(self) -> int:
        return len(self._functions)

    def get(self, name: str) -> Transformer | None:
        """The transformer registered as `name`, or None."""
        return self._functions.get(name)


class TransformRequestActivity:
    """The `transform_request` activity, bound to the worker's `RequestTransformers`."""

    def __init__(self, transformers: RequestTransformers) -> None:
        self._transformers = transformers

    @activity.defn(name=TRANSFORM_REQUEST_ACTIVITY)
    async def transform_request(self, request: TransformInput) -> RequestChanges:
        """The changes the named transformer makes to the request (empty: none).

        Raises:
            ApplicationError: Non-retryable: `unknown_transformer` (naming the registered
                ones) or `transformer_error` (the function raised, or its answer is not
                `RequestChanges`); messages redacted, exceptions not chained.
        """
        function = self._transformers.get(request.transformer)
        if function is None:
            available = ", ".join(self._transformers.names()) or "(none)"
            message = f"unknown request transformer {request.transformer!r}; registered: {available}"
            raise ApplicationError(redact(message), type=UNKNOWN_TRANSFORMER, non_retryable=True)
        try:
            answer = await _call(function, request)
            changes: RequestChanges | None = None
            if answer is None:
                return RequestChanges()
            if isinstance(answer, RequestChanges):
                changes = RequestChanges.model_validate(answer.model_dump())  # re-checked: users may mutate
            elif isinstance(answer, Mapping):
                changes = RequestChanges.model_validate(dict(cast(Mapping[str, Any], answer)))
            credentials = credential_problem(changes) if changes is not None else None
            if changes is not None and credentials is None:
                return changes
            kind = type(cast(object, answer)).__name__
            problem = credentials or f"returned a {kind}, not RequestChanges, a dict or None"
        except ValidationError as exc:
            problem = f"returned changes that do not validate: {_one_line(exc)}"
        except Exception as exc:  # user code can raise anything
            problem = f"raised {_one_line(exc)}"
        message = f"request transformer {request.transformer!r} {problem}"
        raise ApplicationError(redact(message), type=TRANSFORMER_ERROR, non_retryable=True) from None


def credential_problem(changes: RequestChanges) -> str | None:
    """Why `changes` may not leave the activity (it carries a credential), or None.

    Checked here, before the answer is recorded (a local activity's result is in history
    at once): the message names the setting, never its value.
    """
    extra = changes.settings.extra if changes.settings is not None else {}
    names = sorted(key for key in extra if key.lower() == "token" or key.lower().endswith(_SECRET_SUFFIXES))
    if names:
        return (
            f"returned settings.extra carrying credentials ({', '.join(names)}): "
            "set them in the worker's environment"
        )
    dumped = changes.model_dump_json()
    if redact(dumped) != dumped:
        return (
            "returned changes carrying a credential (a key, a token or a secret of the worker's environment)"
        )
    return None


async def _call(function: Transformer, request: TransformInput) -> object:
    if inspect.iscoroutinefunction(function):
        return await cast(Callable[[TransformInput], Awaitable[object]], function)(request)
    answer: object = await asyncio.to_thread(function, request)  # a blocking function never stalls the worker
    if inspect.isawaitable(answer):
        return await answer
    return answer


def build_transformers(specs: Iterable[str]) -> RequestTransformers:
    """The transformers of every `module` or `module:attr` (`--transformers`), in order.

    Raises:
        ToolLoadError: A module cannot be imported, the attribute is missing or not a
            `RequestTransformers`, or two of them register the same name.
    """
    return merge_registries(specs, RequestTransformers(), load_transformers, _FLAG)


def load_transformers(spec: str) -> RequestTransformers:
    """The `RequestTransformers` that `spec` names: `module` (its `transformers` attribute) or `module:attr`.

    Raises:
        ToolLoadError: See `build_transformers`.
    """
    how = (
        f"define `{TRANSFORMERS_ATTRIBUTE} = RequestTransformers()` (activities.llm.request_transformers) "
        "and register functions on it"
    )
    value = load_registry(spec, _FLAG, TRANSFORMERS_ATTRIBUTE, RequestTransformers, how)
    if not len(value):
        attribute = spec.partition(":")[2] or TRANSFORMERS_ATTRIBUTE
        raise ToolLoadError(spec, f"{attribute!r} registers no request transformers", _FLAG)
    return value


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:400] if text else type(exc).__name__
