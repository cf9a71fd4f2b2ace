"""The product's payload converter: pydantic JSON, with one type-adapter cache for the whole process.

temporalio's `PydanticPayloadConverter` keeps its `TypeAdapter` cache per converter
instance, and the worker builds new converters for every workflow run (and for every
payload's serialization context), so every run built the adapters of every payload
type again: a pydantic schema build per type per run, most of the converter's cost in
a short run. Payload types are module-level classes, so one cache shared by all
instances is correct and makes a converter free to create.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaSerializer, core_schema
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import CompositePayloadConverter, DefaultPayloadConverter, JSONPlainPayloadConverter

from contracts.decoding import Undecodable

_TYPE_ADAPTERS = functools.lru_cache(maxsize=1024)(TypeAdapter[Any])
_ANY_SERIALIZER = SchemaSerializer(core_schema.any_schema())


class SharedCachePydanticJSONConverter(PydanticJSONPlainPayloadConverter):
    """`PydanticJSONPlainPayloadConverter` whose type adapters are shared by every instance."""

    def __init__(self) -> None:
        """Share the process-wide adapter cache instead of building one per instance."""
        self._to_json_options = None
        self._schema_serializer = _ANY_SERIALIZER
        self._type_adapter = _TYPE_ADAPTERS

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """Decode as pydantic does; for an untyped argument, unreadable JSON becomes `Undecodable`.

        Handlers take untyped `*args` and decode them themselves (`contracts.decoding`), so
        they can reject such a payload by name instead of the SDK failing the call.
        """
        try:
            if type_hint is not None and workflow.unsafe.in_sandbox():
                # Types in the sandbox are each run's own copies: caching them would keep every run's modules.
                return TypeAdapter[Any](type_hint).validate_json(payload.data)
            return super().from_payload(payload, type_hint)
        except ValidationError as error:
            if type_hint not in (None, Any):
                raise
            return Undecodable(error.errors(include_url=False)[0]["msg"][:200])


_CONVERTERS = tuple(
    SharedCachePydanticJSONConverter() if isinstance(c, JSONPlainPayloadConverter) else c
    for c in DefaultPayloadConverter.default_encoding_payload_converters
)
"""Stateless, so shared like Temporal's own defaults: the SDK builds a converter per payload context."""


class ProductPayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, with JSON handled by `SharedCachePydanticJSONConverter`."""

    def __init__(self) -> None:
        """Compose the default converters."""
        super().__init__(*_CONVERTERS)
